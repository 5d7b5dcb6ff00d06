import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { dbKinds, createDatabaseUrl } from '../support/test-db.js';
import { spawnServer } from '../support/spawn-server.js';

async function vault(
  base: string,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: Json }> {
  const res = await fetch(`${base}/v1/${path}`, {
    method,
    headers: { 'x-vault-token': token },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- Vault answers read field by field
type Json = any;

for (const kind of dbKinds()) {
  describe(`a crash while certificates are being issued [${kind}]`, () => {
    it('loses no certificate nor lease that was answered with a 200 (kill -9 under load)', async () => {
      const db = await createDatabaseUrl(kind);
      const dataDir = join(db.dir, 'data');
      const args = ['--data-dir', dataDir, ...(kind === 'postgres' ? ['--database-url', db.url] : [])];
      let server = await spawnServer(args);
      try {
        const token = /^\s+(sr\.\S+)$/m.exec(server.output())?.[1] as string;
        assert.ok(token);
        assert.equal((await vault(server.url, token, 'POST', 'sys/mounts/pki', { type: 'pki' })).status, 204);
        assert.equal(
          (
            await vault(server.url, token, 'POST', 'pki/root/generate/internal', {
              common_name: 'Crash Root',
              key_type: 'ec',
            })
          ).status,
          200,
        );
        assert.equal(
          (await vault(server.url, token, 'POST', 'pki/roles/r', { allow_any_name: true, key_type: 'ec', ttl: '1h' }))
            .status,
          200,
        );

        // Eight clients issue in a loop; the process is killed once 150 answers have arrived,
        // with requests still in flight and commits still queued.
        const answered: { serial: string; certificate: string; leaseId: string }[] = [];
        let killed = false;
        const client = async (n: number) => {
          for (let i = 0; !killed; i++) {
            try {
              const r = await vault(server.url, token, 'POST', 'pki/issue/r', { common_name: `c${n}-${i}.test` });
              if (r.status !== 200) continue;
              answered.push({
                serial: r.json.data.serial_number,
                certificate: r.json.data.certificate,
                leaseId: r.json.lease_id,
              });
              if (answered.length >= 150 && !killed) {
                killed = true;
                server.child.kill('SIGKILL');
              }
            } catch {
              return; // the connection died with the server
            }
          }
        };
        await Promise.all(Array.from({ length: 8 }, (_, n) => client(n)));
        assert.equal(await server.exited, 'SIGKILL');

        server = await spawnServer(args);
        const listed = new Set<string>((await vault(server.url, token, 'LIST', 'pki/certs')).json.data.keys);
        for (const a of answered) {
          assert.ok(listed.has(a.serial), `certificate ${a.serial} was answered but is not stored`);
          const c = await vault(server.url, token, 'GET', `pki/cert/${a.serial}`);
          assert.equal(c.json.data.certificate, a.certificate);
          assert.equal(
            (await vault(server.url, token, 'PUT', 'sys/leases/lookup', { lease_id: a.leaseId })).status,
            200,
            `lease ${a.leaseId} is lost`,
          );
        }
        assert.equal(new Set(answered.map((a) => a.serial)).size, answered.length);
      } finally {
        await server.stop('SIGKILL');
        await db.drop();
      }
    });
  });
}
