import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { dbKinds, createDatabaseUrl } from '../support/test-db.js';
import { spawnServer } from '../support/spawn-server.js';
import { apiAt as api } from './tfe-state-versions-fixture.js';

/** A v4 state of about `kb` kilobytes. */
function state(serial: number, lineage: string, kb: number): Buffer {
  const resources = Array.from({ length: kb }, (_, i) => ({
    mode: 'managed',
    type: 'null_resource',
    name: `r${i}`,
    provider: 'provider["registry.terraform.io/hashicorp/null"]',
    instances: [{ schema_version: 0, attributes: { id: `${serial}-${i}-${'x'.repeat(900)}` } }],
  }));
  return Buffer.from(
    JSON.stringify({ version: 4, terraform_version: '1.9.0', serial, lineage, outputs: {}, resources }),
  );
}

const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');
/** The state writer `w` sends as `serial`: the first writer's are above the inline limit (64 KB). */
const stateOf = (w: number, serial: number) => state(serial, `lineage-${w}`, w === 0 ? 80 : 1 + (serial % 12));

for (const kind of dbKinds()) {
  describe(`a crash during a flood of inline creates [${kind}]`, () => {
    it('keeps every acknowledged version whole, with its content, and nothing half-written', async () => {
      const db = await createDatabaseUrl(kind);
      const dataDir = join(db.dir, 'data');
      const serverArgs = [
        '--data-dir',
        dataDir,
        '--job-worker',
        'false',
        ...(kind === 'postgres' ? ['--database-url', db.url] : []),
      ];
      let server = await spawnServer(serverArgs);
      const token = /^\s+(sr\.\S+)$/m.exec(server.output())?.[1] as string;
      assert.ok(token);
      try {
        assert.equal(
          (
            await api(server.url, token, 'POST', '/organizations', {
              data: { type: 'organizations', attributes: { name: 'flood', email: 'ops@example.com' } },
            })
          ).status,
          201,
        );
        // Each writer has a workspace of its own so its serials stay in order.
        const writers = await Promise.all(
          Array.from({ length: 8 }, async (_, w) => {
            const ws = await api(server.url, token, 'POST', '/organizations/flood/workspaces', {
              data: { type: 'workspaces', attributes: { name: `w${w}` } },
            });
            assert.equal(ws.status, 201);
            const id = ws.body?.data.id as string;
            assert.equal((await api(server.url, token, 'POST', `/workspaces/${id}/actions/lock`, {})).status, 200);
            return id;
          }),
        );
        const acknowledged: Array<{ ws: string; id: string; serial: number; bytes: Buffer }> = [];
        let stop = false;
        const flood = writers.map(async (ws, w) => {
          for (let serial = 1; !stop; serial++) {
            const bytes = stateOf(w, serial);
            const r = await api(server.url, token, 'POST', `/workspaces/${ws}/state-versions`, {
              data: {
                type: 'state-versions',
                attributes: { serial, md5: md5(bytes), lineage: `lineage-${w}`, state: bytes.toString('base64') },
              },
            }).catch(() => undefined);
            if (!r) return;
            if (r.status === 201) acknowledged.push({ ws, id: r.body?.data.id as string, serial, bytes });
            else return;
          }
        });
        while (acknowledged.length < 40) await new Promise((r) => setTimeout(r, 5));
        server.child.kill('SIGKILL');
        stop = true;
        await Promise.all(flood);
        assert.equal(await server.exited, 'SIGKILL');

        server = await spawnServer(serverArgs);
        for (const a of acknowledged) {
          const v = await api(server.url, token, 'GET', `/state-versions/${a.id}`);
          assert.equal(v.status, 200, `acknowledged version ${a.id} survived`);
          assert.equal(v.body?.data.attributes.status, 'finalized');
          const dl = await fetch(v.body?.data.attributes['hosted-state-download-url'] as string, {
            headers: { authorization: `Bearer ${token}` },
          });
          assert.equal(dl.status, 200);
          assert.ok(Buffer.from(await dl.arrayBuffer()).equals(a.bytes), `content of ${a.id}`);
        }
        // Versions committed after the last acknowledgement may exist too; each is whole.
        for (const [w, ws] of writers.entries()) {
          const cur = await api(server.url, token, 'GET', `/workspaces/${ws}/current-state-version`);
          if (cur.status === 404) continue;
          const dl = await fetch(cur.body?.data.attributes['hosted-state-download-url'] as string, {
            headers: { authorization: `Bearer ${token}` },
          });
          assert.equal(dl.status, 200);
          assert.ok(
            Buffer.from(await dl.arrayBuffer()).equals(stateOf(w, cur.body?.data.attributes.serial as number)),
            `content of ${cur.body?.data.id}`,
          );
        }
      } finally {
        await server.stop('SIGKILL');
      }
      if (kind === 'sqlite') {
        const check = new Database(join(dataDir, 'strongroom.db'), { readonly: true });
        try {
          assert.equal(check.pragma('integrity_check', { simple: true }), 'ok');
          const orphans = check
            .prepare(
              'select count(*) from tfe_state_versions v where v.state_sha256 is not null and not exists (select 1 ' +
                'from tfe_state_blobs b where b.sha256 = v.state_sha256)',
            )
            .pluck()
            .get();
          assert.equal(orphans, 0, 'every version names a stored blob');
        } finally {
          check.close();
        }
      }
      await db.drop();
    });
  });
}
