import { closeSync, fchmodSync, openSync, writeSync } from 'node:fs';
import { createSocket } from 'node:dgram';
import type { Socket as UdpSocket } from 'node:dgram';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import type { AuditDeviceSettings } from './audit-device.js';

/**
 * Where a device's lines go. The lines of one turn of the event loop (all the requests whose
 * data was read in it) are written together after its I/O callbacks (group commit), and so
 * are those produced while a (socket) write is under way; every request waits for its
 * group to be written.
 */
export interface AuditSink {
  /** Resolves once the line is written (handed to the kernel); rejects when it could not be. */
  write(line: string): Promise<void>;
  /** Files: closes and opens the file again (log rotation on SIGHUP). */
  reopen(): void;
  /** Writes what is pending, then releases the file or connection. */
  close(): Promise<void>;
}

/** The lines waiting for the next write, and the one promise all their writers wait on. */
class Group {
  readonly lines: string[] = [];
  readonly done: Promise<void>;
  resolve!: () => void;
  reject!: (err: Error) => void;
  constructor() {
    this.done = new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }
}

/** The least time between the starts of two writes of one device (see schedule). */
const WRITE_GAP_MS = 1;

abstract class BatchingSink implements AuditSink {
  private group: Group | undefined;
  private scheduled = false;
  private flushing: Promise<void> | undefined;
  /** When the last write began (performance.now()). */
  private lastWrite = Number.NEGATIVE_INFINITY;

  write(line: string): Promise<void> {
    let g = this.group;
    if (!g) {
      g = this.group = new Group();
      this.schedule();
    }
    g.lines.push(line);
    return g.done;
  }

  /**
   * After the I/O callbacks of the current turn (setImmediate), so that every request read
   * in this turn shares one write; but never sooner than WRITE_GAP_MS after the previous
   * write began, so that under load a write carries the entries of every request of that
   * time (a request then waits at most that long, and an idle server not at all). A write
   * under way takes the next group when it ends.
   */
  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    const wait = this.lastWrite + WRITE_GAP_MS - performance.now();
    if (wait > 0) setTimeout(this.flush, wait);
    else setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    this.lastWrite = performance.now();
    const g = this.group;
    if (!g || this.flushing) return;
    this.group = undefined;
    let written: Promise<void> | void;
    try {
      written = this.writeBatch(g.lines);
    } catch (err) {
      g.reject(asError(err));
      return;
    }
    if (!written) {
      g.resolve();
      return;
    }
    this.flushing = written.then(
      () => g.resolve(),
      (err: unknown) => g.reject(asError(err)),
    );
    void this.flushing.then(() => {
      this.flushing = undefined;
      if (this.group) this.schedule();
    });
  };

  /** Writes what is pending now, and waits for any write under way. */
  protected async drain(): Promise<void> {
    while (this.flushing || this.group) {
      if (this.flushing) await this.flushing.catch(() => {});
      else this.flush();
    }
  }

  /** Writes every line, or throws (or rejects) when they could not all be written. */
  protected abstract writeBatch(lines: string[]): Promise<void> | void;
  abstract reopen(): void;
  abstract close(): Promise<void>;
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/** Where batches of file lines are encoded: one buffer, reused, grown up to LINE_BUFFER_MAX. */
let lineBuffer = Buffer.allocUnsafe(256 * 1024);
const LINE_BUFFER_MAX = 4 * 1024 * 1024;

/**
 * The lines, each followed by a newline, as UTF-8: in the shared line buffer (valid until the
 * next call; file writes are synchronous, so nothing uses it meanwhile), or in a buffer of
 * their own when they could exceed its largest size.
 */
function encodeLines(lines: string[]): Buffer {
  // At most 3 bytes of UTF-8 per UTF-16 unit, and a newline each.
  let bound = lines.length;
  for (const line of lines) bound += line.length * 3;
  if (bound > LINE_BUFFER_MAX) return Buffer.from(lines.join('\n') + '\n');
  if (bound > lineBuffer.length)
    lineBuffer = Buffer.allocUnsafe(Math.min(LINE_BUFFER_MAX, 2 ** Math.ceil(Math.log2(bound))));
  let off = 0;
  for (const line of lines) {
    off += lineBuffer.write(line, off, 'utf8');
    lineBuffer[off++] = 0x0a;
  }
  return lineBuffer.subarray(0, off);
}

/** A file opened for appending; a failed write closes it so that the next batch opens it again. */
export class FileSink extends BatchingSink {
  private fd = -1;

  constructor(
    private readonly path: string,
    private readonly mode: number | null,
  ) {
    super();
    this.open();
  }

  private open(): void {
    this.fd = openSync(this.path, 'a', this.mode ?? 0o600);
    if (this.mode !== null) fchmodSync(this.fd, this.mode);
  }

  protected writeBatch(lines: string[]): void {
    if (this.fd < 0) this.open();
    const buf = encodeLines(lines);
    try {
      let off = 0;
      while (off < buf.length) off += writeSync(this.fd, buf, off, buf.length - off);
    } catch (err) {
      this.closeFd();
      throw err;
    }
  }

  reopen(): void {
    this.closeFd();
    try {
      this.open();
    } catch {
      // The next write tries again and fails its requests if the file still cannot be opened.
    }
  }

