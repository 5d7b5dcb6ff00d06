/**
 * lego against an ACME directory whose policy is the external issuance policy
 * (`default_directory_policy=external-policy:<name>`), with `strongroom policy-service` as
 * the policy service: what the service decides (TTL, extended key usages) is what lego gets,
 * and a refusal fails the order with rejectedIdentifier and issues nothing.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import type { X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { loopbackFor } from '../support/acme-fixtures.js';
import { CLI } from '../support/spawn-server.js';
import { opensslTestCa } from './pki-external-policy-helpers.js';
import { openssl } from './pki-issuers-openssl.js';
import { checkChain, clientMount, describeWithClients, requireTool, run } from './pki-acme-clients.js';

const FILE_TAG = 36;
const haveLego = requireTool('lego');
const POLICY = 'acme-web';
/** A policy whose answers say not to store the certificate. */
const UNSTORED = 'acme-unstored';

/**
 * `strongroom policy-service` with one policy for ACME: 36 h server-and-client certificates under allowed.acme.test.
 */
async function startPolicyService(): Promise<{ url: string; caPem: string; out(): string; stop(): void }> {
  const ca = opensslTestCa('ACME policy service CA');
  const tls = ca.issue('acme-policy');
  const rules = join(ca.dir, 'rules.json');
  writeFileSync(
    rules,
    JSON.stringify({
      policies: {
        [POLICY]: {
          allowed_names: ['*.allowed.acme.test'],
          ttl: '36h',
          max_ttl: '72h',
          ext_key_usage: ['ServerAuth', 'ClientAuth'],
        },
        [UNSTORED]: { allowed_names: ['*.allowed.acme.test'], ttl: '24h', store_certificate: false },
      },
    }),
  );
  const args = ['policy-service', '--rules', rules, '--tls-cert', tls.certFile, '--tls-key', tls.keyFile];
  const child: ChildProcess = spawn(process.execPath, [CLI, ...args, '--listen', '127.0.0.1:0'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`policy service did not start:\n${out}`)), 30_000);
    child.stdout!.on('data', () => {
      const m = /listening at (https:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(`${m[1]}cieps`);
      }
    });
    child.once('exit', (code) => reject(new Error(`policy service exited ${code}:\n${out}`)));
  });
  return { url, caPem: ca.certPem, out: () => out, stop: () => child.kill('SIGTERM') };
}

