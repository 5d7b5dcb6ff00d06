/**
 * The SQLite writer thread (see sqlite-writer.ts): its own connection to the database
 * file, running each batch of statements it is sent in one transaction and answering
 * once the commit is durable (the WAL fsynced after the commit, outside the write lock).
 */
import { closeSync, fsyncSync, openSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import SqliteDatabase from 'better-sqlite3';
import { BUSY_TIMEOUT_MS, configureSqlite } from './sqlite-pragmas.js';
import type { WriterData, WriterReply, WriterRequest } from './sqlite-writer.js';

const port = parentPort;
if (!port) throw new Error('sqlite-writer-thread runs as a worker thread');

const data = workerData as WriterData;
const db = new SqliteDatabase(data.path);
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
// PASSIVE copies frames back but never starts the WAL over: that happens only when a write
// begins while no reader still uses the WAL, which under steady load (and with several worker
// processes) never comes, so the file grew by every commit, each one appending to a new
// block of it. Once the WAL holds more than RESTART_PAGES, RESTART waits for the readers of
// older snapshots to finish (new readers go on, writers wait) so that the next commit writes
// from its start again, and journal_size_limit cuts the file back. The wait is bounded by a
// short busy timeout, so a long reader delays the restart to the next second, never the
// writes by more than that.
const RESTART_PAGES = data.walRestartPages ?? 16_384;
const RESTART_WAIT_MS = 50;
const restart = db.prepare('pragma wal_checkpoint(RESTART)');
const checkpoints = setInterval(() => {
  try {
    const pass = checkpoint.get() as { log: number } | undefined;
    if (pass && pass.log >= RESTART_PAGES) {
      db.pragma(`busy_timeout = ${RESTART_WAIT_MS}`);
      try {
        restart.get();
      } finally {
        db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      }
    }
  } catch {
    // Busy or not: the next round copies what this one could not.
  }
}, data.checkpointIntervalMs ?? 1000);
// The commit only appends its frames to the WAL (synchronous=NORMAL); the WAL is fsynced
// right after it, once the write lock is released, and the batch is answered only then
// (decision 0062). fsync is per file: one begun after the commit covers its frames, as
// synchronous=FULL would have inside COMMIT, but the other writers of the file (the
// event-loop connection, other worker processes) no longer wait for it. Checkpoints still
// sync the WAL first and the database file after.
db.pragma('synchronous = NORMAL');
// The WAL is never replaced while this connection is open (a restart rewrites it in place,
// and SQLite deletes it only when the last connection closes), so one descriptor serves.
let walFd: number | undefined;
// After a failed fsync the descriptor is dropped, and the next batch syncs through a new one.
const syncWal = (): void => {
  walFd ??= openSync(`${data.path}-wal`, 'r');
  try {
    fsyncSync(walFd);
  } catch (err) {
    closeSync(walFd);
    walFd = undefined;
    throw err;
  }
};
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
    if (walFd !== undefined) closeSync(walFd);
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
    syncWal();
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
