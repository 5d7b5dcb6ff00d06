import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { dbKinds } from '../support/test-db.js';
import { assertDoc, orgBody, wsBody } from '../support/tfe-http.js';
import {
  TerraformDir,
  cloudBlock,
  remoteBackendBlock,
  remoteStateData,
  startTerraformSite,
  terraformProblem,
  terraformSkip,
} from '../support/terraform.js';
import { waitFor } from '../support/wait.js';
import type { TerraformSite } from '../support/terraform.js';

/**
 * The real Terraform CLI (the binary on PATH) against the server over TLS, on each database:
 * the cloud block by workspace name, by tags and by project, the remote backend, init, apply, plan
 * -detailed-exitcode, output, state pull/list/rm/push (with and without -force),
 * force-unlock, a lock held by someone else, and terraform_remote_state between workspaces.
 * What the binary cannot reach (older CLI versions, interrupted uploads, OpenTofu) stays in
 * the simulated sequences of tfe-cli-workflows.test.ts.
 */

const problem = terraformProblem();

/** The configuration every case applies: one built-in resource and outputs of each kind. */
const RESOURCES = `
variable "greeting" {
  default = "hello"
}
resource "terraform_data" "app" {
  input = var.greeting
}
output "greeting" {
  value = terraform_data.app.output
}
output "secret" {
  value     = "s3cr3t"
  sensitive = true
}
output "zones" {
  value = ["a", "b"]
}
output "settings" {
  value = { port = 5432, tls = true }
}
`;

const OUTPUTS = (greeting: string) => ({
  greeting: { sensitive: false, type: 'string', value: greeting },
  secret: { sensitive: true, type: 'string', value: 's3cr3t' },
  zones: { sensitive: false, type: ['tuple', ['string', 'string']], value: ['a', 'b'] },
  settings: {
    sensitive: false,
    type: ['object', { port: 'number', tls: 'bool' }],
    value: { port: 5432, tls: true },
  },
});

interface StateDoc {
  serial: number;
  lineage: string;
  resources: Array<{ type: string; name: string }>;
  [k: string]: unknown;
}

