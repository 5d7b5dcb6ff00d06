/**
 * The ACL over real PKI paths: which paths need no token (exactly Vault's list, reference
 * 2.1, checked against every route the server serves inside a mount), each capability, `+`
 * and `*` patterns with Vault's precedence, deny, sudo, and tokens that expired or were
 * revoked.
 */
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { ManualClock } from '../../src/shared/clock.js';
import { describeWithServer } from '../support/test-server.js';
import { mountWithRoot, opensslCsr, role } from './pki-issue-helpers.js';
import type { Vault } from './pki-issue-helpers.js';
import { vault, vaultClient } from './vault-http.js';

/**
 * Reference 2.1 as written there (relative to the mount): `+` is one segment, a trailing `*`
 * a prefix; `issuers/` is `LIST issuers`. Kept here, apart from the server's own list, so
 * this test judges the server rather than repeating it.
 */
const ACME = [
  'acme/directory',
  'acme/new-nonce',
  'acme/new-account',
  'acme/new-order',
  'acme/revoke-cert',
  'acme/key-change',
  'acme/account/+',
  'acme/authorization/+',
  'acme/challenge/+/+',
  'acme/orders',
  'acme/order/+',
  'acme/order/+/finalize',
  'acme/order/+/cert',
];
const REFERENCE_PUBLIC = [
  'cert/*',
  'ca',
  'ca/pem',
  'ca_chain',
  'crl',
  'crl/pem',
  'crl/delta',
  'crl/delta/pem',
  'issuer/+/crl',
  'issuer/+/crl/der',
  'issuer/+/crl/pem',
  'issuer/+/crl/delta',
  'issuer/+/crl/delta/der',
  'issuer/+/crl/delta/pem',
  'issuer/+/unified-crl',
  'issuer/+/unified-crl/der',
  'issuer/+/unified-crl/pem',
  'issuer/+/unified-crl/delta',
  'issuer/+/unified-crl/delta/der',
  'issuer/+/unified-crl/delta/pem',
  'issuer/+/json',
  'issuer/+/der',
  'issuer/+/pem',
  'issuers/',
  'ocsp',
  'ocsp/*',
  'unified-crl',
  'unified-crl/pem',
  'unified-crl/delta',
  'unified-crl/delta/pem',
  'unified-ocsp',
  'unified-ocsp/*',
  ...['', 'issuer/+/', 'roles/+/', 'issuer/+/roles/+/'].flatMap((prefix) => ACME.map((p) => prefix + p)),
  // Beyond the reference: ACME Renewal Information (RFC 9773) is fetched with a plain GET, like the directory.
  ...['', 'issuer/+/', 'roles/+/', 'issuer/+/roles/+/'].map((prefix) => `${prefix}acme/renewal-info/+`),
];

function referencePublic(path: string, isList: boolean): boolean {
  const p = isList ? `${path}/` : path;
  return REFERENCE_PUBLIC.some((pattern) => {
    const prefix = pattern.endsWith('*');
    const want = (prefix ? pattern.slice(0, -1) : pattern).split('/');
    const got = p.split('/');
    if (prefix ? got.length < want.length : got.length !== want.length) return false;
    return want.every(
      (seg, i) => seg === '+' || seg === got[i] || (prefix && i === want.length - 1 && (got[i] ?? '').startsWith(seg)),
    );
  });
}

/** Fetch paths the reference makes public that other modules serve (CRLs, OCSP): public even before they exist. */
const PUBLIC_PROBES: Array<[string, string]> = [
  ['GET', 'crl'],
  ['GET', 'crl/pem'],
  ['GET', 'crl/delta'],
  ['GET', 'crl/delta/pem'],
  ['GET', 'cert/crl'],
  ['GET', 'cert/delta-crl'],
  ['GET', 'issuer/default/crl'],
  ['GET', 'issuer/default/crl/der'],
  ['GET', 'issuer/default/crl/pem'],
  ['GET', 'issuer/default/crl/delta'],
  ['GET', 'issuer/default/crl/delta/der'],
  ['GET', 'issuer/default/crl/delta/pem'],
  ['POST', 'ocsp'],
  ['GET', 'ocsp/MEMwQTA%2FMD0wOzAJBgUrDgMCGgUABBQ'],
  ['GET', 'unified-crl'],
  ['GET', 'unified-ocsp/MEMw'],
  ['GET', 'acme/directory'],
  ['GET', 'roles/web/acme/directory'],
  ['GET', 'issuer/default/acme/new-nonce'],
];

