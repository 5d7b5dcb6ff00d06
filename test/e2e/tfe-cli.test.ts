import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { AdminTokenRepo } from '../../src/admin/admin-token-repo.js';
import { AdminTokenService } from '../../src/admin/admin-token-service.js';
import { openDatabase } from '../../src/db/database.js';
import type { Db } from '../../src/db/database.js';
import { systemClock } from '../../src/shared/clock.js';
import { buildTfeIdentityLayer } from '../../src/tfe/tfe-services.js';
import { createDatabaseUrl, dbKinds } from '../support/test-db.js';

const CLI = fileURLToPath(new URL('../../src/cli.js', import.meta.url));

for (const kind of dbKinds()) {
  describe(`strongroom tfe CLI [${kind}]`, () => {
    let url: string;
    let dir: string;
    let drop: () => Promise<void>;
    let db: Db | undefined;
    before(async () => {
      ({ url, dir, drop } = await createDatabaseUrl(kind));
    });
    after(async () => {
      await db?.destroy();
      await drop();
    });

    const run = (...args: string[]) => {
      const r = spawnSync(process.execPath, [CLI, 'tfe', ...args, '--database-url', url, '--data-dir', dir], {
        encoding: 'utf8',
        timeout: 30_000,
      });
      return { code: r.status, out: r.stdout.trim(), err: r.stderr };
    };

    it('creates users, organizations, teams and tokens that the server accepts', async () => {
      const user = run('user', 'create', 'alice');
      assert.equal(user.code, 0, user.err);
      assert.match(user.out, /^user-[1-9A-HJ-NP-Za-km-z]{16}$/);
      assert.equal(run('org', 'create', 'acme', '--email', 'ops@acme.test').code, 0);
      const team = run('team', 'create', 'acme', 'deployers', '--manage-workspaces');
      assert.equal(team.code, 0, team.err);
      assert.match(team.out, /^team-/);
      assert.equal(run('team', 'add-member', team.out, 'alice').code, 0);

      const userTok = run('token', 'create', '--user', 'alice', '--description', 'laptop', '--expires-in', '30d');
      assert.equal(userTok.code, 0, userTok.err);
      assert.match(userTok.out, /^[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9]{67}$/);
      const teamTok = run('token', 'create', '--team', team.out);
      const orgTok = run('token', 'create', '--org', 'acme');
      assert.equal(teamTok.code, 0, teamTok.err);
      assert.equal(orgTok.code, 0, orgTok.err);

      db = openDatabase({ url, poolSize: 1 });
      const tfe = buildTfeIdentityLayer({
        db,
        clock: systemClock,
        adminTokens: new AdminTokenService({
          repo: new AdminTokenRepo({ db: db.kysely, units: db.units }),
          clock: systemClock,
        }),
      });
      const alice = await tfe.identity.authenticate(userTok.out);
      assert.deepEqual(alice && alice.kind === 'user' ? [alice.username, alice.siteAdmin] : null, ['alice', false]);
      // Alice is in a manage-workspaces team of acme, so she may create workspaces there.
      const ws = await tfe.workspaces.create(alice!, 'acme', { name: 'from-cli' });
      assert.equal(ws.workspace.organization, 'acme');
      assert.equal((await tfe.identity.authenticate(teamTok.out))?.kind, 'team');
      assert.equal((await tfe.identity.authenticate(orgTok.out))?.kind, 'organization');
      const tokens = await tfe.tokens.listUserTokens(alice!, (alice as { userId: string }).userId);
      assert.equal(tokens[0]?.description, 'laptop');
      assert.ok(tokens[0]?.expiredAt && tokens[0].expiredAt.getTime() > Date.now() + 29 * 86400_000);

      const grant = run('team', 'grant', team.out, ws.workspace.id, 'custom', '--state-versions', 'read');
      assert.equal(grant.code, 0, grant.err);
      assert.match(grant.out, /^tws-/);
    });

    it('reports usage and domain errors with exit codes', () => {
      const dup = run('user', 'create', 'alice');
      assert.equal(dup.code, 1);
      assert.match(dup.err, /already taken/);
      const noOwner = run('token', 'create');
      assert.equal(noOwner.code, 2);
      assert.match(noOwner.err, /exactly one of/);
      assert.equal(run('bogus', 'thing').code, 2);
      const missing = run('token', 'create', '--user', 'nobody');
      assert.equal(missing.code, 1);
      assert.match(missing.err, /not found/);
    });
  });
}
