/**
 * Private keys at rest: a key made by issue is returned once and never stored, in any
 * format; CA keys are stored sealed, never as plain key material. Every table of the
 * database (and, on SQLite, every file of the data directory) is searched for the key in
 * each encoding it could take.
 */
import assert from 'node:assert/strict';
import { createPrivateKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { before, it } from 'node:test';
import { sql } from 'kysely';
import { describeWithServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import { makeServerClient, mountWithRoot, pemToDer, role } from './pki-issue-helpers.js';
import type { Vault } from './pki-issue-helpers.js';

/** Reads a returned private key (PEM, or base64 DER in any of the three structures) with node:crypto. */
function readKey(privateKey: string, der: boolean): KeyObject {
  if (!der) return createPrivateKey(privateKey);
  const bytes = Buffer.from(privateKey, 'base64');
  for (const type of ['pkcs8', 'pkcs1', 'sec1'] as const) {
    try {
      return createPrivateKey({ key: bytes, format: 'der', type });
    } catch {
      // try the next structure
    }
  }
  throw new Error('unreadable private key');
}

/**
 * The forms a stored private key would show: its secret (the JWK `d`) raw, in hex and
 * base64, and the whole key as PKCS#8 DER and base64 and as the first line of its PEM.
 */
function keyForms(privateKey: string, der: boolean): Buffer[] {
  const key = readKey(privateKey, der);
  const d = Buffer.from(key.export({ format: 'jwk' }).d as string, 'base64url');
  const pkcs8 = key.export({ format: 'der', type: 'pkcs8' });
  const pemLine = (key.export({ format: 'pem', type: 'pkcs8' }) as string).split('\n')[1] as string;
  return [
    d,
    Buffer.from(d.toString('hex')),
    Buffer.from(d.toString('hex').toUpperCase()),
    Buffer.from(d.toString('base64')),
    Buffer.from(d.toString('base64url')),
    pkcs8,
    Buffer.from(pkcs8.toString('base64')),
    Buffer.from(pemLine),
  ];
}

async function databaseContents(server: TestServer): Promise<Buffer[]> {
  const db = server.deps.core.db;
  const tables =
    db.kind === 'sqlite'
      ? (await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(db.kysely)).rows.map(
          (r) => r.name,
        )
      : (
          await sql<{
            name: string;
          }>`select table_name as name from information_schema.tables where table_schema = current_schema()`.execute(
            db.kysely,
          )
        ).rows.map((r) => r.name);
  assert.ok(tables.includes('pki_keys') && tables.includes('pki_certs'), tables.join(','));
  const values: Buffer[] = [];
  for (const t of tables) {
    const rows = (await sql<Record<string, unknown>>`select * from ${sql.table(t)}`.execute(db.kysely)).rows;
    for (const row of rows) {
      for (const v of Object.values(row)) {
        if (v === null || v === undefined) continue;
        values.push(
          Buffer.isBuffer(v)
            ? v
            : v instanceof Uint8Array
              ? Buffer.from(v)
              : Buffer.from(typeof v === 'string' ? v : (JSON.stringify(v) ?? '')),
        );
      }
    }
  }
  return values;
}

function filesUnder(dir: string): Buffer[] {
  const out: Buffer[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p));
    else out.push(readFileSync(p));
  }
  return out;
}

function assertAbsent(haystack: Buffer[], needles: Buffer[], what: string): void {
  for (const n of needles) for (const h of haystack) assert.ok(!h.includes(n), `${what} found at rest`);
}

describeWithServer('pki private keys at rest', (server, kind) => {
  let v: Vault;
  before(async () => {
    v = makeServerClient(server);
  });

  it('never stores a key made by issue, in any key type or output format; stores the certificate', async () => {
    const { mount } = await mountWithRoot(v);
    await role(v, mount, 'ec', { allow_any_name: true, key_type: 'ec' });
    await role(v, mount, 'rsa', { allow_any_name: true, key_type: 'rsa' });
    await role(v, mount, 'ed', { allow_any_name: true, key_type: 'ed25519' });
    const issued: Array<{ key: string; der: boolean; cert: string; certDer: Buffer }> = [];
    for (const [name, body] of [
      ['ec', {}],
      ['ec', { format: 'der' }],
      ['ec', { private_key_format: 'pkcs8' }],
      ['ec', { format: 'pem_bundle' }],
      ['rsa', {}],
      ['rsa', { format: 'der', private_key_format: 'pkcs8' }],
      ['ed', {}],
      ['ed', { format: 'der' }],
    ] as const) {
      const r = await v('POST', `${mount}/issue/${name}`, { body: { common_name: 'k.test', ...body } });
      assert.equal(r.status, 200, r.text);
      const der = (body as { format?: string }).format === 'der';
      issued.push({
        key: r.json.data.private_key,
        der,
        cert: r.json.data.serial_number,
        certDer: der
          ? Buffer.from(r.json.data.certificate, 'base64')
          : pemToDer(r.json.data.certificate.split(/(?=-----BEGIN CERTIFICATE)/).pop()),
      });
    }
    const contents = await databaseContents(server);
    // The search does find what is stored: each certificate's DER.
    for (const i of issued)
      assert.ok(
        contents.some((c) => c.includes(i.certDer)),
        `certificate ${i.cert} is stored`,
      );
    for (const i of issued) assertAbsent(contents, keyForms(i.key, i.der), `the issued key of ${i.cert}`);
    if (kind === 'sqlite') {
      // The database file, its WAL and the blob store all live in the test's directory.
      const files = filesUnder(dirname(server.config.dataDir));
      for (const i of issued)
        assertAbsent(files, keyForms(i.key, i.der), `the issued key of ${i.cert} (data directory)`);
    }
    // The certificates themselves are stored.
    const listed = (await v('LIST', `${mount}/certs`)).json.data.keys as string[];
    for (const i of issued) assert.ok(listed.includes(i.cert), i.cert);
  });

  it('stores CA keys sealed: an exported root or key never appears as key material at rest', async () => {
    const m = `pki-sealed-${kind}`;
    assert.equal((await v('POST', `sys/mounts/${m}`, { body: { type: 'pki' } })).status, 204);
    const root = await v('POST', `${m}/root/generate/exported`, {
      body: { common_name: 'Sealed Root', key_type: 'ec' },
    });
    assert.equal(root.status, 200, root.text);
    const key = await v('POST', `${m}/keys/generate/exported`, { body: { key_type: 'ed25519' } });
    assert.equal(key.status, 200, key.text);
    const csr = await v('POST', `${m}/intermediate/generate/exported`, {
      body: { common_name: 'Sealed Int', key_type: 'ec', key_bits: 384 },
    });
    assert.equal(csr.status, 200, csr.text);
    const contents = await databaseContents(server);
    for (const k of [root.json.data.private_key, key.json.data.private_key, csr.json.data.private_key] as string[]) {
      assertAbsent(contents, keyForms(k, false), 'a CA key');
    }
    // The keys are there, usable: the root still signs.
    await role(v, m, 'r', { allow_any_name: true, key_type: 'ec' });
    assert.equal((await v('POST', `${m}/issue/r`, { body: { common_name: 'after.test', ttl: '1h' } })).status, 200);
  });
});
