/**
 * Certificate search (GET <mount>/certs/search, docs/pki-cert-search.md): every filter,
 * sorting, keyset pages, errors in Vault's envelope and the ACL on its own path.
 */
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeWithServer } from '../support/test-server.js';
import { makeServerClient, mountWithRoot, role } from './pki-issue-helpers.js';
import type { Vault } from './pki-issue-helpers.js';
import { vault } from './vault-http.js';

interface Hit {
  serial_number: string;
  common_name: string;
  names: string[];
  issuer_id: string;
  role: string;
  not_after: number;
  revoked: boolean;
}

describeWithServer('pki certificate search', (server, kind) => {
  let v: Vault;
  let mount: string;
  let issuerId: string;
  const issued = new Map<string, string>();
  const search = async (query: Record<string, string>, token?: string) =>
    vault(server.url, 'GET', `${mount}/certs/search?${new URLSearchParams(query).toString()}`, {
      token: token ?? server.rootToken,
    });
  const hits = async (query: Record<string, string>): Promise<Hit[]> => {
    const r = await search(query);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(
      r.json.data.keys,
      r.json.data.certificates.map((c: Hit) => c.serial_number),
    );
    return r.json.data.certificates;
  };
  const cns = (list: Hit[]) => list.map((h) => h.common_name);

  before(async () => {
    v = makeServerClient(server);
    const m = await mountWithRoot(v, { issuerName: 'main' });
    mount = m.mount;
    issuerId = m.issuerId;
    await role(v, mount, 'web', { allowed_domains: 'example.com', allow_subdomains: true, key_type: 'ec' });
    await role(v, mount, 'mail', { allow_any_name: true, key_type: 'ec' });
    const plan: [string, string, string, string?][] = [
      ['web', 'api.example.com', '24h', 'api-alt.example.com'],
      ['web', 'www.example.com', '240h'],
      ['web', 'db.example.com', '2h', 'replica.example.com'],
      ['mail', 'mx.mail.test', '480h', 'smtp.mail.test'],
      ['mail', 'z.test', '72h'],
    ];
    for (const [roleName, cn, ttl, alt] of plan) {
      const r = await v('POST', `${mount}/issue/${roleName}`, {
        body: { common_name: cn, ttl, ...(alt ? { alt_names: alt } : {}) },
      });
      assert.equal(r.status, 200, r.text);
      issued.set(cn, r.json.data.serial_number);
    }
    const rv = await v('POST', `${mount}/revoke`, { body: { serial_number: issued.get('db.example.com') } });
    assert.equal(rv.status, 200, rv.text);
  });

  it('lists every stored certificate in expiry order by default, the root included, with its fields', async () => {
    const all = await hits({});
    assert.deepEqual(cns(all), [
      'db.example.com',
      'api.example.com',
      'z.test',
      'www.example.com',
      'mx.mail.test',
      `Root ${mount}`,
    ]);
    const api = all.find((h) => h.common_name === 'api.example.com')!;
    assert.deepEqual(api.names, ['api.example.com', 'api-alt.example.com']);
    assert.equal(api.issuer_id, issuerId);
    assert.equal(api.role, 'web');
    assert.equal(api.serial_number, issued.get('api.example.com'));
    assert.equal(all.find((h) => h.common_name === 'db.example.com')!.revoked, true);
    assert.equal(all.at(-1)!.role, '');
    assert.deepEqual(cns(await hits({ order: 'desc' })), cns(all).reverse());
    const bySerial = await hits({ sort: 'serial' });
    assert.deepEqual(
      bySerial.map((h) => h.serial_number),
      bySerial.map((h) => h.serial_number).sort(),
    );
  });

  it('matches substrings of the common name and of any SAN, case-insensitively, long and short', async () => {
    assert.deepEqual(cns(await hits({ name: 'EXAMPLE.com' })), [
      'db.example.com',
      'api.example.com',
      'www.example.com',
    ]);
    assert.deepEqual(cns(await hits({ name: 'replica' })), ['db.example.com']);
    assert.deepEqual(cns(await hits({ name: 'smtp' })), ['mx.mail.test']);
    assert.deepEqual(cns(await hits({ name: 'z.' })), ['z.test']);
    assert.deepEqual(cns(await hits({ name: '%' })), []);
    assert.deepEqual(cns(await hits({ name: 'nothing-like-this' })), []);
  });

  it('filters by serial prefix, issuer, role, revocation and expiry', async () => {
    const serial = issued.get('www.example.com')!;
    // The first 6 bytes are the issue time (decision 0060), shared by certificates issued
    // together; 10 bytes reach into the random part.
    assert.deepEqual(cns(await hits({ serial: serial.slice(0, 29).toUpperCase() })), ['www.example.com']);
    assert.equal((await hits({ serial: serial.slice(0, 5) })).length, 6, 'a time prefix finds those issued then');
    assert.deepEqual(cns(await hits({ serial: serial.replaceAll(':', '-') })), ['www.example.com']);
    assert.equal((await hits({ issuer: 'main' })).length, 6);
    assert.equal((await hits({ issuer: 'default' })).length, 6);
    assert.deepEqual(cns(await hits({ role: 'mail' })), ['z.test', 'mx.mail.test']);
    assert.deepEqual(cns(await hits({ revoked: 'true' })), ['db.example.com']);
    assert.equal((await hits({ revoked: 'false' })).length, 5);
    assert.deepEqual(cns(await hits({ expiring_within: '100h' })), ['db.example.com', 'api.example.com', 'z.test']);
    assert.deepEqual(cns(await hits({ expiring_within: '100h', revoked: 'false', role: 'web' })), ['api.example.com']);
    const now = Math.floor(Date.now() / 1000);
    assert.deepEqual(
      cns(
        await hits({
          not_after_from: String(now + 48 * 3600),
          not_after_to: new Date((now + 300 * 3600) * 1000).toISOString(),
        }),
      ),
      ['z.test', 'www.example.com'],
    );
  });

  it('pages with a cursor until the last page, in both orders', async () => {
    for (const order of ['asc', 'desc']) {
      const whole = cns(await hits({ order }));
      const seen: string[] = [];
      let after = '';
      for (let i = 0; i < 10; i++) {
        const r = await search({ order, limit: '2', ...(after ? { after } : {}) });
        assert.equal(r.status, 200, r.text);
        seen.push(...r.json.data.certificates.map((h: Hit) => h.common_name));
        after = r.json.data.next;
        if (after === '') break;
      }
      assert.deepEqual(seen, whole, order);
    }
  });

  it("refuses bad input in Vault's envelope", async () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ serial: 'xyz' }, /invalid serial/],
      [{ limit: '501' }, /limit must be between 1 and 500/],
      [{ sort: 'cn' }, /sort must be/],
      [{ order: 'up' }, /order must be/],
      [{ not_after_from: 'yesterday' }, /not_after_from must be RFC 3339/],
      [{ after: 'bm9wZQ' }, /not a cursor/],
      [{ expiring_within: 'soon' }, /expiring_within/],
    ];
    for (const [query, message] of cases) {
      const r = await search(query);
      assert.equal(r.status, 400, `${JSON.stringify(query)}: ${r.text}`);
      assert.equal(r.json.errors.length, 1);
      assert.match(r.json.errors[0], message);
    }
    const unknownIssuer = await search({ issuer: 'nope' });
    assert.ok(unknownIssuer.status >= 400 && unknownIssuer.status < 500, unknownIssuer.text);
  });

  it('needs a token with read on <mount>/certs/search, not only on cert/*', async () => {
    const policy = async (name: string, text: string) =>
      assert.equal((await v('PUT', `sys/policies/acl/${name}`, { body: { policy: text } })).status, 204);
    await policy(`search-${kind}`, `path "${mount}/certs/search" { capabilities = ["read"] }`);
    await policy(`certread-${kind}`, `path "${mount}/cert/*" { capabilities = ["read"] }`);
    const token = async (p: string) =>
      (await v('POST', 'auth/token/create', { body: { policies: [p] } })).json.auth.client_token as string;
    assert.equal((await search({}, await token(`search-${kind}`))).status, 200);
    const denied = await search({}, await token(`certread-${kind}`));
    assert.equal(denied.status, 403);
    assert.deepEqual(denied.json, { errors: ['permission denied'] });
    const none = await vault(server.url, 'GET', `${mount}/certs/search`);
    assert.equal(none.status, 403);
  });
});
