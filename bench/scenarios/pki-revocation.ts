import { generateCsrs } from '../generators/csr.js';
import { api, authHeaders, digString } from '../lib/api.js';
import { compareRounds, ratiosOf } from '../lib/compare.js';
import type { Contender } from '../lib/compare.js';
import { httpRequest, median, runAutocannon } from '../lib/load.js';
import { ocspRequest, startOpensslOcsp } from '../lib/pki-peers.js';
import { LEAF_TTL, PKI_MOUNT, ROLE_EC, benchPki, deferCrlRebuilds, signCsr } from '../lib/pki.js';
import type { Strongroom } from '../lib/strongroom.js';
import { FeatureMissing, Skip } from '../lib/types.js';
import type { Scenario } from '../lib/types.js';

export const pkiOcsp: Scenario = {
  name: 'pki-ocsp',
  title: `POST /v1/${PKI_MOUNT}/ocsp for a certificate of the mount (status good), EC P-256 CA`,
  target: '>= 5,000 responses/s at 64 connections',
  peer: 'openssl ocsp -index ... -port (one process, EC P-256 CA, index with the certificate)',
  defaultConnections: 64,
  notes:
    'The request carries no nonce, so Strongroom serves the answer it signed before, after reading the serial\'s ' +
    'revocation status from the database (docs/decisions/0009). openssl\'s ' +
    'responder handles one connection at a time and closes it after each answer, so its numbers include a TCP ' +
    'connect per request; Strongroom keeps connections alive.',
  async run(ctx) {
    const sr = await ctx.strongroom();
    const pki = await benchPki(sr);
    const [csr] = await generateCsrs({ count: 1 });
    if (!csr) throw new Error('no CSR');
    const cert = await signCsr(sr, csr.pem, csr.commonName);
    const request = ocspRequest(ctx.tmpDir, 'strongroom', pki.caPem, cert.certificate);
    const headers = { 'content-type': 'application/ocsp-request' };
    // The GET form first: without a body, a missing route answers 404 rather than a body-parsing error.
    const viaGet = await httpRequest(`${sr.url}/v1/${PKI_MOUNT}/ocsp/${encodeURIComponent(request.toString('base64'))}`, { method: 'GET' });
    if (viaGet.status === 404 || viaGet.status === 405) throw new FeatureMissing(`GET /v1/${PKI_MOUNT}/ocsp/<request> answered ${viaGet.status}`);
    const probe = await httpRequest(`${sr.url}/v1/${PKI_MOUNT}/ocsp`, { method: 'POST', headers, body: request });
    if (probe.status === 404 || probe.status === 405) throw new FeatureMissing(`POST /v1/${PKI_MOUNT}/ocsp answered ${probe.status}`);
    if (probe.status !== 200) throw new Error(`OCSP answered ${probe.status}: ${probe.body.toString('utf8').slice(0, 200)}`);
    const contenders: Contender[] = [
      {
        label: 'Strongroom',
        kind: 'strongroom',
        pid: sr.pid,
        measure: (seconds) => runAutocannon({ url: `${sr.url}/v1/${PKI_MOUNT}/ocsp`, method: 'POST', headers, body: request, connections: ctx.connections, seconds }),
      },
    ];
    const facts: { label: string; value: string }[] = [];
    try {
      const peer = await startOpensslOcsp(ctx);
      contenders.push({
        label: 'openssl ocsp',
        kind: 'peer',
        pid: peer.pid,
        measure: (seconds) => runAutocannon({ url: `${peer.url}/`, method: 'POST', headers, body: peer.request, connections: ctx.connections, seconds }),
      });
    } catch (err) {
      if (!(err instanceof Skip)) throw err;
      facts.push({ label: 'peer skipped', value: err.message });
    }
    const rows = await compareRounds(ctx, contenders);
    const rps = rows[0]?.median.reqPerSec ?? 0;
    return {
      rows,
      ratios: ratiosOf(rows, 'req/s'),
      facts,
      verdict: { met: rps >= 5000, detail: `${Math.round(rps)} responses/s at ${ctx.connections} connections (target >= 5,000)` },
    };
  },
};

