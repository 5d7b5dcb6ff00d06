import { Duplex } from 'node:stream';
import type { Socket } from 'node:net';
import type { Server } from 'node:http';

/**
 * Vault clients (the vault CLI, hvac, curl -X LIST) send the `LIST` method, which Node's
 * HTTP parser (llhttp) rejects before any handler runs. Ordinary connections keep Node's
 * fast path untouched; only when the parser fails on a `LIST` request does this module take
 * the connection over:
 *
 * - llhttp fails at the third byte, `S` (no method begins with `LIS`), with `bytesParsed`
 *   pointing at it, whatever way the bytes were split across reads. The two bytes before
 *   it, `LI`, were consumed (possibly in an earlier read), so the request is rebuilt from
 *   `LI` plus what follows the error.
 * - Requests parsed before it on the same connection (pipelining) are still answered by
 *   Node; the rest of the connection waits until their responses are finished, so answers
 *   go out in request order.
 * - The rest is handed to the server as a fresh connection (a Duplex over the socket) whose
 *   first request line is rewritten to `GET …?list=true` (which Vault treats the same) with
 *   `x-original-method: LIST`. Node's own parser then serves it with keep-alive and
 *   pipelining as usual; a later `LIST` on it is taken over the same way.
 *
 * A method of other bytes that happens to fail at an `S` after `LI` (`LISTEN`, `UNLIST`) gets
 * the 400 Node would give, in order. Node's listeners on a taken-over socket are found by name
 * (`socketOnData`, `socketOnEnd`, `socketOnTimeout`, stable across Node releases); the
 * raw-socket tests of this module fail if that ever changes.
 */

/** Longest request line accepted while waiting for the rest of a LIST request line. */
const MAX_REQUEST_LINE = 16 * 1024;
/** How long the rest of a split LIST request line may take when the server sets no headersTimeout. */
const DEFAULT_HEAD_TIMEOUT_MS = 60_000;
const BYTE_S = 0x53;

interface ParserError extends Error {
  code?: string;
  rawPacket?: unknown;
  bytesParsed?: unknown;
}

/** The parts of Node's internal per-socket HTTP state this module reads. */
interface HttpSocket extends Duplex {
  _httpMessage?: NodeJS.EventEmitter | null;
}

const CONNECTION = Symbol('strongroom.listConnection');
const REFUSING = Symbol('strongroom.refusing');

/** Returns a Fastify clientErrorHandler that serves LIST requests and otherwise refuses as Node does, in order. */
export function listAwareClientErrorHandler(getServer: () => Server, secure: boolean) {
  return (err: Error, socket: Socket): void => {
    const e = err as ParserError;
    const owner = (socket as unknown as Record<symbol, ListConnection | undefined>)[CONNECTION];
    // The abandoned parser of a socket served here reports its stale error again (end, request timeout): ignore it.
    if (owner && owner.raw === (socket as unknown)) return;
    const raw = e.rawPacket;
    const at = e.bytesParsed;
    if (
      e.code === 'HPE_INVALID_METHOD' &&
      Buffer.isBuffer(raw) &&
      typeof at === 'number' &&
      raw[at] === BYTE_S &&
      consumedListPrefix(raw, at)
    ) {
      (owner ?? new ListConnection(socket, getServer, secure)).restartAfter(socket, raw.subarray(at));
      return;
    }
    refuse(socket, e.code);
  };
}

/**
 * Whether the bytes before the failing `S` are `LI`, and not the `UNLI` of `UNLIST` (llhttp
 * reads `UNLI` as the start of `UNLINK`). When the request began in an earlier read, only the
 * part in this read can be checked; it must be a suffix of `LI`.
 */
function consumedListPrefix(raw: Buffer, at: number): boolean {
  if (at >= 4 && raw[at - 4] === 0x55 && raw[at - 3] === 0x4e) return false;
  if (at >= 2) return raw[at - 2] === 0x4c && raw[at - 1] === 0x49;
  return at === 0 || raw[0] === 0x49;
}

/**
 * Node's and Fastify's answer to a request that cannot be parsed (400, 431 for headers too
 * large, 408 for a request too slow), sent after the answers still owed to the requests
 * before it; then the connection closes. A socket error just closes it.
 */
