import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildApp } from '../../src/app.js';
import { buildDeps } from '../../src/deps.js';
import { ManualClock } from '../../src/shared/clock.js';
import { describeWithServer } from '../support/test-server.js';
import { mountWithRoot, role, storedSerials } from './pki-issue-helpers.js';
import { defaultCrl, opensslSerial } from './pki-revocation-helpers.js';
import type { Vault } from './pki-issue-helpers.js';
import { vaultClient } from './vault-http.js';

const STARTED =
  "Tidy operation successfully started. Any information from the operation will be printed to Vault's server logs.";
const FLAGS = [
  'tidy_cert_store',
  'tidy_revoked_certs',
  'tidy_revoked_cert_issuer_associations',
  'tidy_expired_issuers',
  'tidy_move_legacy_ca_bundle',
  'tidy_revocation_queue',
  'tidy_cross_cluster_revoked_certs',
  'tidy_acme',
  'tidy_cert_metadata',
  'tidy_cmpv2_nonce_store',
];
const COUNTERS = [
  'cert_store_deleted_count',
  'revoked_cert_deleted_count',
  'missing_issuer_cert_count',
  'revocation_queue_deleted_count',
  'cross_revoked_cert_deleted_count',
  'cert_metadata_deleted_count',
  'cmpv2_nonce_deleted_count',
  'total_acme_account_count',
  'acme_account_deleted_count',
  'acme_account_revoked_count',
  'acme_orders_deleted_count',
];
const STATUS_KEYS = [
  ...FLAGS,
  ...COUNTERS,
  'safety_buffer',
  'issuer_safety_buffer',
  'acme_account_safety_buffer',
  'revocation_queue_safety_buffer',
  'pause_duration',
  'state',
  'error',
  'time_started',
  'time_finished',
  'message',
  'last_auto_tidy_finished',
  'current_cert_store_count',
  'current_revoked_cert_count',
  'internal_backend_uuid',
].sort();

const unix = (d: Date) => Math.floor(d.getTime() / 1000);
/** Times in tidy-status print as Go does: RFC 3339, fraction without trailing zeros. */
const goTime = (d: Date) => d.toISOString().replace(/\.?0+Z$/, 'Z');

