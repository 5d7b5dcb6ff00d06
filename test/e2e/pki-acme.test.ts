/**
 * The ACME server end to end with the project's own RFC 8555 client (bench/lib/acme-client):
 * directories, nonces, accounts, orders with http-01, dns-01 and tls-alpn-01, finalize,
 * download, revocation, key rollover, renewal information, EAB and account management.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { after, before, it } from 'node:test';
import { AcmeAccountClient, AcmeHttp, generateAccountKey, jws, makeCsr } from '../../bench/lib/acme-client.js';
import type { AcmeAlg, Loose } from '../../bench/lib/acme-client.js';
import { describeWithServer } from '../support/test-server.js';
import { acmeMount, loopbackFor, startDnsServer, startHttp01, startTlsAlpn01 } from '../support/acme-fixtures.js';
import type { TestDns } from '../support/acme-fixtures.js';
import { vaultClient } from './vault-http.js';

const FILE_TAG = 31;
const ERR = 'urn:ietf:params:acme:error:';

describeWithServer('pki ACME protocol', (server, kind) => {
  let v: ReturnType<typeof vaultClient>;
  let dns: TestDns;
  let ipSeq = 0;
  const nextIp = () => loopbackFor(FILE_TAG, kind, ++ipSeq);

  before(async () => {
    v = vaultClient(server.url, server.rootToken);
    dns = await startDnsServer();
  });
  after(async () => dns.close());

  async function setup(acme: Record<string, unknown> = {}, role: Record<string, unknown> = {}) {
    const m = await acmeMount(v, server.url, { acme: { dns_resolver: dns.address, ...acme }, role });
    return { ...m, http: (dir = 'acme/') => new AcmeHttp(`${m.cluster}/${dir}directory`) };
  }

  /** One identifier through http-01, then finalize and download. */
  async function obtain(
    client: AcmeAccountClient,
    name: string,
    how: 'http-01' | 'dns-01' | 'tls-alpn-01' = 'http-01',
  ): Promise<{ order: Loose; orderUrl: string; chain: string; key: Loose }> {
    const ip = nextIp();
    dns.mapHost(name, ip);
    const o = await client.newOrder([{ type: 'dns', value: name }]);
    assert.equal(o.status, 201, o.text);
    const orderUrl = String(o.headers.location);
    const authz = await client.post(o.json.authorizations[0]);
    assert.equal(authz.status, 200, authz.text);
    const ch = authz.json.challenges.find((c: Loose) => c.type === how);
    assert.ok(ch, `no ${how} challenge: ${authz.text}`);
    const keyAuth = client.keyAuthorization(ch.token);
    let stop: () => Promise<void> = async () => {};
    if (how === 'http-01') {
      const responder = await startHttp01(ip);
      responder.tokens.set(ch.token, keyAuth);
      stop = responder.close;
    } else if (how === 'dns-01') {
      dns.setTxt(`_acme-challenge.${name.replace(/^\*\./, '')}`, [
        (await import('node:crypto')).createHash('sha256').update(keyAuth).digest('base64url'),
      ]);
    } else {
      const tls = await startTlsAlpn01(ip, name, keyAuth);
      stop = () => new Promise((r) => tls.close(() => r()));
    }
    try {
      const r = await client.post(ch.url, {});
      assert.equal(r.status, 200, r.text);
      assert.match(String(r.headers.link), /rel="up"/);
      await client.poll(o.json.authorizations[0], (x) => x.json?.status !== 'pending');
    } finally {
      await stop();
    }
    const ready = await client.poll(orderUrl, (x) => x.json?.status !== 'pending');
    assert.equal(ready.json.status, 'ready', ready.text);
    const { der, privateKey } = makeCsr([name]);
    const fin = await client.post(o.json.finalize, { csr: der.toString('base64url') });
    assert.equal(fin.status, 200, fin.text);
    const done = await client.poll(orderUrl, (x) => x.json?.status === 'valid');
    const cert = await client.post(done.json.certificate);
    assert.equal(cert.status, 200, cert.text);
    assert.equal(cert.headers['content-type'], 'application/pem-certificate-chain');
    return { order: done.json, orderUrl, chain: cert.text, key: privateKey };
  }

  it('config/acme: Vault defaults, validation, and ACME needs config/cluster path', async () => {
    let r = await v('POST', 'sys/mounts/acme-cfg', { body: { type: 'pki' } });
    assert.equal(r.status, 204);
    r = await v('GET', 'acme-cfg/config/acme');
    assert.equal(r.status, 200);
    assert.deepEqual(r.json.data, {
      enabled: false,
      allowed_issuers: ['*'],
      allowed_roles: ['*'],
      allow_role_ext_key_usage: false,
      default_directory_policy: 'sign-verbatim',
      dns_resolver: '',
      eab_policy: 'not-required',
      max_ttl: 0,
    });
    r = await v('GET', 'acme-cfg/acme/directory', { token: undefined });
    assert.equal(r.status, 404, r.text);
    for (const bad of [
      { default_directory_policy: 'nope' },
      { eab_policy: 'sometimes' },
      { dns_resolver: 'resolver.example' },
      { allowed_roles: 'a', default_directory_policy: 'role:b' },
    ]) {
      r = await v('POST', 'acme-cfg/config/acme', { body: bad });
      assert.equal(r.status, 400, JSON.stringify(bad));
      assert.ok(r.json.errors[0].length > 0);
    }
    r = await v('POST', 'acme-cfg/config/acme', { body: { enabled: true, max_ttl: '48h' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.max_ttl, 172800);
    r = await v('GET', 'acme-cfg/acme/directory', { token: undefined });
    assert.equal(r.status, 500, r.text);
    assert.match(r.contentType, /^application\/problem\+json/);
    assert.match(r.json.detail, /config\/cluster/);
  });

  it('directory, newNonce (HEAD 200, GET 204) and the four prefixes', async () => {
    const m = await setup();
    for (const dir of ['acme/', 'issuer/root/acme/', 'roles/web/acme/', 'issuer/root/roles/web/acme/']) {
      const http = m.http(dir);
      const d = await http.getDirectory();
      assert.equal(d.newNonce, `${m.cluster}/${dir}new-nonce`);
      assert.equal(d.renewalInfo, `${m.cluster}/${dir}renewal-info`);
      assert.equal(d.meta?.externalAccountRequired, false);
      const head = await http.request('HEAD', d.newNonce);
      assert.equal(head.status, 200);
      assert.match(String(head.headers['replay-nonce']), /^[A-Za-z0-9_-]{48}$/);
      assert.equal(head.headers['cache-control'], 'no-store');
      const get = await http.request('GET', d.newNonce);
      assert.equal(get.status, 204);
      assert.match(String(get.headers.link), new RegExp(`<${m.cluster}/${dir}directory>;rel="index"`));
      http.close();
    }
  });

  for (const alg of ['RS256', 'ES256', 'ES384', 'ES512', 'EdDSA'] as AcmeAlg[]) {
    it(`account with ${alg}: create, find again, onlyReturnExisting, update contacts, deactivate`, async () => {
      const m = await setup();
      const http = m.http();
      const c = new AcmeAccountClient(http, generateAccountKey(alg));
      let r = await c.register({ contact: ['mailto:ops@acme.test'] });
      assert.equal(r.status, 201, r.text);
      assert.match(c.kid, new RegExp(`^${m.cluster}/acme/account/[0-9a-f-]{36}$`));
      assert.equal(r.json.status, 'valid');
      assert.deepEqual(r.json.contact, ['mailto:ops@acme.test']);
      r = await c.register();
      assert.equal(r.status, 200);
      const d = await http.getDirectory();
      const fresh = generateAccountKey(alg);
      r = await http.post(d.newAccount, fresh, { jwk: true }, { onlyReturnExisting: true });
      assert.equal(r.status, 400);
      assert.equal(r.json.type, `${ERR}accountDoesNotExist`);
      r = await c.post(c.kid, { contact: ['mailto:sec@acme.test'] });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.json.contact, ['mailto:sec@acme.test']);
      r = await c.post(c.kid, { status: 'deactivated' });
      assert.equal(r.json.status, 'deactivated');
      r = await c.newOrder([{ type: 'dns', value: 'x.acme.test' }]);
      assert.equal(r.status, 403);
      assert.equal(r.json.type, `${ERR}unauthorized`);
      http.close();
    });
  }

  it('http-01 on a role directory: issued as `sign` under the role, stored, the account in metadata', async () => {
    const m = await setup();
    const http = m.http('roles/web/acme/');
    const c = new AcmeAccountClient(http);
    await c.register();
    const { order, chain } = await obtain(c, 'www.acme.test');
    const leaf = new X509Certificate(chain);
    assert.equal(leaf.subjectAltName, 'DNS:www.acme.test');
    assert.ok(leaf.verify(new X509Certificate(m.rootPem).publicKey));
    assert.match(leaf.toLegacyObject().ext_key_usage?.join(',') ?? '', /1\.3\.6\.1\.5\.5\.7\.3\.1/);
    assert.ok(!(leaf.toLegacyObject().ext_key_usage ?? []).includes('1.3.6.1.5.5.7.3.2'));
    const serial = leaf.serialNumber.toLowerCase().replace(/(..)(?!$)/g, '$1:');
    const listed = await v('LIST', `${m.mount}/certs`);
    assert.ok((listed.json.data.keys as string[]).includes(serial), listed.text);
    const meta = await v('GET', `${m.mount}/cert-metadata/${serial}`);
    assert.equal(meta.status, 200, meta.text);
    const decoded = JSON.parse(Buffer.from(meta.json.data.cert_metadata, 'base64').toString());
    assert.equal(decoded.acme_account_id, c.kid.split('/').pop());
    assert.equal(decoded.acme_directory, 'roles/web/acme/');
    const orders = await c.post(`${m.cluster}/roles/web/acme/orders`);
    assert.deepEqual(orders.json.orders, [order.finalize.replace(/\/finalize$/, '')]);
    // The ordinary revoke endpoint revokes it too; ACME then finds it revoked.
    const revoked = await v('POST', `${m.mount}/revoke`, { body: { serial_number: serial } });
    assert.equal(revoked.status, 200, revoked.text);
    const d = await http.getDirectory();
    const again = await c.post(d.revokeCert, { certificate: Buffer.from(leaf.raw).toString('base64url') });
    assert.equal(again.json.type, `${ERR}alreadyRevoked`, again.text);
    http.close();
  });

  it('a role with no_store=true is refused as in Vault; a certificate issued before stays downloadable', async () => {
    const m = await setup();
    const http = m.http('roles/web/acme/');
    const c = new AcmeAccountClient(http);
    await c.register();
    const { order, chain } = await obtain(c, 'kept.acme.test');
    let r = await v('POST', `${m.mount}/roles/web`, {
      body: { allowed_domains: 'acme.test', allow_subdomains: true, key_type: 'any', no_store: true },
    });
    assert.equal(r.status, 200, r.text);
    // ACME keeps every certificate it issues: a role that stores none cannot serve ACME.
    const refused = await c.newOrder([{ type: 'dns', value: 'unkept.acme.test' }]);
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.json.type, `${ERR}unauthorized`);
    assert.match(refused.json.detail, /no_store/);
    // The order's certificate URL still serves what was issued.
    const download = await c.post(order.certificate);
    assert.equal(download.status, 200, download.text);
    assert.equal(download.text, chain);
    const serial = new X509Certificate(chain).serialNumber.toLowerCase().replace(/(..)(?!$)/g, '$1:');
    r = await v('GET', `${m.mount}/cert/${serial}`, { token: undefined });
    assert.equal(r.status, 200, r.text);
    http.close();
  });

  it('dns-01 with a wildcard, through dns_resolver', async () => {
    const m = await setup();
    const http = m.http('roles/web/acme/');
    const c = new AcmeAccountClient(http);
    await c.register();
    const o = await c.newOrder([{ type: 'dns', value: '*.wild.acme.test' }]);
    assert.equal(o.status, 201, o.text);
    const authz = await c.post(o.json.authorizations[0]);
    assert.equal(authz.json.wildcard, true);
    assert.deepEqual(authz.json.identifier, { type: 'dns', value: 'wild.acme.test' });
    assert.deepEqual(
      authz.json.challenges.map((x: Loose) => x.type),
      ['dns-01'],
    );
    const { obtainDns } = await dnsHelpers();
    const chain = await obtainDns(c, o, '*.wild.acme.test', 'wild.acme.test');
    assert.equal(new X509Certificate(chain).subjectAltName, 'DNS:*.wild.acme.test');
    http.close();
  });

  it('tls-alpn-01 on the default (sign-verbatim) directory', async () => {
    const m = await setup();
    const http = m.http();
    const c = new AcmeAccountClient(http);
    await c.register();
    const { chain } = await obtain(c, 'alpn.elsewhere.test', 'tls-alpn-01');
    assert.equal(new X509Certificate(chain).subjectAltName, 'DNS:alpn.elsewhere.test');
    http.close();
  });

  /** dns-01 helpers kept apart: set the TXT record, respond, finalize, download. */
  async function dnsHelpers() {
    const { createHash } = await import('node:crypto');
    return {
      obtainDns: async (c: AcmeAccountClient, o: Loose, name: string, base: string): Promise<string> => {
        const authz = await c.post(o.json.authorizations[0]);
        const ch = authz.json.challenges.find((x: Loose) => x.type === 'dns-01');
        dns.setTxt(`_acme-challenge.${base}`, [
          createHash('sha256').update(c.keyAuthorization(ch.token)).digest('base64url'),
        ]);
        await c.post(ch.url, {});
        const orderUrl = String(o.headers.location);
        const ready = await c.poll(orderUrl, (x) => x.json?.status !== 'pending');
        assert.equal(ready.json.status, 'ready', ready.text);
        const { der } = makeCsr([name]);
        const fin = await c.post(o.json.finalize, { csr: der.toString('base64url') });
        assert.equal(fin.status, 200, fin.text);
        const cert = await c.post(fin.json.certificate);
        return cert.text;
      },
    };
  }

  it('a failed http-01 makes the challenge, authorization and order invalid with the problem', async () => {
    const m = await setup();
    const http = m.http('roles/web/acme/');
    const c = new AcmeAccountClient(http);
    await c.register();
    const name = 'nobody.acme.test';
    dns.mapHost(name, nextIp());
    const o = await c.newOrder([{ type: 'dns', value: name }]);
    const authz = await c.post(o.json.authorizations[0]);
    const ch = authz.json.challenges.find((x: Loose) => x.type === 'http-01');
    await c.post(ch.url, {});
    const done = await c.poll(o.json.authorizations[0], (x) => x.json?.status !== 'pending', 60_000);
    assert.equal(done.json.status, 'invalid');
    const failed = done.json.challenges.find((x: Loose) => x.type === 'http-01');
    assert.equal(failed.status, 'invalid');
    assert.equal(failed.error.type, `${ERR}connection`);
    const order = await c.post(String(o.headers.location));
    assert.equal(order.json.status, 'invalid');
    const fin = await c.post(o.json.finalize, { csr: makeCsr([name]).der.toString('base64url') });
    assert.equal(fin.status, 403);
    assert.equal(fin.json.type, `${ERR}orderNotReady`);
    http.close();
  });

  it('the role decides: a name outside it is rejectedIdentifier at newOrder', async () => {
    const m = await setup();
    const http = m.http('roles/web/acme/');
    const c = new AcmeAccountClient(http);
    await c.register();
    const r = await c.newOrder([{ type: 'dns', value: 'www.example.org' }]);
    assert.equal(r.status, 400);
    assert.equal(r.json.type, `${ERR}rejectedIdentifier`);
    assert.match(r.json.detail, /www\.example\.org/);
    http.close();
  });

  it('revokeCert by the account and by the certificate key; CRL and OCSP show it; renewal info', async () => {
    const m = await setup();
    const http = m.http('roles/web/acme/');
    const c = new AcmeAccountClient(http);
    await c.register();
    const d = await http.getDirectory();
    const first = await obtain(c, 'rev1.acme.test');
    const leaf1 = new X509Certificate(first.chain);
    // ARI: a window inside the certificate's lifetime.
    const certId = first.order.certificate && (await ariId(first.chain));
    let r = await http.request('GET', `${d.renewalInfo}/${certId}`);
    assert.equal(r.status, 200, r.text);
    const start = new Date(r.json.suggestedWindow.start);
    assert.ok(start > new Date(leaf1.validFrom) && start < new Date(leaf1.validTo));
    assert.equal(r.headers['retry-after'], '21600');
    // A replacement order names what it replaces.
    r = await c.newOrder([{ type: 'dns', value: 'rev1.acme.test' }], { replaces: certId });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.json.replaces, certId);

    const der1 = Buffer.from(leaf1.raw).toString('base64url');
    r = await c.post(d.revokeCert, { certificate: der1, reason: 7 });
    assert.equal(r.json.type, `${ERR}badRevocationReason`);
    r = await c.post(d.revokeCert, { certificate: der1, reason: 4 });
    assert.equal(r.status, 200, r.text);
    r = await c.post(d.revokeCert, { certificate: der1 });
    assert.equal(r.json.type, `${ERR}alreadyRevoked`);
    r = await http.request('GET', `${d.renewalInfo}/${certId}`);
    assert.ok(new Date(r.json.suggestedWindow.end) <= new Date(Date.now() + 1000));

    const second = await obtain(c, 'rev2.acme.test');
    const leaf2 = new X509Certificate(second.chain);
    const certKey = { alg: 'ES256' as const, privateKey: second.key, jwk: {}, thumbprint: '' };
    const { accountKeyOf } = await import('../../bench/lib/acme-client.js');
    const k = accountKeyOf(second.key, 'ES256');
    const body = jws(
      k,
      { nonce: await http.nonce(), url: d.revokeCert, jwk: k.jwk },
      {
        certificate: Buffer.from(leaf2.raw).toString('base64url'),
      },
    );
    void certKey;
    r = await http.request('POST', d.revokeCert, JSON.stringify(body));
    assert.equal(r.status, 200, r.text);
    const rev = await v('LIST', `${m.mount}/certs/revoked`);
    for (const leaf of [leaf1, leaf2])
      assert.ok(
        (rev.json.data.keys as string[]).includes(leaf.serialNumber.toLowerCase().replace(/(..)(?!$)/g, '$1:')),
      );
    http.close();
  });

  async function ariId(chain: string): Promise<string> {
    const { certificateIdOf } = await import('../../src/pki/acme/acme-certificates.js');
    return certificateIdOf(chain);
  }

  it('keyChange rolls the account key over; the old key no longer signs', async () => {
    const m = await setup();
    const http = m.http();
    const c = new AcmeAccountClient(http);
    await c.register();
    const d = await http.getDirectory();
    const next = generateAccountKey('ES384');
    const inner = jws(next, { url: d.keyChange, jwk: next.jwk }, { account: c.kid, oldKey: c.key.jwk });
    let r = await c.post(d.keyChange, inner);
    assert.equal(r.status, 200, r.text);
    r = await c.post(c.kid);
    assert.equal(r.status, 400);
    assert.equal(r.json.type, `${ERR}malformed`);
    const old = c.key;
    c.key = next;
    r = await c.post(c.kid);
    assert.equal(r.status, 200, r.text);
    // A key already in use by another account is a conflict naming that account.
    const other = new AcmeAccountClient(http);
    await other.register();
    const taken = jws(old, { url: d.keyChange, jwk: other.key.jwk }, { account: c.kid, oldKey: c.key.jwk });
    void taken;
    const inner2 = jws(other.key, { url: d.keyChange, jwk: other.key.jwk }, { account: c.kid, oldKey: c.key.jwk });
    r = await c.post(d.keyChange, inner2);
    assert.equal(r.status, 409, r.text);
    assert.equal(r.headers.location, other.kid);
    http.close();
  });

  it('EAB: new-eab per directory, required by eab_policy, single use, listed and deleted', async () => {
    const m = await setup({ eab_policy: 'new-account-required' });
    const http = m.http('roles/web/acme/');
    assert.equal((await http.getDirectory()).meta?.externalAccountRequired, true);
    const plain = new AcmeAccountClient(http);
    let r = await plain.register();
    assert.equal(r.status, 403);
    assert.equal(r.json.type, `${ERR}externalAccountRequired`);
    let w = await v('POST', `${m.mount}/roles/web/acme/new-eab`);
    assert.equal(w.status, 200, w.text);
    const eab = w.json.data;
    assert.equal(eab.key_type, 'hs');
    assert.equal(eab.acme_directory, 'roles/web/acme/directory');
    const other = await v('POST', `${m.mount}/acme/new-eab`);
    w = await v('LIST', `${m.mount}/eab`);
    assert.deepEqual([...w.json.data.keys].sort(), [eab.id, other.json.data.id].sort());
    assert.equal(w.json.data.key_info[eab.id].acme_directory, 'roles/web/acme/directory');
    assert.equal(JSON.stringify(w.json).includes(eab.key), false);
    // A key of another directory does not bind here.
    const wrong = new AcmeAccountClient(http);
    r = await wrong.register({ eab: { kid: other.json.data.id, hmac: other.json.data.key } });
    assert.equal(r.json.type, `${ERR}unauthorized`);
    const bad = new AcmeAccountClient(http);
    r = await bad.register({ eab: { kid: eab.id, hmac: Buffer.alloc(32).toString('base64url') } });
    assert.equal(r.json.type, `${ERR}unauthorized`);
    const c = new AcmeAccountClient(http);
    r = await c.register({ eab: { kid: eab.id, hmac: eab.key } });
    assert.equal(r.status, 201, r.text);
    const again = new AcmeAccountClient(http);
    r = await again.register({ eab: { kid: eab.id, hmac: eab.key } });
    assert.equal(r.status, 403, r.text);
    w = await v('DELETE', `${m.mount}/eab/${other.json.data.id}`);
    assert.equal(w.status, 204);
    w = await v('LIST', `${m.mount}/eab`);
    assert.equal(w.status, 404);
    // Account management: list, read with orders, revoke, restore.
    const id = c.kid.split('/').pop()!;
    w = await v('LIST', `${m.mount}/acme/mgmt/account/keyid`);
    assert.deepEqual(w.json.data.keys, [id]);
    await c.newOrder([{ type: 'dns', value: 'mgmt.acme.test' }]);
    w = await v('GET', `${m.mount}/acme/mgmt/account/keyid/${id}`);
    assert.equal(w.json.data.status, 'valid');
    assert.equal(w.json.data.eab.eab_id, eab.id);
    assert.deepEqual(w.json.data.orders[0].identifiers, ['mgmt.acme.test']);
    w = await v('POST', `${m.mount}/acme/mgmt/account/keyid/${id}`, { body: { status: 'revoked' } });
    assert.equal(w.json.data.status, 'revoked');
    assert.ok(w.json.data.revoked_time);
    r = await c.newOrder([{ type: 'dns', value: 'mgmt.acme.test' }]);
    assert.equal(r.json.type, `${ERR}unauthorized`);
    w = await v('POST', `${m.mount}/acme/mgmt/account/keyid/${id}`, { body: { status: 'valid' } });
    assert.equal(w.json.data.status, 'valid');
    w = await v('POST', `${m.mount}/acme/new-eab`, { token: undefined });
    assert.equal(w.status, 403);
    http.close();
  });

  it('ip identifiers (RFC 8738) with http-01', async () => {
    // An IP certificate has no host name for a common name: the role must not require one.
    const m = await setup({}, { require_cn: false });
    const http = m.http('roles/web/acme/');
    const c = new AcmeAccountClient(http);
    await c.register();
    const ip = nextIp();
    const o = await c.newOrder([{ type: 'ip', value: ip }]);
    assert.equal(o.status, 201, o.text);
    const authz = await c.post(o.json.authorizations[0]);
    assert.deepEqual(
      authz.json.challenges.map((x: Loose) => x.type),
      ['http-01', 'tls-alpn-01'],
    );
    const ch = authz.json.challenges[0];
    const responder = await startHttp01(ip);
    responder.tokens.set(ch.token, c.keyAuthorization(ch.token));
    try {
      await c.post(ch.url, {});
      await c.poll(String(o.headers.location), (x) => x.json?.status === 'ready');
    } finally {
      await responder.close();
    }
    const fin = await c.post(o.json.finalize, { csr: makeCsr([ip], 'ec', null).der.toString('base64url') });
    assert.equal(fin.status, 200, fin.text);
    const cert = await c.post(fin.json.certificate);
    assert.equal(new X509Certificate(cert.text).subjectAltName, `IP Address:${ip}`);
    http.close();
  });

  it('allowed_roles, allowed_issuers and a forbidden default directory', async () => {
    const m = await setup({ allowed_roles: 'other', allowed_issuers: 'nope', default_directory_policy: 'forbid' });
    for (const [dir, detail] of [
      ['roles/web/acme/', /allowed_roles/],
      ['issuer/root/acme/', /allowed_issuers/],
      ['acme/', /forbidden/],
    ] as const) {
      const r = await m.http(dir).request('GET', `${m.cluster}/${dir}directory`);
      assert.equal(r.status, 403, r.text);
      assert.equal(r.json.type, `${ERR}unauthorized`);
      assert.match(r.json.detail, detail);
    }
  });
});