  private closeFd(): void {
    if (this.fd >= 0) {
      try {
        closeSync(this.fd);
      } catch {
        // already closed
      }
    }
    this.fd = -1;
  }

  async close(): Promise<void> {
    await this.drain();
    this.closeFd();
  }
}

/** The server's standard output (`file_path` of `stdout` or `-`). */
export class StdoutSink extends BatchingSink {
  protected writeBatch(lines: string[]): Promise<void> {
    return new Promise((resolve, reject) =>
      process.stdout.write(lines.join('\n') + '\n', (err) => (err ? reject(err) : resolve())),
    );
  }
  reopen(): void {}
  async close(): Promise<void> {
    await this.drain();
  }
}

/** `file_path=discard`: every write succeeds and nothing is kept. */
export class DiscardSink implements AuditSink {
  write(): Promise<void> {
    return Promise.resolve();
  }
  reopen(): void {}
  async close(): Promise<void> {}
}

/**
 * A TCP or Unix stream: connected on first use, and again after the peer closed it or a
 * write failed (one retry, as Vault's socket device does). A write not acknowledged within
 * `write_timeout` fails.
 */
export class StreamSink extends BatchingSink {
  private socket: Socket | undefined;

  constructor(private readonly target: { socketType: 'tcp' | 'unix'; address: string; writeTimeoutMs: number }) {
    super();
  }

  /** Connects now (to refuse enabling a device nobody listens for). */
  async connectNow(): Promise<void> {
    await this.connected();
  }

  private connected(): Promise<Socket> {
    if (this.socket && !this.socket.destroyed && this.socket.writable) return Promise.resolve(this.socket);
    const { socketType, address, writeTimeoutMs } = this.target;
    return new Promise<Socket>((resolve, reject) => {
      const opts =
        socketType === 'unix'
          ? { path: address }
          : { host: address.slice(0, address.lastIndexOf(':')).replace(/^\[|\]$/g, ''), port: portOf(address) };
      const s = connect(opts);
      const timer = setTimeout(() => s.destroy(new Error(`connecting to ${address} timed out`)), writeTimeoutMs);
      s.once('connect', () => {
        clearTimeout(timer);
        s.removeAllListeners('error');
        s.on('error', () => s.destroy());
        s.on('end', () => s.destroy());
        s.on('close', () => {
          if (this.socket === s) this.socket = undefined;
        });
        s.unref();
        this.socket = s;
        resolve(s);
      });
      s.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  private async send(text: string): Promise<void> {
    const s = await this.connected();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        s.destroy();
        reject(new Error(`writing to ${this.target.address} timed out`));
      }, this.target.writeTimeoutMs);
      s.write(text, (err) => {
        clearTimeout(timer);
        if (err) {
          s.destroy();
          reject(err);
        } else resolve();
      });
    });
  }

  protected async writeBatch(lines: string[]): Promise<void> {
    const text = lines.join('\n') + '\n';
    try {
      await this.send(text);
    } catch {
      await this.send(text);
    }
  }

  reopen(): void {}

  async close(): Promise<void> {
    await this.drain().catch(() => {});
    this.socket?.end();
    this.socket = undefined;
  }
}

/** UDP: one datagram per entry. */
export class DatagramSink extends BatchingSink {
  private socket: UdpSocket | undefined;

  constructor(private readonly address: string) {
    super();
  }

  private connected(): Promise<UdpSocket> {
    if (this.socket) return Promise.resolve(this.socket);
    const host = this.address.slice(0, this.address.lastIndexOf(':')).replace(/^\[|\]$/g, '');
    const s = createSocket(host.includes(':') ? 'udp6' : 'udp4');
    s.unref();
    return new Promise((resolve, reject) => {
      s.once('error', reject);
      s.connect(portOf(this.address), host, () => {
        s.removeListener('error', reject);
        s.on('error', () => {
          if (this.socket === s) this.socket = undefined;
          s.close();
        });
        this.socket = s;
        resolve(s);
      });
    });
  }

  protected async writeBatch(lines: string[]): Promise<void> {
    const s = await this.connected();
    for (const line of lines) {
      await new Promise<void>((resolve, reject) => s.send(line + '\n', (err) => (err ? reject(err) : resolve())));
    }
  }

  reopen(): void {}

  async close(): Promise<void> {
    await this.drain().catch(() => {});
    this.socket?.close();
    this.socket = undefined;
  }
}

function portOf(address: string): number {
  return Number(address.slice(address.lastIndexOf(':') + 1));
}

/** Opens the sink of a device; throws when a file cannot be opened or a stream peer is not listening. */
export async function openSink(settings: AuditDeviceSettings): Promise<AuditSink> {
  const t = settings.target;
  switch (t.kind) {
    case 'file':
      return new FileSink(t.path, t.mode);
    case 'stdout':
      return new StdoutSink();
    case 'discard':
      return new DiscardSink();
    case 'socket': {
      if (t.socketType === 'udp') return new DatagramSink(t.address);
      const sink = new StreamSink({ socketType: t.socketType, address: t.address, writeTimeoutMs: t.writeTimeoutMs });
      await sink.connectNow();
      return sink;
    }
  }
}