/** Signs `count` certificates (the same few CSRs over and over) with 16 requests in flight; stops at `maxSeconds`. */
async function issueMany(sr: Strongroom, count: number, maxSeconds: number): Promise<string[]> {
  const csrs = await generateCsrs({ count: 8 });
  const first = csrs[0];
  if (!first) throw new Error('no CSR');
  await signCsr(sr, first.pem, first.commonName);
  const serials: string[] = [];
  const headers = authHeaders(sr, 'vault');
  const url = `${sr.url}/v1/${PKI_MOUNT}/sign/${ROLE_EC}`;
  const bodies = csrs.map((c) => Buffer.from(JSON.stringify({ csr: c.pem, common_name: c.commonName, ttl: LEAF_TTL })));
  const deadline = performance.now() + maxSeconds * 1000;
  let started = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (started < count && performance.now() < deadline) {
        const i = started++;
        const res = await httpRequest(url, { method: 'POST', headers, body: bodies[i % bodies.length] as Buffer });
        if (res.status !== 200) throw new Error(`sign answered ${res.status}: ${res.body.toString('utf8').slice(0, 200)}`);
        serials.push(digString(JSON.parse(res.body.toString('utf8')), 'data', 'serial_number'));
      }
    }),
  );
  return serials;
}

/** Signs and revokes one certificate, so a missing revoke route skips before any bulk work. */
async function probeRevoke(sr: Strongroom): Promise<void> {
  const serials = await issueMany(sr, 1, 30);
  await revokeAll(sr, serials, 30);
}

/** Revokes every serial with 16 requests in flight; returns how many were revoked. */
async function revokeAll(sr: Strongroom, serials: string[], maxSeconds: number): Promise<number> {
  const headers = authHeaders(sr, 'vault');
  const url = `${sr.url}/v1/${PKI_MOUNT}/revoke`;
  const deadline = performance.now() + maxSeconds * 1000;
  let next = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < serials.length && performance.now() < deadline) {
        const serial = serials[next++] as string;
        const res = await httpRequest(url, { method: 'POST', headers, body: Buffer.from(JSON.stringify({ serial_number: serial })) });
        if (res.status === 404 || res.status === 405) throw new FeatureMissing(`POST /v1/${PKI_MOUNT}/revoke answered ${res.status}`);
        if (res.status !== 200) throw new Error(`revoke answered ${res.status}: ${res.body.toString('utf8').slice(0, 200)}`);
        done++;
      }
    }),
  );
  return done;
}

export const pkiRevoke: Scenario = {
  name: 'pki-revoke',
  title: `POST /v1/${PKI_MOUNT}/revoke with auto_rebuild on, each request a different issued certificate`,
  target: '>= 1,000 revocations/s',
  peer: 'none',
  defaultConnections: 64,
  notes:
    'Certificates are signed beforehand (not timed). Each revocation records the serial and its time durably; ' +
    'what it costs beyond that depends on whether the CRL is rebuilt on every revocation (Vault\'s default) or ' +
    'later in one go.',
  async run(ctx) {
    const sr = await ctx.strongroom();
    await benchPki(sr);
    // Revocations are recorded durably; the CRL follows on its automatic rebuild schedule.
    const deferred = await deferCrlRebuilds(sr);
    await probeRevoke(sr);
    const perRound = ctx.size(6_000, 40);
    const rounds = ctx.opts.rounds;
    const serials = await issueMany(sr, perRound * rounds + ctx.connections * (rounds + 1), ctx.size(60, 30));
    ctx.log(`signed ${serials.length} certificates to revoke`);
    const headers = authHeaders(sr, 'vault');
    const rows = await compareRounds({ ...ctx, opts: { ...ctx.opts, warmupSeconds: 0 } }, [
      {
        label: 'Strongroom',
        kind: 'strongroom',
        pid: sr.pid,
        measure: (seconds) => {
          // A run stops at its time or when this round's share of serials is used up; a serial is never revoked twice.
          const mine = serials.splice(0, Math.min(serials.length, perRound + ctx.connections));
          let i = 0;
          return runAutocannon({
            url: sr.url,
            connections: ctx.connections,
            seconds,
            amount: Math.max(1, mine.length - ctx.connections),
            requests: [{
              method: 'POST',
              path: `/v1/${PKI_MOUNT}/revoke`,
              headers,
              setupRequest: (req) => ({ ...req, body: JSON.stringify({ serial_number: mine[Math.min(i++, mine.length - 1)] }) }),
            }],
          });
        },
      },
    ]);
    const rps = rows[0]?.median.reqPerSec ?? 0;
    return {
      rows,
      facts: [
        { label: 'certificates per round', value: `up to ${perRound}` },
        { label: 'config/crl', value: deferred ? 'auto_rebuild on' : 'auto_rebuild not supported: a CRL rebuild per revocation' },
      ],
      verdict: { met: rps >= 1000, detail: `${Math.round(rps)} revocations/s (target >= 1,000)` },
    };
  },
};

