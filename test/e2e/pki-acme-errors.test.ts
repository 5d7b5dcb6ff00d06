/**
 * Bad ACME input: every JWS error case gets its RFC 8555 problem document and changes
 * nothing, and a few thousand mutated requests never make the server answer 500.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { after, before, it } from 'node:test';
import { AcmeAccountClient, AcmeHttp, csrFor, generateAccountKey, jws, makeCsr } from '../../bench/lib/acme-client.js';
import type { AcmeResponse, Loose } from '../../bench/lib/acme-client.js';
import { describeWithServer } from '../support/test-server.js';
import { acmeMount, loopbackFor, startDnsServer, startHttp01 } from '../support/acme-fixtures.js';
import type { TestDns } from '../support/acme-fixtures.js';
import { vaultClient } from './vault-http.js';

const FILE_TAG = 34;
const ERR = 'urn:ietf:params:acme:error:';

function isProblem(r: AcmeResponse, type: string, status?: number): void {
  assert.match(String(r.headers['content-type']), /^application\/problem\+json/, r.text);
  assert.equal(r.json?.type, `${ERR}${type}`, r.text);
  if (status !== undefined) assert.equal(r.status, status, r.text);
  assert.equal(typeof r.json.detail, 'string');
}

describeWithServer('pki ACME bad input', (server, kind) => {
  let dns: TestDns;
  let m: Awaited<ReturnType<typeof acmeMount>>;
  let http: AcmeHttp;
  let client: AcmeAccountClient;
  let orderUrl: string;
  let order: Loose;
  let v: ReturnType<typeof vaultClient>;

  before(async () => {
    v = vaultClient(server.url, server.rootToken);
    dns = await startDnsServer();
    m = await acmeMount(v, server.url, { acme: { dns_resolver: dns.address } });
    http = new AcmeHttp(`${m.cluster}/roles/web/acme/directory`);
    client = new AcmeAccountClient(http);
    await client.register();
    // One ready order for the finalize cases.
    const ip = loopbackFor(FILE_TAG, kind, 1);
    dns.mapHost('ready.acme.test', ip);
    const o = await client.newOrder([{ type: 'dns', value: 'ready.acme.test' }]);
    orderUrl = String(o.headers.location);
    const authz = await client.post(o.json.authorizations[0]);
    const ch = authz.json.challenges.find((x: Loose) => x.type === 'http-01');
    const responder = await startHttp01(ip);
    responder.tokens.set(ch.token, client.keyAuthorization(ch.token));
    try {
      await client.post(ch.url, {});
      order = (await client.poll(orderUrl, (x) => x.json?.status === 'ready')).json;
    } finally {
      await responder.close();
    }
  });
  after(async () => {
    http.close();
    await dns.close();
  });

  const accounts = async () => (await v('LIST', `${m.mount}/acme/mgmt/account/keyid`)).json?.data?.keys ?? [];

  it('JWS errors: signature, kid, nonce, url, algorithm, jwk/kid rules', async () => {
    const d = await http.getDirectory();
    const before = await accounts();
    const key = generateAccountKey();
    // Wrong signature: signed by another key than the jwk it names.
    const other = generateAccountKey();
    let body = jws(other, { nonce: await http.nonce(), url: d.newAccount, jwk: key.jwk }, {});
    let r = await http.request('POST', d.newAccount, JSON.stringify(body));
    isProblem(r, 'malformed', 400);
    assert.match(r.json.detail, /signature/);
    assert.match(String(r.headers['replay-nonce']), /^[A-Za-z0-9_-]{48}$/);
    // Unknown kid.
    body = jws(
      key,
      { nonce: await http.nonce(), url: d.newOrder, kid: `${m.cluster}/roles/web/acme/account/nope` },
      {},
    );
    r = await http.request('POST', d.newOrder, JSON.stringify(body));
    isProblem(r, 'accountDoesNotExist', 400);
    // A nonce used twice, and one this server never made.
    const nonce = await http.nonce();
    body = jws(client.key, { nonce, url: client.kid, kid: client.kid }, undefined);
    r = await http.request('POST', client.kid, JSON.stringify(body));
    assert.equal(r.status, 200, r.text);
    r = await http.request('POST', client.kid, JSON.stringify(body));
    isProblem(r, 'badNonce', 400);
    assert.ok(r.headers['replay-nonce']);
    body = jws(
      client.key,
      { nonce: randomBytes(36).toString('base64url'), url: client.kid, kid: client.kid },
      undefined,
    );
    r = await http.request('POST', client.kid, JSON.stringify(body));
    isProblem(r, 'badNonce', 400);
    // The url of another resource.
    body = jws(client.key, { nonce: await http.nonce(), url: d.newOrder, kid: client.kid }, undefined);
    r = await http.request('POST', client.kid, JSON.stringify(body));
    isProblem(r, 'unauthorized', 403);
    // Unsupported algorithms: HS256, none, PS256.
    for (const alg of ['HS256', 'none', 'PS256']) {
      const h = Buffer.from(JSON.stringify({ alg, nonce: await http.nonce(), url: d.newAccount, jwk: key.jwk }));
      r = await http.request(
        'POST',
        d.newAccount,
        JSON.stringify({ protected: h.toString('base64url'), payload: 'e30', signature: 'AAAA' }),
      );
      isProblem(r, 'badSignatureAlgorithm', 400);
    }
    // jwk where a kid is required, and a kid on newAccount.
    body = jws(key, { nonce: await http.nonce(), url: d.newOrder, jwk: key.jwk }, { identifiers: [] });
    r = await http.request('POST', d.newOrder, JSON.stringify(body));
    isProblem(r, 'malformed', 400);
    body = jws(client.key, { nonce: await http.nonce(), url: d.newAccount, kid: client.kid }, {});
    r = await http.request('POST', d.newAccount, JSON.stringify(body));
    isProblem(r, 'malformed', 400);
    assert.deepEqual(await accounts(), before);
  });

  it('bodies: not JSON, not a JWS, payload not JSON, oversized, wrong method', async () => {
    const d = await http.getDirectory();
    const before = await accounts();
    let r = await http.request('POST', d.newAccount, 'this is not json');
    isProblem(r, 'malformed', 400);
    r = await http.request('POST', d.newAccount, '{"hello":"world"}');
    isProblem(r, 'malformed', 400);
    const key = generateAccountKey();
    const p = Buffer.from(JSON.stringify({ alg: 'ES256', nonce: await http.nonce(), url: d.newAccount, jwk: key.jwk }));
    r = await http.request(
      'POST',
      d.newAccount,
      JSON.stringify({
        protected: p.toString('base64url'),
        payload: Buffer.from('{nope').toString('base64url'),
        signature: '',
      }),
    );
    isProblem(r, 'malformed', 400);
    const big = jws(key, { nonce: await http.nonce(), url: d.newAccount, jwk: key.jwk }, { pad: 'x'.repeat(100_000) });
    r = await http.request('POST', d.newAccount, JSON.stringify(big));
    isProblem(r, 'malformed', 413);
    r = await http.request('GET', d.newAccount);
    isProblem(r, 'malformed', 405);
    r = await http.request(
      'POST',
      d.newAccount,
      JSON.stringify(jws(key, { nonce: await http.nonce(), url: d.newAccount, jwk: key.jwk }, [1, 2])),
    );
    isProblem(r, 'malformed', 400);
    assert.deepEqual(await accounts(), before);
  });

  it('finalize: a CSR naming other identifiers, a weak key, garbage; the order stays ready', async () => {
    const wrong = makeCsr(['other.acme.test']);
    let r = await client.post(order.finalize, { csr: wrong.der.toString('base64url') });
    isProblem(r, 'badCSR', 400);
    assert.match(r.json.detail, /other\.acme\.test/);
    const extra = makeCsr(['ready.acme.test', 'more.acme.test']);
    r = await client.post(order.finalize, { csr: extra.der.toString('base64url') });
    isProblem(r, 'badCSR', 400);
    const weak = generateKeyPairSync('rsa', { modulusLength: 1024 });
    r = await client.post(order.finalize, {
      csr: csrFor(['ready.acme.test'], weak.privateKey, weak.publicKey).toString('base64url'),
    });
    isProblem(r, 'badCSR', 400);
    assert.match(r.json.detail, /2048/);
    r = await client.post(order.finalize, { csr: randomBytes(64).toString('base64url') });
    isProblem(r, 'badCSR', 400);
    r = await client.post(order.finalize, { csr: 'not base64url!' });
    isProblem(r, 'malformed', 400);
    r = await client.post(orderUrl);
    assert.equal(r.json.status, 'ready');
    // A finalize before the order is ready.
    const pending = await client.newOrder([{ type: 'dns', value: 'later.acme.test' }]);
    r = await client.post(pending.json.finalize, { csr: makeCsr(['later.acme.test']).der.toString('base64url') });
    isProblem(r, 'orderNotReady', 403);
    // Other accounts see none of this account's resources.
    const stranger = new AcmeAccountClient(http);
    await stranger.register();
    r = await stranger.post(orderUrl);
    isProblem(r, 'malformed', 404);
    r = await stranger.post(order.authorizations[0]);
    isProblem(r, 'malformed', 404);
    // And the right CSR still finalizes.
    r = await client.post(order.finalize, { csr: makeCsr(['ready.acme.test']).der.toString('base64url') });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.status, 'valid');
  });

  it('newOrder: bad identifiers are refused with their types', async () => {
    const cases: [unknown, string][] = [
      [[], 'malformed'],
      ['www.acme.test', 'malformed'],
      [[{ type: 'email', value: 'a@acme.test' }], 'unsupportedIdentifier'],
      [[{ type: 'dns', value: 'bad_name!.acme.test' }], 'rejectedIdentifier'],
      [[{ type: 'ip', value: '300.1.1.1' }], 'rejectedIdentifier'],
      [[{ type: 'dns', value: 'a.*.acme.test' }], 'rejectedIdentifier'],
    ];
    for (const [identifiers, type] of cases) {
      const d = await http.getDirectory();
      const r = await client.post(d.newOrder, { identifiers });
      isProblem(r, type, 400);
    }
  });

  it('fuzz: thousands of mutated requests, never a 500', async () => {
    const d = await http.getDirectory();
    const targets = [
      d.newAccount,
      d.newOrder,
      client.kid,
      orderUrl,
      order.finalize,
      order.authorizations[0],
      d.revokeCert,
      d.keyChange,
    ];
    const payloads: unknown[] = [
      {},
      { identifiers: [{ type: 'dns', value: 'f.acme.test' }] },
      { csr: makeCsr(['ready.acme.test']).der.toString('base64url') },
      { status: 'deactivated' },
      { certificate: randomBytes(40).toString('base64url'), reason: 1 },
      { contact: ['mailto:a@acme.test'] },
      undefined,
    ];
    let seed = 12345;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const mutateString = (s: string): string => {
      if (s.length === 0) return randomBytes(4).toString('base64url');
      const chars = [...s];
      const ops = 1 + rand(3);
      for (let i = 0; i < ops; i++) {
        const at = rand(chars.length);
        switch (rand(4)) {
          case 0:
            chars[at] = String.fromCharCode(32 + rand(95));
            break;
          case 1:
            chars.splice(at, 1);
            break;
          case 2:
            chars.splice(at, 0, 'A');
            break;
          default:
            chars.length = at;
        }
      }
      return chars.join('');
    };
    const weird: unknown[] = [null, 1, 'x', [], {}, { a: { b: [] } }, true, -1, 1e308, '\u0000', 'a'.repeat(2000)];
    const statuses = new Map<number, number>();
    const one = async (i: number): Promise<void> => {
      const url = targets[rand(targets.length)]!;
      const payload = payloads[rand(payloads.length)];
      const useKid = rand(3) > 0;
      const header: Record<string, unknown> = {
        nonce: await http.nonce(),
        url,
        ...(useKid ? { kid: client.kid } : { jwk: client.key.jwk }),
      };
      let body: Record<string, unknown>;
      if (i % 2 === 0) {
        // Mutated encodings (the signature no longer holds).
        const b = jws(client.key, header, payload) as Record<string, unknown>;
        const field = ['protected', 'payload', 'signature'][rand(3)]!;
        if (rand(5) === 0) b[field] = weird[rand(weird.length)];
        else b[field] = mutateString(String(b[field]));
        if (rand(10) === 0) delete b[['protected', 'payload', 'signature'][rand(3)]!];
        body = b;
      } else {
        // Well-signed requests with odd headers or payloads.
        const h = { ...header };
        const k = ['nonce', 'url', 'kid', 'jwk', 'alg', 'crit', 'b64'][rand(7)]!;
        if (rand(2) === 0) h[k] = weird[rand(weird.length)];
        const p = rand(2) === 0 ? weird[rand(weird.length)] : payload;
        body = jws(client.key, h, p) as Record<string, unknown>;
      }
      const r = await http.request('POST', url, JSON.stringify(body));
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      assert.ok(r.status < 500, `${r.status} for ${JSON.stringify(body).slice(0, 300)}: ${r.text}`);
      if (r.status >= 400) assert.match(String(r.headers['content-type']), /^application\/problem\+json/, r.text);
    };
    const total = 3000;
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < total) await one(next++);
      }),
    );
    assert.ok((statuses.get(400) ?? 0) > total / 2, JSON.stringify([...statuses]));
    // The server still serves the account afterwards.
    const r = await client.post(client.kid);
    assert.equal(r.status, 200, r.text);
  });
});
