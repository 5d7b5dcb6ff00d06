import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { extractFileInWorker, extractInWorker, inspectInWorker } from './extract-worker.js';
import { extractState, extractStateFromBytes } from './state-extract.js';
import { V4StateGenerator, v4StateBuffers } from '../../../bench/generators/tfstate.js';

const FIXTURES = new URL('../../../../src/tfe/state-versions/fixtures/', import.meta.url);
const fixturePath = (name: string): string => fileURLToPath(new URL(name, FIXTURES));

async function* chunks(bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

describe('extractInWorker', () => {
  for (const name of ['worked-example', 'v4-modules', 'v3-nested']) {
    it(`gives the in-process result for ${name}`, async () => {
      const bytes = readFileSync(fixturePath(`${name}.tfstate`));
      const expected = extractStateFromBytes(bytes);
      assert.equal(expected.ok, true);
      assert.deepEqual(await extractInWorker(chunks(bytes, 100)), expected);
      assert.deepEqual(await extractFileInWorker(fixturePath(`${name}.tfstate`)), expected);
    });
  }

  it('gives the in-process result for a generated state, one chunk in flight at a time', async () => {
    const a = new V4StateGenerator({ resourceInstances: 2000, targetBytes: 2_000_000, seed: 7 });
    const b = new V4StateGenerator({ resourceInstances: 2000, targetBytes: 2_000_000, seed: 7 });
    const inWorker = await extractInWorker(v4StateBuffers(a), { maxChunksInFlight: 1 });
    assert.deepEqual(inWorker, await extractState(v4StateBuffers(b)));
    assert.equal(inWorker.ok && inWorker.value.size, a.summary?.bytes);
  });

  it('reports broken content as a result', async () => {
    const text = '{"version":4,"serial":1,"lineage":"x","resources":[{"mode":"managed",';
    assert.deepEqual(await extractInWorker(chunks(Buffer.from(text), 8)), {
      ok: false,
      error: `state is truncated: input ended inside a container nested 3 deep at byte ${text.length}`,
    });
    assert.deepEqual(await extractInWorker(chunks(Buffer.from('{"version":7}'), 4)), {
      ok: false,
      error: 'unsupported state format version 7: only versions 3 and 4 are supported',
    });
  });

  it('stops pulling the source once the content is known to be bad', async () => {
    let pulled = 0;
    async function* big(): AsyncGenerator<Buffer> {
      yield Buffer.from('{"version":4,"serial":x');
      for (let i = 0; i < 100_000; i++) {
        pulled++;
        yield Buffer.alloc(1024, 0x20);
      }
    }
    const r = await extractInWorker(big(), { maxChunksInFlight: 2 });
    assert.deepEqual(r, { ok: false, error: "state is not valid JSON: unexpected 'x', expected a value, at byte 22" });
    assert.ok(pulled < 1000, `pulled ${pulled} chunks`);
  });

  it('reports running out of heap as a result', async () => {
    // Output values are kept whole, so a huge one exhausts a small heap.
    async function* huge(): AsyncGenerator<Buffer> {
      yield Buffer.from('{"version":4,"serial":1,"lineage":"x","outputs":{"big":{"type":"dynamic","value":[');
      const piece = Buffer.from('[1,2,3,4,5,6,7,8],'.repeat(4096));
      for (let i = 0; i < 400; i++) yield piece;
      yield Buffer.from('0]}}}');
    }
    const r = await extractInWorker(huge(), { maxHeapMb: 16 });
    assert.equal(r.ok, false);
    assert.match(r.ok ? '' : r.error, /^state extraction failed: .*memory/i);
  });

  it('rejects with the reason when aborted', async () => {
    const ac = new AbortController();
    async function* endless(): AsyncGenerator<Buffer> {
      yield Buffer.from('{"version":4,"resources":[');
      for (;;) {
        yield Buffer.from('{"mode":"managed","type":"a","name":"b","instances":[]},');
        await new Promise((r) => setImmediate(r));
      }
    }
    setTimeout(() => ac.abort(), 50);
    await assert.rejects(extractInWorker(endless(), { signal: ac.signal }), { name: 'AbortError' });
    await assert.rejects(extractInWorker(endless(), { signal: AbortSignal.abort() }), { name: 'AbortError' });
  });

  it('rejects when the source fails', async () => {
    async function* failing(): AsyncGenerator<Buffer> {
      yield Buffer.from('{"version":4,');
      throw new Error('blob store unavailable');
    }
    await assert.rejects(extractInWorker(failing()), /blob store unavailable/);
  });

  it('rejects when the file cannot be read', async () => {
    await assert.rejects(extractFileInWorker(fixturePath('no-such-file.tfstate')), /^Error: cannot read state: ENOENT/);
  });
});

describe('inspectInWorker', () => {
  it('reuses its threads: a check refused early leaves no trace in later checks, serial or concurrent', async () => {
    const good = (serial: number) =>
      Buffer.from(
        JSON.stringify({
          version: 4,
          terraform_version: '1.9.0',
          serial,
          lineage: 'l-1',
          outputs: {},
          resources: [{ pad: 'x'.repeat(5000) }],
        }),
      );
    // Refused at its second chunk while many more are still to come (and some already posted).
    const broken = Buffer.concat([
      Buffer.from('{"version":4,"serial":1,"lineage":"l-1","resources":[}'),
      Buffer.alloc(200_000, 0x7b),
    ]);
    for (let round = 0; round < 3; round++) {
      const refused = await inspectInWorker(chunks(broken, 50));
      assert.equal(refused.kind, 'invalid');
      const ok = await inspectInWorker(chunks(good(round + 1), 64));
      assert.deepEqual(ok, {
        kind: 'state',
        header: { version: 4, terraformVersion: '1.9.0', serial: round + 1, lineage: 'l-1' },
      });
    }
    const results = await Promise.all([1, 2, 3, 4].map((serial) => inspectInWorker(chunks(good(serial), 100))));
    assert.deepEqual(
      results.map((r) => r.kind === 'state' && r.header.serial),
      [1, 2, 3, 4],
    );
    const truncated = await inspectInWorker(chunks(good(9).subarray(0, 3000), 100));
    assert.equal(truncated.kind, 'invalid');
  });
});