export const pkiCrl100k: Scenario = {
  name: 'pki-crl-100k',
  title: `Full CRL rebuild (GET /v1/${PKI_MOUNT}/crl/rotate) with 100,000 revoked certificates`,
  target: '< 2 s',
  peer: 'none',
  defaultConnections: 16,
  notes:
    '100,000 certificates are signed and revoked first through the API (with automatic rebuilds deferred where the ' +
    'mount supports it), then the rebuild is timed: reading every revoked serial, encoding the entries and one ' +
    'signature over a CRL of a few megabytes.',
  async run(ctx) {
    const sr = await ctx.strongroom();
    await benchPki(sr);
    const want = ctx.size(100_000, 50);
    await api(sr, 'vault', 'GET', `/v1/${PKI_MOUNT}/crl/rotate`);
    await probeRevoke(sr);
    const deferred = await deferCrlRebuilds(sr);
    const t0 = performance.now();
    const serials = await issueMany(sr, want, ctx.size(90, 30));
    const t1 = performance.now();
    const revoked = await revokeAll(sr, serials, ctx.size(90, 30));
    const t2 = performance.now();
    ctx.log(`seeded ${revoked} revoked certificates (sign ${((t1 - t0) / 1000).toFixed(1)} s, revoke ${((t2 - t1) / 1000).toFixed(1)} s)`);
    const times: number[] = [];
    for (let r = 0; r < (ctx.opts.smoke ? 1 : ctx.opts.rounds); r++) {
      const s = performance.now();
      await api(sr, 'vault', 'GET', `/v1/${PKI_MOUNT}/crl/rotate`);
      times.push((performance.now() - s) / 1000);
      ctx.log(`rebuild ${r + 1}: ${(times[times.length - 1] as number).toFixed(3)} s`);
    }
    const crl = await httpRequest(`${sr.url}/v1/${PKI_MOUNT}/crl`, { method: 'GET' });
    const secs = median(times);
    const complete = revoked >= want;
    return {
      rows: [],
      facts: [
        { label: 'revoked certificates', value: `${revoked}${complete ? '' : ` (seeding stopped at its time limit; wanted ${want})`}` },
        { label: 'seeding', value: `sign ${((t1 - t0) / 1000).toFixed(1)} s, revoke ${((t2 - t1) / 1000).toFixed(1)} s${deferred ? ' (auto_rebuild on)' : ''}` },
        { label: 'full rebuild', value: `${secs.toFixed(3)} s (median of ${times.length})` },
        { label: 'CRL size', value: crl.status === 200 ? `${(crl.body.length / 1024).toFixed(0)} KB (DER)` : `GET /crl answered ${crl.status}` },
      ],
      verdict: { met: secs < 2 && complete, detail: `${secs.toFixed(2)} s for ${revoked} revoked (target < 2 s for 100,000)` },
    };
  },
};
