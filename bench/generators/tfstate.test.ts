import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateV3State, writeV4State } from './tfstate.js';

describe('state generators', () => {
  it('writes a v4 state of about the requested size with the reported contents', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tfstate-gen-'));
    try {
      const path = join(dir, 'state.tfstate');
      const s = await writeV4State(path, { resourceInstances: 500, targetBytes: 600_000, seed: 5 });
      const bytes = readFileSync(path);
      assert.equal(bytes.length, s.bytes);
      assert.equal(createHash('md5').update(bytes).digest('hex'), s.md5);
      assert.ok(Math.abs(bytes.length - 600_000) < 60_000, `size ${bytes.length}`);
      const doc = JSON.parse(bytes.toString('utf8'));
      assert.equal(doc.version, 4);
      assert.equal(doc.serial, s.serial);
      const instances = doc.resources.flatMap((r: { instances: { deposed?: string }[] }) => r.instances);
      assert.equal(instances.length, s.instanceObjects);
      assert.equal(instances.filter((i: { deposed?: string }) => !i.deposed).length, 500);
      assert.ok(doc.resources.some((r: { mode: string }) => r.mode === 'data'));
      assert.ok(doc.resources.some((r: { module?: string }) => r.module?.includes('.module.')));
      assert.ok(instances.some((i: { index_key?: unknown }) => typeof i.index_key === 'number'));
      assert.ok(instances.some((i: { index_key?: unknown }) => typeof i.index_key === 'string'));
      assert.deepEqual(
        Object.keys(doc.outputs),
        s.outputs.map((o) => o.name),
      );
      assert.ok(Object.values(doc.outputs).some((o) => (o as { sensitive?: boolean }).sensitive === true));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('writes a v3 state with nested module outputs', () => {
    const { text, summary } = generateV3State();
    const doc = JSON.parse(text);
    assert.equal(doc.version, 3);
    assert.deepEqual(
      doc.modules.map((m: { path: string[] }) => m.path.join('.')),
      ['root', 'root.network', 'root.network.sg'],
    );
    assert.ok(Object.keys(doc.modules[1].outputs).length > 0);
    assert.equal(summary.bytes, Buffer.byteLength(text));
  });
});
