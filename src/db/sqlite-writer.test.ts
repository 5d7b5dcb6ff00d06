import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, readSync, closeSync, rmSync, statSync, writeFileSync } from 'node:fs';
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

/** A new database file in a directory of its own, set up as the server sets up its connections, with `schema` run. */
function databaseWith(schema: string): { dir: string; path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'sqlite-writer-'));
  const path = join(dir, 'db.sqlite');
  const setup = new SqliteDatabase(path);
  configureSqlite(setup);
  setup.exec(schema);
  setup.close();
  return { dir, path };
}

/**
 * Under steady load some reader always holds a snapshot, so SQLite never starts the WAL over
 * by itself and the file grew by every commit. The writer thread restarts it once it passes
 * its page bound, waiting briefly for the readers of older snapshots.
 */
test('the writer thread starts the WAL over under steady reads and writes, so it stops growing', async () => {
  const { dir, path } = databaseWith('create table t (id integer primary key, v blob not null)');

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

const hasStrace = spawnSync('strace', ['-V']).status === 0;

/**
 * Decision 0062: a write-only unit commits without an fsync inside SQLite's write lock (the
 * WAL-index lock byte 120 of the `-shm` file) and fsyncs the WAL once the lock is released,
 * before it is answered. Traced with strace in a process of its own, since the order of the
 * system calls is what is asserted: each unit's frames are written under the lock, the lock
 * is released, and an fsync of the WAL follows before the next unit (sent only once the one
 * before was answered) takes the lock.
 */
test(
  'a write-only unit fsyncs the WAL after the write lock is released, before it is answered',
  { skip: hasStrace ? false : 'strace is not installed' },
  () => {
    const { dir, path } = databaseWith('create table t (id integer primary key, v integer not null)');
    const units = 6;
    const script = join(dir, 'child.mjs');
    writeFileSync(
      script,
      [
        `import { SqliteWriter } from ${JSON.stringify(new URL('./sqlite-writer.js', import.meta.url).href)};`,
        `const w = new SqliteWriter(${JSON.stringify(path)}, { checkpointIntervalMs: 3_600_000 });`,
        `for (let i = 0; i < ${units}; i++) await w.run([{ sql: 'insert into t (v) values (?)', parameters: [i] }]);`,
        `process.stdout.write('units-answered\\n');`,
        'await w.close();',
      ].join('\n'),
    );
    const trace = join(dir, 'trace');
    try {
      const run = spawnSync(
        'strace',
        ['-f', '-y', '-e', 'trace=fsync,fdatasync,pwrite64,fcntl,write', '-o', trace, process.execPath, script],
        { encoding: 'utf8' },
      );
      assert.equal(run.status, 0, run.stderr);
      let locked = false;
      let framesWritten = false;
      let unsynced = false;
      const seen = { commits: 0, syncedAfterUnlock: 0, answeredUnsynced: 0 };
      for (const line of readFileSync(trace, 'utf8').split('\n')) {
        if (line.includes('units-answered')) break;
        const writeLockByte =
          /-shm>, F_SETLK, \{l_type=F_(WRLCK|UNLCK), l_whence=SEEK_SET, l_start=120, l_len=1\}\) = 0/.exec(line);
        if (writeLockByte?.[1] === 'WRLCK') {
          if (unsynced) seen.answeredUnsynced++;
          locked = true;
          framesWritten = false;
        } else if (writeLockByte?.[1] === 'UNLCK') {
          if (framesWritten) {
            seen.commits++;
            unsynced = true;
          }
          locked = false;
        } else if (/pwrite64\(\d+<[^>]*-wal>/.test(line) && locked) framesWritten = true;
        else if (/f(data)?sync\(\d+<[^>]*-wal>\)\s+= 0/.test(line) && !locked && unsynced) {
          seen.syncedAfterUnlock++;
          unsynced = false;
        }
      }
      assert.deepEqual(seen, { commits: units, syncedAfterUnlock: units, answeredUnsynced: 0 });
      assert.equal(unsynced, false, 'the last unit was answered before its fsync');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
