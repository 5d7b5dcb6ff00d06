import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer as createNetServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { parseRules } from '../../src/pki/external-policy/reference-service-rules.js';
import { startReferencePolicyService } from '../../src/pki/external-policy/reference-service.js';
import type { RunningReferenceService } from '../../src/pki/external-policy/reference-service.js';
import { describeWithServer } from '../support/test-server.js';
import { addRoot, httpsVaultClient, opensslTestCa, startScriptedPolicyService } from './pki-external-policy-helpers.js';
import type { Issued, PolicyResponder, ScriptedPolicyService, TestCa } from './pki-external-policy-helpers.js';
import { mountWithRoot, opensslCsr, storedSerials } from './pki-issue-helpers.js';
import type { Vault } from './pki-issue-helpers.js';
import { keyMatchesCert, openssl, verifyChain, x509Text } from './pki-issuers-openssl.js';

const RULES = {
  default_policy: 'web',
  policies: {
    web: { allowed_names: ['*.example.com'], max_ttl: '48h', ttl: '24h', warnings: ['reviewed by the web policy'] },
    second: { allowed_names: ['*.example.com'], issuer: 'second' },
    blocked: { deny: 'requests under this policy are refused' },
    ica: { allowed_names: ['ica.example.com'], issuance_modes: ['ica'], ttl: '24h' },
  },
};

type Body = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const PYTHON = '/usr/bin/python3';
const hvacSkip =
  existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import hvac'], { encoding: 'utf8' }).status === 0
    ? false
    : 'python3-hvac is not installed';

const EXTERNAL_PATHS = ['issue', 'sign', 'sign-intermediate'].flatMap((op) =>
  ['', 'issuer/default/'].flatMap((prefix) => [`${prefix}external-policy/${op}`, `${prefix}external-policy/${op}/web`]),
);

/** Replies of a policy service that misbehaves on purpose, in the way `behaviour` says. */
function misbehaviour(behaviour: string, redirectTo = ''): PolicyResponder {
  return (request) => {
    const uuid = request.request_uuid as string;
    switch (behaviour) {
      case 'slow':
        return { json: { request_uuid: uuid, error: 'too late' }, delayMs: 2500 };
      case 'template':
        return {
          json: {
            request_uuid: uuid,
            certificate: '-----BEGIN CERTIFICATE-----\nMIIBAA==\n-----END CERTIFICATE-----\n',
            issuer_ref: 'default',
          },
        };
      case 'status':
        return { status: 500, json: { error: 'internal detail of the service' } };
      case 'redirect':
        return { status: 307, json: {}, headers: { location: redirectTo } };
      case 'unknown':
        return { json: { request_uuid: uuid, error: 'no', surprise: true } };
      default:
        return { json: { request_uuid: '00000000-0000-4000-8000-000000000000', error: 'for someone else' } };
    }
  };
}