/** Paths the reference names as authenticated although they sit next to public ones. */
const PRIVATE_PROBES: Array<[string, string]> = [
  ['LIST', 'certs'],
  ['LIST', 'keys'],
  ['GET', 'issuers'],
  ['GET', 'issuer/default'],
  ['GET', 'key/default'],
  ['GET', 'crl/rotate'],
  ['GET', 'crl/rotate-delta'],
  ['POST', 'acme/new-eab'],
  ['GET', 'cert-metadata/01'],
  ['LIST', 'cert-metadata'],
  ['LIST', 'roles'],
  ['GET', 'roles/web'],
  ['GET', 'config/urls'],
  ['POST', 'issue/web'],
  ['POST', 'sign/web'],
  ['POST', 'issuer/default/issue/web'],
  ['POST', 'revoke'],
  ['POST', 'revoke-with-key'],
  ['LIST', 'certs/revoked'],
  ['POST', 'root/sign-intermediate'],
  ['POST', 'root/sign-self-issued'],
  ['POST', 'issuer/default/sign-self-issued'],
  ['POST', 'sign-verbatim'],
  ['GET', 'config/crl'],
  ['POST', 'tidy'],
  ['DELETE', 'root'],
  ['GET', 'ocspx'],
  ['GET', 'issuer/default/crlx'],
];

const METHOD: Record<string, string> = {
  read: 'GET',
  list: 'LIST',
  update: 'POST',
  create: 'POST',
  patch: 'PATCH',
  delete: 'DELETE',
};

