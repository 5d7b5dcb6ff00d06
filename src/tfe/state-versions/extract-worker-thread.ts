import { createReadStream } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { StateExtractor, extractState } from './state-extract.js';
import type { ExtractResult } from './state-extract.js';
import { StateInspector } from './state-file.js';
import type { StateInspection } from './state-file.js';
import type { WorkerInput, WorkerReply, WorkerRequest } from './extract-worker.js';

/** Worker thread entry for extract-worker.ts; runs only inside a worker. */

const port = parentPort;
const input = workerData as WorkerInput;

function reply(m: WorkerReply): void {
  port?.postMessage(m);
}

function finish(result: ExtractResult | StateInspection): void {
  reply({ type: 'result', result });
  port?.close();
}

if (port && input?.kind === 'state-extract') {
  if (input.path !== undefined) {
    extractState(createReadStream(input.path, { highWaterMark: 256 * 1024 }), { limits: input.limits }).then(finish, (err: Error) => {
      reply({ type: 'source-error', message: err.message });
      port.close();
    });
  } else {
    consume(new StateExtractor({ limits: input.limits }));
  }
} else if (port && input?.kind === 'state-inspect') {
  consume(new StateInspector());
} else if (port && input?.kind === 'state-inspect-pool') {
  // One check per `begin`; chunks outside a check belong to one that already answered.
  let inspector: StateInspector | null = null;
  port.on('message', (m: WorkerRequest) => {
    if (m.type === 'begin') {
      inspector = new StateInspector();
      return;
    }
    if (!inspector) return;
    if (m.type === 'chunk' && inspector.write(new Uint8Array(m.data))) return reply({ type: 'ack' });
    const done = inspector;
    inspector = null;
    reply({ type: 'result', result: done.end() });
  });
}

/** Feeds posted chunks to `sink`, acknowledging each, and replies with its result. */
function consume(sink: { write(chunk: Uint8Array): boolean; end(): ExtractResult | StateInspection }): void {
  let done = false;
  port?.on('message', (m: WorkerRequest) => {
    if (done) return;
    if (m.type === 'chunk') {
      if (sink.write(new Uint8Array(m.data))) return reply({ type: 'ack' });
    }
    // Invalid content ends the run early; the main thread stops sending.
    done = true;
    finish(sink.end());
  });
}
