import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { Strongroom } from './strongroom.js';

const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

function stateVersionId(): string {
  const bytes = randomBytes(16);
  let s = 'sv-';
  for (const b of bytes) s += BASE58[b % 58];
  return s;
}

type Row = Record<string, unknown>;

/** The copies of `template`: the next seqs and serials of its workspace, a millisecond apart. */
function copies(template: Row, headSeq: number, count: number): Row[] {
  const base = Date.parse(String(template.created_at));
  const out: Row[] = [];
  for (let i = 1; i <= count; i++) {
    out.push({
      ...template,
      id: stateVersionId(),
      seq: headSeq + i,
      serial: Number(template.serial) + i,
      created_at: new Date(base + i).toISOString(),
      upload_token_hash: null,
      upload_token_sealed: null,
      json_upload_token_hash: null,
      json_upload_token_sealed: null,
    });
  }
  return out;
}

/**
 * Adds `count` copies of a workspace's newest state version straight into the database,
 * keeping the history gapless (seq) and the workspace's head counters in step. Creating
 * 100,000 versions through the API, one durable commit each, takes longer than the whole
 * benchmark may; the listing only needs the rows to exist. Returns null when the storage
 * layout is not the one this knows (the caller then seeds through the API).
 */
export async function seedVersionsInDatabase(
  sr: Strongroom,
  workspaceId: string,
  count: number,
): Promise<number | null> {
  try {
    if (sr.db === 'sqlite') return seedSqlite(sr, workspaceId, count);
    if (sr.databaseUrl) return await seedPostgres(sr.databaseUrl, workspaceId, count);
    return null;
  } catch {
    return null;
  }
}

function seedSqlite(sr: Strongroom, workspaceId: string, count: number): number | null {
  const dir = sr.dataDir();
  if (!dir) return null;
  const db = new Database(join(dir, 'strongroom.db'), { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 10000');
    const template = db
      .prepare('select * from tfe_state_versions where workspace_id = ? order by seq desc limit 1')
      .get(workspaceId) as Row | undefined;
    const head = db.prepare('select head_seq from tfe_state_heads where workspace_id = ?').get(workspaceId) as
      { head_seq: number } | undefined;
    if (!template || !head) return null;
    const rows = copies(template, Number(head.head_seq), count);
    const cols = Object.keys(template);
    const insert = db.prepare(
      `insert into tfe_state_versions (${cols.join(', ')}) values (${cols.map((c) => `@${c}`).join(', ')})`,
    );
    db.transaction(() => {
      for (const r of rows) insert.run(r);
      db.prepare(
        'update tfe_state_heads set head_seq = head_seq + ?, version_count = version_count + ? where workspace_id = ?',
      ).run(count, count, workspaceId);
    })();
    return count;
  } finally {
    db.close();
  }
}

async function seedPostgres(url: string, workspaceId: string, count: number): Promise<number | null> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const t = await client.query('select * from tfe_state_versions where workspace_id = $1 order by seq desc limit 1', [
      workspaceId,
    ]);
    const h = await client.query('select head_seq from tfe_state_heads where workspace_id = $1', [workspaceId]);
    const template = t.rows[0] as Row | undefined;
    const head = h.rows[0] as { head_seq: number | string } | undefined;
    if (!template || !head) return null;
    const rows = copies(template, Number(head.head_seq), count);
    const cols = Object.keys(template);
    await client.query('begin');
    for (let i = 0; i < rows.length; i += 500) {
      const batch = rows.slice(i, i + 500);
      const params: unknown[] = [];
      const tuples = batch.map((r) => `(${cols.map((c) => `$${params.push(r[c])}`).join(', ')})`);
      await client.query(`insert into tfe_state_versions (${cols.join(', ')}) values ${tuples.join(', ')}`, params);
    }
    await client.query(
      'update tfe_state_heads set head_seq = head_seq + $1, version_count = version_count + $1 where workspace_id = $2',
      [count, workspaceId],
    );
    await client.query('commit');
    return count;
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    await client.end();
  }
}

/** A positive 20-byte serial in the storage form (minimal lowercase hex, first digit non-zero). */
function randomStoredSerial(): string {
  const b = randomBytes(20);
  b[0] = (b[0]! & 0x7f) | 0x10;
  return b.toString('hex');
}

/**
 * Adds `count` revoked certificates to a PKI mount straight into the database: copies of
 * the row of one certificate already revoked through the API, each with a fresh serial
 * and the given revocation time. A CRL build reads only the serial and time of revoked
 * rows, so the copies stand for certificates signed and revoked one by one, which through
 * the API would take far longer than the benchmark may. Returns null when the storage
 * layout is not the one this knows.
 */
export async function seedRevokedInDatabase(
  sr: Strongroom,
  templateSerial: string,
  count: number,
  revokedAt: Date,
): Promise<number | null> {
  try {
    if (sr.db === 'sqlite') return seedRevokedSqlite(sr, templateSerial, count, revokedAt);
    if (sr.databaseUrl) return await seedRevokedPostgres(sr.databaseUrl, templateSerial, count, revokedAt);
    return null;
  } catch {
    return null;
  }
}

function revokedCopies(template: Row, count: number, revokedAt: Date): Row[] {
  const at = revokedAt.toISOString();
  return Array.from({ length: count }, () => ({
    ...template,
    serial: randomStoredSerial(),
    revoked_at: at,
    revocation_issuer_id: template.issuer_id,
  }));
}

function seedRevokedSqlite(sr: Strongroom, templateSerial: string, count: number, revokedAt: Date): number | null {
  const dir = sr.dataDir();
  if (!dir) return null;
  const db = new Database(join(dir, 'strongroom.db'), { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 10000');
    const template = db.prepare('select * from pki_certs where serial = ?').get(templateSerial) as Row | undefined;
    if (!template) return null;
    const cols = Object.keys(template);
    const insert = db.prepare(
      `insert into pki_certs (${cols.join(', ')}) values (${cols.map((c) => `@${c}`).join(', ')})`,
    );
    db.transaction(() => {
      for (const r of revokedCopies(template, count, revokedAt)) insert.run(r);
    })();
    return count;
  } finally {
    db.close();
  }
}

async function seedRevokedPostgres(
  url: string,
  templateSerial: string,
  count: number,
  revokedAt: Date,
): Promise<number | null> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const t = await client.query('select * from pki_certs where serial = $1', [templateSerial]);
    const template = t.rows[0] as Row | undefined;
    if (!template) return null;
    const cols = Object.keys(template);
    await client.query('begin');
    const rows = revokedCopies(template, count, revokedAt);
    for (let i = 0; i < rows.length; i += 1000) {
      const params: unknown[] = [];
      const tuples = rows.slice(i, i + 1000).map((r) => `(${cols.map((c) => `$${params.push(r[c])}`).join(', ')})`);
      await client.query(`insert into pki_certs (${cols.join(', ')}) values ${tuples.join(', ')}`, params);
    }
    await client.query('commit');
    return count;
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    await client.end();
  }
}
