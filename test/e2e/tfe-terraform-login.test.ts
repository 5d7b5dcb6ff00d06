/**
 * `terraform login` (login.v1) driven as the CLI drives it: discovery, the authorization
 * request approved by a signed-in user, the code delivered to the CLI's localhost listener,
 * and the token exchange with the PKCE verifier. The browser half (the UI's authorize page)
 * is in test/ui/ui-pki-login.test.ts.
 */
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeWithServer } from '../support/test-server.js';
import { TfeHttp } from '../support/tfe-http.js';
import { tokenAt, userToken } from './tfe-principals.js';
import { exchange, pkcePair } from '../support/terraform-login.js';

describeWithServer('terraform login', (server, kind) => {
  let admin: TfeHttp;
  before(async () => {
    admin = new TfeHttp(server.url, server.rootToken);
  });

  const approve = (as: TfeHttp, over: Record<string, string> = {}) => {
    const { challenge } = pkcePair();
    return as.call('POST', '/api/v2/oauth/authorizations', {
      response_type: 'code',
      client_id: 'terraform-cli',
      redirect_uri: 'http://localhost:10000/login',
      state: 'st-1',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...over,
    });
  };

  it('publishes login.v1 in the discovery document', async () => {
    const res = await fetch(`${server.url}/.well-known/terraform.json`);
    const doc = (await res.json()) as Record<string, unknown>;
    assert.deepEqual(doc['login.v1'], {
      client: 'terraform-cli',
      grant_types: ['authz_code'],
      authz: '/ui/authorize',
      token: '/oauth/token',
      ports: [10000, 10010],
    });
  });

  it('turns an approved code and its verifier into a new token of the approving user, once', async () => {
    const alice = admin.as(await userToken(server, `alice-${kind}`));
    const { verifier, challenge } = pkcePair();
    const redirectUri = 'http://127.0.0.1:10003/login';
    const r = await approve(alice, { code_challenge: challenge, redirect_uri: redirectUri, state: 'xyz' });
    assert.equal(r.status, 201, r.text);
    const back = new URL(r.body.data.attributes['redirect-uri']);
    assert.equal(`${back.origin}${back.pathname}`, 'http://127.0.0.1:10003/login');
    assert.equal(back.searchParams.get('state'), 'xyz');
    const code = back.searchParams.get('code')!;
    assert.match(code, /^[A-Za-z0-9_-]{43}$/);
    const form = {
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      client_id: 'terraform-cli',
      code_verifier: verifier,
    };
    const wrong = await exchange(server.url, { ...form, code_verifier: pkcePair().verifier });
    assert.equal(wrong.status, 400);
    assert.deepEqual(wrong.json, {
      error: 'invalid_grant',
      error_description: 'code_verifier does not match the code challenge',
    });
    // A failed exchange used the code up: approve again.
    const again = await approve(alice, { code_challenge: challenge, redirect_uri: redirectUri });
    const code2 = new URL(again.body.data.attributes['redirect-uri']).searchParams.get('code')!;
    const ok = await exchange(server.url, { ...form, code: code2 });
    assert.equal(ok.status, 200, JSON.stringify(ok.json));
    assert.match(ok.type, /^application\/json/);
    assert.equal(ok.json.token_type, 'bearer');
    const me = await admin.as(ok.json.access_token).call('GET', '/api/v2/account/details');
    assert.equal(me.status, 200, me.text);
    assert.equal(me.body.data.attributes.username, `alice-${kind}`);
    const reused = await exchange(server.url, { ...form, code: code2 });
    assert.equal(reused.status, 400);
    assert.equal(reused.json.error, 'invalid_grant');
  });

  it('refuses requests the CLI would not make, and approvals by non-users', async () => {
    for (const [over, pointer] of [
      [{ redirect_uri: 'https://evil.example/login' }, /redirect_uri must be http:\/\/localhost/],
      [{ redirect_uri: 'http://localhost:8080/login' }, /redirect_uri/],
      [{ client_id: 'other' }, /unknown client_id/],
      [{ code_challenge_method: 'plain' }, /S256/],
      [{ code_challenge: 'short' }, /code_challenge/],
      [{ response_type: 'token' }, /response_type/],
    ] as const) {
      const r = await approve(admin, over);
      assert.equal(r.status, 422, `${JSON.stringify(over)}: ${r.text}`);
      assert.match(r.body.errors[0].detail, pointer);
    }
    const org = `login-${kind}`;
    assert.equal(
      (
        await admin.call('POST', '/api/v2/organizations', {
          data: { type: 'organizations', attributes: { name: org, email: 'a@example.com' } },
        })
      ).status,
      201,
    );
    const orgToken = await tokenAt(server, `/api/v2/organizations/${org}/authentication-token`);
    const byOrg = await approve(admin.as(orgToken));
    // TFE answers forbidden as not found; the detail says why.
    assert.equal(byOrg.status, 404, byOrg.text);
    assert.match(byOrg.body.errors[0].detail, /only a user/);
    const anonymous = await approve(admin.as(undefined));
    assert.equal(anonymous.status, 401);
    const bad = await exchange(server.url, { grant_type: 'password', code: 'x', code_verifier: 'y' });
    assert.deepEqual(bad.json.error, 'unsupported_grant_type');
    const unknown = await exchange(server.url, {
      grant_type: 'authorization_code',
      code: 'nope',
      code_verifier: pkcePair().verifier,
      client_id: 'terraform-cli',
      redirect_uri: 'http://localhost:10000/login',
    });
    assert.equal(unknown.status, 400);
    assert.equal(unknown.json.error, 'invalid_grant');
  });
});
