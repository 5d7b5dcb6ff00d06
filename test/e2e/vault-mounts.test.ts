import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeWithServer } from '../support/test-server.js';
import { buildApp } from '../../src/app.js';
import { buildDeps } from '../../src/deps.js';
import { vault, vaultClient } from './vault-http.js';

describeWithServer('vault sys/mounts', (server) => {
  let v: ReturnType<typeof vaultClient>;
  before(async () => {
    v = vaultClient(server.url, server.rootToken);
  });

  it('enables several PKI mounts side by side and lists them', async () => {
    let r = await v('POST', 'sys/mounts/pki', { body: { type: 'pki', config: { max_lease_ttl: '87600h' } } });
    assert.equal(r.status, 204, r.text);
    r = await v('POST', 'sys/mounts/pki-int/2024', {
      body: { type: 'pki', description: 'intermediate', config: { default_lease_ttl: 3600, max_lease_ttl: '72h' } },
    });
    assert.equal(r.status, 204, r.text);
    r = await v('GET', 'sys/mounts');
    assert.equal(r.status, 200);
    assert.match(r.contentType, /^application\/json/);
    assert.equal(r.json.data['pki/'].type, 'pki');
    assert.equal(r.json.data['pki/'].config.max_lease_ttl, 87600 * 3600);
    assert.equal(r.json.data['pki/'].config.default_lease_ttl, 0);
    assert.match(r.json.data['pki/'].accessor, /^pki_[0-9a-f]{8}$/);
    assert.equal(r.json.data['pki-int/2024/'].description, 'intermediate');
    assert.equal(r.json.data['pki-int/2024/'].config.default_lease_ttl, 3600);
    // Legacy clients read the mounts at the top level too.
    assert.deepEqual(r.json['pki/'], r.json.data['pki/']);
    assert.equal(r.json.mount_type, 'system');

    r = await v('GET', 'sys/mounts/pki-int/2024');
    assert.equal(r.status, 200);
    assert.equal(r.json.data.type, 'pki');
  });

  it('refuses a taken path, a nested path, an unknown type and reserved paths with 400', async () => {
    await v('POST', 'sys/mounts/taken', { body: { type: 'pki' } });
    let r = await v('POST', 'sys/mounts/taken', { body: { type: 'pki' } });
    assert.equal(r.status, 400);
    assert.deepEqual(r.json, { errors: ['path is already in use at taken/'] });
    r = await v('POST', 'sys/mounts/taken/inner', { body: { type: 'pki' } });
    assert.equal(r.status, 400);
    assert.deepEqual(r.json, { errors: ['path is already in use at taken/'] });
    r = await v('POST', 'sys/mounts/kv1', { body: { type: 'kv' } });
    assert.equal(r.status, 400);
    assert.match(r.json.errors[0], /kv/);
    for (const p of ['object', 'sys/x', 'auth/x']) {
      r = await v('POST', `sys/mounts/${p}`, { body: { type: 'pki' } });
      assert.equal(r.status, 400, p);
    }
    r = await v('POST', 'sys/mounts/notype', { body: {} });
    assert.equal(r.status, 400);
    assert.match(r.json.errors[0], /type/);
  });

  it('reads and tunes a mount; the effective TTLs fall back to the system values', async () => {
    await v('POST', 'sys/mounts/tuned', { body: { type: 'pki' } });
    let r = await v('GET', 'sys/mounts/tuned/tune');
    assert.equal(r.status, 200);
    assert.equal(r.json.data.default_lease_ttl, 768 * 3600);
    assert.equal(r.json.data.max_lease_ttl, 768 * 3600);
    r = await v('POST', 'sys/mounts/tuned/tune', {
      body: { max_lease_ttl: '87600h', default_lease_ttl: 7200, description: 'tuned' },
    });
    assert.equal(r.status, 204, r.text);
    r = await v('GET', 'sys/mounts/tuned/tune');
    assert.equal(r.json.data.max_lease_ttl, 87600 * 3600);
    assert.equal(r.json.data.default_lease_ttl, 7200);
    assert.equal(r.json.data.description, 'tuned');
    // Form bodies are accepted as well.
    r = await v('POST', 'sys/mounts/tuned/tune', { form: { default_lease_ttl: '1h' } });
    assert.equal(r.status, 204, r.text);
    r = await v('GET', 'sys/mounts/tuned/tune');
    assert.equal(r.json.data.default_lease_ttl, 3600);

    r = await v('POST', 'sys/mounts/tuned/tune', { body: { default_lease_ttl: '100000h' } });
    assert.equal(r.status, 400);
    assert.match(r.json.errors[0], /greater than the max/);
    r = await v('POST', 'sys/mounts/tuned/tune', { body: { max_lease_ttl: 'soon' } });
    assert.equal(r.status, 400);
    assert.match(r.json.errors[0], /max_lease_ttl/);
    r = await v('GET', 'sys/mounts/missing/tune');
    assert.equal(r.status, 400);
    assert.deepEqual(r.json.errors, ['No secret engine mount at missing/']);
  });

  it('disables a mount, runs the disable hooks and frees the path', async () => {
    await v('POST', 'sys/mounts/gone', { body: { type: 'pki' } });
    const purged: string[] = [];
    server.deps.pki.mounts.onDisable(async (m) => {
      purged.push(m.path);
    });
    let r = await v('DELETE', 'sys/mounts/gone');
    assert.equal(r.status, 204);
    assert.deepEqual(purged, ['gone/']);
    r = await v('GET', 'sys/mounts');
    assert.equal(r.json.data['gone/'], undefined);
    // Paths inside the removed mount are unknown now.
    r = await v('GET', 'gone/anything');
    assert.equal(r.status, 404);
    assert.deepEqual(r.json, { errors: ['no handler for route "gone/anything". route entry not found.'] });
    r = await v('POST', 'sys/mounts/gone', { body: { type: 'pki' } });
    assert.equal(r.status, 204);
    // The durable purge job runs the hooks again, harmlessly.
    await server.deps.worker.runUntilIdle();
    r = await v('DELETE', 'sys/mounts/never-existed');
    assert.equal(r.status, 204);
  });

  it('leaves the TFE upload URLs under /v1/object to their own routes', async () => {
    const res = await fetch(`${server.url}/v1/object/no-such-upload`, { method: 'PUT', body: 'x' });
    const text = await res.text();
    assert.notEqual(text, JSON.stringify({ errors: ['permission denied'] }));
    assert.notEqual(res.status, 403);
  });

  it('serves a mount enabled through another node at once (shared database)', async () => {
    const deps2 = await buildDeps(server.config);
    deps2.pki.addRoutes([
      {
        pattern: 'probe',
        operations: ['read'],
        handler: async (ctx) => ({ kind: 'json', data: { mount: ctx.mount.path } }),
      },
    ]);
    const app2 = await buildApp(deps2);
    await app2.listen({ host: '127.0.0.1', port: 0 });
    try {
      const addr = app2.server.address();
      const v2 = vaultClient(`http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`, server.rootToken);
      // Node 2 has read (and cached) the mount table before the new mount exists.
      assert.equal((await v2('GET', 'sys/mounts')).status, 200);
      assert.equal((await v2('GET', 'shared/probe')).status, 404);
      assert.equal((await v('POST', 'sys/mounts/shared', { body: { type: 'pki' } })).status, 204);
      const r = await v2('GET', 'sys/mounts/shared/tune');
      assert.equal(r.status, 200, r.text);
      const probe = await v2('GET', 'shared/probe');
      assert.equal(probe.status, 200, probe.text);
      assert.equal(probe.json.data.mount, 'shared/');
      const t = (await v2('POST', 'auth/token/create', { body: { policies: ['default'] } })).json.auth
        .client_token as string;
      assert.equal((await vault(server.url, 'GET', 'auth/token/lookup-self', { token: t })).status, 200);
    } finally {
      await app2.close();
      await deps2.close();
    }
  });

  it('needs a token and the ACL for sys/mounts', async () => {
    let r = await v('GET', 'sys/mounts', { token: undefined });
    assert.equal(r.status, 403);
    assert.deepEqual(r.json, { errors: ['permission denied', 'missing client token'] });
    r = await v('GET', 'sys/mounts', { token: 'nope' });
    assert.equal(r.status, 403);
  });
});
