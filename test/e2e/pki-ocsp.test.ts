import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, it } from 'node:test';
import { describeWithServer, startSecondNode } from '../support/test-server.js';
import { mountWithRoot, role } from './pki-issue-helpers.js';
import type { Vault } from './pki-issue-helpers.js';
import { opensslRootCa, signIntermediateCsr } from './pki-issuers-openssl.js';
import { defaultCrl, opensslSerial } from './pki-revocation-helpers.js';
import { vaultClient } from './vault-http.js';

const dir = mkdtempSync(join(tmpdir(), 'pki-ocsp-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
let fileNo = 0;
function file(content: string | Buffer): string {
  const p = join(dir, `f${fileNo++}`);
  writeFileSync(p, typeof content === 'string' ? `${content.trim()}\n` : content);
  return p;
}

/** openssl with stdout and stderr together (it reports verification on stderr); fails on a non-zero exit. */
function openssl(args: string[]): string {
  const r = spawnSync('openssl', args, { encoding: 'utf8' });
  const out = `${r.stdout}${r.stderr}`;
  assert.equal(r.status, 0, `openssl ${args.join(' ')}\n${out}`);
  return out;
}

/** openssl printing an OCSP error answer (it exits 1 for those). */
function opensslError(body: Buffer): string {
  const r = spawnSync('openssl', ['ocsp', '-respin', file(body), '-resp_text', '-noverify'], { encoding: 'utf8' });
  return `${r.stdout}${r.stderr}`;
}

/** openssl run asynchronously, for commands that talk to the in-process server. */
function opensslAsync(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('openssl', args);
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`openssl ${args.join(' ')} exited ${code}\n${out}`)),
    );
  });
}

const OCSP_TYPE = 'application/ocsp-response';
const MALFORMED = Buffer.from([0x30, 0x03, 0x0a, 0x01, 0x01]);
const UNAUTHORIZED = Buffer.from([0x30, 0x03, 0x0a, 0x01, 0x06]);

/**
 * `openssl ocsp` as a client against a URL: CertID of `certPem` (or `serial`) under `issuerPem`, answer verified
 * against `caPem`.
 */
function ocspQuery(o: {
  url: string;
  issuerPem: string;
  certPem?: string;
  serial?: string;
  trustPem?: string;
  nonce?: boolean;
  sha256?: boolean;
}): Promise<string> {
  const args = ['ocsp', '-issuer', file(o.issuerPem)];
  if (o.sha256) args.push('-sha256');
  if (o.certPem) args.push('-cert', file(o.certPem));
  if (o.serial) args.push('-serial', `0x${o.serial}`);
  if (o.nonce === false) args.push('-no_nonce');
  // The CA signs its own answers without embedding its certificate: openssl is told to trust it as the responder.
  return opensslAsync([...args, '-url', o.url, '-VAfile', file(o.trustPem ?? o.issuerPem), '-resp_text']);
}

/** A DER OCSPRequest written by openssl. */
function ocspRequest(issuerPem: string, serial: string, opts: { nonce?: boolean; sha256?: boolean } = {}): Buffer {
  const out = join(dir, `req${fileNo++}.der`);
  openssl([
    'ocsp',
    '-issuer',
    file(issuerPem),
    ...(opts.sha256 ? ['-sha256'] : []),
    '-serial',
    `0x${serial}`,
    ...(opts.nonce ? [] : ['-no_nonce']),
    '-reqout',
    out,
  ]);
  return readFileSync(out);
}

/** openssl's reading of a DER answer to `serial` under `issuerPem`, verified with `trustPem`. */
function readAnswer(body: Buffer, issuerPem: string, serial: string, opts: { sha256?: boolean } = {}): string {
  const digest = opts.sha256 ? ['-sha256'] : [];
  return openssl([
    'ocsp',
    '-respin',
    file(body),
    '-issuer',
    file(issuerPem),
    ...digest,
    '-serial',
    `0x${serial}`,
    '-VAfile',
    file(issuerPem),
    '-no_nonce',
    '-resp_text',
  ]);
}

