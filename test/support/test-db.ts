import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase } from '../../src/db/database.js';
import type { Db, DatabaseKind } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The database kinds this run covers: SQLite always, PostgreSQL when TEST_DATABASE_URL is set. */
export function dbKinds(): DatabaseKind[] {
  if (process.env.REQUIRE_POSTGRES === '1' && !process.env.TEST_DATABASE_URL) {
    throw new Error('REQUIRE_POSTGRES=1 but TEST_DATABASE_URL is not set');
  }
  return process.env.TEST_DATABASE_URL ? ['sqlite', 'postgres'] : ['sqlite'];
}

export interface TestDatabase {
  kind: DatabaseKind;
  url: string;
  db: Db;
  /** A directory private to this database (SQLite file, blobs). */
  dir: string;
  cleanup(): Promise<void>;
}

/** A fresh, empty database URL: a new SQLite file, or a new PostgreSQL database. */
export async function createDatabaseUrl(
  kind: DatabaseKind,
): Promise<{ url: string; dir: string; drop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'strongroom-test-'));
  if (kind === 'sqlite') {
    return {
      url: `sqlite:${join(dir, 'test.db')}`,
      dir,
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const admin = process.env.TEST_DATABASE_URL as string;
  const name = `sr_test_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  try {
    await client.query(`create database ${name}`);
  } finally {
    await client.end();
  }
  const u = new URL(admin);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    dir,
    drop: async () => {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      try {
        await c.query(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end();
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Opens a freshly migrated database of the given kind. */
export async function createTestDb(kind: DatabaseKind): Promise<TestDatabase> {
  const { url, dir, drop } = await createDatabaseUrl(kind);
  const db = openDatabase({ url, poolSize: 5 });
  await migrateToLatest(db);
  return {
    kind,
    url,
    db,
    dir,
    async cleanup() {
      await db.destroy();
      await drop();
    },
  };
}
