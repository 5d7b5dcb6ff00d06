import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, openSync, readSync, closeSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import SqliteDatabase from 'better-sqlite3';
import { configureSqlite } from './sqlite-pragmas.js';
import { SqliteWriter } from './sqlite-writer.js';

/** The WAL header's checkpoint sequence number: it moves each time the WAL starts over from its first frame. */
function walSequence(walPath: string): number {
  const fd = openSync(walPath, 'r');
  try {
    const header = Buffer.alloc(16);
    if (readSync(fd, header, 0, 16, 0) < 16) return -1;
    return header.readUInt32BE(12);
  } finally {
    closeSync(fd);
  }
}

/**
 * Under steady load some reader always holds a snapshot, so SQLite never starts the WAL over
 * by itself and the file grew by every commit. The writer thread restarts it once it passes
 * its page bound, waiting briefly for the readers of older snapshots.
 */
test('the writer thread starts the WAL over under steady reads and writes, so it stops growing', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sqlite-writer-'));
  const path = join(dir, 'db.sqlite');
  const setup = new SqliteDatabase(path);
  configureSqlite(setup);
  setup.exec('create table t (id integer primary key, v blob not null)');
  setup.close();

  const reader = new SqliteDatabase(path);
  configureSqlite(reader);
  reader.pragma('wal_autocheckpoint = 0');
  const count = reader.prepare('select count(*) from t').pluck();
  // Looking every 100 ms rather than every second gives a loaded machine (slow readers) many chances to restart.
  const writer = new SqliteWriter(path, { walRestartPages: 64, checkpointIntervalMs: 100 });
  let reading = true;
  // One read transaction after another, each open for 15 ms: there is always a snapshot in use.
  const readers = (async () => {
    while (reading) {
      reader.exec('begin');
      count.get();
      await sleep(15);
      reader.exec('commit');
    }
  })();
  try {
    const row = Buffer.alloc(4000, 7);
    const batches = 150;
    const first = { seq: -1 };
    for (let i = 0; i < batches; i++) {
      await writer.run(Array.from({ length: 10 }, () => ({ sql: 'insert into t (v) values (?)', parameters: [row] })));
      if (i === 0) first.seq = walSequence(`${path}-wal`);
      await sleep(20);
    }
    const written = batches * 10 * row.length;
    const walSize = statSync(`${path}-wal`).size;
    assert.ok(walSequence(`${path}-wal`) > first.seq, 'the WAL started over at least once');
    // Without a restart the WAL holds every row written and more (frame headers, index pages).
    assert.ok(walSize < written * 0.8, `the WAL holds ${walSize} bytes after ${written} bytes of rows`);
    assert.equal(count.get(), batches * 10, 'every row is there');
  } finally {
    reading = false;
    await readers;
    await writer.close();
    reader.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