const hexSerial = (colon: string): string => colon.replaceAll(':', '');
/** openssl's time format, e.g. `Feb  1 10:20:30 2026 GMT`. */
function opensslTime(unixSeconds: number): string {
  const d = new Date(unixSeconds * 1000);
  const mon = d.toUTCString().slice(8, 11);
  const pad = (n: number) => String(n).padStart(2, '0');
  const time = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  return `${mon} ${String(d.getUTCDate()).padStart(2, ' ')} ${time} ${d.getUTCFullYear()} GMT`;
}

/** A POST of raw bytes; `contentType: null` sends none. */
async function post(
  url: string,
  body: Buffer,
  contentType: string | null = 'application/ocsp-request',
): Promise<{ status: number; type: string; body: Buffer; headers: Headers }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: contentType === null ? {} : { 'content-type': contentType },
    body,
  });
  return {
    status: res.status,
    type: res.headers.get('content-type') ?? '',
    body: Buffer.from(await res.arrayBuffer()),
    headers: res.headers,
  };
}

async function get(url: string): Promise<{ status: number; type: string; body: Buffer; headers: Headers }> {
  const res = await fetch(url);
  return {
    status: res.status,
    type: res.headers.get('content-type') ?? '',
    body: Buffer.from(await res.arrayBuffer()),
    headers: res.headers,
  };
}

interface Setup {
  mount: string;
  rootPem: string;
  issuerId: string;
  ocspUrl: string;
}

async function issueLeased(
  v: Vault,
  mount: string,
  cn: string,
  issuerRef?: string,
): Promise<{ certPem: string; serial: string; leaseId: string }> {
  const path = issuerRef ? `${mount}/issuer/${issuerRef}/issue/leased` : `${mount}/issue/leased`;
  const r = await v('POST', path, { body: { common_name: cn } });
  assert.equal(r.status, 200, r.text);
  return { certPem: r.json.data.certificate, serial: hexSerial(r.json.data.serial_number), leaseId: r.json.lease_id };
}

async function revokeLease(v: Vault, leaseId: string): Promise<void> {
  const r = await v('PUT', 'sys/leases/revoke', { body: { lease_id: leaseId } });
  assert.equal(r.status, 204, r.text);
}

