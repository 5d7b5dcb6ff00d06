import { parentPort } from 'node:worker_threads';
import { diffAgainstState, digestState } from './state-diff.js';
import type { DiffWorkerReply, DiffWorkerRequest } from './state-diff-worker.js';

/** Worker thread entry for state-diff-worker.ts; runs only inside a worker. */

const port = parentPort;

if (port) {
  const queue: Array<Uint8Array | null> = [];
  let wake: (() => void) | null = null;
  const reply = (m: DiffWorkerReply) => port.postMessage(m);
  port.on('message', (m: DiffWorkerRequest) => {
    queue.push(m.type === 'chunk' ? new Uint8Array(m.data) : null);
    const w = wake;
    wake = null;
    w?.();
  });
  // One stream of chunks, ended by an `end` message; each chunk is acknowledged when taken.
  async function* stream(): AsyncGenerator<Uint8Array> {
    for (;;) {
      while (queue.length === 0) await new Promise<void>((r) => (wake = r));
      const chunk = queue.shift() as Uint8Array | null;
      if (chunk === null) return;
      reply({ type: 'ack' });
      yield chunk;
    }
  }
  const run = async () => {
    const before = await digestState(stream());
    if (!before.ok) return reply({ type: 'result', result: { ok: false, which: 'against', error: before.error } });
    reply({ type: 'next' });
    const r = await diffAgainstState(before.digest, stream());
    reply({ type: 'result', result: r.ok ? r : { ok: false, which: 'version', error: r.error } });
  };
  run().then(
    () => port.close(),
    (err: Error) => {
      reply({ type: 'result', result: { ok: false, which: 'version', error: `diff failed: ${err.message}` } });
      port.close();
    },
  );
}
