/**
 * Copies a SQLite database with `VACUUM INTO` on a thread of its own, so that a server taking
 * a backup keeps serving meanwhile. VACUUM INTO reads in one read transaction: the copy is
 * the database as committed when it began, WAL included, while writers go on.
 */
import { parentPort, workerData } from 'node:worker_threads';
import SqliteDatabase from 'better-sqlite3';

const port = parentPort;
if (!port) throw new Error('sqlite-snapshot-thread runs as a worker thread');
const { source, target } = workerData as { source: string; target: string };
try {
  const db = new SqliteDatabase(source, { fileMustExist: true, timeout: 60_000 });
  try {
    db.prepare('VACUUM INTO ?').run(target);
  } finally {
    db.close();
  }
  port.postMessage({ ok: true });
} catch (err) {
  port.postMessage({ ok: false, message: (err as Error).message });
}
