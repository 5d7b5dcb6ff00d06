import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeWithServer } from '../support/test-server.js';
import { buildGoProgram, goProblem, runProgram } from '../support/go-program.js';
import { hvacSkip, runHvacScript } from '../support/hvac-script.js';
import { httpsVaultClient, opensslTestCa } from './pki-external-policy-helpers.js';
import type { VaultReply } from './vault-http.js';

/**
 * What `vault status`, load balancers and the Vault clients read: sys/health (with its
 * status-code parameters), sys/seal-status, sys/leader and sys/init, without a token, over
 * TLS. Vault's Go API client is not packaged by Debian, so the Go program in test/vault-go
 * makes its requests and decodes the answers into structs of its field types (and the
 * cases below check each field's JSON type); hvac (python3-hvac) runs its status calls for real.
 */

const noGo = goProblem();
let goProgram: Promise<string> | undefined;

/** Outside CI a missing Go toolchain skips its case; in CI (CI=true) the case runs and fails. */
function skipGo(): string | false {
  return noGo !== null && process.env.CI !== 'true' && process.env.REQUIRE_GO_TFE !== '1'
    ? `the Go status program is not built: ${noGo}`
    : false;
}

const ca = opensslTestCa('Strongroom status test CA');
const serverCert = ca.issue('localhost');

/** The Go client's types: every field of its response struct present with that JSON type. */
function assertShape(body: Record<string, unknown>, shape: Record<string, 'boolean' | 'string' | 'number'>): void {
  for (const [k, t] of Object.entries(shape)) assert.equal(typeof body[k], t, `${k} in ${JSON.stringify(body)}`);
}

