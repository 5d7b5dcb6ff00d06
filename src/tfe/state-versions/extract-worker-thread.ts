import { createReadStream } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { StateExtractor, extractState } from './state-extract.js';
import type { ExtractResult } from './state-extract.js';
import { StateInspector } from './state-file.js';
import type { StateInspection } from './state-file.js';
import { packExtract } from './extract-worker.js';
import type { WorkerInput, WorkerReply, WorkerRequest } from './extract-worker.js';

/** Worker thread entry for extract-worker.ts; runs only inside a worker. */

const port = parentPort;
const input = workerData as WorkerInput;

function reply(m: WorkerReply): void {
  port?.postMessage(m);
}

function finish(result: ExtractResult | StateInspection): void {
  // A successful extraction goes back with its lists as JSON text (packExtract).
  if ('ok' in result && result.ok) reply({ type: 'extract', value: packExtract(result.value) });
  else reply({ type: 'result', result });
  port?.close();
}

if (port && input?.kind === 'state-extract') {
  if (input.path !== undefined) {
    extractState(createReadStream(input.path, { highWaterMark: 256 * 1024 }), { limits: input.limits }).then(
      finish,
      (err: Error) => {
        reply({ type: 'source-error', message: err.message });
        port.close();
      },
    );
  } else {
    consume(() => new StateExtractor({ limits: input.limits }), false);
  }
} else if (port && input?.kind === 'state-inspect-pool') {
  consume(() => new StateInspector(), true);
}

/**
 * Feeds posted chunks to a sink, acknowledging each, and replies with its result. A thread
 * that is `kept` serves one run per `begin` and ignores chunks outside a run (those of a
 * run that already answered); otherwise the one run starts at once and the port closes
 * after its answer.
 */
function consume(
  newSink: () => { write(chunk: Uint8Array): boolean; end(): ExtractResult | StateInspection },
  kept: boolean,
): void {
  let sink = kept ? null : newSink();
  port?.on('message', (m: WorkerRequest) => {
    if (m.type === 'begin') {
      sink = newSink();
      return;
    }
    if (!sink) return;
    if (m.type === 'chunk' && sink.write(new Uint8Array(m.data))) return reply({ type: 'ack' });
    // The end, or invalid content that ends the run early; the main thread stops sending.
    const done = sink;
    sink = null;
    if (kept) reply({ type: 'result', result: done.end() });
    else finish(done.end());
  });
}
