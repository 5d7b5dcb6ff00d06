/**
 * The SQLite writer thread (see sqlite-writer.ts): its own connection to the database
 * file, running each batch of statements it is sent in one transaction and answering
 * once the commit is durable.
 */
import { parentPort, workerData } from 'node:worker_threads';
import SqliteDatabase from 'better-sqlite3';
import { configureSqlite } from './sqlite-pragmas.js';
import type { WriterReply, WriterRequest } from './sqlite-writer.js';

const port = parentPort;
if (!port) throw new Error('sqlite-writer-thread runs as a worker thread');

const db = new SqliteDatabase((workerData as { path: string }).path);
configureSqlite(db);
const statements = new Map<string, SqliteDatabase.Statement>();
const prepare = (sql: string): SqliteDatabase.Statement => {
  let s = statements.get(sql);
  if (!s) {
    s = db.prepare(sql);
    if (statements.size >= 200) statements.delete(statements.keys().next().value as string);
    statements.set(sql, s);
  }
  return s;
};
// Checkpoints happen here only (database.ts turns them off on the event-loop connection):
// automatically when the WAL passes 10,000 pages, and every second for what other
// connections wrote meanwhile. PASSIVE never waits for readers or writers.
db.pragma('wal_autocheckpoint = 10000');
const checkpoint = db.prepare('pragma wal_checkpoint(PASSIVE)');
const checkpoints = setInterval(() => {
  try {
    checkpoint.get();
  } catch {
    // Busy or not: the next round copies what this one could not.
  }
}, 1000);
const begin = db.prepare('begin immediate');
const commit = db.prepare('commit');
const rollback = db.prepare('rollback');

/** Structured cloning turns Buffers into plain Uint8Arrays, which better-sqlite3 does not bind. */
function bindable(v: unknown): unknown {
  return v instanceof Uint8Array && !Buffer.isBuffer(v) ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : v;
}

port.on('message', (msg: WriterRequest) => {
  if (msg.type === 'close') {
    clearInterval(checkpoints);
    db.close();
    port.close();
    return;
  }
  let reply: WriterReply;
  try {
    begin.run();
    try {
      for (const run of msg.statements) {
        const st = prepare(run.sql);
        for (const parameters of run.parameters) st.run(parameters.map(bindable));
      }
      commit.run();
    } catch (err) {
      if (db.inTransaction) rollback.run();
      throw err;
    }
    reply = { id: msg.id, ok: true };
  } catch (err) {
    const e = err as { code?: unknown; message?: unknown };
    reply = {
      id: msg.id,
      ok: false,
      code: typeof e.code === 'string' ? e.code : undefined,
      message: String(e.message ?? err),
    };
  }
  port.postMessage(reply);
});
