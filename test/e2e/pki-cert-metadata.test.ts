import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeWithServer } from '../support/test-server.js';
import { makeServerClient, mountWithRoot, role, storedSerials } from './pki-issue-helpers.js';
import type { Vault } from './pki-issue-helpers.js';
import { csrWith, validity } from './pki-privileged-helpers.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

describeWithServer('pki cert_metadata', (server) => {
  let v: Vault;
  let csr: string;
  before(async () => {
    v = makeServerClient(server);
    csr = csrWith('EC:P-256', '/CN=meta.example.com').csr;
  });

  it('stores cert_metadata on issue, sign and sign-verbatim with a role (even no_store); reads it back', async () => {
    const { mount, issuerId } = await mountWithRoot(v);
    await role(v, mount, 'web', {
      allowed_domains: 'example.com',
      allow_subdomains: true,
      key_type: 'ec',
      ttl: '1h',
    });
    await role(v, mount, 'ephemeral', { allow_any_name: true, key_type: 'ec', no_store: true, ttl: '2h' });
    const calls: [string, Record<string, unknown>, string][] = [
      ['issue/web', { common_name: 'a.example.com' }, 'web'],
      ['sign/web', { csr }, 'web'],
      ['sign-verbatim/web', { csr }, 'web'],
      ['issue/ephemeral', { common_name: 'e.test' }, 'ephemeral'],
      ['sign-verbatim/ephemeral', { csr }, 'ephemeral'],
    ];
    const issued: { serial: string; certificate: string; meta: string; role: string }[] = [];
    for (const [path, body, roleName] of calls) {
      const meta = b64(JSON.stringify({ path, owner: 'team-a' }));
      const r = await v('POST', `${mount}/${path}`, { body: { ...body, cert_metadata: meta } });
      assert.equal(r.status, 200, `${path}: ${r.text}`);
      issued.push({ serial: r.json.data.serial_number, certificate: r.json.data.certificate, meta, role: roleName });
    }
    const stored = await storedSerials(v, mount);
    for (const c of issued) {
      assert.equal(
        stored.includes(c.serial),
        c.role !== 'ephemeral',
        `${c.role}: only certificates without no_store are in the store`,
      );
      const r = await v('GET', `${mount}/cert-metadata/${c.serial}`);
      assert.equal(r.status, 200, r.text);
      assert.match(r.contentType, /^application\/json/);
      assert.deepEqual(r.json.data, {
        cert_metadata: c.meta,
        expiration: new Date(validity(c.certificate).notAfter * 1000).toISOString().replace('.000Z', 'Z'),
        issuer_id: issuerId,
        role: c.role,
        serial_number: c.serial,
      });
      const dashed = await v('GET', `${mount}/cert-metadata/${c.serial.replaceAll(':', '-').toUpperCase()}`);
      assert.equal(dashed.json.data.cert_metadata, c.meta);
    }
    const list = await v('LIST', `${mount}/cert-metadata`);
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.json.data.keys, issued.map((c) => c.serial).sort());
    const viaGet = await v('GET', `${mount}/cert-metadata?list=true`);
    assert.deepEqual(viaGet.json.data.keys, list.json.data.keys);

    // Certificates issued without metadata have none.
    const r = await v('POST', `${mount}/issue/web`, { body: { common_name: 'plain.example.com' } });
    assert.equal((await v('GET', `${mount}/cert-metadata/${r.json.data.serial_number}`)).status, 404);
    assert.deepEqual((await v('GET', `${mount}/cert-metadata/${r.json.data.serial_number}`)).json, { errors: [] });
  });

  it('refuses cert_metadata under no_store_metadata and on sign-verbatim without a role, storing nothing', async () => {
    const { mount } = await mountWithRoot(v);
    await role(v, mount, 'nometa', { allow_any_name: true, key_type: 'ec', no_store_metadata: true });
    const stored = await storedSerials(v, mount);
    const meta = b64('{"x":1}');
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['issue/nometa', { common_name: 'a.test', cert_metadata: meta }, /no_store_metadata/],
      ['sign/nometa', { csr, cert_metadata: meta }, /no_store_metadata/],
      ['sign-verbatim/nometa', { csr, cert_metadata: meta }, /no_store_metadata/],
      ['sign-verbatim', { csr, cert_metadata: meta }, /cert_metadata needs a role/],
      ['issuer/default/sign-verbatim', { csr, cert_metadata: meta }, /cert_metadata needs a role/],
    ];
    for (const [path, body, message] of cases) {
      const r = await v('POST', `${mount}/${path}`, { body });
      assert.equal(r.status, 400, `${path}: ${r.text}`);
      assert.match(r.json.errors[0], message);
    }
    assert.deepEqual(await storedSerials(v, mount), stored);
    assert.equal((await v('LIST', `${mount}/cert-metadata`)).status, 404);
    // The same requests without metadata go through.
    for (const [path, body] of cases) {
      const { cert_metadata: _ignored, ...rest } = body;
      const r = await v('POST', `${mount}/${path}`, { body: rest });
      assert.equal(r.status, 200, `${path}: ${r.text}`);
    }
  });

  it('cert-metadata needs a token and the read or list capability', async () => {
    const { mount } = await mountWithRoot(v);
    await role(v, mount, 'web', { allow_any_name: true, key_type: 'ec' });
    let r = await v('POST', `${mount}/issue/web`, { body: { common_name: 'x.test', cert_metadata: b64('m') } });
    const serial = r.json.data.serial_number as string;
    assert.equal((await v('GET', `${mount}/cert-metadata/${serial}`, { token: undefined })).status, 403);
    r = await v('PUT', `sys/policies/acl/meta-${mount}`, {
      body: { policy: `path "${mount}/cert-metadata/*" { capabilities = ["read"] }` },
    });
    assert.equal(r.status, 204, r.text);
    r = await v('POST', 'auth/token/create', { body: { policies: [`meta-${mount}`] } });
    const token = r.json.auth.client_token as string;
    r = await v('GET', `${mount}/cert-metadata/${serial}`, { token });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.cert_metadata, b64('m'));
    r = await v('LIST', `${mount}/cert-metadata`, { token });
    assert.equal(r.status, 403, 'no list capability on the listing path');
  });
});
