import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/shared/clock.js';
import type { Lease } from '../../src/pki/sys/lease.js';
import { describeWithServer } from '../support/test-server.js';
import { vault, vaultClient } from './vault-http.js';

const MAKER_POLICY = `
path "auth/token/create" { capabilities = ["update"] }
path "auth/token/create-orphan" { capabilities = ["update"] }
`;

describeWithServer('vault token store and leases', (server) => {
  let root: ReturnType<typeof vaultClient>;
  const clock = new ManualClock('2026-03-01T00:00:00Z');
  const create = async (body: Record<string, unknown>, token = server.rootToken, path = 'auth/token/create') => {
    const r = await vault(server.url, 'POST', path, { token, body });
    assert.equal(r.status, 200, r.text);
    return { token: r.json.auth.client_token as string, accessor: r.json.auth.accessor as string, json: r.json };
  };
  const status = async (token: string) => (await vault(server.url, 'GET', 'auth/token/lookup-self', { token })).status;

  before(async () => {
    root = vaultClient(server.url, server.rootToken);
    for (const [name, policy] of [
      ['maker', MAKER_POLICY],
      ['maker-sudo', 'path "auth/token/create" { capabilities = ["update", "sudo"] }'],
      ['other', 'path "sys/mounts" { capabilities = ["read"] }'],
    ]) {
      assert.equal((await root('PUT', `sys/policies/acl/${name}`, { body: { policy } })).status, 204);
    }
  });

  it('creates a token and looks it up', async () => {
    const { token, accessor, json } = await create({
      policies: 'other',
      meta: { team: 'web' },
      display_name: 'CI Runner',
    });
    assert.match(token, /^srv\.[1-9A-HJ-NP-Za-km-z]{32}$/);
    assert.equal(json.data, null);
    assert.equal(json.mount_type, 'token');
    assert.deepEqual(json.auth.policies, ['default', 'other']);
    assert.deepEqual(json.auth.token_policies, ['default', 'other']);
    assert.deepEqual(json.auth.metadata, { team: 'web' });
    assert.equal(json.auth.lease_duration, 768 * 3600);
    assert.equal(json.auth.renewable, true);
    assert.equal(json.auth.orphan, false);
    assert.equal(json.auth.token_type, 'service');

    const r = await vault(server.url, 'GET', 'auth/token/lookup-self', { token, tokenHeader: 'x-secrets-token' });
    assert.equal(r.status, 200, r.text);
    const d = r.json.data;
    assert.equal(d.id, token);
    assert.equal(d.accessor, accessor);
    assert.equal(d.display_name, 'token-ci-runner');
    assert.deepEqual(d.policies, ['default', 'other']);
    assert.equal(d.ttl, 768 * 3600);
    assert.equal(d.creation_ttl, 768 * 3600);
    assert.equal(d.creation_time, Math.floor(clock.now().getTime() / 1000));
    assert.equal(
      d.expire_time,
      new Date(clock.now().getTime() + 768 * 3600 * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    );
    assert.equal(d.path, 'auth/token/create');
    assert.equal(d.type, 'service');

    const byBody = await root('POST', 'auth/token/lookup', { body: { token } });
    assert.equal(byBody.json.data.accessor, accessor);
    const byAccessor = await root('POST', 'auth/token/lookup-accessor', { body: { accessor } });
    assert.equal(byAccessor.json.data.id, '');
    assert.deepEqual(byAccessor.json.data.meta, { team: 'web' });
    // The token may use what its policies grant and nothing else.
    assert.equal((await vault(server.url, 'GET', 'sys/mounts', { token })).status, 200);
    assert.equal((await vault(server.url, 'LIST', 'sys/policies/acl', { token })).status, 403);
  });

  it('expires tokens at their TTL and renews within explicit_max_ttl', async () => {
    const { token } = await create({ policies: ['other'], ttl: '1h', explicit_max_ttl: '2h' });
    let r = await vault(server.url, 'GET', 'auth/token/lookup-self', { token });
    assert.equal(r.json.data.ttl, 3600);
    clock.advance(1800);
    r = await vault(server.url, 'POST', 'auth/token/renew-self', { token, body: { increment: '90m' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.auth.lease_duration, 5400);
    clock.advance(1800);
    // The next renewal would pass creation + 2h: it is capped there.
    r = await vault(server.url, 'POST', 'auth/token/renew-self', { token, body: { increment: '2h' } });
    assert.equal(r.json.auth.lease_duration, 3600);
    assert.equal(r.json.warnings.length, 1);
    clock.advance(3599);
    assert.equal(await status(token), 200);
    clock.advance(1);
    assert.equal(await status(token), 403);
    r = await root('POST', 'auth/token/lookup', { body: { token } });
    assert.equal(r.status, 403);
  });

  it('renews another token by value or accessor, and refuses non-renewable ones', async () => {
    const t = await create({ policies: ['other'], ttl: '1h' });
    let r = await root('POST', 'auth/token/renew', { body: { token: t.token, increment: '3h' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.auth.lease_duration, 3 * 3600);
    assert.equal(r.json.auth.client_token, t.token);
    r = await root('POST', 'auth/token/renew-accessor', { body: { accessor: t.accessor, increment: 7200 } });
    assert.equal(r.json.auth.lease_duration, 7200);
    assert.equal(r.json.auth.client_token, '');
    r = await vault(server.url, 'GET', 'auth/token/lookup-self', { token: t.token });
    assert.equal(r.json.data.ttl, 7200);
    assert.equal(typeof r.json.data.last_renewal_time, 'number');
    const fixed = await create({ policies: ['other'], ttl: '1h', renewable: false });
    assert.equal(fixed.json.auth.renewable, false);
    r = await vault(server.url, 'POST', 'auth/token/renew-self', { token: fixed.token, body: {} });
    assert.equal(r.status, 400);
    assert.deepEqual(r.json.errors, ['lease is not renewable']);
    r = await root('POST', 'auth/token/renew', { body: { token: 'srv.gone' } });
    assert.equal(r.status, 400);
  });

  it('caps TTLs above the maximum and lets root tokens live forever', async () => {
    let r = await root('POST', 'auth/token/create', { body: { policies: ['other'], ttl: '10000h' } });
    assert.equal(r.json.auth.lease_duration, 768 * 3600);
    assert.equal(r.json.warnings.length, 1);
    const child = await create({});
    r = await vault(server.url, 'GET', 'auth/token/lookup-self', { token: child.token });
    assert.deepEqual(r.json.data.policies, ['root']);
    assert.equal(r.json.data.expire_time, null);
    assert.equal(r.json.data.ttl, 0);
  });

  it('revokes a token and its whole subtree, but not orphans', async () => {
    const parent = await create({ policies: ['maker', 'other'] });
    const child = await create({ policies: ['maker', 'other'] }, parent.token);
    const grandchild = await create({}, child.token);
    const orphan = await create({ policies: ['other'] }, parent.token, 'auth/token/create-orphan');
    assert.equal(orphan.json.auth.orphan, true);
    let r = await vault(server.url, 'GET', 'auth/token/lookup-self', { token: grandchild.token });
    assert.deepEqual(r.json.data.policies, ['default', 'maker', 'other']);

    r = await root('POST', 'auth/token/revoke-accessor', { body: { accessor: parent.accessor } });
    assert.equal(r.status, 204);
    assert.equal(await status(parent.token), 403);
    assert.equal(await status(child.token), 403);
    assert.equal(await status(grandchild.token), 403);
    assert.equal(await status(orphan.token), 200);
    r = await root('POST', 'auth/token/revoke-accessor', { body: { accessor: parent.accessor } });
    assert.equal(r.status, 400);
    assert.deepEqual(r.json.errors, ['invalid accessor']);
  });

  it('revoke-self and revoke by token end the token; revoke-orphan keeps the children', async () => {
    const a = await create({ policies: ['other'] });
    assert.equal((await vault(server.url, 'POST', 'auth/token/revoke-self', { token: a.token })).status, 204);
    assert.equal(await status(a.token), 403);

    const b = await create({ policies: ['other'] });
    assert.equal((await root('POST', 'auth/token/revoke', { body: { token: b.token } })).status, 204);
    assert.equal(await status(b.token), 403);

    const parent = await create({ policies: ['maker', 'other'] });
    const child = await create({ policies: ['other'] }, parent.token);
    assert.equal((await root('POST', 'auth/token/revoke-orphan', { body: { token: parent.token } })).status, 204);
    assert.equal(await status(parent.token), 403);
    const r = await vault(server.url, 'GET', 'auth/token/lookup-self', { token: child.token });
    assert.equal(r.status, 200);
    assert.equal(r.json.data.orphan, true);
    // revoke-orphan needs sudo.
    const plain = await create({ policies: ['maker'] });
    await root('PUT', 'sys/policies/acl/orphaner', {
      body: { policy: 'path "auth/token/revoke-orphan" { capabilities = ["update"] }' },
    });
    const orphaner = await create({ policies: ['orphaner'] });
    const denied = await vault(server.url, 'POST', 'auth/token/revoke-orphan', {
      token: orphaner.token,
      body: { token: plain.token },
    });
    assert.equal(denied.status, 400);
    assert.match(denied.json.errors[0], /sudo/);
  });

  it('takes the children with it when a parent expires', async () => {
    const parent = await create({ policies: ['maker', 'other'], ttl: '10m' });
    const child = await create({ policies: ['other'], ttl: '5h' }, parent.token);
    assert.equal(await status(child.token), 200);
    clock.advance(601);
    assert.equal(await status(parent.token), 403);
    assert.equal(await status(child.token), 403);
  });

  it('applies the policy subset rule and the privileges for orphans, ids and root tokens', async () => {
    const maker = await create({ policies: ['maker'] });
    let r = await vault(server.url, 'POST', 'auth/token/create', {
      token: maker.token,
      body: { policies: ['other'] },
    });
    assert.equal(r.status, 400);
    assert.deepEqual(r.json.errors, ['child policies must be subset of parent']);
    r = await vault(server.url, 'POST', 'auth/token/create', { token: maker.token, body: { policies: ['root'] } });
    assert.equal(r.status, 400);
    r = await vault(server.url, 'POST', 'auth/token/create', { token: maker.token, body: { no_parent: true } });
    assert.equal(r.status, 400);
    assert.match(r.json.errors[0], /orphan/);
    r = await vault(server.url, 'POST', 'auth/token/create', { token: maker.token, body: { id: 'chosen' } });
    assert.equal(r.status, 400);
    // Without policies the child inherits the parent's; `default` may always be attached.
    r = await vault(server.url, 'POST', 'auth/token/create', { token: maker.token, body: {} });
    assert.deepEqual(r.json.auth.policies, ['default', 'maker']);
    r = await vault(server.url, 'POST', 'auth/token/create', {
      token: maker.token,
      body: { policies: 'maker', no_default_policy: true },
    });
    assert.deepEqual(r.json.auth.policies, ['maker']);

    // sudo on the create path lifts the subset rule.
    const sudo = await create({ policies: ['maker-sudo'] });
    r = await vault(server.url, 'POST', 'auth/token/create', {
      token: sudo.token,
      body: { policies: ['other'], no_parent: true },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.auth.orphan, true);

    // Root may choose the token id.
    r = await root('POST', 'auth/token/create', { body: { id: 'my-chosen-token', policies: ['other'] } });
    assert.equal(r.json.auth.client_token, 'my-chosen-token');
    assert.equal(await status('my-chosen-token'), 200);
    r = await root('POST', 'auth/token/create', { body: { ttl: 'forever' } });
    assert.equal(r.status, 400);
    assert.match(r.json.errors[0], /ttl/);
  });

  it('limits tokens with num_uses', async () => {
    const t = await create({ policies: ['other'], num_uses: 2 });
    assert.equal((await vault(server.url, 'GET', 'sys/mounts', { token: t.token })).status, 200);
    assert.equal((await vault(server.url, 'GET', 'sys/mounts', { token: t.token })).status, 200);
    assert.equal((await vault(server.url, 'GET', 'sys/mounts', { token: t.token })).status, 403);
  });

  it('records leases, revokes them directly, by prefix, and with the token that obtained them', async () => {
    const revoked: string[] = [];
    server.deps.pki.leases.registerRevoker('test-secret', async (l: Lease) => {
      revoked.push((l.data as { serial: string }).serial);
    });
    assert.equal((await root('POST', 'sys/mounts/lease-pki', { body: { type: 'pki' } })).status, 204);
    const mount = (await server.deps.pki.mounts.resolve('lease-pki/issue/web'))!.mount;
    const info = {
      id: mount.id,
      path: 'lease-pki/',
      type: 'pki' as const,
      defaultLeaseTtlSeconds: 0,
      maxLeaseTtlSeconds: 0,
    };
    const holder = await create({ policies: ['other'] });
    const make = (serial: string, tokenAccessor?: string) =>
      server.deps.pki.leases.create({
        mount: info,
        path: 'issue/web',
        kind: 'test-secret',
        data: { serial },
        ttlSeconds: 3600,
        tokenAccessor,
      });
    const l1 = await make('01');
    const l2 = await make('02', holder.accessor);
    await make('03');
    assert.match(l1.leaseId, /^lease-pki\/issue\/web\/[1-9A-Za-z]{24}$/);

    let r = await root('PUT', 'sys/leases/lookup', { body: { lease_id: l1.leaseId } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.id, l1.leaseId);
    assert.equal(r.json.data.ttl, 3600);
    assert.equal(r.json.data.renewable, false);
    r = await root('LIST', 'sys/leases/lookup/lease-pki/');
    assert.deepEqual(r.json.data.keys, ['issue/']);
    r = await root('LIST', 'sys/leases/lookup/lease-pki/issue/web');
    assert.equal(r.json.data.keys.length, 3);
    // Listing leases needs sudo.
    await root('PUT', 'sys/policies/acl/lease-reader', {
      body: { policy: 'path "sys/leases/lookup/*" { capabilities = ["list"] }' },
    });
    const reader = await create({ policies: ['lease-reader'] });
    assert.equal(
      (await vault(server.url, 'LIST', 'sys/leases/lookup/lease-pki/', { token: reader.token })).status,
      403,
    );

    r = await root('PUT', 'sys/leases/renew', { body: { lease_id: l1.leaseId } });
    assert.equal(r.status, 400);
    r = await root('PUT', 'sys/leases/revoke', { body: { lease_id: l1.leaseId } });
    assert.equal(r.status, 204);
    assert.deepEqual(revoked, ['01']);
    r = await root('PUT', 'sys/leases/lookup', { body: { lease_id: l1.leaseId } });
    assert.equal(r.status, 400);

    // Revoking the token that obtained a lease revokes the lease.
    assert.equal((await vault(server.url, 'POST', 'auth/token/revoke-self', { token: holder.token })).status, 204);
    assert.deepEqual(revoked, ['01', '02']);
    assert.equal((await root('PUT', 'sys/leases/lookup', { body: { lease_id: l2.leaseId } })).status, 400);

    const other = await server.deps.pki.leases.create({
      mount: info,
      path: 'issuer/x/issue/web',
      kind: 'test-secret',
      data: { serial: '04' },
      ttlSeconds: 3600,
    });
    r = await root('PUT', 'sys/leases/revoke-prefix/lease-pki/issue');
    assert.equal(r.status, 204);
    assert.deepEqual(revoked, ['01', '02', '03']);
    // A prefix is a path: issue/ does not cover issuer/.
    r = await root('LIST', 'sys/leases/lookup/lease-pki/');
    assert.deepEqual(r.json.data.keys, ['issuer/']);
    assert.equal((await root('PUT', `sys/leases/revoke/${other.leaseId}`)).status, 204);
    assert.deepEqual(revoked, ['01', '02', '03', '04']);
    r = await root('LIST', 'sys/leases/lookup/lease-pki/');
    assert.equal(r.status, 404);
  });

  it('sweeps expired tokens and revokes the leases they obtained', async () => {
    const revoked: string[] = [];
    server.deps.pki.leases.registerRevoker('sweep-secret', async (l: Lease) => {
      revoked.push((l.data as { serial: string }).serial);
    });
    assert.equal((await root('POST', 'sys/mounts/sweep-pki', { body: { type: 'pki' } })).status, 204);
    const mount = (await server.deps.pki.mounts.resolve('sweep-pki/issue/web'))!.mount;
    const info = {
      id: mount.id,
      path: 'sweep-pki/',
      type: 'pki' as const,
      defaultLeaseTtlSeconds: 0,
      maxLeaseTtlSeconds: 0,
    };
    const shortLived = await create({ policies: ['maker', 'other'], ttl: '10m' });
    const child = await create({ policies: ['other'], ttl: '5h' }, shortLived.token);
    const longLived = await create({ policies: ['other'], ttl: '5h' });
    const byChild = await server.deps.pki.leases.create({
      mount: info,
      path: 'issue/web',
      kind: 'sweep-secret',
      data: { serial: 'c1' },
      ttlSeconds: 86400,
      tokenAccessor: child.accessor,
    });
    const byLong = await server.deps.pki.leases.create({
      mount: info,
      path: 'issue/web',
      kind: 'sweep-secret',
      data: { serial: 'l1' },
      ttlSeconds: 60,
      tokenAccessor: longLived.accessor,
    });
    await server.deps.worker.runUntilIdle();
    assert.deepEqual(revoked, []);

    clock.advance(3 * 3600);
    await server.deps.worker.runUntilIdle();
    // The parent expired: its child's lease was revoked with it; the other lease simply expired.
    assert.deepEqual(revoked, ['c1']);
    for (const id of [byChild.leaseId, byLong.leaseId]) {
      assert.equal((await root('PUT', 'sys/leases/lookup', { body: { lease_id: id } })).status, 400);
    }
    assert.equal(
      (await root('POST', 'auth/token/lookup-accessor', { body: { accessor: child.accessor } })).status,
      400,
    );
    assert.equal(await status(longLived.token), 200);
    const rows = await server.deps.core.db.kysely
      .selectFrom('pki_tokens')
      .select('accessor')
      .where('accessor', 'in', [shortLived.accessor, child.accessor])
      .execute();
    assert.deepEqual(rows, []);
  });

  it('refuses missing, unknown and malformed tokens with 403', async () => {
    for (const token of [undefined, '', 'srv.unknown', 'not-a-token']) {
      const r = await vault(server.url, 'GET', 'auth/token/lookup-self', { token });
      assert.equal(r.status, 403);
      // Vault's wording for each: no token given, or one it does not know.
      assert.deepEqual(r.json, { errors: ['permission denied', token ? 'invalid token' : 'missing client token'] });
    }
  });
  return { clock };
});