describe('external-policy issuance over HTTPS', () => {
  let ca: TestCa;
  let serverTls: Issued;
  let policyTls: Issued;
  let clientTls: Issued;
  let reference: RunningReferenceService;
  const received: Body[] = [];
  let rogue: ScriptedPolicyService;

  before(async () => {
    ca = opensslTestCa('External policy test CA');
    serverTls = ca.issue('strongroom');
    policyTls = ca.issue('policy-service');
    clientTls = ca.issue('strongroom-client', { client: true });
    reference = await startReferencePolicyService({
      rules: parseRules(JSON.stringify(RULES)),
      certPem: policyTls.certPem,
      keyPem: policyTls.keyPem,
      clientCaPem: ca.certPem,
      onRequest: (b) => received.push(b),
    });
    rogue = await startScriptedPolicyService(ca.issue('rogue'), misbehaviour('uuid'));
  });
  after(async () => {
    await reference?.close();
    await rogue?.close();
  });

  describeWithServer('', (server) => {
    let v: Vault;
    before(async () => {
      assert.match(server.url, /^https:/);
      v = httpsVaultClient(server.url, ca.certPem, server.rootToken);
    });

    /** A mount with a root (default) and a second root named `second`, wired to the reference service. */
    async function setup(): Promise<{
      mount: string;
      rootPem: string;
      rootId: string;
      secondPem: string;
      secondId: string;
    }> {
      const { mount, rootPem, issuerId } = await mountWithRoot(v);
      const second = await addRoot(v, mount, 'second');
      const c = await v('POST', `${mount}/config/external-policy`, {
        body: {
          enabled: true,
          external_service_url: `${reference.url}cieps`,
          trusted_ca: ca.certPem,
          vault_client_cert_bundle: `${clientTls.keyPem}\n${clientTls.certPem}`,
          timeout: '5s',
        },
      });
      assert.equal(c.status, 200, c.text);
      return { mount, rootPem, rootId: issuerId, secondPem: second.pem, secondId: second.id };
    }

    it('validates config/external-policy, seals the client key and never returns it', async () => {
      const { mount } = await mountWithRoot(v);
      let r = await v('GET', `${mount}/config/external-policy`);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.json.data, {
        enabled: false,
        external_service_url: '',
        timeout: 15_000_000_000,
        trusted_ca: '',
        trusted_leaf_certificate_bundle: '',
        vault_client_cert_bundle: '',
        entity_jmespath: '',
        group_jmespath: '',
        external_service_last_updated: null,
        external_service_validated: false,
        external_service_last_validated: null,
        last_successful_request: null,
      });
      r = await v('POST', `${mount}/external-policy/issue`, { body: { common_name: 'a.example.com' } });
      assert.equal(r.status, 400);
      assert.match(r.json.errors[0], /not enabled on this mount/);

      const bad: [Body, RegExp][] = [
        [{ enabled: true }, /external_service_url is required/],
        [{ external_service_url: 'http://127.0.0.1/x', trusted_ca: ca.certPem }, /must use https/],
        [{ external_service_url: 'not a url', trusted_ca: ca.certPem }, /not a valid URL/],
        [{ external_service_url: reference.url }, /one of trusted_ca or trusted_leaf_certificate_bundle is required/],
        [
          {
            external_service_url: reference.url,
            trusted_ca: ca.certPem,
            trusted_leaf_certificate_bundle: policyTls.certPem,
          },
          /only one of/,
        ],
        [{ external_service_url: reference.url, trusted_ca: 'garbage' }, /trusted_ca/],
        [{ external_service_url: reference.url, trusted_ca: ca.certPem, timeout: '0s' }, /timeout must be between/],
        [{ external_service_url: reference.url, trusted_ca: ca.certPem, timeout: '1h' }, /timeout must be between/],
        [{ external_service_url: reference.url, trusted_ca: ca.certPem, timeout: 'soon' }, /Field validation failed/],
        [
          {
            external_service_url: reference.url,
            trusted_ca: ca.certPem,
            vault_client_cert_bundle: clientTls.certPem,
          },
          /exactly one private key/,
        ],
        [
          {
            external_service_url: reference.url,
            trusted_ca: ca.certPem,
            vault_client_cert_bundle: `${serverTls.keyPem}\n${clientTls.certPem}`,
          },
          /does not belong/,
        ],
      ];
      for (const [body, msg] of bad) {
        r = await v('POST', `${mount}/config/external-policy`, { body });
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.match(r.json.errors[0], msg);
      }
      assert.equal(
        (await v('GET', `${mount}/config/external-policy`)).json.data.external_service_url,
        '',
        'nothing half-written',
      );

      r = await v('POST', `${mount}/config/external-policy`, {
        body: {
          enabled: true,
          external_service_url: reference.url,
          trusted_ca: ca.certPem,
          timeout: '20s',
          vault_client_cert_bundle: `${clientTls.keyPem}\n${clientTls.certPem}`,
        },
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.data.timeout, 20_000_000_000);
      assert.equal(r.json.data.vault_client_cert_bundle.trim(), clientTls.certPem);
      assert.match(r.json.data.external_service_last_updated, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      assert.equal(r.json.data.external_service_validated, false);
      const read = await v('GET', `${mount}/config/external-policy`);
      assert.doesNotMatch(read.text, /PRIVATE KEY/);
      const keyBody = clientTls.keyPem.split('\n')[1]!;
      assert.ok(!read.text.includes(keyBody));
      const row = await server.deps.core.db.kysely
        .selectFrom('pki_external_policy')
        .selectAll()
        .executeTakeFirstOrThrow();
      assert.ok(
        row.sealed_client_key &&
          !row.sealed_client_key.includes('PRIVATE KEY') &&
          !row.sealed_client_key.includes(keyBody),
        'sealed at rest',
      );
      // A partial write keeps the other fields; switching to pinned leaves needs the CA removed.
      r = await v('POST', `${mount}/config/external-policy`, {
        body: { trusted_ca: '', trusted_leaf_certificate_bundle: policyTls.certPem },
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.data.timeout, 20_000_000_000);
      assert.equal(r.json.data.trusted_ca, '');
      r = await v('POST', `${mount}/config/external-policy`, { body: { vault_client_cert_bundle: '' } });
      assert.equal(r.json.data.vault_client_cert_bundle, '');
      assert.equal(
        (
          await server.deps.core.db.kysely
            .selectFrom('pki_external_policy')
            .select('sealed_client_key')
            .executeTakeFirstOrThrow()
        ).sealed_client_key,
        null,
      );

      // Disabling the mount removes its configuration.
      const count = async () =>
        (await server.deps.core.db.kysely.selectFrom('pki_external_policy').select('mount_id').execute()).length;
      const rows = await count();
      assert.equal((await v('DELETE', `sys/mounts/${mount}`)).status, 204);
      await server.deps.worker.runUntilIdle();
      assert.equal(await count(), rows - 1);
    });

    it('issue: the key is made here, the service sees only a CSR, the default issuer signs', async () => {
      const { mount, rootPem, rootId } = await setup();
      const before = received.length;
      const r = await v('POST', `${mount}/external-policy/issue`, {
        body: { common_name: 'www.example.com', alt_names: 'api.example.com', ttl: '2h', extra: 'forwarded' },
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.lease_id, '');
      assert.equal(r.json.lease_duration, 0);
      assert.deepEqual(r.json.warnings, ['reviewed by the web policy']);
      const d = r.json.data;
      assert.deepEqual(Object.keys(d).sort(), [
        'ca_chain',
        'certificate',
        'expiration',
        'issuing_ca',
        'private_key',
        'private_key_type',
        'serial_number',
      ]);
      assert.equal(d.private_key_type, 'rsa');
      assert.match(d.private_key, /^-----BEGIN RSA PRIVATE KEY-----/);
      assert.ok(keyMatchesCert(d.private_key, d.certificate));
      assert.match(verifyChain(d.certificate, [rootPem]), /OK/);
      assert.equal(d.issuing_ca, rootPem);
      const text = x509Text(d.certificate);
      assert.match(text, /Public-Key: \(2048 bit\)/);
      assert.match(text, /Subject: CN=www\.example\.com/);
      assert.match(text, /DNS:www\.example\.com, DNS:api\.example\.com/);
      assert.match(
        text,
        new RegExp(`CA Issuers - URI:http://ca\\.test/v1/${mount}/ca`),
        'AIA from config/urls, not the template',
      );
      const rootSki = /Subject Key Identifier:\s+([0-9A-F:]+)/.exec(x509Text(rootPem))![1];
      assert.match(text, new RegExp(`Authority Key Identifier:\\s+(keyid:)?${rootSki}`), 'AKI is the issuer SKI');
      assert.ok(Math.abs(d.expiration - (Date.now() / 1000 + 7200)) < 10, 'ttl 2h as the service templated it');
      assert.ok((await storedSerials(v, mount)).includes(d.serial_number), 'stored as the service asked');

      assert.equal(received.length, before + 1);
      const sent = received.at(-1)!;
      assert.equal(sent.request_version, 1);
      assert.equal(sent.synchronous, true);
      assert.match(sent.request_uuid, /^[0-9a-f-]{36}$/);
      assert.equal(sent.user_request_key_values.extra, 'forwarded');
      assert.equal(sent.user_request_key_values.ttl, '2h');
      assert.equal(sent.identity_request_key_values, undefined, 'root tokens carry no identity');
      const vr = sent.vault_request_values;
      assert.equal(vr.issuance_mode, 'issue');
      assert.equal(vr.vault_generated_private_key, true);
      assert.equal(vr.mount, `${mount}/`);
      assert.equal(vr.policy_name, undefined);
      assert.equal(vr.requested_issuer_id, rootId);
      assert.equal(vr.requested_issuer_name, 'root');
      assert.equal(vr.requested_issuer_cert, rootPem);
      assert.deepEqual(vr.requested_issuance_config.aia_values.ocsp_servers, [`http://ca.test/v1/${mount}/ocsp`]);
      assert.equal(vr.requested_issuance_config.mount_max_ttl, '87600h0m0s');
      // The key never left: the service got a CSR with an empty subject for the same public key.
      const wire = JSON.stringify(sent);
      assert.doesNotMatch(wire, /PRIVATE KEY/);
      assert.ok(!wire.includes(d.private_key.split('\n')[1]));
      const csr = sent.user_request_key_values.csr as string;
      assert.match(openssl(['req', '-noout', '-subject'], csr), /^subject=\s*$/m);
      openssl(['req', '-noout', '-verify'], csr); // throws unless the CSR's self-signature holds
      assert.equal(openssl(['req', '-noout', '-pubkey'], csr), openssl(['x509', '-noout', '-pubkey'], d.certificate));

      const status = (await v('GET', `${mount}/config/external-policy`)).json.data;
      assert.equal(status.external_service_validated, true);
      const instant = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
      assert.match(status.last_successful_request, instant);
      assert.match(status.external_service_last_validated, instant);
      assert.ok(
        status.external_service_last_validated >= status.external_service_last_updated,
        'validated after the settings were written',
      );
      assert.ok(Math.abs(Date.parse(status.external_service_last_validated) - Date.now()) < 60_000);
      // New trust settings are not validated yet; the last successful request stays.
      const rewritten = await v('POST', `${mount}/config/external-policy`, { body: { trusted_ca: ca.certPem } });
      assert.equal(rewritten.status, 200, rewritten.text);
      assert.equal(rewritten.json.data.external_service_validated, false);
      assert.equal(rewritten.json.data.external_service_last_validated, null);
      assert.equal(rewritten.json.data.last_successful_request, status.last_successful_request);

      const ec = await v('POST', `${mount}/external-policy/issue/web`, {
        body: {
          common_name: 'ec.example.com',
          key_type: 'ec',
          key_bits: 384,
          private_key_format: 'pkcs8',
          format: 'der',
        },
      });
      assert.equal(ec.status, 200, ec.text);
      assert.equal(ec.json.data.private_key_type, 'ec');
      const der = Buffer.from(ec.json.data.certificate, 'base64');
      assert.match(openssl(['x509', '-inform', 'DER', '-noout', '-text'], der), /NIST CURVE: P-384/);
      assert.equal(received.at(-1)!.vault_request_values.policy_name, 'web');
      const badKey = await v('POST', `${mount}/external-policy/issue`, {
        body: { common_name: 'x.example.com', key_type: 'rsa', key_bits: 1024 },
      });
      assert.equal(badKey.status, 400);
      assert.match(badKey.json.errors[0], /RSA keys < 2048 bits/);
    });

    it('deny: the service message is a 400 and nothing is issued or stored', async () => {
      const { mount } = await setup();
      const stored = await storedSerials(v, mount);
      let r = await v('POST', `${mount}/external-policy/issue/blocked`, { body: { common_name: 'a.example.com' } });
      assert.equal(r.status, 400);
      assert.deepEqual(r.json, { errors: ['requests under this policy are refused'] });
      r = await v('POST', `${mount}/external-policy/issue`, { body: { common_name: 'www.evil.test' } });
      assert.equal(r.status, 400);
      assert.deepEqual(r.json.errors, ['name "www.evil.test" is not allowed by policy "web"']);
      r = await v('POST', `${mount}/external-policy/issue/nosuch`, { body: { common_name: 'a.example.com' } });
      assert.deepEqual(r.json.errors, ['unknown policy "nosuch"']);
      assert.deepEqual(await storedSerials(v, mount), stored);
    });

    it('the service chooses the issuer; per-issuer paths request theirs', async () => {
      const { mount, rootPem, rootId, secondPem, secondId } = await setup();
      let r = await v('POST', `${mount}/external-policy/issue/second`, {
        body: { common_name: 'o.example.com', key_type: 'ec' },
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.data.issuing_ca, secondPem);
      assert.match(verifyChain(r.json.data.certificate, [secondPem]), /OK/);
      assert.throws(() => verifyChain(r.json.data.certificate, [rootPem]));

      r = await v('POST', `${mount}/issuer/second/external-policy/issue/web`, {
        body: { common_name: 'p.example.com', key_type: 'ec' },
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(received.at(-1)!.vault_request_values.requested_issuer_id, secondId);
      assert.equal(received.at(-1)!.user_request_key_values.issuer_ref, 'second');
      assert.match(verifyChain(r.json.data.certificate, [secondPem]), /OK/);
      r = await v('POST', `${mount}/issuer/nosuch/external-policy/issue/web`, {
        body: { common_name: 'p.example.com', key_type: 'ec' },
      });
      assert.equal(r.status, 400);

      // The path only requests an issuer: an answer naming another one wins.
      r = await v('POST', `${mount}/issuer/root/external-policy/issue/second`, {
        body: { common_name: 'q.example.com', key_type: 'ec' },
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(received.at(-1)!.vault_request_values.requested_issuer_id, rootId);
      assert.equal(received.at(-1)!.vault_request_values.requested_issuer_name, 'root');
      assert.equal(r.json.data.issuing_ca, secondPem);
      assert.deepEqual(r.json.data.ca_chain, [secondPem]);
      assert.match(verifyChain(r.json.data.certificate, [secondPem]), /OK/);
      assert.throws(() => verifyChain(r.json.data.certificate, [rootPem]));
    });

    it('sign and sign-intermediate: the CSR is forwarded; intermediates are CAs that openssl verifies', async () => {
      const { mount, rootPem } = await setup();
      const leaf = opensslCsr('EC:P-256', '/CN=ignored');
      let r = await v('POST', `${mount}/external-policy/sign/web`, {
        body: { csr: leaf.csr, common_name: 's.example.com', remove_roots_from_chain: true },
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.data.private_key, undefined);
      assert.equal(r.json.data.ca_chain, undefined, 'the only chain element is the root');
      assert.equal(received.at(-1)!.user_request_key_values.csr, leaf.csr);
      assert.equal(received.at(-1)!.vault_request_values.vault_generated_private_key, false);
      assert.ok(keyMatchesCert(leaf.key, r.json.data.certificate));
      assert.match(verifyChain(r.json.data.certificate, [rootPem]), /OK/);

      const inter = opensslCsr('EC:P-256', '/CN=ica.example.com');
      r = await v('POST', `${mount}/issuer/default/external-policy/sign-intermediate/ica`, {
        body: { csr: inter.csr, common_name: 'ica.example.com' },
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(received.at(-1)!.vault_request_values.issuance_mode, 'ica');
      const ica = r.json.data.certificate as string;
      assert.match(x509Text(ica), /CA:TRUE/);
      assert.deepEqual(r.json.data.ca_chain, [ica, rootPem]);
      assert.match(verifyChain(ica, [rootPem]), /OK/);
      r = await v('POST', `${mount}/external-policy/sign-intermediate`, {
        body: { csr: inter.csr, common_name: 'ica.example.com' },
      });
      assert.equal(r.status, 400);
      assert.match(r.json.errors[0], /does not allow sign-intermediate/);
      r = await v('POST', `${mount}/external-policy/sign/web`, { body: { common_name: 's.example.com' } });
      assert.equal(r.status, 400);
      assert.match(r.json.errors[0], /"csr" is empty/);

      // Sign paths do not read key_type / key_bits: whatever was sent reaches the service as is.
      r = await v('POST', `${mount}/external-policy/sign/web`, {
        body: { csr: leaf.csr, common_name: 's.example.com', key_type: 'nonsense', key_bits: 'x' },
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(received.at(-1)!.user_request_key_values.key_bits, 'x');
      assert.equal(received.at(-1)!.user_request_key_values.key_type, 'nonsense');
      assert.ok(keyMatchesCert(leaf.key, r.json.data.certificate));
      // Issue reads them, so the same value is refused here before the service is asked.
      const sent = received.length;
      r = await v('POST', `${mount}/external-policy/issue/web`, {
        body: { common_name: 's.example.com', key_bits: 'x' },
      });
      assert.equal(r.status, 400, r.text);
      assert.match(r.json.errors[0], /key_bits/);
      assert.equal(received.length, sent);
    });

    it('ACL: every path needs its capability; a scoped token is sent as the requester', async () => {
      const { mount } = await setup();
      const policy = async (name: string, text: string) =>
        assert.equal((await v('PUT', `sys/policies/acl/${name}`, { body: { policy: text } })).status, 204);
      const token = async (policies: string[]) =>
        (await v('POST', 'auth/token/create', { body: { policies } })).json.auth.client_token as string;
      await policy(`ro-${mount}`, `path "${mount}/config/urls" { capabilities = ["read"] }`);
      await policy(`issue-${mount}`, `path "${mount}/external-policy/issue/*" { capabilities = ["update"] }`);
      const ro = await token([`ro-${mount}`]);
      for (const p of EXTERNAL_PATHS) {
        const r = await v('POST', `${mount}/${p}`, { token: ro, body: { common_name: 'a.example.com' } });
        assert.equal(r.status, 403, p);
        assert.deepEqual(r.json, { errors: ['permission denied'] });
      }
      assert.equal((await v('GET', `${mount}/config/external-policy`, { token: ro })).status, 403);
      assert.equal(
        (await v('POST', `${mount}/config/external-policy`, { token: ro, body: { enabled: false } })).status,
        403,
      );
      const issuer = await token([`issue-${mount}`]);
      const r = await v('POST', `${mount}/external-policy/issue/web`, {
        token: issuer,
        body: { common_name: 'acl.example.com', key_type: 'ec' },
      });
      assert.equal(r.status, 200, r.text);
      const id = received.at(-1)!.identity_request_key_values;
      assert.deepEqual(id.token_policies.sort(), ['default', `issue-${mount}`].sort());
      assert.match(id.token_accessor, /\S/);
      assert.equal(
        (
          await v('POST', `${mount}/external-policy/issue`, {
            token: issuer,
            body: { common_name: 'acl.example.com' },
          })
        ).status,
        403,
      );
      assert.equal((await v('POST', `${mount}/external-policy/sign/web`, { token: issuer, body: {} })).status, 403);
    });

    it(
      'hvac (a real Vault client) issues and signs through external-policy paths over HTTPS',
      { skip: hvacSkip },
      async () => {
        const { mount, rootPem } = await setup();
        const csr = opensslCsr('EC:P-256', '/CN=hvac.example.com');
        const caFile = join(ca.dir, 'ca-for-hvac.pem');
        writeFileSync(caFile, ca.certPem + '\n');
        const script = [
          'import hvac, json, os',
          'c = hvac.Client(url=os.environ["VAULT_ADDR"], token=os.environ["VAULT_TOKEN"], ' +
            'verify=os.environ["CA_FILE"])',
          'm = os.environ["MOUNT"]',
          'issued = c.write(m + "/external-policy/issue/web", common_name="hvac.example.com", key_type="ec")',
          'signed = c.write(m + "/issuer/default/external-policy/sign", csr=os.environ["CSR"], ' +
            'common_name="hvac.example.com")',
          'try:',
          '    c.write(m + "/external-policy/issue/blocked", common_name="hvac.example.com")',
          '    denied = None',
          'except hvac.exceptions.InvalidRequest as e:',
          '    denied = str(e)',
          'print(json.dumps({"issued": issued, "signed": signed, "denied": denied}))',
        ].join('\n');
        // Asynchronous: the server under test runs in this process.
        const child = spawn(PYTHON, ['-c', script], {
          env: {
            PATH: process.env.PATH ?? '',
            VAULT_ADDR: server.url,
            VAULT_TOKEN: server.rootToken,
            CA_FILE: caFile,
            MOUNT: mount,
            CSR: csr.csr,
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        const code = await new Promise<number | null>((done) => child.on('close', done));
        assert.equal(code, 0, stderr);
        const out = JSON.parse(stdout) as Body;
        assert.equal(out.issued.lease_id, '');
        assert.deepEqual(out.issued.warnings, ['reviewed by the web policy']);
        assert.ok(keyMatchesCert(out.issued.data.private_key, out.issued.data.certificate));
        assert.match(verifyChain(out.issued.data.certificate, [rootPem]), /OK/);
        assert.ok(keyMatchesCert(csr.key, out.signed.data.certificate));
        assert.match(verifyChain(out.signed.data.certificate, [rootPem]), /OK/);
        assert.match(out.denied, /requests under this policy are refused/);
      },
    );

    it('service failures are 502s with a clear message; nothing is issued or stored', async () => {
      const { mount } = await mountWithRoot(v);
      const cfg = (body: Body) => v('POST', `${mount}/config/external-policy`, { body });
      assert.equal(
        (
          await cfg({
            enabled: true,
            external_service_url: rogue.url,
            trusted_leaf_certificate_bundle: ca.issue('unrelated').certPem,
            timeout: '1s',
          })
        ).status,
        200,
      );
      const hitsBefore = rogue.hits();
      let r = await v('POST', `${mount}/external-policy/issue`, {
        body: { common_name: 'a.example.com', key_type: 'ec' },
      });
      assert.equal(r.status, 502, r.text);
      assert.match(r.json.errors[0], /not in trusted_leaf_certificate_bundle/);
      assert.equal(rogue.hits(), hitsBefore, 'no request is sent to an unpinned server');

      const rogueCert = await fetchPeerCert(rogue.url);
      assert.equal((await cfg({ trusted_leaf_certificate_bundle: rogueCert })).status, 200);
      const cases: [string, RegExp][] = [
        ['slow', /no answer within the timeout of 1s/],
        ['uuid', /the answer is for request "00000000-0000-4000-8000-000000000000", not for this request/],
        ['template', /template certificate cannot be parsed/],
        ['status', /answered HTTP 500 instead of 200/],
        ['unknown', /unknown keys: surprise/],
        ['redirect', /answered HTTP 307 \(redirect to .*\); redirects are not followed/],
      ];
      for (const [behaviour, msg] of cases) {
        rogue.respond(misbehaviour(behaviour, `${reference.url}cieps`));
        const refBefore = received.length;
        r = await v('POST', `${mount}/external-policy/issue`, {
          body: { common_name: 'a.example.com', key_type: 'ec' },
        });
        assert.equal(r.status, 502, `${behaviour}: ${r.text}`);
        assert.match(r.json.errors[0], msg, behaviour);
        assert.doesNotMatch(r.text, /internal detail of the service/, 'a non-200 body is not relayed');
        assert.equal(received.length, refBefore, 'the redirect target is never asked');
      }
      await rootOnly(v, mount);
      const status = (await v('GET', `${mount}/config/external-policy`)).json.data;
      assert.equal(status.last_successful_request, null, 'no failure counts as a successful request');

      // A server that accepts the connection but never completes the handshake runs into the timeout too.
      const silent = createNetServer(() => undefined);
      await new Promise<void>((res) => silent.listen(0, '127.0.0.1', () => res()));
      try {
        assert.equal(
          (await cfg({ external_service_url: `https://127.0.0.1:${(silent.address() as AddressInfo).port}/` })).status,
          200,
        );
        r = await v('POST', `${mount}/external-policy/issue`, {
          body: { common_name: 'a.example.com', key_type: 'ec' },
        });
        assert.equal(r.status, 502, r.text);
        assert.match(r.json.errors[0], /no answer within the timeout of 1s/);
      } finally {
        silent.close();
      }

      // Mutual TLS: the reference service refuses a client without a certificate.
      assert.equal(
        (
          await cfg({
            external_service_url: `${reference.url}cieps`,
            trusted_leaf_certificate_bundle: '',
            trusted_ca: ca.certPem,
          })
        ).status,
        200,
      );
      r = await v('POST', `${mount}/external-policy/issue`, {
        body: { common_name: 'a.example.com', key_type: 'ec' },
      });
      assert.equal(r.status, 502, r.text);
      assert.match(r.json.errors[0], /external policy service: /);
    });

    // The server's certificate is made by the enclosing suite's `before`.
    return () => ({ config: { tlsCertFile: serverTls.certFile, tlsKeyFile: serverTls.keyFile } });
  });
});

/** Serials of the mount: only its root, when nothing else was stored. */
async function rootOnly(v: Vault, mount: string): Promise<string[]> {
  const serials = await storedSerials(v, mount);
  assert.equal(serials.length, 1, `only the root is stored: ${serials.join(' ')}`);
  return serials;
}

/** The certificate a TLS server presents, as PEM (what an operator would pin). */
async function fetchPeerCert(url: string): Promise<string> {
  const { connect } = await import('node:tls');
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect({ host: u.hostname, port: Number(u.port), rejectUnauthorized: false }, () => {
      const der = s.getPeerCertificate().raw;
      s.destroy();
      resolve(
        `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/.{64}/g, '$&\n')}\n-----END CERTIFICATE-----`,
      );
    });
    s.on('error', reject);
  });
}
