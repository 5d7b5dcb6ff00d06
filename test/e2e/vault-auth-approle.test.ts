import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/shared/clock.js';
import { hvacSkip, runHvacScript } from '../support/hvac-script.js';
import { describeWithServer } from '../support/test-server.js';
import { vaultClient } from './vault-http.js';

/** AppRole (auth/approle): hvac for the flows, raw HTTP for the exact refusal envelopes. */
describeWithServer('AppRole', (server) => {
  const clock = new ManualClock(new Date());
  let root: ReturnType<typeof vaultClient>;
  let anon: ReturnType<typeof vaultClient>;
  before(async () => {
    root = vaultClient(server.url, server.rootToken);
    anon = vaultClient(server.url);
  });

  it('enables, logs in, renews, limits and refuses through hvac', { skip: hvacSkip }, async () => {
    const { code, out } = await runHvacScript('vault-auth-approle.py', { url: server.url, token: server.rootToken });
    assert.equal(code, 0, out);
    for (const step of ['sys-auth', 'role', 'login', 'num-uses', 'refusals', 'disable'])
      assert.match(out, new RegExp(`^ok ${step}$`, 'm'));
  });

  it('answers every refusal in Vault envelope, and validates roles with Vault wording', async () => {
    assert.equal((await root('POST', 'sys/auth/machines', { body: { type: 'approle' } })).status, 204);
    assert.equal((await root('POST', 'sys/policy/reader', { body: { policy: 'path "sys/*" {}' } })).status, 204);
    let r = await root('POST', 'auth/machines/role/app', {
      body: { token_policies: 'reader', secret_id_num_uses: 1, secret_id_ttl: '1h' },
    });
    assert.equal(r.status, 204);
    const roleId = (await root('GET', 'auth/machines/role/app/role-id')).json.data.role_id as string;
    const secret = (await root('POST', 'auth/machines/role/app/secret-id')).json.data.secret_id as string;
    const refused = { errors: ['invalid role or secret ID'] };

    for (const body of [
      { role_id: roleId, secret_id: 'wrong' },
      { role_id: 'wrong', secret_id: secret },
    ]) {
      r = await anon('POST', 'auth/machines/login', { body });
      assert.equal(r.status, 400);
      assert.match(r.contentType, /^application\/json/);
      assert.deepEqual(r.json, refused);
    }
    r = await anon('POST', 'auth/machines/login', { body: { secret_id: secret } });
    assert.deepEqual([r.status, r.json], [400, { errors: ['missing role_id'] }]);
    r = await anon('POST', 'auth/machines/login', { body: { role_id: roleId, secret_id: secret } });
    assert.equal(r.status, 200);
    assert.equal(r.json.auth.token_policies.join(','), 'default,reader');
    assert.equal(r.json.data, null);
    // Used up.
    r = await anon('POST', 'auth/machines/login', { body: { role_id: roleId, secret_id: secret } });
    assert.deepEqual([r.status, r.json], [400, refused]);
    // Expired.
    const later = (await root('POST', 'auth/machines/role/app/secret-id')).json.data.secret_id as string;
    clock.advance(3601);
    r = await anon('POST', 'auth/machines/login', { body: { role_id: roleId, secret_id: later } });
    assert.deepEqual([r.status, r.json], [400, refused]);
    clock.advance(-3601);

    // A role whose tokens are bound to other addresses refuses the login from here.
    r = await root('POST', 'auth/machines/role/bound', {
      body: { token_policies: 'reader', token_bound_cidrs: ['10.1.0.0/16'] },
    });
    assert.equal(r.status, 204);
    const boundRole = (await root('GET', 'auth/machines/role/bound/role-id')).json.data.role_id as string;
    const boundSecret = (await root('POST', 'auth/machines/role/bound/secret-id')).json.data.secret_id as string;
    r = await anon('POST', 'auth/machines/login', { body: { role_id: boundRole, secret_id: boundSecret } });
    assert.deepEqual([r.status, r.json], [403, { errors: ['permission denied'] }]);
    // Secret id CIDRs: 403 in the envelope.
    const near = (await root('POST', 'auth/machines/role/bound/secret-id', { body: { cidr_list: '192.0.2.0/24' } }))
      .json;
    assert.equal(near.errors, undefined, JSON.stringify(near));
    r = await anon('POST', 'auth/machines/login', { body: { role_id: boundRole, secret_id: near.data.secret_id } });
    assert.deepEqual([r.status, r.json], [403, { errors: ['permission denied'] }]);

    // Role validation.
    for (const [body, message] of [
      [{ bind_secret_id: false }, 'at least one constraint should be enabled on the role'],
      [
        { secret_id_bound_cidrs: 'not-a-cidr' },
        'failed to parse secret_id_bound_cidrs: invalid CIDR address: not-a-cidr',
      ],
      [{ token_ttl: '2h', token_max_ttl: '1h' }, "'token_ttl' cannot be greater than 'token_max_ttl'"],
      [{ token_num_uses: -1 }, "'token_num_uses' cannot be negative"],
      [{ secret_id_num_uses: -2 }, 'secret_id_num_uses cannot be negative'],
      [
        { token_ttl: 'soon' },
        'Field validation failed: error converting input "soon" for field "token_ttl": not a valid duration',
      ],
    ] as const) {
      r = await root('POST', 'auth/machines/role/bad', { body });
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.deepEqual(r.json, { errors: [message] });
    }
    r = await root('GET', 'auth/machines/role/bad');
    assert.deepEqual([r.status, r.json], [404, { errors: [] }]);
    r = await root('POST', 'auth/machines/role/missing/secret-id');
    assert.deepEqual([r.status, r.json], [400, { errors: ['role "missing" does not exist'] }]);
    r = await root('POST', 'auth/nowhere/login', { body: {} });
    assert.deepEqual(
      [r.status, r.json],
      [404, { errors: ['no handler for route "auth/nowhere/login". route entry not found.'] }],
    );
    // Managing roles needs a token; login does not.
    r = await anon('GET', 'auth/machines/role/app');
    assert.equal(r.status, 403);
    r = await anon('POST', 'sys/auth/x', { body: { type: 'approle' } });
    assert.equal(r.status, 403);
  });
  return { clock };
});