describeWithServer('pki ACL', (server) => {
  let v: Vault;
  let mount: string;
  let serial: string;
  const clock = new ManualClock(new Date());
  const call = (token: string | undefined, method: string, path: string, body?: Record<string, unknown>) =>
    vault(server.url, method, `${mount}/${path}`, {
      token,
      ...(method === 'POST' || method === 'PATCH' ? { body: body ?? {} } : {}),
      ...(method === 'PATCH' ? { headers: { 'content-type': 'application/merge-patch+json' } } : {}),
    });
  let policySeq = 0;
  const writePolicy = async (text: string): Promise<string> => {
    const name = `pki-acl-${++policySeq}`;
    assert.equal(
      (await v('PUT', `sys/policies/acl/${name}`, { body: { policy: text.replaceAll('M/', `${mount}/`) } })).status,
      204,
    );
    return name;
  };
  const tokenFor = async (policies: string[], body: Record<string, unknown> = {}): Promise<string> => {
    const r = await v('POST', 'auth/token/create', { body: { policies, ...body } });
    assert.equal(r.status, 200, r.text);
    return r.json.auth.client_token as string;
  };
  const tokenWith = async (policy: string, body: Record<string, unknown> = {}): Promise<string> =>
    tokenFor([await writePolicy(policy)], body);

  before(async () => {
    v = vaultClient(server.url, server.rootToken);
    const m = await mountWithRoot(v, { issuerName: 'main' });
    mount = m.mount;
    await role(v, mount, 'web', { allowed_domains: 'example.com', allow_subdomains: true, key_type: 'ec' });
    await role(v, mount, 'admin', { allow_any_name: true, key_type: 'ec' });
    const issued = await v('POST', `${mount}/issue/web`, { body: { common_name: 'a.example.com' } });
    assert.equal(issued.status, 200, issued.text);
    serial = issued.json.data.serial_number;
  });

  it("needs no token exactly on the reference's unauthenticated paths, for every route the server serves", async () => {
    const sample = (seg: string): string => {
      const name = seg.replace(/^[:*]/, '');
      if (seg.startsWith('*')) return 'MEMw';
      if (name === 'serial') return serial;
      if (name === 'exported') return 'internal';
      if (name.includes('issuer') || name === 'ref' || name.includes('key')) return 'default';
      if (name === 'role' || name === 'name') return 'web';
      return 'x';
    };
    const routes = server.deps.pki.mountRoutes();
    assert.ok(routes.length > 40, `${routes.length} routes`);
    let publicSeen = 0;
    for (const route of routes) {
      const path = route.pattern
        .split('/')
        .map((s) => (s.startsWith(':') || s.startsWith('*') ? sample(s) : s))
        .join('/');
      for (const op of route.operations) {
        const method = METHOD[op]!;
        const expectPublic = referencePublic(path, op === 'list');
        for (const token of [undefined, 'not-a-token']) {
          const r = await call(token, method, path);
          const where =
            `${method} ${route.pattern} (${path}) token=${token ?? 'none'}: ${r.status} ` + `${r.text.slice(0, 120)}`;
          if (expectPublic) {
            assert.notEqual(r.status, 403, where);
          } else {
            assert.equal(r.status, 403, where);
            const why = token ? 'invalid token' : 'missing client token';
            assert.deepEqual(r.json, { errors: ['permission denied', why] }, where);
          }
        }
        if (expectPublic) publicSeen++;
      }
    }
    assert.ok(publicSeen >= 11, `public routes seen: ${publicSeen}`);
  });

  it("keeps the reference's public fetch paths public before their modules serve them, others private", async () => {
    for (const [method, path] of PUBLIC_PROBES) {
      const r = await call(undefined, method, path);
      assert.notEqual(r.status, 403, `${method} ${path}: ${r.text}`);
    }
    for (const [method, path] of PRIVATE_PROBES) {
      const r = await call(undefined, method, path);
      assert.equal(r.status, 403, `${method} ${path}: ${r.text}`);
      assert.deepEqual(r.json, { errors: ['permission denied', 'missing client token'] });
    }
    // LIST issuers is public; the same path read is not.
    assert.equal((await call(undefined, 'LIST', 'issuers')).status, 200);
    assert.equal((await vault(server.url, 'GET', `${mount}/issuers?list=true`)).status, 200);
  });

  it('grants each capability on its own on role paths', async () => {
    const caps = ['read', 'update', 'create', 'patch', 'delete', 'list'] as const;
    const requests: Array<[string, string, (typeof caps)[number]]> = [
      ['GET', 'roles/r-cap', 'read'],
      ['POST', 'roles/r-cap', 'update'],
      ['PATCH', 'roles/r-cap', 'patch'],
      ['DELETE', 'roles/r-cap', 'delete'],
      ['LIST', 'roles', 'list'],
    ];
    for (const cap of caps) {
      const t = await tokenWith(
        `path "M/roles" { capabilities = ["${cap}"] }\npath "M/roles/*" { capabilities = ["${cap}"] }`,
      );
      for (const [method, path, needs] of requests) {
        await role(v, mount, 'r-cap', { allow_any_name: true, key_type: 'ec' });
        const r = await call(t, method, path, method === 'PATCH' ? { ttl: '1h' } : {});
        // PKI writes are updates (no existence check): `create` alone grants no write.
        if (cap === needs)
          assert.ok(r.status === 200 || r.status === 204, `${cap} ${method} ${path}: ${r.status} ${r.text}`);
        else assert.equal(r.status, 403, `${cap} ${method} ${path}: ${r.text}`);
      }
    }
  });

  it("issues for exactly the roles a policy names, with + segments, * prefixes and Vault's precedence", async () => {
    const issue = (t: string, path: string) => call(t, 'POST', path, { common_name: 'a.example.com' });
    const csr = opensslCsr('EC:P-256', '/CN=s.example.com').csr;
    const sign = (t: string, path: string) => call(t, 'POST', path, { csr });

    // `+` matches one segment: issue/web and sign/web, nothing else.
    let t = await tokenWith('path "M/+/web" { capabilities = ["update"] }');
    assert.equal((await issue(t, 'issue/web')).status, 200);
    assert.equal((await sign(t, 'sign/web')).status, 200);
    assert.equal((await issue(t, 'issue/admin')).status, 403);
    assert.equal((await issue(t, 'issuer/main/issue/web')).status, 403, 'the per-issuer path is another path');
    assert.equal((await call(t, 'GET', 'roles/web')).status, 403);

    // `*` prefix with a more specific exact deny.
    t = await tokenWith(
      'path "M/issue/*" { capabilities = ["update"] }\npath "M/issue/admin" { capabilities = ["deny"] }',
    );
    assert.equal((await issue(t, 'issue/web')).status, 200);
    assert.equal((await issue(t, 'issue/admin')).status, 403);
    assert.equal((await sign(t, 'sign/web')).status, 403);

    // A broad deny loses to a more specific grant: only the most specific pattern applies.
    t = await tokenWith('path "M/*" { capabilities = ["deny"] }\npath "M/issue/web" { capabilities = ["update"] }');
    assert.equal((await issue(t, 'issue/web')).status, 200);
    assert.equal((await issue(t, 'issue/admin')).status, 403);
    assert.equal((await call(t, 'GET', 'roles/web')).status, 403);

    // The pattern whose first wildcard comes later wins: issue/* beats +/web.
    t = await tokenWith('path "M/+/web" { capabilities = ["deny"] }\npath "M/issue/*" { capabilities = ["update"] }');
    assert.equal((await issue(t, 'issue/web')).status, 200);
    assert.equal((await sign(t, 'sign/web')).status, 403);

    // With the same pattern in two policies, deny wins; the per-issuer variant needs its own grant.
    const allow = await writePolicy('path "M/issue/web" { capabilities = ["update"] }');
    const deny = await writePolicy('path "M/issue/web" { capabilities = ["deny"] }');
    assert.equal((await issue(await tokenFor([allow, deny]), 'issue/web')).status, 403);
    assert.equal((await issue(await tokenFor([allow]), 'issue/web')).status, 200);
    t = await tokenWith('path "M/issuer/+/issue/web" { capabilities = ["update"] }');
    assert.equal((await issue(t, 'issuer/main/issue/web')).status, 200);
    assert.equal((await issue(t, 'issue/web')).status, 403);

    // A denied issue stores nothing and names nothing.
    const r = await issue(await tokenWith('path "M/issue/web" { capabilities = ["read"] }'), 'issue/web');
    assert.deepEqual(r.json, { errors: ['permission denied'] });
  });

  it('needs sudo for DELETE root and root/sign-self-issued, not for issuer/:ref/sign-self-issued', async () => {
    const plain = await tokenWith(
      'path "M/root" { capabilities = ["delete"] }\npath "M/root/sign-self-issued" { capabilities = ["update"] ' +
        '}\npath "M/issuer/+/sign-self-issued" { capabilities = ["update"] }',
    );
    const sudo = await tokenWith(
      'path "M/root" { capabilities = ["delete", "sudo"] }\npath "M/root/sign-self-issued" { capabilities ' +
        '= ["update", "sudo"] }',
    );
    assert.equal((await call(plain, 'DELETE', 'root')).status, 403);
    assert.equal((await call(plain, 'POST', 'root/sign-self-issued')).status, 403);
    assert.notEqual((await call(sudo, 'POST', 'root/sign-self-issued')).status, 403);
    assert.notEqual((await call(plain, 'POST', 'issuer/main/sign-self-issued')).status, 403);
    // sudo alone grants no operation.
    const sudoOnly = await tokenWith('path "M/root" { capabilities = ["sudo"] }');
    assert.equal((await call(sudoOnly, 'DELETE', 'root')).status, 403);
    // The issuers are still there; a sudo holder may delete them (last, on a mount of its own).
    const other = await mountWithRoot(v);
    const sudoOther = await tokenWith(`path "${other.mount}/root" { capabilities = ["delete", "sudo"] }`);
    assert.equal((await call(plain, 'LIST', 'issuers')).status, 200);
    assert.equal((await vault(server.url, 'DELETE', `${other.mount}/root`, { token: sudoOther })).status, 204);
    assert.equal((await vault(server.url, 'LIST', `${other.mount}/issuers`)).status, 404);
  });

  it('refuses an expired token and a revoked one on PKI paths, while public paths stay open', async () => {
    const policy = 'path "M/issue/web" { capabilities = ["update"] }\npath "M/roles/*" { capabilities = ["read"] }';
    const expiring = await tokenWith(policy, { ttl: '10m' });
    const revoked = await tokenWith(policy, { ttl: '1h' });
    for (const t of [expiring, revoked]) {
      assert.equal((await call(t, 'POST', 'issue/web', { common_name: 'a.example.com' })).status, 200);
      assert.equal((await call(t, 'GET', 'roles/web')).status, 200);
    }
    clock.advance(599);
    assert.equal((await call(expiring, 'GET', 'roles/web')).status, 200);
    clock.advance(1);
    assert.equal((await v('POST', 'auth/token/revoke', { body: { token: revoked } })).status, 204);
    for (const t of [expiring, revoked]) {
      for (const [method, path] of [
        ['POST', 'issue/web'],
        ['GET', 'roles/web'],
      ] as const) {
        const r = await call(t, method, path, { common_name: 'a.example.com' });
        assert.equal(r.status, 403, `${method} ${path}: ${r.text}`);
        assert.deepEqual(r.json, { errors: ['permission denied', 'invalid token'] });
      }
      const ca = await call(t, 'GET', 'ca/pem');
      assert.equal(ca.status, 200);
      assert.match(ca.text, /BEGIN CERTIFICATE/);
    }
  });
  return { clock };
});