describeWithServer('pki ocsp', (server, kind) => {
  let v: Vault;
  before(async () => {
    v = vaultClient(server.url, server.rootToken);
  });

  async function setup(): Promise<Setup> {
    const m = await mountWithRoot(v);
    await role(v, m.mount, 'leased', { allow_any_name: true, key_type: 'ec', generate_lease: true, ttl: '1h' });
    return { ...m, ocspUrl: `${server.url}/v1/${m.mount}/ocsp` };
  }

  it('answers good, then revoked with time and reason; nonce echoed when sent; SHA-1 and SHA-256 CertIDs', async () => {
    const s = await setup();
    const cert = await issueLeased(v, s.mount, 'good.test');
    for (const nonce of [true, false]) {
      for (const sha256 of [false, true]) {
        const out = await ocspQuery({ url: s.ocspUrl, issuerPem: s.rootPem, certPem: cert.certPem, nonce, sha256 });
        assert.match(out, /Response verify OK/);
        assert.match(out, /: good\n/);
        assert.doesNotMatch(out, /WARNING/);
        assert.match(out, new RegExp(`Responder Id: CN = Root ${s.mount}`));
        assert.match(out, sha256 ? /Hash Algorithm: sha256/ : /Hash Algorithm: sha1/);
        if (nonce) assert.match(out, /OCSP Nonce:/);
        else assert.doesNotMatch(out, /OCSP Nonce/);
        // ocsp_expiry defaults to 12h.
        const thisUpdate = Date.parse(/This Update: (.*)/.exec(out)![1]!);
        const nextUpdate = Date.parse(/Next Update: (.*)/.exec(out)![1]!);
        assert.equal(nextUpdate - thisUpdate, 12 * 3600_000);
      }
    }

    await revokeLease(v, cert.leaseId);
    const revokedAt = (await v('GET', `${s.mount}/cert/${cert.serial}`)).json.data.revocation_time as number;
    assert.ok(revokedAt > 0);
    for (const nonce of [true, false]) {
      for (const sha256 of [false, true]) {
        const out = await ocspQuery({ url: s.ocspUrl, issuerPem: s.rootPem, certPem: cert.certPem, nonce, sha256 });
        assert.match(out, /Response verify OK/);
        assert.match(out, /: revoked\n/);
        assert.match(out, /Reason: unspecified/);
        assert.match(out, new RegExp(`Revocation Time: ${opensslTime(revokedAt)}`));
      }
    }
  });

  it('answers unknown, signed by the default issuer, for a CertID of no issuer of the mount', async () => {
    const s = await setup();
    const other = await mountWithRoot(v);
    const out = await ocspQuery({
      url: s.ocspUrl,
      issuerPem: other.rootPem,
      serial: '1234abcd',
      trustPem: s.rootPem,
    });
    assert.match(out, /Response verify OK/);
    assert.match(out, /0x1234ABCD: unknown/i);
    assert.match(out, new RegExp(`Responder Id: CN = Root ${s.mount}`));
  });

  it('each issuer answers for its own certificates; an issuer without ocsp-signing is unauthorized', async () => {
    const s = await setup();
    const r = await v('POST', `${s.mount}/issuers/generate/root/internal`, {
      body: { common_name: `Second ${s.mount}`, key_type: 'rsa', key_bits: 2048, issuer_name: 'second' },
    });
    assert.equal(r.status, 200, r.text);
    const secondPem = r.json.data.certificate as string;
    const cert = await issueLeased(v, s.mount, 'second.test', 'second');
    let out = await ocspQuery({ url: s.ocspUrl, issuerPem: secondPem, certPem: cert.certPem });
    assert.match(out, /Response verify OK/);
    assert.match(out, /: good\n/);
    assert.match(out, new RegExp(`Responder Id: CN = Second ${s.mount}`));
    assert.match(out, /Signature Algorithm: sha256WithRSAEncryption/);

    const p = await v('PATCH', `${s.mount}/issuer/second`, {
      body: { usage: 'read-only,issuing-certificates,crl-signing' },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    assert.equal(p.status, 200, p.text);
    const denied = await post(s.ocspUrl, ocspRequest(secondPem, cert.serial));
    assert.equal(denied.status, 401);
    assert.equal(denied.type, OCSP_TYPE);
    assert.deepEqual(denied.body, UNAUTHORIZED);
    out = opensslError(denied.body);
    assert.match(out, /Responder Error: unauthorized \(6\)/);
  });

  it('GET takes the base64 request URL-escaped or not; answers without nonce may be cached, with one not', async () => {
    const s = await setup();
    const cert = await issueLeased(v, s.mount, 'get.test');
    // Requests whose base64 holds `/` and `+`, the characters clients escape or not.
    const seen = new Set<string>();
    for (let i = 0; i < 64 && seen.size < 2; i++) {
      const req = ocspRequest(s.rootPem, i === 0 ? cert.serial : `${(0x1000 + i * 7919).toString(16)}`, {
        sha256: i % 2 === 1,
      });
      const b64 = req.toString('base64');
      const special = ['/', '+'].filter((c) => b64.includes(c) && !seen.has(c));
      if (i > 0 && special.length === 0) continue;
      special.forEach((c) => seen.add(c));
      const serial = i === 0 ? cert.serial : (0x1000 + i * 7919).toString(16);
      for (const form of [
        encodeURIComponent(b64),
        b64,
        b64.replace(/=+$/, ''),
        b64.replaceAll('+', '-').replaceAll('/', '_'),
      ]) {
        const res = await get(`${s.ocspUrl}/${form}`);
        assert.equal(res.status, 200, `${form}: ${res.body.toString('hex')}`);
        assert.equal(res.type, OCSP_TYPE);
        assert.match(res.headers.get('cache-control') ?? '', /^max-age=\d+, public, no-transform, must-revalidate$/);
        assert.ok(res.headers.get('expires'));
        const out = readAnswer(res.body, s.rootPem, serial, { sha256: i % 2 === 1 });
        assert.match(out, /Response verify OK/);
        assert.match(out, /: good\n/);
      }
    }
    assert.deepEqual([...seen].sort(), ['+', '/']);

    const withNonce = ocspRequest(s.rootPem, cert.serial, { nonce: true });
    const res = await get(`${s.ocspUrl}/${encodeURIComponent(withNonce.toString('base64'))}`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('cache-control'), 'no-cache, no-store');
    const out = openssl([
      'ocsp',
      '-reqin',
      file(withNonce),
      '-respin',
      file(res.body),
      '-VAfile',
      file(s.rootPem),
      '-resp_text',
    ]);
    assert.match(out, /Response verify OK/);
    assert.doesNotMatch(out, /WARNING/);
  });

  it('a malformed request gets an OCSP malformedRequest answer, never JSON', async () => {
    const s = await setup();
    const valid = ocspRequest(s.rootPem, '01');
    const cases: Array<[string, () => Promise<{ status: number; type: string; body: Buffer }>]> = [
      ['POST garbage', () => post(s.ocspUrl, Buffer.from('not an OCSP request'))],
      ['POST empty', () => post(s.ocspUrl, Buffer.alloc(0))],
      ['POST truncated', () => post(s.ocspUrl, valid.subarray(0, valid.length - 3))],
      ['POST over 2048 bytes', () => post(s.ocspUrl, Buffer.concat([valid, Buffer.alloc(3000)]))],
      ['POST over the body limit', () => post(s.ocspUrl, Buffer.alloc(200 * 1024, 0x30))],
      // An OCSP POST is one by its path, whatever its Content-Type (or none) says.
      [
        'POST garbage as octet-stream',
        () => post(s.ocspUrl, Buffer.from('not an OCSP request'), 'application/octet-stream'),
      ],
      ['POST garbage as text/plain', () => post(s.ocspUrl, Buffer.from('not an OCSP request'), 'text/plain')],
      ['POST garbage as JSON', () => post(s.ocspUrl, Buffer.from('{"not":'), 'application/json')],
      ['POST garbage without Content-Type', () => post(s.ocspUrl, Buffer.from([0x30, 0x82, 0xff]), null)],
      ['POST truncated without Content-Type', () => post(s.ocspUrl, valid.subarray(0, valid.length - 3), null)],
      ['POST to ocsp/ as text/plain', () => post(`${s.ocspUrl}/`, Buffer.from('xx'), 'text/plain')],
      ['GET not base64', () => get(`${s.ocspUrl}/not*base64!`)],
      ['GET base64 of garbage', () => get(`${s.ocspUrl}/${Buffer.from('garbage here').toString('base64')}`)],
      ['GET without request', () => get(s.ocspUrl)],
      // Escapes that do not decode are refused before routing; still an OCSP answer.
      ['GET bad escape %zz', () => get(`${s.ocspUrl}/%zz`)],
      ['GET truncated escape', () => get(`${s.ocspUrl}/${valid.toString('base64').slice(0, 20)}%`)],
    ];
    for (const [label, send] of cases) {
      const res = await send();
      assert.equal(res.status, 400, label);
      assert.equal(res.type, OCSP_TYPE, label);
      assert.deepEqual(res.body, MALFORMED, label);
      assert.match(opensslError(res.body), /Responder Error: malformedrequest \(1\)/, label);
    }
    // No token is needed, and nothing else about the mount changed.
    assert.equal((await post(s.ocspUrl, valid)).status, 200);
  });

  it('a DER request with another Content-Type, or none, is answered as an OCSP request', async () => {
    const s = await setup();
    const cert = await issueLeased(v, s.mount, 'untyped.test');
    const req = ocspRequest(s.rootPem, cert.serial);
    for (const type of [
      null,
      'application/octet-stream',
      'text/plain',
      'application/json',
      'application/x-www-form-urlencoded',
    ]) {
      const res = await post(s.ocspUrl, req, type);
      assert.equal(res.status, 200, String(type));
      assert.equal(res.type, OCSP_TYPE, String(type));
      const out = readAnswer(res.body, s.rootPem, cert.serial);
      assert.match(out, /Response verify OK/, String(type));
      assert.match(out, /: good\n/, String(type));
    }
  });

  it("a URL that does not decode: the OCSP endpoint answers in OCSP, other paths in their API's JSON", async () => {
    const s = await setup();
    const vaultPaths = [`/v1/${s.mount}/ca/%zz`, `/v1/${s.mount}/roles/ocsp/%zz`, '/v1/sys/mounts/%zz', '/v1/%zz'];
    for (const path of vaultPaths) {
      const res = await get(`${server.url}${path}`);
      assert.equal(res.status, 400, path);
      assert.match(res.type, /^application\/json/, path);
      const body = JSON.parse(res.body.toString('utf8')) as { errors: string[] };
      assert.equal(body.errors.length, 1, path);
      assert.match(body.errors[0]!, /not a valid url/, path);
    }
    const tfe = await get(`${server.url}/api/v2/organizations/%zz`);
    assert.equal(tfe.status, 400);
    assert.match(tfe.type, /^application\/vnd\.api\+json/);
    assert.equal(
      (JSON.parse(tfe.body.toString('utf8')) as { errors: Array<{ status: string }> }).errors[0]!.status,
      '400',
    );
    // A POST elsewhere in the mount still reads its body as JSON.
    const roleWrite = await post(`${server.url}/v1/${s.mount}/roles/ocsp`, Buffer.from('{"not":'), 'text/plain');
    assert.equal(roleWrite.status, 400);
    assert.match(roleWrite.type, /^application\/json/);
  });

  it('revoke: OCSP answers revoked with the time the CRL lists', async () => {
    const s = await setup();
    const cert = await issueLeased(v, s.mount, 'crl.test');
    const serialColon = cert.serial.replace(/(..)(?!$)/g, '$1:');
    assert.doesNotMatch(
      (await defaultCrl(server.url, s.mount, s.rootPem)).text,
      new RegExp(opensslSerial(serialColon)),
    );
    assert.match(
      await ocspQuery({ url: s.ocspUrl, issuerPem: s.rootPem, certPem: cert.certPem, nonce: false }),
      /: good\n/,
    );
    const r = await v('POST', `${s.mount}/revoke`, { body: { serial_number: serialColon } });
    assert.equal(r.status, 200, r.text);
    const crl = await defaultCrl(server.url, s.mount, s.rootPem);
    const entry = new RegExp(`Serial Number: ${opensslSerial(serialColon)}\\s+Revocation Date: (.+)`).exec(crl.text);
    assert.ok(entry, crl.text);
    const out = await ocspQuery({ url: s.ocspUrl, issuerPem: s.rootPem, certPem: cert.certPem, nonce: false });
    assert.match(out, /Response verify OK/);
    assert.match(out, /: revoked\n/);
    assert.equal(/Revocation Time: (.+)/.exec(out)![1], entry[1]);
    assert.equal(/Revocation Time: (.+)/.exec(out)![1], opensslTime(r.json.data.revocation_time));
  });

  it('config/crl: ocsp_expiry sets nextUpdate (0: none), ocsp_disable answers unauthorized', async () => {
    const s = await setup();
    const cert = await issueLeased(v, s.mount, 'config.test');
    const windowOf = (out: string): number | undefined => {
      const next = /Next Update: (.*)/.exec(out);
      return next ? Date.parse(next[1]!) - Date.parse(/This Update: (.*)/.exec(out)![1]!) : undefined;
    };
    const query = () => ocspQuery({ url: s.ocspUrl, issuerPem: s.rootPem, certPem: cert.certPem, nonce: false });
    assert.equal(windowOf(await query()), 12 * 3600_000);
    const config = async (body: Record<string, unknown>) => {
      const r = await v('POST', `${s.mount}/config/crl`, { body });
      assert.equal(r.status, 200, r.text);
    };
    // The answer kept under the old window is not served again.
    await config({ ocsp_expiry: '1h' });
    assert.equal(windowOf(await query()), 3600_000);
    await config({ ocsp_expiry: '0' });
    const none = await query();
    assert.match(none, /: good\n/);
    assert.equal(windowOf(none), undefined);

    await config({ ocsp_disable: true });
    const req = ocspRequest(s.rootPem, cert.serial);
    for (const res of [
      await post(s.ocspUrl, req),
      await get(`${s.ocspUrl}/${encodeURIComponent(req.toString('base64'))}`),
    ]) {
      assert.equal(res.status, 401);
      assert.equal(res.type, OCSP_TYPE);
      assert.deepEqual(res.body, UNAUTHORIZED);
    }
    await config({ ocsp_disable: false });
    assert.equal((await post(s.ocspUrl, req)).status, 200);
  });

  it('concurrent requests about different certificates, read together, each get their own status', async () => {
    const s = await setup();
    const certs = [];
    for (let i = 0; i < 4; i++) certs.push(await issueLeased(v, s.mount, `c${i}.test`));
    await revokeLease(v, certs[1]!.leaseId);
    await revokeLease(v, certs[3]!.leaseId);
    const reqs = certs.map((c, i) => ocspRequest(s.rootPem, c.serial, { sha256: i % 2 === 0 }));
    const answers = await Promise.all(Array.from({ length: 48 }, (_, k) => post(s.ocspUrl, reqs[k % 4]!)));
    for (let k = 0; k < 48; k++) {
      const i = k % 4;
      const out = readAnswer(answers[k]!.body, s.rootPem, certs[i]!.serial, { sha256: i % 2 === 0 });
      assert.match(out, /Response verify OK/);
      assert.match(out, i % 2 === 1 ? /: revoked\n/ : /: good\n/, `request ${k}`);
    }
  });

  it('a revoked intermediate issuer is answered revoked by its parent', async () => {
    const mount = `pki-ocsp-int-${kind}-${process.pid}`;
    let r = await v('POST', `sys/mounts/${mount}`, { body: { type: 'pki', config: { max_lease_ttl: '87600h' } } });
    assert.equal(r.status, 204, r.text);
    const parent = opensslRootCa('OCSP Imported Root');
    r = await v('POST', `${mount}/config/ca`, { body: { pem_bundle: `${parent.keyPem}\n${parent.certPem}` } });
    assert.equal(r.status, 200, r.text);
    r = await v('POST', `${mount}/intermediate/generate/internal`, {
      body: { common_name: 'OCSP Int CA', key_type: 'ec' },
    });
    assert.equal(r.status, 200, r.text);
    const intPem = signIntermediateCsr(r.json.data.csr, parent.certPem, parent.keyPem);
    r = await v('POST', `${mount}/intermediate/set-signed`, { body: { certificate: intPem } });
    assert.equal(r.status, 200, r.text);
    const intId = r.json.data.imported_issuers[0];
    const url = `${server.url}/v1/${mount}/ocsp`;
    assert.match(await ocspQuery({ url, issuerPem: parent.certPem, certPem: intPem, nonce: false }), /: good\n/);
    r = await v('POST', `${mount}/issuer/${intId}/revoke`, { body: {} });
    assert.equal(r.status, 200, r.text);
    const out = await ocspQuery({ url, issuerPem: parent.certPem, certPem: intPem, nonce: false });
    assert.match(out, /Response verify OK/);
    assert.match(out, /: revoked\n/);
    assert.match(out, new RegExp(`Revocation Time: ${opensslTime(r.json.data.revocation_time)}`));
  });

  it('two nodes on one database: after a revocation on one, the other answers revoked at once', async () => {
    const s = await setup();
    const node2 = await startSecondNode(server);
    try {
      const cert = await issueLeased(v, s.mount, 'nodes.test');
      const req = ocspRequest(s.rootPem, cert.serial);
      const url2 = `${node2.url}/v1/${s.mount}/ocsp`;
      // Both nodes have signed and kept a `good` answer.
      for (const url of [s.ocspUrl, url2]) {
        for (let i = 0; i < 2; i++)
          assert.match(readAnswer((await post(url, req)).body, s.rootPem, cert.serial), /: good\n/);
      }
      await revokeLease(v, cert.leaseId);
      for (const url of [url2, s.ocspUrl]) {
        const out = readAnswer((await post(url, req)).body, s.rootPem, cert.serial);
        assert.match(out, /Response verify OK/);
        assert.match(out, /: revoked\n/);
      }
    } finally {
      await node2.close();
    }
  });
});