function refuse(socket: Socket, code: string | undefined): void {
  const marked = socket as unknown as Record<symbol, boolean>;
  // A failed parser that reads the socket itself reports every later read again.
  if (socket.destroyed || marked[REFUSING]) return;
  // HPE_INVALID_EOF_STATE: the client closed its side in the middle of a request, which can then never complete;
  // waiting for the answer owed to it would hold the socket (and the request) forever. Node closes at once too.
  if ((!code?.startsWith('HPE_') && code !== 'ERR_HTTP_REQUEST_TIMEOUT') || code === 'HPE_INVALID_EOF_STATE') {
    socket.destroy();
    return;
  }
  marked[REFUSING] = true;
  detachNodeParser(socket);
  const status = code === 'HPE_HEADER_OVERFLOW' ? 431 : code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  whenIdle(socket as unknown as HttpSocket, () => {
    if (!socket.writable) return void socket.destroy();
    socket.once('finish', () => socket.destroy());
    socket.end(statusOnly(status));
  });
}

function statusOnly(status: number): string {
  const reason =
    status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request';
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`;
}

/** Removes the listeners Node's HTTP server put on a socket for its parser, which has failed. */
function detachNodeParser(socket: NodeJS.EventEmitter): void {
  for (const [event, name] of [
    ['data', 'bound socketOnData'],
    ['end', 'bound socketOnEnd'],
    ['timeout', 'socketOnTimeout'],
  ] as const) {
    for (const l of socket.listeners(event)) {
      if ((l as { name?: string }).name === name) socket.removeListener(event, l as (...a: unknown[]) => void);
    }
  }
}

/** Calls `then` once every response Node still owes on `socket` is finished (or the socket is gone). */
function whenIdle(socket: HttpSocket, then: () => void): void {
  const res = socket._httpMessage;
  if (!res) {
    then();
    return;
  }
  let done = false;
  const next = () => {
    if (done) return;
    done = true;
    // Node's own 'finish' listener ran first and assigned the next pipelined response, if any.
    whenIdle(socket, then);
  };
  res.once('finish', next);
  res.once('close', next);
}

/** One client connection taken over after a LIST request: the socket and the connection Node serves now. */
class ListConnection {
  readonly raw: Socket;
  private current: ListSocket | undefined;
  /** The connection a LIST retired, while Node finishes its earlier responses. */
  private retiring: ListSocket | undefined;
  private queued: Buffer[] = [];
  private ended = false;
  private waitingForLine = false;

  constructor(
    raw: Socket,
    private readonly getServer: () => Server,
    private readonly secure: boolean,
  ) {
    this.raw = raw;
    (raw as unknown as Record<symbol, ListConnection>)[CONNECTION] = this;
    detachNodeParser(raw);
    raw.setTimeout(0);
    // Node's HTTP server wraps `on`: a 'data' listener stops its parser reading the socket directly.
    raw.on('data', (d: Buffer) => this.onData(d));
    raw.on('end', () => {
      this.ended = true;
      if (this.current) this.current.push(null);
      else if (this.waitingForLine) this.serveNext();
    });
    raw.on('timeout', () => {
      if (this.current) this.current.emit('timeout');
      else raw.destroy();
    });
    raw.on('error', (err) => {
      this.current?.destroy(err);
      this.retiring?.destroy(err);
    });
    raw.on('close', () => {
      this.current?.destroy();
      this.retiring?.destroy();
    });
  }

  /** The connection Node served on `from` failed at a LIST request starting with `LI` + `rest`. */
  restartAfter(from: Socket, rest: Buffer): void {
    const pending = [Buffer.from('LI', 'latin1'), rest];
    const previous = this.current;
    if (previous && previous === (from as unknown)) {
      this.current = undefined;
      this.retiring = previous;
      previous.retire();
      detachNodeParser(previous);
      // What it had received but not yet parsed belongs to the requests that follow.
      for (let c = previous.read() as Buffer | null; c !== null; c = previous.read() as Buffer | null) pending.push(c);
    }
    this.queued = [...pending, ...this.queued];
    this.raw.pause();
    whenIdle(from as unknown as HttpSocket, () => {
      this.retiring = undefined;
      previous?.destroy();
      if ((from as unknown as Duplex).writableEnded) return; // its last answer closed the connection
      this.serveNext();
    });
  }

  private onData(d: Buffer): void {
    if (this.current) {
      if (!this.current.push(d)) this.raw.pause();
      return;
    }
    this.queued.push(d);
    if (this.waitingForLine) this.serveNext();
    else this.raw.pause();
  }

  /** With Node's earlier responses done: rewrite the LIST request line and hand the rest to the server. */
  private serveNext(): void {
    const raw = this.raw;
    if (raw.destroyed || raw.writableEnded) return;
    const head = Buffer.concat(this.queued);
    this.queued = [head];
    const lineEnd = head.indexOf('\n');
    if (lineEnd < 0) {
      if (head.length > MAX_REQUEST_LINE) return this.refuseRest(414, 'URI Too Long');
      if (this.ended) return void raw.end();
      this.waitingForLine = true;
      raw.setTimeout(this.getServer().headersTimeout || DEFAULT_HEAD_TIMEOUT_MS);
      raw.resume();
      return;
    }
    this.waitingForLine = false;
    raw.setTimeout(0);
    const line = head.toString('latin1', 0, head[lineEnd - 1] === 0x0d ? lineEnd - 1 : lineEnd);
    const m = /^LIST (\S+) (HTTP\/1\.[01])$/.exec(line);
    if (!m) return this.refuseRest(400, 'Bad Request');
    const target = m[1] as string;
    const rewritten =
      `GET ${target}${target.includes('?') ? '&' : '?'}list=true ` + `${m[2]}\r\nx-original-method: LIST\r\n`;
    this.queued = [];
    const socket = new ListSocket(this, raw, this.secure);
    this.current = socket;
    socket.push(Buffer.concat([Buffer.from(rewritten, 'latin1'), head.subarray(lineEnd + 1)]));
    if (this.ended) socket.push(null);
    this.getServer().emit(this.secure ? 'secureConnection' : 'connection', socket);
    raw.resume();
  }

  private refuseRest(status: number, reason: string): void {
    this.queued = [];
    this.raw.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
  }

  isCurrent(socket: ListSocket): boolean {
    return this.current === socket;
  }
}

/**
 * The socket Node's HTTP server serves after a takeover: reads what the client sends from
 * then on, writes to the client's socket. Once the next LIST retires it, it no longer reads,
 * and closing it leaves the client's socket to its successor.
 */
class ListSocket extends Duplex {
  private retired = false;

  constructor(
    private readonly owner: ListConnection,
    private readonly raw: Socket,
    readonly encrypted: boolean,
  ) {
    super({ allowHalfOpen: true });
    (this as unknown as Record<symbol, ListConnection>)[CONNECTION] = owner;
  }

  retire(): void {
    this.retired = true;
  }

  get remoteAddress(): string | undefined {
    return this.raw.remoteAddress;
  }
  get remotePort(): number | undefined {
    return this.raw.remotePort;
  }
  get remoteFamily(): string | undefined {
    return this.raw.remoteFamily;
  }
  get localAddress(): string | undefined {
    return this.raw.localAddress;
  }
  get localPort(): number | undefined {
    return this.raw.localPort;
  }
  address(): ReturnType<Socket['address']> {
    return this.raw.address();
  }

  setTimeout(ms: number, cb?: () => void): this {
    if (!this.retired) this.raw.setTimeout(ms);
    if (cb) this.once('timeout', cb);
    return this;
  }
  setNoDelay(noDelay?: boolean): this {
    this.raw.setNoDelay(noDelay);
    return this;
  }
  setKeepAlive(enable?: boolean, delay?: number): this {
    this.raw.setKeepAlive(enable, delay);
    return this;
  }

  override _read(): void {
    if (this.owner.isCurrent(this)) this.raw.resume();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (this.raw.write(chunk)) cb();
    else this.raw.once('drain', () => cb());
  }

  override _writev(chunks: { chunk: Buffer }[], cb: (err?: Error | null) => void): void {
    this.raw.cork();
    let ok = true;
    for (const { chunk } of chunks) ok = this.raw.write(chunk);
    this.raw.uncork();
    if (ok) cb();
    else this.raw.once('drain', () => cb());
  }

  override _final(cb: (err?: Error | null) => void): void {
    // Finished only once the client's socket has sent everything: Node destroys this socket on 'finish'.
    this.raw.end(() => cb());
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    if (!this.retired) this.raw.destroy(err ?? undefined);
    cb(err);
  }
}
