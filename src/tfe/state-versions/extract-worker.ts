import { Worker } from 'node:worker_threads';
import type { ExtractJson, ExtractResult, StateExtract } from './state-extract.js';
import type { JsonScannerLimits } from './json-scanner.js';
import type { StateInspection } from './state-file.js';

/**
 * Runs state extraction (and the check of large uploads) in a worker thread so a large
 * state never blocks the event loop of the server. Chunks are copied to the worker a few
 * at a time (the worker acknowledges each one), so memory stays bounded however large
 * the state is.
 */

/** workerData of the thread: extraction, or the whole-document check of an upload. */
export type WorkerInput =
  | {
      kind: 'state-extract';
      /** Read this file in the worker; otherwise chunks are posted. */
      path?: string;
      limits?: JsonScannerLimits;
    }
  /**
   * The whole-document check of uploads, on a thread kept between them: each `begin` starts one (see inspectInWorker).
   */
  | { kind: 'state-inspect-pool' };

export type WorkerRequest = { type: 'begin' } | { type: 'chunk'; data: ArrayBuffer } | { type: 'end' };
export type WorkerReply =
  | { type: 'ack' }
  | { type: 'result'; result: ExtractResult | StateInspection }
  /** An extraction's result with its lists as JSON text (packExtract). */
  | { type: 'extract'; value: PackedExtract }
  | { type: 'source-error'; message: string };

export interface ExtractInWorkerOptions {
  /** Abort terminates the worker and rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Heap limit of the worker; exceeding it yields an error result. Default 256 MB. */
  maxHeapMb?: number;
  /** Chunks posted but not yet processed. Default 4. */
  maxChunksInFlight?: number;
  limits?: JsonScannerLimits;
}

const WORKER_URL = new URL('./extract-worker-thread.js', import.meta.url);

function spawnWorker(input: WorkerInput, opts: ExtractInWorkerOptions): Worker {
  return new Worker(WORKER_URL, {
    workerData: input,
    resourceLimits: { maxOldGenerationSizeMb: opts.maxHeapMb ?? 256 },
    stdout: false,
    stderr: false,
  });
}

/** An extraction as a worker posts it: the lists as JSON text, made on the worker's thread. */
export type PackedExtract = Omit<StateExtract, 'resources' | 'modules' | 'providers' | 'json'> & { json: ExtractJson };

/**
 * On the worker thread: the lists to JSON text, so that the event loop gets three strings instead of an object graph.
 */
export function packExtract(value: StateExtract): PackedExtract {
  const { resources, modules, providers, json: _json, ...rest } = value;
  return {
    ...rest,
    json: {
      resources: JSON.stringify(resources),
      modules: JSON.stringify(modules),
      providers: JSON.stringify(providers),
    },
  };
}

/**
 * On the event loop: the extraction back, its lists parsed only when read, the JSON text kept as `json` (not
 * enumerable).
 */
export function unpackExtract(packed: PackedExtract): StateExtract {
  const { json, ...rest } = packed;
  const lazy = <T>(text: string) => {
    let value: T | undefined;
    return { enumerable: true, get: () => (value ??= JSON.parse(text) as T) };
  };
  return Object.defineProperties(rest as StateExtract, {
    resources: lazy<StateExtract['resources']>(json.resources),
    modules: lazy<StateExtract['modules']>(json.modules),
    providers: lazy<StateExtract['providers']>(json.providers),
    json: { value: json, enumerable: false },
  });
}

/** What happens to a run's thread when the run is over; `reusable` once it answered normally. */
type AfterRun = (worker: Worker, reusable: boolean) => void;

const terminate: AfterRun = (worker) => void worker.terminate();

class WorkerRun<R> {
  readonly result: Promise<R>;
  settled = false;
  inFlight = 0;
  private wake: (() => void) | null = null;
  private release: (reusable: boolean) => void = () => {};

  /**
   * `failed` turns a worker failure into a result (the content is then taken as refused).
   * `afterRun` gets the thread once the run is over, reusable when it answered normally.
   */
  constructor(
    readonly worker: Worker,
    private readonly opts: ExtractInWorkerOptions,
    failed: (message: string) => R,
    afterRun: AfterRun = terminate,
  ) {
    this.result = new Promise<R>((resolve, reject) => {
      const settle = (f: () => void, reusable = false) => {
        if (this.settled) return;
        this.settled = true;
        this.release(reusable);
        f();
      };
      const onMessage = (m: WorkerReply) => {
        if (m.type === 'ack') {
          this.inFlight--;
          this.wakeUp();
        } else if (m.type === 'result') settle(() => resolve(m.result as R), true);
        else if (m.type === 'extract') settle(() => resolve({ ok: true, value: unpackExtract(m.value) } as R), true);
        else settle(() => reject(new Error(`cannot read state: ${m.message}`)));
      };
      const onError = (err: Error) => settle(() => resolve(failed(err.message)));
      const onExit = (code: number) => settle(() => resolve(failed(`worker exited with code ${code}`)));
      const onAbort = () => settle(() => reject(opts.signal?.reason));
      this.release = (reusable) => {
        this.release = () => {};
        opts.signal?.removeEventListener('abort', onAbort);
        worker.off('message', onMessage).off('error', onError).off('exit', onExit);
        this.wakeUp();
        afterRun(worker, reusable);
      };
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      worker.on('message', onMessage).on('error', onError).on('exit', onExit);
    });
    // Callers may stop listening once the source fails; the run's outcome is then irrelevant.
    this.result.catch(() => undefined);
  }

