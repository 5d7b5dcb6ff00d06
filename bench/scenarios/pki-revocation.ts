import { parseCrl } from '../../src/pki/crypto/crl-parser.js';
import { generateCsrs } from '../generators/csr.js';
import { api, authHeaders, digString } from '../lib/api.js';
import { compareRounds, ratiosOf } from '../lib/compare.js';
import type { Contender } from '../lib/compare.js';
import { httpRequest, median, runAutocannon, runTasks } from '../lib/load.js';
import { seedRevokedInDatabase } from '../lib/fast-seed.js';
import { ocspRequest, startOpensslOcsp } from '../lib/pki-peers.js';
import { LEAF_TTL, PKI_MOUNT, ROLE_EC, benchPki, deferCrlRebuilds, signCsr } from '../lib/pki.js';
import type { Strongroom } from '../lib/strongroom.js';
import { FeatureMissing, Skip } from '../lib/types.js';
import type { Scenario } from '../lib/types.js';

/** Clients of `openssl ocsp`, which serves one connection at a time. */
const OPENSSL_OCSP_CONNECTIONS = 2;

export const pkiOcsp: Scenario = {
  name: 'pki-ocsp',
  title: `POST /v1/${PKI_MOUNT}/ocsp for a certificate of the mount (status good), EC P-256 CA`,
  target: '>= 5,000 responses/s at 64 connections',
  peer: 'openssl ocsp -index ... -port (one process, EC P-256 CA, index with the certificate)',
  defaultConnections: 64,
  notes:
    "The request carries no nonce, so Strongroom serves the answer it signed before, after reading the serial's " +
    "revocation status from the database (docs/decisions/0009). openssl's " +
    'responder handles one connection at a time and closes it after each answer, so its numbers include a TCP ' +
    "connect per request; Strongroom keeps connections alive. With 64 connections open at once openssl's responder " +
    'answers nothing at all, and a load generator that keeps connections open stalls it, so it is asked by ' +
    `${OPENSSL_OCSP_CONNECTIONS} clients in turn, each request over a new connection.`,
  async run(ctx) {
    const sr = await ctx.strongroom();
    const pki = await benchPki(sr);
    const [csr] = await generateCsrs({ count: 1 });
    if (!csr) throw new Error('no CSR');
    const cert = await signCsr(sr, csr.pem, csr.commonName);
    const request = ocspRequest(ctx.tmpDir, 'strongroom', pki.caPem, cert.certificate);
    const headers = { 'content-type': 'application/ocsp-request' };
    // The GET form first: without a body, a missing route answers 404 rather than a body-parsing error.
    const viaGet = await httpRequest(
      `${sr.url}/v1/${PKI_MOUNT}/ocsp/${encodeURIComponent(request.toString('base64'))}`,
      { method: 'GET' },
    );
    if (viaGet.status === 404 || viaGet.status === 405)
      throw new FeatureMissing(`GET /v1/${PKI_MOUNT}/ocsp/<request> answered ${viaGet.status}`);
    const probe = await httpRequest(`${sr.url}/v1/${PKI_MOUNT}/ocsp`, { method: 'POST', headers, body: request });
    if (probe.status === 404 || probe.status === 405)
      throw new FeatureMissing(`POST /v1/${PKI_MOUNT}/ocsp answered ${probe.status}`);
    if (probe.status !== 200)
      throw new Error(`OCSP answered ${probe.status}: ${probe.body.toString('utf8').slice(0, 200)}`);
    const contenders: Contender[] = [
      {
        label: 'Strongroom',
        kind: 'strongroom',
        pid: sr.pid,
        measure: (seconds) =>
          runAutocannon({
            url: `${sr.url}/v1/${PKI_MOUNT}/ocsp`,
            method: 'POST',
            headers,
            body: request,
            connections: ctx.connections,
            seconds,
          }),
      },
    ];
    const facts: { label: string; value: string }[] = [];
    try {
      const peer = await startOpensslOcsp(ctx);
      contenders.push({
        label: 'openssl ocsp',
        kind: 'peer',
        pid: peer.pid,
        measure: (seconds) =>
          runTasks({
            concurrency: OPENSSL_OCSP_CONNECTIONS,
            count: Number.POSITIVE_INFINITY,
            seconds,
            task: async () => {
              const r = await httpRequest(`${peer.url}/`, {
                method: 'POST',
                headers,
                body: peer.request,
                newConnection: true,
                timeoutMs: 5_000,
              });
              if (r.status !== 200) throw new Error(`openssl ocsp answered ${r.status}`);
              return { bytes: r.body.length };
            },
          }),
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
      verdict: {
        met: rps >= 5000,
        detail: `${Math.round(rps)} responses/s at ${ctx.connections} connections (target >= 5,000)`,
      },
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
        if (res.status !== 200)
          throw new Error(`sign answered ${res.status}: ${res.body.toString('utf8').slice(0, 200)}`);
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
        const res = await httpRequest(url, {
          method: 'POST',
          headers,
          body: Buffer.from(JSON.stringify({ serial_number: serial })),
        });
        if (res.status === 404 || res.status === 405)
          throw new FeatureMissing(`POST /v1/${PKI_MOUNT}/revoke answered ${res.status}`);
        if (res.status !== 200)
          throw new Error(`revoke answered ${res.status}: ${res.body.toString('utf8').slice(0, 200)}`);
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
    "what it costs beyond that depends on whether the CRL is rebuilt on every revocation (Vault's default) or " +
    'later in one go.',
  async run(ctx) {
    const sr = await ctx.strongroom();
    await benchPki(sr);
    // Revocations are recorded durably; the CRL follows on its automatic rebuild schedule.
    const deferred = await deferCrlRebuilds(sr);
    await probeRevoke(sr);
    // Enough certificates that a round runs for its whole time even at several times the target (a round that ran
    // dry before its time would report the pool's size, not the server's rate).
    const perRound = ctx.size(Math.ceil(ctx.opts.seconds * 12_000), 40);
    const rounds = ctx.opts.rounds;
    const serials = await issueMany(sr, perRound * rounds + ctx.connections * (rounds + 1), ctx.size(120, 30));
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
            requests: [
              {
                method: 'POST',
                path: `/v1/${PKI_MOUNT}/revoke`,
                headers,
                setupRequest: (req) => ({
                  ...req,
                  body: JSON.stringify({ serial_number: mine[Math.min(i++, mine.length - 1)] }),
                }),
              },
            ],
          });
        },
      },
    ]);
    const rps = rows[0]?.median.reqPerSec ?? 0;
    return {
      rows,
      facts: [
        { label: 'certificates per round', value: `up to ${perRound}` },
        {
          label: 'config/crl',
          value: deferred ? 'auto_rebuild on' : 'auto_rebuild not supported: a CRL rebuild per revocation',
        },
      ],
      verdict: { met: rps >= 1000, detail: `${Math.round(rps)} revocations/s (target >= 1,000)` },
    };
  },
};