describeWithServer(
  'Vault status endpoints',
  {
    config: { tlsCertFile: serverCert.certFile, tlsKeyFile: serverCert.keyFile },
  },
  (server, kind) => {
    let anon: (method: string, path: string) => Promise<VaultReply>;

    before(async () => {
      const v = httpsVaultClient(server.url, ca.certPem, '');
      anon = (method, path) => v(method, path, { token: undefined });
    });

    it('sys/health: an active, unsealed, initialized node, without a token', async () => {
      const r = await anon('GET', 'sys/health');
      assert.equal(r.status, 200);
      assert.match(r.contentType, /^application\/json/);
      assertShape(r.json, {
        initialized: 'boolean',
        sealed: 'boolean',
        standby: 'boolean',
        performance_standby: 'boolean',
        replication_performance_mode: 'string',
        replication_dr_mode: 'string',
        server_time_utc: 'number',
        version: 'string',
        cluster_name: 'string',
        cluster_id: 'string',
      });
      assert.deepEqual(
        [r.json.initialized, r.json.sealed, r.json.standby, r.json.performance_standby],
        [true, false, false, false],
      );
      assert.ok(Number.isInteger(r.json.server_time_utc));
      assert.ok(Math.abs(r.json.server_time_utc - Date.now() / 1000) < 3600, 'server time is now');
      assert.match(r.json.cluster_id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      assert.equal(r.json.replication_dr_mode, 'disabled');
      // A token that does not exist changes nothing: the path needs none.
      const withBadToken = await httpsVaultClient(server.url, ca.certPem, 'no-such-token')('GET', 'sys/health');
      assert.equal(withBadToken.status, 200);
    });

    it("sys/health: the active code decides; the others are checked, as the Go client's parameters are", async () => {
      // What the Go client's Sys().Health() sends: every non-active code moved out of the error range.
      let r = await anon(
        'GET',
        'sys/health?sealedcode=299&uninitcode=299&drsecondarycode=299&performancestandbycode=299',
      );
      assert.equal(r.status, 200);
      assert.equal(r.json.sealed, false);
      for (const [query, status] of [
        ['activecode=299', 299],
        ['activecode=204', 204],
        ['standbyok=true', 200],
        ['standbyok=true&activecode=203', 203],
        ['perfstandbyok=1', 200],
        ['standbycode=200&standbyok=false', 200],
        ['haunhealthycode=299&removedcode=299', 200],
        ['unknown=1', 200],
      ] as const) {
        r = await anon('GET', `sys/health?${query}`);
        assert.equal(r.status, status, query);
        r = await anon('HEAD', `sys/health?${query}`);
        assert.equal(r.status, status, `HEAD ${query}`);
        assert.equal(r.text, '', `HEAD ${query}`);
      }
      for (const [query, field] of [
        ['activecode=abc', 'activecode'],
        ['standbycode=2.5', 'standbycode'],
        ['sealedcode=99', 'sealedcode'],
        ['uninitcode=1000', 'uninitcode'],
        ['standbyok=maybe', 'standbyok'],
        ['perfstandbyok=yes', 'perfstandbyok'],
      ] as const) {
        r = await anon('GET', `sys/health?${query}`);
        assert.equal(r.status, 400, query);
        assert.equal(r.json.errors.length, 1, query);
        assert.match(r.json.errors[0], new RegExp(field), query);
        r = await anon('HEAD', `sys/health?${query}`);
        assert.equal(r.status, 400, `HEAD ${query}`);
      }
      // Only reads are served; a write is refused as an unsupported operation (with a token: writes need one).
      r = await httpsVaultClient(server.url, ca.certPem, server.rootToken)('POST', 'sys/health');
      assert.equal(r.status, 405);
      assert.ok(Array.isArray(r.json.errors));
    });

    it('sys/seal-status and sys/init: unsealed, initialized, shamir, with version and cluster', async () => {
      const health = (await anon('GET', 'sys/health')).json;
      const r = await anon('GET', 'sys/seal-status');
      assert.equal(r.status, 200);
      assertShape(r.json, {
        type: 'string',
        initialized: 'boolean',
        sealed: 'boolean',
        t: 'number',
        n: 'number',
        progress: 'number',
        nonce: 'string',
        version: 'string',
        build_date: 'string',
        migration: 'boolean',
        cluster_name: 'string',
        cluster_id: 'string',
        recovery_seal: 'boolean',
        storage_type: 'string',
      });
      assert.equal(r.json.type, 'shamir');
      assert.equal(r.json.sealed, false);
      assert.equal(r.json.initialized, true);
      assert.equal(r.json.version, health.version);
      assert.equal(r.json.cluster_name, health.cluster_name);
      assert.equal(r.json.cluster_id, health.cluster_id);
      assert.equal(r.json.storage_type, kind === 'postgres' ? 'postgresql' : 'sqlite');
      const init = await anon('GET', 'sys/init');
      assert.equal(init.status, 200);
      assert.deepEqual(init.json, { initialized: true });
    });

    it('sys/leader: no HA, and this node is the leader', async () => {
      const r = await anon('GET', 'sys/leader');
      assert.equal(r.status, 200);
      assertShape(r.json, {
        ha_enabled: 'boolean',
        is_self: 'boolean',
        active_time: 'string',
        leader_address: 'string',
        leader_cluster_address: 'string',
        performance_standby: 'boolean',
        performance_standby_last_remote_wal: 'number',
      });
      assert.equal(r.json.ha_enabled, false);
      assert.equal(r.json.is_self, true);
      // Go decodes it into a time.Time: RFC 3339.
      assert.match(r.json.active_time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
      assert.ok(Date.parse(r.json.active_time) <= Date.now());
      assert.equal(
        (await httpsVaultClient(server.url, ca.certPem, server.rootToken)('POST', 'sys/leader')).status,
        405,
      );
    });

    it(
      "the Go client's Health, SealStatus and Leader requests, decoded into its types",
      { skip: skipGo() },
      async () => {
        if (noGo !== null) assert.fail(`CI=true but ${noGo}`);
        goProgram ??= buildGoProgram('vault-go');
        const env: NodeJS.ProcessEnv = { ...process.env, VAULT_ADDR: server.url, VAULT_CACERT: ca.certFile };
        delete env['VAULT_TOKEN'];
        const { code, out } = await runProgram(await goProgram, [], env, 60_000);
        assert.equal(code, 0, out);
        assert.deepEqual(out.trim().split('\n'), ['ok health', 'ok seal-status', 'ok leader']);
      },
    );

    it("hvac's health, seal-status and leader calls succeed without a token", { skip: skipHvac() }, async () => {
      if (hvacSkip) assert.fail(`CI=true but ${hvacSkip}`);
      const { code, out } = await runHvacScript('vault-status-hvac.py', {
        url: server.url,
        token: '',
        caFile: ca.certFile,
      });
      assert.equal(code, 0, out);
      for (const step of ['health', 'seal-status', 'leader']) assert.match(out, new RegExp(`^ok ${step}$`, 'm'));
    });
  },
);

/** Outside CI a missing hvac skips its case; in CI (CI=true) the case runs and fails. */
function skipHvac(): string | false {
  return hvacSkip && process.env.CI !== 'true' ? hvacSkip : false;
}
