import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../src/shared/clock.js';
import { hvacSkip, runHvacScript } from '../support/hvac-script.js';
import { mintJwt, signingKey, startJwksServer } from '../support/jwt-fixtures.js';
import type { TestJwksServer } from '../support/jwt-fixtures.js';
import { describeWithServer } from '../support/test-server.js';
import { opensslTestCa } from './pki-external-policy-helpers.js';
import { vaultClient } from './vault-http.js';

/** JWT/OIDC (auth/jwt): JWTs minted here, keys served by a local JWKS/discovery server. */
const rsa = signingKey('RS256', 'gh-1');
const rotated = signingKey('RS256', 'gh-2');
const stranger = signingKey('RS256', 'gh-1');
const ec = signingKey('ES256', 'k8s');
const ed = signingKey('EdDSA', 'ed-1');
const tlsCa = opensslTestCa('JWKS test CA');
const tlsCert = tlsCa.issue('localhost');

describeWithServer('JWT/OIDC auth', (server) => {
  let idp: TestJwksServer;
  let root: ReturnType<typeof vaultClient>;
  let anon: ReturnType<typeof vaultClient>;
  const clock = new ManualClock(new Date());
  const now = () => Math.floor(clock.now().getTime() / 1000);
  const github = (over: Record<string, unknown> = {}) => ({
    iss: idp.issuer,
    aud: 'https://github.com/acme',
    sub: 'repo:acme/app:ref:refs/heads/main',
    repository: 'acme/app',
    ref: 'refs/heads/main',
    workflow: 'release',
    iat: now() - 5,
    nbf: now() - 5,
    exp: now() + 300,
    ...over,
  });
  before(async () => {
    idp = await startJwksServer([rsa, ed]);
    root = vaultClient(server.url, server.rootToken);
    anon = vaultClient(server.url);
  });
  after(async () => idp?.close());

  it(
    'logs GitHub Actions, Kubernetes and OIDC tokens in through hvac, and refuses bad ones',
    { skip: hvacSkip },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'jwt-hvac-'));
      const k8sClaims = {
        iss: 'https://kubernetes.default.svc',
        aud: ['strongroom'],
        sub: 'system:serviceaccount:ci:runner',
        'kubernetes.io': { namespace: 'ci', serviceaccount: { name: 'runner', uid: 'u-1' } },
        iat: now(),
        exp: now() + 600,
      };
      const file = join(dir, 'cfg.json');
      writeFileSync(
        file,
        JSON.stringify({
          jwks_url: `${idp.url}/jwks`,
          issuer: idp.issuer,
          k8s_pem: ec.publicPem,
          tokens: {
            github: mintJwt(rsa, github()),
            wrong_audience: mintJwt(rsa, github({ aud: 'https://github.com/other' })),
            expired: mintJwt(rsa, github({ exp: now() - 3600, nbf: now() - 7200, iat: now() - 7200 })),
            not_yet: mintJwt(rsa, github({ nbf: now() + 3600, iat: now() })),
            bad_signature: mintJwt(stranger, github()),
            unknown_kid: mintJwt(rsa, github(), { kid: 'nobody' }),
            wrong_repo: mintJwt(rsa, github({ repository: 'evil/app' })),
            k8s: mintJwt(ec, k8sClaims),
            k8s_other_sa: mintJwt(ec, { ...k8sClaims, sub: 'system:serviceaccount:ci:other' }),
            oidc: mintJwt(ed, {
              iss: idp.issuer,
              aud: 'strongroom',
              sub: 'u1',
              email: 'a@example.com',
              exp: now() + 60,
            }),
          },
        }),
      );
      try {
        const { code, out } = await runHvacScript('vault-auth-jwt.py', { url: server.url, token: server.rootToken }, [
          file,
        ]);
        assert.equal(code, 0, out);
        for (const step of ['github', 'github-refusals', 'kubernetes', 'discovery'])
          assert.match(out, new RegExp(`^ok ${step}$`, 'm'));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it('answers refusals in Vault wording, validates config and roles, refreshes keys on an unknown kid', async () => {
    assert.equal((await root('POST', 'sys/auth/ci', { body: { type: 'jwt' } })).status, 204);
    let r = await root('POST', 'auth/ci/login', { body: { role: 'x', jwt: 'a.b.c' } });
    assert.deepEqual([r.status, r.json], [400, { errors: ['could not load configuration'] }]);
    for (const [body, message] of [
      [{}, "exactly one of 'jwt_validation_pubkeys', 'jwks_url' or 'oidc_discovery_url' must be set"],
      [
        { jwks_url: `${idp.url}/jwks`, jwt_validation_pubkeys: [ec.publicPem] },
        "exactly one of 'jwt_validation_pubkeys', 'jwks_url' or 'oidc_discovery_url' must be set",
      ],
      [{ jwt_validation_pubkeys: ['not a key'] }, 'error parsing public key'],
      [{ jwks_url: `${idp.url}/missing` }, `error checking jwks URL: status 404 from ${idp.url}/missing`],
      [
        { jwks_url: `${idp.url}/jwks`, jwt_supported_algs: 'HS256' },
        'invalid jwt_supported_algs: unsupported signing algorithm "HS256"',
      ],
    ] as const) {
      r = await root('POST', 'auth/ci/config', { body });
      assert.deepEqual([r.status, r.json], [400, { errors: [message] }], JSON.stringify(body));
    }
    r = await root('POST', 'auth/ci/config', { body: { jwks_url: `${idp.url}/jwks`, bound_issuer: idp.issuer } });
    assert.equal(r.status, 204);
    r = await root('POST', 'auth/ci/role/r', { body: { bound_audiences: 'https://github.com/acme' } });
    assert.deepEqual([r.status, r.json], [400, { errors: ['a user claim must be defined on the role'] }]);
    r = await root('POST', 'auth/ci/role/r', { body: { user_claim: 'sub', role_type: 'oidc' } });
    assert.equal(r.status, 400);
    r = await root('POST', 'auth/ci/role/r', { body: { user_claim: 'sub', bound_claims_type: 'regex' } });
    assert.deepEqual([r.status, r.json], [400, { errors: ["invalid 'bound_claims_type': regex"] }]);
    r = await root('POST', 'auth/ci/role/r', {
      body: {
        user_claim: 'sub',
        bound_audiences: ['https://github.com/acme'],
        bound_claims: { repository: 'acme/app' },
      },
    });
    assert.equal(r.status, 204);

    const login = (jwt: string, role = 'r') => anon('POST', 'auth/ci/login', { body: { role, jwt } });
    r = await login(mintJwt(rsa, github()));
    assert.equal(r.status, 200);
    assert.equal(r.json.auth.metadata.role, 'r');
    for (const [jwt, message] of [
      [
        mintJwt(rsa, github({ aud: 'x' })),
        'error validating claims: invalid audience (aud) claim: audience provided does not match any ' +
          'expected audience',
      ],
      [mintJwt(rsa, github({ exp: now() - 600 })), 'error validating claims: token is expired (exp)'],
      [mintJwt(rsa, github({ nbf: now() + 600 })), 'error validating claims: token not valid yet (nbf)'],
      [mintJwt(rsa, github({ iss: 'https://elsewhere' })), 'error validating claims: invalid issuer (iss) claim'],
      [mintJwt(stranger, github()), 'error validating token: failed to verify id token signature'],
      [mintJwt(rsa, github(), { kid: 'nobody' }), 'error validating token: failed to verify id token signature'],
      [
        mintJwt(rsa, github({ repository: 'acme/other' })),
        'claim "repository" does not match any associated bound claim values',
      ],
      ['not-a-jwt', 'error validating token: malformed JWT'],
      ['', 'missing token'],
    ] as const) {
      r = await login(jwt);
      assert.deepEqual([r.status, r.json], [400, { errors: [message] }], message);
      assert.match(r.contentType, /^application\/json/);
    }
    // Small leeway: a token a minute past its expiry still logs in (Vault's 150 s expiration leeway).
    r = await login(mintJwt(rsa, github({ exp: now() - 60 })));
    assert.equal(r.status, 200);
    // An unknown role is named only once the token's signature is good.
    r = await login(mintJwt(rsa, github()), 'nope');
    assert.deepEqual([r.status, r.json], [400, { errors: ['role "nope" could not be found'] }]);
    r = await login(mintJwt(stranger, github()), 'nope');
    assert.deepEqual(
      [r.status, r.json],
      [400, { errors: ['error validating token: failed to verify id token signature'] }],
    );

    // Key rotation: the provider publishes a new key; the first token naming it makes the server fetch again.
    // (Fetches for unknown key ids are at least five seconds apart; the made-up kid above just caused one.)
    idp.keys.push(rotated);
    clock.advance(6);
    const before = idp.jwksFetches;
    r = await login(mintJwt(rotated, github()));
    assert.equal(r.status, 200, r.text);
    assert.equal(idp.jwksFetches, before + 1);
    // A flood of made-up key ids costs at most one fetch per interval, and other requests go on.
    const flood = await Promise.all(
      Array.from({ length: 200 }, (_, i) => login(mintJwt(rsa, github(), { kid: `forged-${i}` }))),
    );
    assert.ok(flood.every((x) => x.status === 400));
    assert.ok(idp.jwksFetches <= before + 2, `${idp.jwksFetches - before} fetches`);
    r = await root('GET', 'sys/auth');
    assert.equal(r.status, 200);
    assert.equal(r.json.data['ci/'].type, 'jwt');
  });

  it('fetches keys over HTTPS trusting jwks_ca_pem, and refuses an untrusted JWKS server', async () => {
    const secure = await startJwksServer([ec], { tls: { certPem: tlsCert.certPem, keyPem: tlsCert.keyPem } });
    try {
      assert.equal((await root('POST', 'sys/auth/tls-jwt', { body: { type: 'jwt' } })).status, 204);
      let r = await root('POST', 'auth/tls-jwt/config', { body: { jwks_url: `${secure.url}/jwks` } });
      assert.equal(r.status, 400);
      assert.match(r.json.errors[0], /^error checking jwks URL: /);
      r = await root('POST', 'auth/tls-jwt/config', {
        body: { jwks_url: `${secure.url}/jwks`, jwks_ca_pem: tlsCa.certPem },
      });
      assert.equal(r.status, 204, r.text);
      r = await root('POST', 'auth/tls-jwt/role/r', { body: { user_claim: 'sub', bound_audiences: 'a' } });
      assert.equal(r.status, 204);
      r = await anon('POST', 'auth/tls-jwt/login', {
        body: { role: 'r', jwt: mintJwt(ec, { sub: 's', aud: 'a', exp: now() + 60 }) },
      });
      assert.equal(r.status, 200, r.text);
    } finally {
      await secure.close();
    }
  });

  return { clock };
});