for (const kind of dbKinds()) {
  describe(`real Terraform CLI [${kind}]`, { skip: terraformSkip(problem) }, () => {
    let site: TerraformSite;

    before(async () => {
      if (problem !== null) assert.fail(`CI=true (or REQUIRE_TERRAFORM=1) but ${problem}`);
      site = await startTerraformSite(kind);
    });
    after(async () => site?.server.close());

    async function newOrg(): Promise<string> {
      const org = `tf-${randomUUID().slice(0, 8)}`;
      assertDoc(await site.admin.post('/api/v2/organizations', orgBody(org)), 201);
      return org;
    }
    async function workspace(org: string, name: string) {
      const r = await site.admin.get(`/api/v2/organizations/${org}/workspaces/${name}`);
      assertDoc(r, 200);
      return r.body.data as { id: string; attributes: Record<string, unknown> };
    }
    /** The current state version once its resources are extracted. */
    async function current(wsId: string) {
      return waitFor(`the current state version of ${wsId} to be processed`, async () => {
        const r = await site.admin.get(`/api/v2/workspaces/${wsId}/current-state-version`);
        assertDoc(r, 200);
        return r.body.data.attributes['resources-processed'] === true
          ? (r.body.data as { id: string; attributes: Record<string, unknown> })
          : undefined;
      });
    }
    /** The state file of a version, as the server serves it to the CLI. */
    async function stateOf(version: { attributes: Record<string, unknown> }): Promise<StateDoc> {
      const url = new URL(version.attributes['hosted-state-download-url'] as string);
      const r = await site.admin.get(`${url.pathname}${url.search}`, { accept: 'application/json' });
      assert.equal(r.status, 200, r.text);
      return JSON.parse(r.text) as StateDoc;
    }
    /** How many lock requests the server has refused (409) so far, from its metrics. */
    async function lockRefusals(): Promise<number> {
      const r = await site.admin.get('/metrics', { accept: 'text/plain' });
      assert.equal(r.status, 200);
      const line = r.text
        .split('\n')
        .find((l) => /^strongroom_http_requests_total\{.*route="[^"]*\/actions\/lock".*status="409"/.test(l));
      return line ? Number(line.split(' ').pop()) : 0;
    }
    function resourceNames(attributes: Record<string, unknown>): string[] {
      return (attributes['resources'] as Array<{ type: string; name: string }>).map((r) => `${r.type}.${r.name}`);
    }
    /** A working directory using the cloud block by name, initialized and applied once. */
    async function appliedByName(org: string, name: string): Promise<TerraformDir> {
      const tf = new TerraformDir(site, site.server.rootToken, cloudBlock(site, org, { name }) + RESOURCES);
      await tf.ok(['init']);
      await tf.ok(['apply', '-auto-approve']);
      return tf;
    }

    it('cloud block by name: init creates the workspace; apply, plan -detailed-exitcode and output -json', async () => {
      const org = await newOrg();
      const tf = new TerraformDir(site, site.server.rootToken, cloudBlock(site, org, { name: 'app' }) + RESOURCES);
      const init = await tf.ok(['init']);
      assert.match(init.out, /HCP Terraform has been successfully initialized/);
      const ws = await workspace(org, 'app');
      assert.equal(ws.attributes['locked'], false);

      await tf.ok(['apply', '-auto-approve']);
      const first = await current(ws.id);
      assert.deepEqual(resourceNames(first.attributes), ['terraform_data.app']);
      assert.equal(
        first.attributes['terraform-version'],
        JSON.parse((await tf.ok(['version', '-json'])).stdout).terraform_version,
      );
      assert.equal((await workspace(org, 'app')).attributes['locked'], false, 'apply released its lock');

      // Nothing to change, then a change: the exit codes a pipeline reads.
      await tf.ok(['plan', '-detailed-exitcode'], 0);
      await tf.ok(['plan', '-detailed-exitcode', '-var', 'greeting=changed'], 2);
      // Sensitive values come with -json, read one by one from the server.
      assert.deepEqual(JSON.parse((await tf.ok(['output', '-json'])).stdout), OUTPUTS('hello'));
      assert.equal((await tf.ok(['output', '-raw', 'secret'])).stdout, 's3cr3t');

      await tf.ok(['apply', '-auto-approve', '-var', 'greeting=changed']);
      const second = await current(ws.id);
      assert.notEqual(second.id, first.id);
      assert.ok((second.attributes['serial'] as number) > (first.attributes['serial'] as number));
      assert.deepEqual(JSON.parse((await tf.ok(['output', '-json'])).stdout), OUTPUTS('changed'));
      // A second directory with the same block finds the workspace and its state.
      const other = new TerraformDir(site, site.server.rootToken, cloudBlock(site, org, { name: 'app' }) + RESOURCES);
      await other.ok(['init']);
      await other.ok(['plan', '-detailed-exitcode', '-var', 'greeting=changed'], 0);
    });

    it('state pull, list, rm and push through the cloud block; a refused forced push force-unlocked', async () => {
      const org = await newOrg();
      const tf = await appliedByName(org, 'app');
      const wsId = (await workspace(org, 'app')).id;
      assert.equal((await tf.ok(['state', 'list'])).stdout.trim(), 'terraform_data.app');
      const pulled = JSON.parse((await tf.ok(['state', 'pull'])).stdout) as StateDoc;
      const applied = await current(wsId);
      assert.equal(pulled.serial, applied.attributes['serial']);
      assert.deepEqual(pulled, await stateOf(applied));

      await tf.ok(['state', 'rm', 'terraform_data.app']);
      assert.equal((await tf.ok(['state', 'list'])).stdout.trim(), '');
      const removed = await current(wsId);
      assert.deepEqual(resourceNames(removed.attributes), []);
      const removedSerial = removed.attributes['serial'] as number;

      // Without -force: a newer serial of the same lineage is accepted ...
      tf.write('newer.tfstate', JSON.stringify({ ...pulled, serial: removedSerial + 1 }));
      await tf.ok(['state', 'push', 'newer.tfstate']);
      const pushed = await current(wsId);
      assert.deepEqual(resourceNames(pushed.attributes), ['terraform_data.app']);
      assert.equal((await stateOf(pushed)).lineage, pulled.lineage);
      assert.equal((await tf.ok(['state', 'list'])).stdout.trim(), 'terraform_data.app');
      // ... an older serial or another lineage is refused by the CLI, and nothing changes.
      tf.write('older.tfstate', JSON.stringify({ ...pulled, serial: 0 }));
      assert.match((await tf.ok(['state', 'push', 'older.tfstate'], 1)).out, /cannot import state with serial/);
      const otherLineage = randomUUID();
      tf.write('other.tfstate', JSON.stringify({ ...pulled, lineage: otherLineage, serial: removedSerial + 10 }));
      assert.match((await tf.ok(['state', 'push', 'other.tfstate'], 1)).out, /cannot import state with lineage/);
      // Without the lock the server refuses the write.
      tf.write('unlocked.tfstate', JSON.stringify({ ...pulled, serial: removedSerial + 20 }));
      assert.match((await tf.ok(['state', 'push', '-lock=false', 'unlocked.tfstate'], 1)).out, /not locked/);
      assert.equal((await current(wsId)).id, pushed.id);
      assert.equal((await workspace(org, 'app')).attributes['locked'], false);

      // -force skips the CLI's checks, but the cloud block sends force=false (Terraform clears the flag before
      // persisting), so the server refuses another lineage as HCP Terraform does; Terraform then keeps the
      // workspace locked after the failed upload, to be released with force-unlock.
      const forced = await tf.ok(['state', 'push', '-force', 'other.tfstate'], 1);
      assert.match(forced.out, /lineage provided in the state file does not match/);
      assert.equal((await current(wsId)).id, pushed.id);
      assert.equal((await workspace(org, 'app')).attributes['locked'], true);
      assert.match((await tf.ok(['force-unlock', '-force', 'not-the-lock'], 1)).out, /does not match existing lock ID/);
      await tf.ok(['force-unlock', '-force', `${org}/app`]);
      assert.equal((await workspace(org, 'app')).attributes['locked'], false);
      await tf.ok(['plan', '-detailed-exitcode'], 0);
    });

    it('remote backend: init creates the workspace; push -force replaces other lineage and older serial', async () => {
      const org = await newOrg();
      const tf = new TerraformDir(
        site,
        site.server.rootToken,
        remoteBackendBlock(site, org, { name: 'legacy' }) + RESOURCES,
      );
      await tf.ok(['init']);
      await tf.ok(['apply', '-auto-approve']);
      const wsId = (await workspace(org, 'legacy')).id;
      assert.deepEqual(JSON.parse((await tf.ok(['output', '-json'])).stdout), OUTPUTS('hello'));
      const pulled = JSON.parse((await tf.ok(['state', 'pull'])).stdout) as StateDoc;
      const before = await current(wsId);

      const otherLineage = randomUUID();
      tf.write('other.tfstate', JSON.stringify({ ...pulled, lineage: otherLineage, serial: pulled.serial + 5 }));
      assert.match((await tf.ok(['state', 'push', 'other.tfstate'], 1)).out, /cannot import state with lineage/);
      assert.equal((await current(wsId)).id, before.id);
      // The remote backend sends force=true: the server takes the other lineage, and then an older serial.
      await tf.ok(['state', 'push', '-force', 'other.tfstate']);
      const replaced = await current(wsId);
      assert.equal((await stateOf(replaced)).lineage, otherLineage);
      assert.equal(JSON.parse((await tf.ok(['state', 'pull'])).stdout).lineage, otherLineage);
      tf.write('older.tfstate', JSON.stringify({ ...pulled, serial: 0 }));
      await tf.ok(['state', 'push', '-force', 'older.tfstate']);
      const back = await current(wsId);
      assert.equal((await stateOf(back)).lineage, pulled.lineage);
      assert.ok((back.attributes['serial'] as number) < (replaced.attributes['serial'] as number));
      assert.equal((await workspace(org, 'legacy')).attributes['locked'], false);
      await tf.ok(['plan', '-detailed-exitcode'], 0);
    });

    it('another apply in progress holds the lock: a second apply fails, or waits with -lock-timeout', async () => {
      const org = await newOrg();
      // The provisioner holds the apply (and so the lock) until a file named "release" exists in its directory.
      const gate = `resource "terraform_data" "gate" {
  triggers_replace = [var.greeting]
  provisioner "local-exec" {
    command = "while [ ! -e release ]; do sleep 0.1; done"
  }
}
`;
      const config = cloudBlock(site, org, { name: 'shared' }) + RESOURCES + gate;
      const first = new TerraformDir(site, site.server.rootToken, config);
      const second = new TerraformDir(site, site.server.rootToken, config);
      second.write('release', '');
      await first.ok(['init']);
      await second.ok(['init']);
      const ws = await workspace(org, 'shared');

      const running = first.start(['apply', '-auto-approve', '-var', 'greeting=first']);
      await waitFor('the first apply to hold the lock and run its provisioner', async () =>
        /Provisioning with 'local-exec'/.test(running.output()) ? true : undefined,
      );
      assert.equal((await workspace(org, 'shared')).attributes['locked'], true);
      const refused = await second.ok(['apply', '-auto-approve', '-var', 'greeting=second'], 1);
      assert.match(refused.out, /Error acquiring the state lock/);
      assert.match(refused.out, new RegExp(`workspace already locked \\(lock ID: "${org}/shared"\\)`));

      // With -lock-timeout the second apply retries: release the first once the server has refused it again.
      const refusalsBefore = await lockRefusals();
      const waiting = second.start(['apply', '-auto-approve', '-lock-timeout=300s', '-var', 'greeting=second']);
      await waitFor('the waiting apply to be refused the lock', async () =>
        (await lockRefusals()) > refusalsBefore ? true : undefined,
      );
      assert.equal(waiting.output().includes('Apply complete'), false);
      first.write('release', '');
      const firstDone = await running.done;
      assert.equal(firstDone.code, 0, firstDone.out);
      const secondDone = await waiting.done;
      assert.equal(secondDone.code, 0, secondDone.out);
      assert.equal((await second.ok(['output', '-raw', 'greeting'])).stdout, 'second');
      assert.equal((await first.ok(['output', '-raw', 'greeting'])).stdout, 'second', 'both see the last apply');
      assert.equal((await workspace(org, 'shared')).attributes['locked'], false);
      // The stored state is the second apply's, made on top of the first one's.
      const last = await stateOf(await current(ws.id));
      assert.equal((last['outputs'] as Record<string, { value: unknown }>)['greeting']?.value, 'second');
      assert.ok(last.serial >= 2, `serial ${last.serial}`);
    });

    it('an interrupted apply (Ctrl-C) keeps what it created and releases the lock', async () => {
      const org = await newOrg();
      const config =
        cloudBlock(site, org, { name: 'app' }) +
        RESOURCES +
        `resource "terraform_data" "slow" {
  depends_on = [terraform_data.app]
  provisioner "local-exec" {
    command = "while [ ! -e release ]; do sleep 0.1; done"
  }
}
`;
      const tf = new TerraformDir(site, site.server.rootToken, config);
      await tf.ok(['init']);
      const apply = tf.start(['apply', '-auto-approve']);
      await waitFor('the apply to reach the slow resource', async () =>
        /Provisioning with 'local-exec'/.test(apply.output()) ? true : undefined,
      );
      apply.interrupt();
      const stopped = await apply.done;
      assert.equal(stopped.code, 1, stopped.out);
      assert.match(stopped.out, /Gracefully shutting down/);
      const ws = await workspace(org, 'app');
      assert.equal(ws.attributes['locked'], false);
      // The first resource is kept; the interrupted one is recorded as tainted, to be replaced next time.
      const state = await stateOf(await current(ws.id));
      const slow = state.resources.find((r) => r.name === 'slow') as unknown as { instances: { status?: string }[] };
      assert.equal(slow.instances[0]?.status, 'tainted');
      assert.deepEqual((await tf.ok(['state', 'list'])).stdout.trim().split('\n'), [
        'terraform_data.app',
        'terraform_data.slow',
      ]);
      tf.write('release', '');
      const again = await tf.ok(['apply', '-auto-approve']);
      assert.match(again.out, /1 added, 0 changed, 1 destroyed/);
    });

    it('remote backend with a prefix: workspace new, list and select map to prefixed workspaces', async () => {
      const org = await newOrg();
      assertDoc(await site.admin.post(`/api/v2/organizations/${org}/workspaces`, wsBody('other')), 201);
      const config =
        remoteBackendBlock(site, org, { prefix: 'app-' }) +
        RESOURCES +
        'output "ws" {\n  value = terraform.workspace\n}\n';
      const tf = new TerraformDir(site, site.server.rootToken, config);
      // No workspace has the prefix yet: init configures the backend, then says so; `workspace new` creates them.
      assert.match(
        (await tf.ok(['init'], 1)).out,
        /Successfully configured the backend "remote".*No existing workspaces/,
      );
      await tf.ok(['workspace', 'new', 'dev']);
      await tf.ok(['workspace', 'new', 'prod']);
      const names = (await tf.ok(['workspace', 'list'])).stdout.split('\n').map((l) => l.replace(/^\*/, '').trim());
      assert.deepEqual(names.filter(Boolean), ['dev', 'prod']);
      await tf.ok(['workspace', 'select', 'dev']);
      await tf.ok(['apply', '-auto-approve']);
      assert.equal((await tf.ok(['output', '-raw', 'ws'])).stdout, 'dev');
      await current((await workspace(org, 'app-dev')).id);
      assert.equal((await workspace(org, 'app-prod')).attributes['name'], 'app-prod');
    });

    it('a lock held by someone else stops apply and state push; force-unlock releases it', async () => {
      const org = await newOrg();
      const tf = await appliedByName(org, 'app');
      const ws = await workspace(org, 'app');
      const before = await current(ws.id);
      const locked = await site.admin.post(`/api/v2/workspaces/${ws.id}/actions/lock`, {
        data: { type: '', attributes: { reason: 'maintenance by the on-call admin' } },
      });
      assertDoc(locked, 200);

      const apply = await tf.ok(['apply', '-auto-approve', '-var', 'greeting=blocked'], 1);
      assert.match(apply.out, /Error acquiring the state lock/);
      assert.match(apply.out, /already locked/);
      const pulled = JSON.parse((await tf.ok(['state', 'pull'])).stdout) as StateDoc;
      tf.write('newer.tfstate', JSON.stringify({ ...pulled, serial: pulled.serial + 1 }));
      assert.match((await tf.ok(['state', 'push', 'newer.tfstate'], 1)).out, /Error acquiring the state lock/);
      assert.equal((await current(ws.id)).id, before.id, 'nothing was written');
      const still = await workspace(org, 'app');
      assert.equal(still.attributes['locked'], true);
      assert.equal(still.attributes['locked-reason'], 'maintenance by the on-call admin');

      await tf.ok(['force-unlock', '-force', `${org}/app`]);
      assert.equal((await workspace(org, 'app')).attributes['locked'], false);
      await tf.ok(['apply', '-auto-approve', '-var', 'greeting=after']);
      assert.equal((await tf.ok(['output', '-raw', 'greeting'])).stdout, 'after');
    });

    it('cloud block by tags: workspace new, list, select and delete; each workspace keeps its own state', async () => {
      const org = await newOrg();
      const tags = ['app', 'team:core'];
      assertDoc(
        await site.admin.post(`/api/v2/organizations/${org}/workspaces`, wsBody('dev', { 'tag-names': tags })),
        201,
      );
      assertDoc(
        await site.admin.post(`/api/v2/organizations/${org}/workspaces`, wsBody('half', { 'tag-names': ['app'] })),
        201,
      );
      assertDoc(await site.admin.post(`/api/v2/organizations/${org}/workspaces`, wsBody('plain')), 201);
      const config = cloudBlock(site, org, { tags }) + RESOURCES + 'output "ws" {\n  value = terraform.workspace\n}\n';
      const tf = new TerraformDir(site, site.server.rootToken, config);
      await tf.ok(['init']);
      const listed = (out: string) =>
        out
          .split('\n')
          .map((l) => l.replace(/^\*/, '').trim())
          .filter(Boolean);
      assert.deepEqual(listed((await tf.ok(['workspace', 'list'])).stdout), ['dev'], 'only workspaces with every tag');

      await tf.ok(['workspace', 'new', 'prod']);
      const prod = await workspace(org, 'prod');
      assert.deepEqual([...(prod.attributes['tag-names'] as string[])].sort(), tags);
      const list = (await tf.ok(['workspace', 'list'])).stdout;
      assert.deepEqual(listed(list), ['dev', 'prod']);
      assert.match(list, /^\* prod$/m);
      await tf.ok(['apply', '-auto-approve', '-var', 'greeting=from-prod']);
      await tf.ok(['workspace', 'select', 'dev']);
      assert.equal((await tf.ok(['workspace', 'show'])).stdout.trim(), 'dev');
      await tf.ok(['apply', '-auto-approve']);
      assert.equal((await tf.ok(['output', '-raw', 'ws'])).stdout, 'dev');
      assert.equal((await tf.ok(['output', '-raw', 'greeting'])).stdout, 'hello');
      const devState = await current((await workspace(org, 'dev')).id);
      const prodState = await current(prod.id);
      assert.notEqual((await stateOf(devState)).lineage, (await stateOf(prodState)).lineage);

      // A workspace that still manages resources is only deleted with -force.
      assert.match((await tf.ok(['workspace', 'delete', 'prod'], 1)).out, /-force/);
      await tf.ok(['workspace', 'delete', '-force', 'prod']);
      assert.equal((await site.admin.get(`/api/v2/organizations/${org}/workspaces/prod`)).status, 404);
      assert.deepEqual(listed((await tf.ok(['workspace', 'list'])).stdout), ['dev']);
    });

    it("terraform_remote_state reads another workspace's outputs, sensitive ones included", async () => {
      const org = await newOrg();
      const producer = await appliedByName(org, 'network');
      await producer.ok(['apply', '-auto-approve', '-var', 'greeting=from-network']);
      const consumer = new TerraformDir(
        site,
        site.server.rootToken,
        cloudBlock(site, org, { name: 'service' }) +
          remoteStateData('network', site, org, 'network') +
          `resource "terraform_data" "uses" {
  input = data.terraform_remote_state.network.outputs.greeting
}
output "greeting" {
  value = terraform_data.uses.output
}
output "secret" {
  value     = data.terraform_remote_state.network.outputs.secret
  sensitive = true
}
output "settings" {
  value = data.terraform_remote_state.network.outputs.settings
}
`,
      );
      await consumer.ok(['init']);
      await consumer.ok(['apply', '-auto-approve']);
      const out = JSON.parse((await consumer.ok(['output', '-json'])).stdout);
      assert.equal(out.greeting.value, 'from-network');
      assert.deepEqual(out.secret, { sensitive: true, type: 'string', value: 's3cr3t' });
      assert.deepEqual(out.settings.value, { port: 5432, tls: true });
      // A new apply in the producer is seen by the consumer's next plan.
      await producer.ok(['apply', '-auto-approve', '-var', 'greeting=moved']);
      await consumer.ok(['plan', '-detailed-exitcode'], 2);
    });

    it("a user token works through its team's rights: create and apply, read another workspace, refused", async () => {
      const org = await newOrg();
      const admin = (await site.server.deps.tfe.identity.authenticate(site.server.rootToken))!;
      const alice = await site.server.deps.tfe.identity.createUser(admin, { username: `alice-${org}` });
      const team = async (name: string, access: Record<string, boolean>) => {
        const r = await site.admin.post(`/api/v2/organizations/${org}/teams`, {
          data: { type: 'teams', attributes: { name, 'organization-access': access } },
        });
        assertDoc(r, 201);
        return r.body.data.id as string;
      };
      const deployers = await team('deployers', { 'manage-workspaces': true });
      assert.equal(
        (
          await site.admin.post(`/api/v2/teams/${deployers}/relationships/users`, {
            data: [{ type: 'users', id: alice.username }],
          })
        ).status,
        204,
      );
      const token = await site.admin.post(`/api/v2/users/${alice.id}/authentication-tokens`, {
        data: { type: 'authentication-tokens', attributes: { description: 'terraform' } },
      });
      assertDoc(token, 201);
      const aliceToken = token.body.data.attributes.token as string;

      // A member of a team that manages workspaces: init creates the workspace, apply writes its state.
      const producer = new TerraformDir(site, aliceToken, cloudBlock(site, org, { name: 'network' }) + RESOURCES);
      await producer.ok(['init']);
      await producer.ok(['apply', '-auto-approve']);
      assert.equal((await producer.ok(['output', '-raw', 'secret'])).stdout, 's3cr3t');

      // A team token reading that workspace's state from a local configuration.
      const readers = await team('readers', {});
      const readerToken = await site.admin.post(`/api/v2/teams/${readers}/authentication-token`, {
        data: { type: 'authentication-tokens', attributes: {} },
      });
      assertDoc(readerToken, 201);
      const reader = new TerraformDir(
        site,
        readerToken.body.data.attributes.token as string,
        remoteStateData('network', site, org, 'network') +
          'output "greeting" {\n  value = data.terraform_remote_state.network.outputs.greeting\n}\n',
      );
      await reader.ok(['init']);
      // Without access the workspace is not found (and may not be created by this team).
      assert.match(
        (await reader.ok(['apply', '-auto-approve'], 1)).out,
        /Error creating workspace network: resource not found/,
      );
      const grant = async (attributes: Record<string, unknown>) => {
        const r = await site.admin.post('/api/v2/team-workspaces', {
          data: {
            type: 'team-workspaces',
            attributes,
            relationships: {
              team: { data: { type: 'teams', id: readers } },
              workspace: { data: { type: 'workspaces', id: (await workspace(org, 'network')).id } },
            },
          },
        });
        assertDoc(r, 200);
        return r.body.data.id as string;
      };
      // Outputs-only access is not enough for terraform_remote_state, which reads the whole state.
      const grantId = await grant({ access: 'custom', 'state-versions': 'read-outputs' });
      assert.match((await reader.ok(['apply', '-auto-approve'], 1)).out, /Unable to find remote state/);
      assertDoc(
        await site.admin.patch(`/api/v2/team-workspaces/${grantId}`, {
          data: { type: 'team-workspaces', attributes: { access: 'read' } },
        }),
        200,
      );
      await reader.ok(['apply', '-auto-approve']);
      assert.equal((await reader.ok(['output', '-raw', 'greeting'])).stdout, 'hello');
      // Read access does not lock or write the workspace.
      const writer = new TerraformDir(
        site,
        readerToken.body.data.attributes.token as string,
        cloudBlock(site, org, { name: 'network' }) + RESOURCES,
      );
      await writer.ok(['init']);
      assert.match(
        (await writer.ok(['apply', '-auto-approve', '-var', 'greeting=nope'], 1)).out,
        /Error acquiring the state lock/,
      );
    });

    it('cloud block by project: tags list and create only in the project; a named workspace lands in it', async () => {
      const org = await newOrg();
      const created = await site.admin.post(`/api/v2/organizations/${org}/projects`, {
        data: { type: 'projects', attributes: { name: 'Platform' } },
      });
      assertDoc(created, 201);
      const project = created.body.data as { id: string };
      const inProject = (name: string, attributes: Record<string, unknown>) => {
        const body = wsBody(name, attributes) as { data: Record<string, unknown> };
        body.data.relationships = { project: { data: { type: 'projects', id: project.id } } };
        return body;
      };
      const tags = ['svc'];
      assertDoc(
        await site.admin.post(`/api/v2/organizations/${org}/workspaces`, inProject('api', { 'tag-names': tags })),
        201,
      );
      assertDoc(
        await site.admin.post(`/api/v2/organizations/${org}/workspaces`, wsBody('elsewhere', { 'tag-names': tags })),
        201,
      );
      const projectOf = async (name: string) =>
        ((await workspace(org, name)) as unknown as { relationships: { project: { data: { id: string } } } })
          .relationships.project.data.id;

      const tf = new TerraformDir(
        site,
        site.server.rootToken,
        cloudBlock(site, org, { tags, project: 'Platform' }) + RESOURCES,
      );
      await tf.ok(['init']);
      const listed = (out: string) =>
        out
          .split('\n')
          .map((l) => l.replace(/^\*/, '').trim())
          .filter(Boolean);
      assert.deepEqual(listed((await tf.ok(['workspace', 'list'])).stdout), ['api'], "only the project's workspaces");
      await tf.ok(['workspace', 'new', 'worker']);
      assert.equal(await projectOf('worker'), project.id, 'a new workspace is created in the project');
      await tf.ok(['apply', '-auto-approve']);
      assert.deepEqual(resourceNames((await current((await workspace(org, 'worker')).id)).attributes), [
        'terraform_data.app',
      ]);

      // By name: init creates the workspace in the named project, creating the project when it does not exist.
      const named = new TerraformDir(
        site,
        site.server.rootToken,
        cloudBlock(site, org, { name: 'billing', project: 'Payments' }) + RESOURCES,
      );
      await named.ok(['init']);
      await named.ok(['apply', '-auto-approve']);
      const projects = await site.admin.get(`/api/v2/organizations/${org}/projects?filter%5Bnames%5D=Payments`);
      assertDoc(projects, 200);
      const payments = (projects.body.data as Array<{ id: string }>)[0];
      assert.ok(payments, 'init created the project');
      assert.equal(await projectOf('billing'), payments.id);
      assert.notEqual(await projectOf('elsewhere'), project.id, 'workspaces outside the project are left alone');
    });
  });
}