/** GETs a rebuild path `rounds` times; returns the median seconds. */
async function timeRebuilds(
  ctx: { log(msg: string): void },
  sr: Strongroom,
  path: string,
  rounds: number,
  label: string,
): Promise<number> {
  const times: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const s = performance.now();
    await api(sr, 'vault', 'GET', `/v1/${PKI_MOUNT}/${path}`);
    times.push((performance.now() - s) / 1000);
    ctx.log(`${label} ${r + 1}: ${(times[times.length - 1] as number).toFixed(3)} s`);
  }
  return median(times);
}

/** Entries and CRL number of a CRL served at `path`, read with the engine's own parser. */
async function crlFacts(
  sr: Strongroom,
  path: string,
): Promise<{ entries: number; number: string; kb: number } | undefined> {
  const res = await httpRequest(`${sr.url}/v1/${PKI_MOUNT}/${path}`, { method: 'GET' });
  if (res.status !== 200) return undefined;
  const crl = parseCrl(res.body);
  return { entries: crl.entries.length, number: String(crl.crlNumber), kb: Math.round(res.body.length / 1024) };
}

export const pkiCrl100k: Scenario = {
  name: 'pki-crl-100k',
  title:
    `Full CRL rebuild (GET /v1/${PKI_MOUNT}/crl/rotate) with 100,000 revoked certificates, and ` +
    `delta rebuilds over it`,
  target: '< 2 s',
  peer: 'none',
  defaultConnections: 16,
  notes:
    'Twenty certificates are signed and revoked through the API (auto_rebuild on); the other revoked rows are copies ' +
    'of one of them with fresh serials, written straight into the database (signing 100,000 certificates through the ' +
    'API takes longer than the benchmark may; a rebuild reads only serials and revocation times). Then the complete ' +
    'rebuild is timed: reading every revoked row, encoding the entries, one signature over a CRL of a few megabytes, ' +
    'storing it. Delta CRLs are then enabled and crl/rotate-delta is timed with 100 and with 10,000 ' +
    'revocations newer ' +
    'than the complete CRL, to show that a delta costs what its new entries cost, not what the base holds.',
  async run(ctx) {
    const sr = await ctx.strongroom();
    await benchPki(sr);
    const want = ctx.size(100_000, 50);
    const deltaSmall = ctx.size(100, 5);
    const deltaLarge = ctx.size(10_000, 20);
    const rounds = ctx.opts.smoke ? 1 : ctx.opts.rounds;
    await api(sr, 'vault', 'GET', `/v1/${PKI_MOUNT}/crl/rotate`);
    await probeRevoke(sr);
    const deferred = await deferCrlRebuilds(sr);
    const t0 = performance.now();
    const viaApi = await issueMany(sr, 20, 30);
    await revokeAll(sr, viaApi, 30);
    const template = (viaApi[0] as string).replace(/:/g, '');
    // Old enough never to fall into a delta CRL's window.
    const seeded = await seedRevokedInDatabase(sr, template, want - viaApi.length - 1, new Date(Date.now() - 3600_000));
    let revoked = viaApi.length + 1 + (seeded ?? 0);
    if (seeded === null) {
      ctx.log('the database layout is unknown: seeding through the API');
      revoked += await revokeAll(sr, await issueMany(sr, want, ctx.size(90, 30)), ctx.size(90, 30));
    }
    ctx.log(`seeded ${revoked} revoked certificates in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const secs = await timeRebuilds(ctx, sr, 'crl/rotate', rounds, 'full rebuild');
    const full = await crlFacts(sr, 'crl');
    const complete = (full?.entries ?? 0) >= want;
    const facts = [
      {
        label: 'revoked certificates',
        value:
          seeded === null
            ? `${revoked} (through the API)`
            : `${revoked} (${viaApi.length + 1} through the API, the rest copied in the database)`,
      },
      { label: 'full rebuild', value: `${secs.toFixed(3)} s (median of ${rounds})` },
      {
        label: 'complete CRL',
        value: full ? `${full.entries} entries, ${full.kb} KB (DER)` : 'GET /crl answered no CRL',
      },
    ];
    if (deferred && seeded !== null) {
      // Enabling delta CRLs rebuilds the complete CRL: the base the deltas below update.
      await api(sr, 'vault', 'POST', `/v1/${PKI_MOUNT}/config/crl`, { body: { enable_delta: true } });
      for (const [n, already] of [
        [deltaSmall, 0],
        [deltaLarge, deltaSmall],
      ] as const) {
        await seedRevokedInDatabase(sr, template, n - already, new Date());
        const d = await timeRebuilds(ctx, sr, 'crl/rotate-delta', rounds, `delta rebuild (${n} new)`);
        const delta = await crlFacts(sr, 'crl/delta');
        facts.push({
          label: `delta rebuild, ${n} new revocations`,
          value:
            `${d.toFixed(3)} s (median of ${rounds}); delta CRL ` +
            `${delta ? `${delta.entries} entries, ${delta.kb} KB` : 'missing'}`,
        });
      }
    }
    return {
      rows: [],
      facts,
      verdict: {
        met: secs < 2 && complete,
        detail: `${secs.toFixed(2)} s for ${full?.entries ?? 0} entries (target < 2 s for 100,000)`,
      },
    };
  },
};
