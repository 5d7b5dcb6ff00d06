import { authHeaders } from '../lib/api.js';
import { seedSearchableCerts, SEED_ROLES, SEED_ZONES } from '../lib/cert-seed.js';
import { compareRounds } from '../lib/compare.js';
import { httpRequest, runTasks } from '../lib/load.js';
import { PKI_MOUNT, benchPki, signCsr } from '../lib/pki.js';
import { generateCsrs } from '../generators/csr.js';
import { FeatureMissing } from '../lib/types.js';
import type { Scenario } from '../lib/types.js';

/** The searches a certificate inventory makes, each with fresh random values. */
function queries(count: number): ((r: number) => string)[] {
  const host = (r: number) => 1 + Math.floor(r * count);
  return [
    (r) => `name=host-${host(r)}.svc`,
    (r) => `name=alt-${host(r)}.internal`,
    (r) => `name=svc${Math.floor(r * SEED_ZONES)}.example.com&revoked=false`,
    (r) => `expiring_within=${1 + Math.floor(r * 60)}d`,
    (r) => `role=role-${Math.floor(r * SEED_ROLES)}&expiring_within=90d`,
    () => 'revoked=true&order=desc',
    (r) =>
      `serial=${Math.floor(r * 0xffff)
        .toString(16)
        .padStart(4, '0')}`,
    () => 'issuer=default&sort=not_after&order=desc',
    (r) =>
      `sort=serial&limit=100&after=${Buffer.from(`x|${Math.floor(r * 0xffffff).toString(16)}`).toString('base64url')}`,
  ];
}

export const pkiCertSearch: Scenario = {
  name: 'pki-cert-search',
  title:
    `GET /v1/${PKI_MOUNT}/certs/search over 1,000,000 stored certificates: a mix of name substrings, expiry, ` +
    `role, revoked, serial prefix and sorted pages`,
  target: 'p99 < 50 ms',
  peer: 'none (Vault can only list serials)',
  defaultConnections: 4,
  notes:
    'The certificates are generated inside the database (a recursive CTE on SQLite, generate_series on PostgreSQL, ' +
    'the trigram index built after the rows), with names, roles, expiry spread over two years and one in fifty ' +
    'revoked; a search never reads the certificate bytes. Each request picks one of nine searches with fresh random ' +
    'values: a host name or SAN substring (one match), a zone substring (1,000 matches, first page of 50), expiring ' +
    'within N days, a role within 90 days, revoked newest first, a serial prefix, every certificate newest expiry ' +
    'first, and a serial-ordered page after a random cursor.',
  async run(ctx) {
    const sr = await ctx.strongroom({ jobWorker: false });
    await benchPki(sr);
    const [csr] = await generateCsrs({ count: 1 });
    if (!csr) throw new Error('no CSR');
    const template = await signCsr(sr, csr.pem, csr.commonName);
    const headers = authHeaders(sr, 'vault');
    const probe = await httpRequest(`${sr.url}/v1/${PKI_MOUNT}/certs/search?limit=1`, { method: 'GET', headers });
    if (probe.status === 404 || probe.status === 405)
      throw new FeatureMissing(`GET /v1/${PKI_MOUNT}/certs/search answered ${probe.status}`);
    const want = ctx.size(1_000_000, 2_000);
    const seedStart = performance.now();
    const seeded = await seedSearchableCerts(sr, template.serial.replaceAll(':', ''), want);
    if (seeded === null) throw new Error('could not seed certificates in the database');
    const seedSec = (performance.now() - seedStart) / 1000;
    ctx.log(`seeded ${seeded} certificates in ${seedSec.toFixed(1)} s`);
    const mix = queries(want);
    let matched = 0;
    const rows = await compareRounds(ctx, [
      {
        label: 'Strongroom',
        kind: 'strongroom',
        pid: sr.pid,
        measure: (seconds) =>
          runTasks({
            concurrency: ctx.connections,
            count: Number.POSITIVE_INFINITY,
            seconds,
            task: async (i) => {
              const q = mix[i % mix.length]!(Math.random());
              const r = await httpRequest(`${sr.url}/v1/${PKI_MOUNT}/certs/search?${q}`, { method: 'GET', headers });
              if (r.status !== 200)
                throw new Error(`search ${q} answered ${r.status}: ${r.body.toString().slice(0, 200)}`);
              if (r.body.includes('"serial_number"')) matched++;
              return { bytes: r.body.length };
            },
          }),
      },
    ]);
    const p99 = rows[0]?.median.p99Ms ?? Infinity;
    return {
      rows,
      facts: [
        { label: 'stored certificates', value: String(seeded + 2) },
        { label: 'seeding in the database', value: `${seedSec.toFixed(1)} s` },
        { label: 'answers with at least one certificate', value: String(matched) },
      ],
      verdict: {
        met: p99 < 50 && seeded >= want,
        detail: `p99 ${p99.toFixed(2)} ms at ${ctx.connections} connections (target < 50 ms)`,
      },
    };
  },
};