  private wakeUp(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  /** Resolves when another chunk may be posted or the run is over. */
  async credit(): Promise<void> {
    const max = this.opts.maxChunksInFlight ?? 4;
    while (!this.settled && this.inFlight >= max) await new Promise<void>((r) => (this.wake = r));
  }

  send(chunk: Uint8Array): void {
    const copy = new Uint8Array(chunk.byteLength);
    copy.set(chunk);
    this.inFlight++;
    const m: WorkerRequest = { type: 'chunk', data: copy.buffer };
    this.worker.postMessage(m, [copy.buffer]);
  }

  end(): void {
    const m: WorkerRequest = { type: 'end' };
    this.worker.postMessage(m);
  }

  abortOnSourceError(): void {
    this.settled = true;
    this.release(false);
  }
}

function extractionFailed(message: string): ExtractResult {
  return { ok: false, error: `state extraction failed: ${message}` };
}

/** Posts the chunks of `source` to the run's worker, as its credit allows; resolves with the run's result. */
async function feed<R>(run: WorkerRun<R>, source: AsyncIterable<Uint8Array>): Promise<R> {
  const pump = async () => {
    try {
      for await (const chunk of source) {
        await run.credit();
        if (run.settled) break;
        run.send(chunk);
      }
    } catch (err) {
      run.abortOnSourceError();
      throw err;
    }
    if (!run.settled) run.end();
    return run.result;
  };
  return Promise.race([pump(), run.result]);
}

/**
 * Extracts a state arriving as chunks in a worker thread. Problems with the content and
 * worker failures (including running out of heap) resolve to `{ ok: false }`; a failing
 * source rejects with its error, an abort with the signal's reason.
 */
export async function extractInWorker(
  source: AsyncIterable<Uint8Array>,
  opts: ExtractInWorkerOptions = {},
): Promise<ExtractResult> {
  opts.signal?.throwIfAborted();
  return feed(
    new WorkerRun(spawnWorker({ kind: 'state-extract', limits: opts.limits }, opts), opts, extractionFailed),
    source,
  );
}

/** Extracts a state file in a worker thread that reads the file itself. */
export async function extractFileInWorker(path: string, opts: ExtractInWorkerOptions = {}): Promise<ExtractResult> {
  opts.signal?.throwIfAborted();
  return new WorkerRun(spawnWorker({ kind: 'state-extract', path, limits: opts.limits }, opts), opts, extractionFailed)
    .result;
}

/**
 * inspectStateStream in a worker thread: a large upload is checked on another core while
 * this thread receives, hashes and stores it. Stops reading `source` once the content is
 * refused; a worker failure counts as refused content.
 */
export async function inspectInWorker(source: AsyncIterable<Uint8Array>): Promise<StateInspection> {
  const failed = (message: string): StateInspection => ({
    kind: 'invalid',
    error: `state could not be checked: ${message}`,
  });
  const opts: ExtractInWorkerOptions = { maxChunksInFlight: 16 };
  const worker = idleInspectors.pop() ?? spawnInspector(opts);
  worker.ref();
  worker.postMessage({ type: 'begin' } satisfies WorkerRequest);
  return feed(new WorkerRun(worker, opts, failed, releaseInspector), source);
}

/**
 * Threads that checked an upload are kept for the next one: a thread whose compiled code
 * is warm checks JSON markedly faster than a new one, and starting a thread costs too.
 * Chunks of a run that ended early (refused content) may still arrive after its answer;
 * the thread ignores everything until the next `begin`, which messages reach in order.
 */
const idleInspectors: Worker[] = [];
const MAX_IDLE_INSPECTORS = 2;

function spawnInspector(opts: ExtractInWorkerOptions): Worker {
  const worker = spawnWorker({ kind: 'state-inspect-pool' }, opts);
  worker.on('exit', () => {
    const i = idleInspectors.indexOf(worker);
    if (i >= 0) idleInspectors.splice(i, 1);
  });
  // A thread that fails while idle must not bring the process down; its next run would see it gone.
  worker.on('error', () => {});
  return worker;
}

function releaseInspector(worker: Worker, reusable: boolean): void {
  if (reusable && idleInspectors.length < MAX_IDLE_INSPECTORS) {
    // An idle thread does not keep the process alive.
    worker.unref();
    idleInspectors.push(worker);
  } else void worker.terminate();
}