describeWithClients(
  'pki ACME through the external issuance policy, with lego',
  !haveLego && 'lego is not installed',
  (suite, kind) => {
    let policy: Awaited<ReturnType<typeof startPolicyService>>;
    let m: Awaited<ReturnType<typeof clientMount>>;
    let seq = 0;

    before(async () => {
      policy = await startPolicyService();
      m = await clientMount(suite.t, {
        dns_resolver: suite.dns.address,
        default_directory_policy: `external-policy:${POLICY}`,
      });
      const r = await suite.t.v('POST', `${m.mount}/config/external-policy`, {
        body: { enabled: true, external_service_url: policy.url, trusted_ca: policy.caPem },
      });
      assert.equal(r.status, 200, r.text);
    });
    after(() => policy?.stop());

    /** `lego run` for `name` on the mount's default directory, answering http-01 on its own loopback address. */
    function legoRun(name: string) {
      const ip = loopbackFor(FILE_TAG, kind, ++seq);
      suite.dns.mapHost(name, ip);
      const path = join(suite.t.dir, `lego-policy-${seq}`);
      const args = ['--server', `${m.cluster}/acme/directory`, '--path', path, '--accept-tos'];
      args.push('--email', 'ops@acme.test', '--domains', name, '--http', '--http.port', `${ip}:80`, 'run');
      return {
        result: run('lego', args, { LEGO_CA_CERTIFICATES: suite.t.caFile }),
        chain: () => readFileSync(join(path, 'certificates', `${name}.crt`), 'utf8'),
      };
    }

    /** The certificate is in certs/ and its cert_metadata names the lego account that ordered it. */
    async function assertStoredWithAccount(leaf: X509Certificate): Promise<void> {
      const serial = leaf.serialNumber.toLowerCase().match(/../g)!.join(':');
      assert.ok((await storedSerials()).includes(serial), serial);
      const meta = await suite.t.v('GET', `${m.mount}/cert-metadata/${serial}`);
      assert.equal(meta.status, 200, meta.text);
      const decoded = JSON.parse(Buffer.from(meta.json.data.cert_metadata, 'base64').toString());
      assert.equal(decoded.acme_directory, 'acme/');
      assert.match(decoded.acme_order_id, /^[0-9a-f-]{36}$/);
      const accounts = await suite.t.v('LIST', `${m.mount}/acme/mgmt/account/keyid`);
      assert.equal(accounts.status, 200, accounts.text);
      assert.ok((accounts.json.data.keys as string[]).includes(decoded.acme_account_id), accounts.text);
    }

    async function storedSerials(): Promise<string[]> {
      const r = await suite.t.v('LIST', `${m.mount}/certs`);
      assert.equal(r.status, 200, r.text);
      return r.json.data.keys as string[];
    }

    it('lego obtains a certificate shaped by the policy: its TTL and extended key usages', async () => {
      const name = 'web.allowed.acme.test';
      const l = legoRun(name);
      const r = await l.result;
      assert.equal(r.code, 0, r.out);
      const leaf = checkChain(l.chain(), m.rootPem, name);
      const text = openssl(['x509', '-noout', '-text'], leaf.toString());
      // The role path would give ServerAuth only; the policy asked for both.
      assert.match(text, /TLS Web Server Authentication, TLS Web Client Authentication/, text);
      const dates = openssl(['x509', '-noout', '-startdate', '-enddate'], leaf.toString());
      const notBefore = Date.parse(/notBefore=(.+)/.exec(dates)![1]!);
      const notAfter = Date.parse(/notAfter=(.+)/.exec(dates)![1]!);
      const hours = (notAfter - notBefore) / 3_600_000;
      assert.ok(hours > 35.9 && hours <= 36.05, `validity of ${hours} h instead of the policy's 36 h\n${dates}`);
      assert.match(policy.out(), new RegExp(`allow policy="${POLICY}" mode=sign names=${name.replace(/\./g, '\\.')} `));
      // Stored like every ACME certificate, with the account in its metadata.
      await assertStoredWithAccount(leaf);
    });

    it('a policy answering store_certificate=false: ACME stores the certificate anyway, as Vault does', async () => {
      const r = await suite.t.v('POST', `${m.mount}/config/acme`, {
        body: { default_directory_policy: `external-policy:${UNSTORED}` },
      });
      assert.equal(r.status, 200, r.text);
      try {
        const name = 'unstored.allowed.acme.test';
        const l = legoRun(name);
        const run = await l.result;
        assert.equal(run.code, 0, run.out);
        // lego downloaded it from the order's certificate URL.
        const leaf = checkChain(l.chain(), m.rootPem, name);
        assert.match(policy.out(), new RegExp(`allow policy="${UNSTORED}" mode=sign`));
        await assertStoredWithAccount(leaf);
      } finally {
        await suite.t.v('POST', `${m.mount}/config/acme`, {
          body: { default_directory_policy: `external-policy:${POLICY}` },
        });
      }
    });

    it('a name the policy refuses: lego fails with rejectedIdentifier and nothing is issued', async () => {
      const before = await storedSerials();
      const l = legoRun('web.refused.acme.test');
      const r = await l.result;
      assert.notEqual(r.code, 0, r.out);
      assert.match(r.out, /urn:ietf:params:acme:error:rejectedIdentifier/, r.out);
      assert.match(r.out, /is not allowed by policy/, r.out);
      assert.deepEqual(await storedSerials(), before);
    });
  },
);