describeWithServer('pki tidy', (server, kind) => {
  let v: Vault;
  const clock = new ManualClock('2030-01-01T00:00:00.000Z');
  const runJobs = () => server.deps.worker.runUntilIdle();
  const tidyJobs = async () =>
    Number(
      (
        await server.deps.core.db.kysely
          .selectFrom('jobs')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('kind', '=', 'pki.tidy')
          .executeTakeFirst()
      )?.n ?? 0,
    );

  before(async () => {
    v = vaultClient(server.url, server.rootToken);
  });

  /** Issues a certificate valid for `ttl`; returns its serial and NotAfter (unix seconds). */
  const issue = async (mount: string, roleName: string, body: Record<string, unknown> = {}) => {
    const r = await v('POST', `${mount}/issue/${roleName}`, { body: { common_name: 'host.tidy.test', ...body } });
    assert.equal(r.status, 200, r.text);
    return {
      serial: r.json.data.serial_number as string,
      expiration: Number(r.json.data.expiration),
      leaseId: r.json.lease_id as string,
    };
  };
  const status = async (mount: string) => {
    const r = await v('GET', `${mount}/tidy-status`);
    assert.equal(r.status, 200, r.text);
    return r.json.data as Record<string, unknown>;
  };
  const tidy = async (mount: string, body: Record<string, unknown>) => {
    const r = await v('POST', `${mount}/tidy`, { body });
    assert.equal(r.status, 202, r.text);
    assert.equal(r.json.data, null);
    return r.json.warnings as string[];
  };
  const setup = async () => {
    const { mount, issuerId, rootPem } = await mountWithRoot(v);
    await role(v, mount, 'short', {
      allow_any_name: true,
      key_type: 'ec',
      ttl: '1h',
      max_ttl: '100h',
      generate_lease: true,
    });
    return { mount, issuerId, rootPem };
  };

  it('answers tidy-status before any run: Inactive, every field present and null', async () => {
    const { mount } = await setup();
    const s = await status(mount);
    assert.deepEqual(Object.keys(s).sort(), STATUS_KEYS);
    assert.equal(s.state, 'Inactive');
    assert.equal(typeof s.internal_backend_uuid, 'string');
    for (const k of STATUS_KEYS.filter((k) => !['state', 'internal_backend_uuid'].includes(k)))
      assert.equal(s[k], null, k);
  });

  it('tidy_cert_store removes certificates expired over safety_buffer ago, keeping those at the boundary', async () => {
    const { mount } = await setup();
    const a = await issue(mount, 'short');
    clock.advance(1);
    const b = await issue(mount, 'short');
    const c = await issue(mount, 'short', { ttl: '10h' });
    const revoked = await issue(mount, 'short');
    assert.equal((await v('PUT', 'sys/leases/revoke', { body: { lease_id: revoked.leaseId } })).status, 204);
    assert.equal(b.expiration, a.expiration + 1);
    // now - a.NotAfter = 61 s > 60 s; now - b.NotAfter = 60 s exactly, which Vault keeps.
    clock.set(new Date((a.expiration + 61) * 1000));
    const before = await storedSerials(v, mount);

    const warnings = await tidy(mount, { tidy_cert_store: true, safety_buffer: '60s' });
    assert.deepEqual(warnings, [STARTED]);
    let s = await status(mount);
    assert.equal(s.state, 'Running');
    assert.equal(s.time_started, goTime(clock.now()));
    assert.equal(s.time_finished, null);
    assert.equal(s.tidy_cert_store, true);
    assert.equal(s.tidy_revoked_certs, false);
    assert.equal(s.safety_buffer, 60);
    assert.equal(s.issuer_safety_buffer, 31536000);
    assert.equal(s.revocation_queue_safety_buffer, 172800);
    assert.equal(s.acme_account_safety_buffer, 2592000);
    assert.equal(s.pause_duration, '0s');
    assert.equal(s.cert_store_deleted_count, 0);
    assert.deepEqual(await storedSerials(v, mount), before, 'nothing happens before the job runs');

    await runJobs();
    s = await status(mount);
    assert.equal(s.state, 'Finished');
    assert.equal(s.cert_store_deleted_count, 1);
    assert.equal(s.revoked_cert_deleted_count, 0);
    assert.equal(s.time_finished, goTime(clock.now()));
    assert.equal(s.last_auto_tidy_finished, goTime(clock.now()));
    assert.equal(s.message, null);
    assert.equal(s.error, null);
    const after = await storedSerials(v, mount);
    assert.deepEqual(
      after,
      before.filter((x) => x !== a.serial),
    );
    for (const kept of [b, c, revoked]) assert.ok(after.includes(kept.serial), `${kept.serial} is kept`);
    assert.equal((await v('GET', `${mount}/cert/${a.serial}`, { token: undefined })).status, 404);
    assert.equal((await v('GET', `${mount}/cert/${b.serial}`, { token: undefined })).status, 200);
  });

  /**
   * The default issuer's CRL, verified by openssl against the issuer: its revoked serials (as openssl prints them) and
   * its number.
   */
  const crl = async (mount: string, rootPem: string) => {
    const facts = await defaultCrl(server.url, mount, rootPem, 'crl/pem');
    return { serials: facts.serials.sort(), number: facts.crlNumber };
  };

  it('tidy_revoked_certs removes revoked certs past the buffer (off the CRL), tidy_cert_metadata theirs', async () => {
    const { mount, rootPem } = await setup();
    const meta = Buffer.from('{"team":"a"}').toString('base64');
    const gone = await issue(mount, 'short', { cert_metadata: meta });
    const stays = await issue(mount, 'short', { ttl: '100h', cert_metadata: meta });
    const plainExpired = await issue(mount, 'short');
    assert.equal((await v('PUT', 'sys/leases/revoke', { body: { lease_id: gone.leaseId } })).status, 204);
    assert.equal((await v('POST', `${mount}/revoke`, { body: { serial_number: stays.serial } })).status, 200);
    const crlBefore = await crl(mount, rootPem);
    assert.deepEqual(crlBefore.serials, [gone.serial, stays.serial].map(opensslSerial).sort());
    clock.set(new Date((gone.expiration + 3 * 3600) * 1000));

    await tidy(mount, { tidy_revoked_certs: true, tidy_cert_metadata: true, safety_buffer: 3600 });
    await runJobs();
    const s = await status(mount);
    assert.equal(s.state, 'Finished');
    assert.equal(s.revoked_cert_deleted_count, 1);
    assert.equal(s.cert_metadata_deleted_count, 1);
    assert.equal(s.cert_store_deleted_count, 0);
    const serials = await storedSerials(v, mount);
    assert.ok(!serials.includes(gone.serial));
    assert.ok(serials.includes(stays.serial), 'revoked but not expired');
    assert.ok(serials.includes(plainExpired.serial), 'expired but not revoked: tidy_cert_store was not asked');
    assert.equal((await v('GET', `${mount}/cert-metadata/${gone.serial}`)).status, 404);
    assert.equal((await v('GET', `${mount}/cert-metadata/${stays.serial}`)).status, 200);
    const crlAfter = await crl(mount, rootPem);
    assert.deepEqual(crlAfter.serials, [opensslSerial(stays.serial)], 'the tidied certificate left the CRL');
    assert.ok(crlAfter.number > crlBefore.number, `CRL number ${crlBefore.number} -> ${crlAfter.number}`);
    assert.deepEqual((await v('LIST', `${mount}/certs/revoked`)).json.data.keys, [stays.serial]);
  });

  const issuerNames = async (mount: string) => {
    const r = await v('LIST', `${mount}/issuers`, { token: undefined });
    return Object.values(r.json.data.key_info as Record<string, { issuer_name: string }>)
      .map((i) => i.issuer_name)
      .sort();
  };

  it('tidy_expired_issuers removes issuers expired past issuer_safety_buffer but the default; keeps keys', async () => {
    const { mount } = await setup();
    let r = await v('POST', `${mount}/root/generate/internal`, {
      body: { common_name: 'Old Root', key_type: 'ec', ttl: '2h', issuer_name: 'old' },
    });
    assert.equal(r.status, 200, r.text);
    const old = { id: r.json.data.issuer_id as string, expiration: Number(r.json.data.expiration) };
    r = await v('POST', `${mount}/root/generate/internal`, {
      body: { common_name: 'Edge Root', key_type: 'ec', ttl: '2h', issuer_name: 'edge' },
    });
    const edge = { id: r.json.data.issuer_id as string, expiration: Number(r.json.data.expiration) };
    assert.equal(edge.expiration, old.expiration);
    const keysBefore = (await v('LIST', `${mount}/keys`)).json.data.keys as string[];
    assert.equal((await v('POST', `${mount}/config/issuers`, { body: { default: 'old' } })).status, 200);
    clock.set(new Date((old.expiration + 120) * 1000));

    // The expired issuer is the default: it stays.
    await tidy(mount, { tidy_expired_issuers: true, issuer_safety_buffer: '1m' });
    await runJobs();
    assert.equal((await status(mount)).state, 'Finished');
    assert.deepEqual(await issuerNames(mount), ['old', 'root']);

    // Exactly at the boundary (120 s past NotAfter, buffer 120 s) an issuer stays.
    assert.equal((await v('POST', `${mount}/config/issuers`, { body: { default: 'root' } })).status, 200);
    await tidy(mount, { tidy_expired_issuers: true, issuer_safety_buffer: 120 });
    await runJobs();
    assert.deepEqual(await issuerNames(mount), ['old', 'root']);
    clock.advance(1);
    await tidy(mount, { tidy_expired_issuers: true, issuer_safety_buffer: 120 });
    await runJobs();
    assert.deepEqual(await issuerNames(mount), ['root']);
    assert.deepEqual((await v('LIST', `${mount}/keys`)).json.data.keys, keysBefore, 'keys are kept');
  });

  it('re-attributes revoked certificates whose issuer is gone to the mount issuer that signed them', async () => {
    const { mount, issuerId } = await setup();
    const x = await issue(mount, 'short', { ttl: '50h' });
    assert.equal((await v('PUT', 'sys/leases/revoke', { body: { lease_id: x.leaseId } })).status, 204);
    assert.equal((await v('GET', `${mount}/cert/${x.serial}`, { token: undefined })).json.data.issuer_id, issuerId);
    // Delete the issuer and import its certificate again: a new issuer id for the same CA.
    const pem = (await v('GET', `${mount}/issuer/${issuerId}/pem`, { token: undefined })).text;
    assert.equal((await v('DELETE', `${mount}/issuer/${issuerId}`)).status < 300, true);
    let r = await v('POST', `${mount}/issuers/import/bundle`, { body: { pem_bundle: pem } });
    assert.equal(r.status, 200, r.text);
    const newId = r.json.data.imported_issuers[0] as string;
    assert.notEqual(newId, issuerId);

    await tidy(mount, { tidy_revoked_cert_issuer_associations: true });
    await runJobs();
    const s = await status(mount);
    assert.equal(s.state, 'Finished');
    assert.equal(s.missing_issuer_cert_count, 1);
    r = await v('GET', `${mount}/cert/${x.serial}`, { token: undefined });
    assert.equal(r.json.data.issuer_id, newId);
    // Nothing left to fix: a second run counts nothing.
    await tidy(mount, { tidy_revoked_cert_issuer_associations: true });
    await runJobs();
    assert.equal((await status(mount)).missing_issuer_cert_count, 0);
  });

  it('accepts the targets of features this server lacks, reports them, and removes nothing', async () => {
    const { mount } = await setup();
    await issue(mount, 'short');
    clock.advance(365 * 86400);
    const before = await storedSerials(v, mount);
    const body = {
      tidy_move_legacy_ca_bundle: true,
      tidy_revocation_queue: true,
      tidy_cross_cluster_revoked_certs: true,
      tidy_acme: 'true',
      tidy_cmpv2_nonce_store: 1,
    };
    assert.deepEqual(await tidy(mount, body), [STARTED]);
    await runJobs();
    const s = await status(mount);
    assert.equal(s.state, 'Finished');
    for (const f of Object.keys(body)) assert.equal(s[f], true, f);
    for (const c of COUNTERS) assert.equal(s[c], 0, c);
    assert.deepEqual(await storedSerials(v, mount), before);
  });

  it('without targets it warns, and still records a (empty) run', async () => {
    const { mount } = await setup();
    const warnings = await tidy(mount, {});
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /^Manual tidy requested but no tidy operations were set/);
    await runJobs();
    assert.equal((await status(mount)).state, 'Finished');
  });

  it('runs one tidy at a time per mount', async () => {
    const { mount } = await setup();
    const jobsBefore = await tidyJobs();
    const answers = await Promise.all(Array.from({ length: 6 }, () => tidy(mount, { tidy_cert_store: true })));
    assert.equal(answers.filter((w) => w[0] === STARTED).length, 1);
    assert.equal(answers.filter((w) => w[0] === 'Tidy operation already in progress.').length, 5);
    assert.equal((await tidyJobs()) - jobsBefore, 1);
    await runJobs();
    assert.equal((await status(mount)).state, 'Finished');
    assert.deepEqual(await tidy(mount, { tidy_cert_store: true }), [STARTED], 'a new run after the last one ended');
    await runJobs();
  });

  it("takes tidy_revocation_list as tidy_revoked_certs, and starts again when a run's job died", async () => {
    const { mount } = await setup();
    await tidy(mount, { tidy_revocation_list: true });
    assert.equal((await status(mount)).tidy_revoked_certs, true);
    // A job that was abandoned (its node kept dying) leaves the run looking active.
    await server.deps.core.db.kysely
      .updateTable('jobs')
      .set({ status: 'dead' })
      .where('kind', '=', 'pki.tidy')
      .where('status', '=', 'queued')
      .execute();
    assert.deepEqual(await tidy(mount, { tidy_cert_store: true }), [STARTED]);
    await runJobs();
    const s = await status(mount);
    assert.equal(s.state, 'Finished');
    assert.equal(s.tidy_cert_store, true);
    assert.equal(s.tidy_revoked_certs, false);
  });

  it('cancels: Cancelling until the job reaches a checkpoint, then Cancelled, having removed nothing', async () => {
    const { mount } = await setup();
    await issue(mount, 'short');
    clock.advance(30 * 86400);
    const before = await storedSerials(v, mount);
    let r = await v('POST', `${mount}/tidy-cancel`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.warnings, ['Tidy operation cannot be cancelled as none is currently running.']);

    await tidy(mount, { tidy_cert_store: true, pause_duration: '2s' });
    r = await v('POST', `${mount}/tidy-cancel`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.warnings, null);
    assert.equal(r.json.data.state, 'Cancelling');
    assert.equal(r.json.data.pause_duration, '2s');
    assert.equal((await status(mount)).state, 'Cancelling');
    await runJobs();
    const s = await status(mount);
    assert.equal(s.state, 'Cancelled');
    assert.equal(s.time_finished, goTime(clock.now()));
    assert.equal(s.cert_store_deleted_count, 0);
    assert.deepEqual(await storedSerials(v, mount), before);
  });

  it('refuses bad input with 400 and changes nothing', async () => {
    const { mount } = await setup();
    await issue(mount, 'short');
    clock.advance(30 * 86400);
    const before = await storedSerials(v, mount);
    const jobsBefore = await tidyJobs();
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ tidy_cert_store: true, safety_buffer: -1 }, /^safety_buffer must be greater than zero$/],
      [{ tidy_cert_store: true, safety_buffer: '-72h' }, /^safety_buffer must be greater than zero$/],
      [{ tidy_cert_store: true, safety_buffer: 0 }, /^safety_buffer must be greater than zero$/],
      [{ tidy_cert_store: true, safety_buffer: 'soon' }, /error converting input "soon" for field "safety_buffer"/],
      [{ tidy_cert_store: true, issuer_safety_buffer: '-1s' }, /^issuer_safety_buffer must be greater than zero$/],
      [
        { tidy_cert_store: true, revocation_queue_safety_buffer: 0 },
        /^revocation_queue_safety_buffer must be greater than zero$/,
      ],
      [
        { tidy_cert_store: true, acme_account_safety_buffer: -5 },
        /^acme_account_safety_buffer must be greater than zero$/,
      ],
      [{ tidy_cert_store: true, pause_duration: '-1s' }, /^received invalid, negative pause_duration$/],
      [{ tidy_cert_store: true, pause_duration: 'a while' }, /^Error parsing pause_duration/],
      [{ tidy_cert_store: 'perhaps' }, /error converting input "perhaps" for field "tidy_cert_store"/],
    ];
    for (const [body, message] of cases) {
      const r = await v('POST', `${mount}/tidy`, { body });
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.contentType.split(';')[0], 'application/json');
      assert.equal(r.json.errors.length, 1);
      assert.match(r.json.errors[0], message, JSON.stringify(body));
    }
    assert.equal((await status(mount)).state, 'Inactive');
    assert.equal(await tidyJobs(), jobsBefore);
    await runJobs();
    assert.deepEqual(await storedSerials(v, mount), before);

    const config = (await v('GET', `${mount}/config/auto-tidy`)).json.data;
    const autoCases: [Record<string, unknown>, RegExp][] = [
      [{ interval_duration: -1 }, /^given interval_duration must be greater than or equal to zero seconds/],
      [{ safety_buffer: 0 }, /^given safety_buffer must be at least one second/],
      [{ revocation_queue_safety_buffer: '-2h' }, /^given revocation_queue_safety_buffer must be at least one second/],
      [{ pause_duration: '-3s' }, /^received invalid, negative pause_duration$/],
      [{ enabled: true }, /^Auto-tidy enabled but no tidy operations were requested/],
      [{ publish_stored_certificate_count_metrics: true }, /without first maintaining that count/],
      [
        { min_startup_backoff_duration: '20m', max_startup_backoff_duration: '10m' },
        /must be greater or equal to min_startup_backoff_duration/,
      ],
      [{ min_startup_backoff_duration: 0 }, /^min_startup_backoff_duration must be at least 1 second/],
      [{ enabled: 'sometimes', tidy_cert_store: true }, /error converting input "sometimes" for field "enabled"/],
    ];
    for (const [body, message] of autoCases) {
      const r = await v('POST', `${mount}/config/auto-tidy`, { body });
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.match(r.json.errors[0], message, JSON.stringify(body));
    }
    assert.deepEqual(
      (await v('GET', `${mount}/config/auto-tidy`)).json.data,
      config,
      'the configuration did not change',
    );
  });

  it('checks the ACL: tidy needs update, tidy-status read, config/auto-tidy read or update', async () => {
    const { mount } = await setup();
    const policy = async (name: string, text: string) =>
      assert.equal((await v('PUT', `sys/policies/acl/${name}`, { body: { policy: text } })).status, 204);
    const token = async (p: string) =>
      (await v('POST', 'auth/token/create', { body: { policies: [p] } })).json.auth.client_token as string;
    await policy(
      `tidier-${mount}`,
      `path "${mount}/tidy" { capabilities = ["update"] }\npath "${mount}/tidy-cancel" { capabilities = ["update"] }`,
    );
    await policy(
      `watcher-${mount}`,
      `path "${mount}/tidy-status" { capabilities = ["read"] }\npath "${mount}/config/auto-tidy" { ` +
        `capabilities = ["read"] }`,
    );
    const tidier = await token(`tidier-${mount}`);
    const watcher = await token(`watcher-${mount}`);

    let r = await v('POST', `${mount}/tidy`, { token: watcher, body: { tidy_cert_store: true } });
    assert.equal(r.status, 403);
    assert.deepEqual(r.json, { errors: ['permission denied'] });
    assert.equal((await v('POST', `${mount}/tidy`, { token: undefined, body: { tidy_cert_store: true } })).status, 403);
    assert.equal((await status(mount)).state, 'Inactive', 'a refused request starts nothing');
    r = await v('POST', `${mount}/tidy`, { token: tidier, body: { tidy_cert_store: true } });
    assert.equal(r.status, 202, r.text);
    assert.equal((await v('GET', `${mount}/tidy-status`, { token: tidier })).status, 403);
    r = await v('GET', `${mount}/tidy-status`, { token: watcher });
    assert.equal(r.status, 200);
    assert.equal(r.json.data.state, 'Running');
    assert.equal((await v('POST', `${mount}/tidy-cancel`, { token: watcher })).status, 403);
    assert.equal((await v('GET', `${mount}/config/auto-tidy`, { token: watcher })).status, 200);
    assert.equal(
      (await v('POST', `${mount}/config/auto-tidy`, { token: watcher, body: { enabled: false } })).status,
      403,
    );
    assert.equal((await v('POST', `${mount}/tidy-cancel`, { token: tidier })).json.data.state, 'Cancelling');
    await runJobs();
  });

  it('config/auto-tidy: defaults, partial writes, and the worker starting a tidy when it is due', async () => {
    const { mount } = await setup();
    let r = await v('GET', `${mount}/config/auto-tidy`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.json.data, {
      enabled: false,
      interval_duration: 43200,
      min_startup_backoff_duration: 300,
      max_startup_backoff_duration: 900,
      ...Object.fromEntries(FLAGS.map((f) => [f, false])),
      safety_buffer: 259200,
      issuer_safety_buffer: 31536000,
      acme_account_safety_buffer: 2592000,
      revocation_queue_safety_buffer: 172800,
      pause_duration: '0s',
      maintain_stored_certificate_counts: false,
      publish_stored_certificate_count_metrics: false,
    });
    const enabledAt = clock.now();
    r = await v('POST', `${mount}/config/auto-tidy`, {
      body: {
        enabled: true,
        tidy_cert_store: true,
        interval_duration: '1h',
        safety_buffer: 60,
        maintain_stored_certificate_counts: true,
      },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.enabled, true);
    assert.equal(r.json.data.interval_duration, 3600);
    assert.equal(r.json.data.safety_buffer, 60);
    assert.equal(r.json.data.issuer_safety_buffer, 31536000, 'unsent fields keep their value');
    r = await v('POST', `${mount}/config/auto-tidy`, { body: { pause_duration: '1m30s' } });
    assert.equal(r.json.data.pause_duration, '1m30s');
    assert.equal(r.json.data.tidy_cert_store, true);
    r = await v('POST', `${mount}/config/auto-tidy`, { body: { pause_duration: '0s' } });

    const cert = await issue(mount, 'short', { ttl: '30m' });
    let s = await status(mount);
    assert.equal(s.state, 'Inactive');
    assert.equal(s.last_auto_tidy_finished, goTime(enabledAt), 'enabling auto-tidy starts its interval');
    assert.equal(typeof s.current_cert_store_count, 'number');
    const storedBefore = s.current_cert_store_count as number;

    // Not yet due: 59 minutes after enabling.
    clock.advance(59 * 60);
    await runJobs();
    assert.equal((await status(mount)).state, 'Inactive');
    assert.ok((await storedSerials(v, mount)).includes(cert.serial));

    // Due: the periodic check starts the run and the worker runs it.
    clock.advance(2 * 60);
    assert.ok(unix(clock.now()) > cert.expiration + 60);
    await runJobs();
    s = await status(mount);
    assert.equal(s.state, 'Finished');
    assert.equal(s.tidy_cert_store, true);
    assert.equal(s.safety_buffer, 60);
    assert.equal(s.cert_store_deleted_count, 1);
    assert.equal(s.current_cert_store_count, storedBefore - 1);
    assert.equal(s.current_revoked_cert_count, 0);
    assert.equal(s.last_auto_tidy_finished, goTime(clock.now()));
    assert.ok(!(await storedSerials(v, mount)).includes(cert.serial));

    // The interval counts from the end of that run.
    const finished = s.time_finished;
    clock.advance(30 * 60);
    await runJobs();
    assert.equal((await status(mount)).time_finished, finished);
    clock.advance(31 * 60);
    await runJobs();
    assert.notEqual((await status(mount)).time_finished, finished);

    // Published as metrics only when asked.
    const metric = async () => {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      const line = (name: string) => text.split('\n').find((l) => l.startsWith(`${name}{mount="${mount}/"}`));
      return {
        total: line('strongroom_pki_certificates_stored'),
        revoked: line('strongroom_pki_revoked_certificates_stored'),
      };
    };
    assert.deepEqual(await metric(), { total: undefined, revoked: undefined });
    r = await v('POST', `${mount}/config/auto-tidy`, { body: { publish_stored_certificate_count_metrics: true } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(await metric(), {
      total: `strongroom_pki_certificates_stored{mount="${mount}/"} ${storedBefore - 1}`,
      revoked: `strongroom_pki_revoked_certificates_stored{mount="${mount}/"} 0`,
    });

    // Disabled: nothing more runs.
    r = await v('POST', `${mount}/config/auto-tidy`, { body: { enabled: false } });
    assert.equal(r.json.data.enabled, false);
    const last = (await status(mount)).time_finished;
    clock.advance(5 * 3600);
    await runJobs();
    assert.equal((await status(mount)).time_finished, last);
  });

  it("forgets the mount's tidy status and configuration when the mount is disabled", async () => {
    const { mount } = await setup();
    assert.equal(
      (await v('POST', `${mount}/config/auto-tidy`, { body: { enabled: true, tidy_cert_store: true } })).status,
      200,
    );
    await tidy(mount, { tidy_cert_store: true });
    const mountId = (await status(mount)).internal_backend_uuid as string;
    const rows = () =>
      server.deps.core.db.kysely.selectFrom('pki_tidy').select('mount_id').where('mount_id', '=', mountId).execute();
    assert.equal((await rows()).length, 1);
    assert.equal((await v('DELETE', `sys/mounts/${mount}`)).status, 204);
    await runJobs();
    assert.equal((await rows()).length, 0);
  });

  // Several nodes share one database on PostgreSQL (SQLite serves a single node).
  it(
    'shares one tidy per mount between nodes on the same database, with status and cancel from either',
    { skip: kind !== 'postgres' && 'PostgreSQL only: several nodes share one database' },
    async () => {
      const { mount } = await setup();
      await issue(mount, 'short');
      clock.advance(30 * 86400);
      const deps2 = await buildDeps(server.config, { clock });
      const app2 = await buildApp(deps2);
      await app2.listen({ host: '127.0.0.1', port: 0 });
      const addr = app2.server.address();
      const v2 = vaultClient(`http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`, server.rootToken);
      try {
        const jobsBefore = await tidyJobs();
        const answers = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            (i % 2 === 0 ? v : v2)('POST', `${mount}/tidy`, { body: { tidy_cert_store: true } }),
          ),
        );
        assert.ok(answers.every((a) => a.status === 202));
        assert.equal(answers.filter((a) => a.json.warnings[0] === STARTED).length, 1);
        assert.equal((await tidyJobs()) - jobsBefore, 1);
        assert.equal((await v2('GET', `${mount}/tidy-status`)).json.data.state, 'Running');
        assert.equal((await v2('POST', `${mount}/tidy-cancel`)).json.data.state, 'Cancelling');
        assert.equal((await v('GET', `${mount}/tidy-status`)).json.data.state, 'Cancelling');
        await runJobs();
        assert.equal((await v2('GET', `${mount}/tidy-status`)).json.data.state, 'Cancelled');
        // A run started on node 2 is run by node 1's worker and seen finished on node 2.
        assert.deepEqual((await v2('POST', `${mount}/tidy`, { body: { tidy_cert_store: true } })).json.warnings, [
          STARTED,
        ]);
        await runJobs();
        const s = (await v2('GET', `${mount}/tidy-status`)).json.data;
        assert.equal(s.state, 'Finished');
        assert.equal(s.cert_store_deleted_count, 1);
      } finally {
        await app2.close();
        await deps2.close();
      }
    },
  );
  return { clock };
});
