import { closeSync, fchmodSync, openSync, writeSync } from 'node:fs';
import { createSocket } from 'node:dgram';
import type { Socket as UdpSocket } from 'node:dgram';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import type { AuditDeviceSettings } from './audit-device.js';

/**
 * Where a device's lines go. Lines produced in the same run of microtasks, and those produced
 * while a (socket) write is under way, are written together (group commit); a request waits
 * for its own line to be written.
 */
export interface AuditSink {
  /** Resolves once the line is written (handed to the kernel); rejects when it could not be. */
  write(line: string): Promise<void>;
  /** Files: closes and opens the file again (log rotation on SIGHUP). */
  reopen(): void;
  /** Writes what is pending, then releases the file or connection. */
  close(): Promise<void>;
}

interface Waiter {
  resolve(): void;
  reject(err: Error): void;
}

abstract class BatchingSink implements AuditSink {
  private pending: string[] = [];
  private waiters: Waiter[] = [];
  private scheduled = false;
  private flushing: Promise<void> | undefined;

  write(line: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push(line);
      this.waiters.push({ resolve, reject });
      if (!this.scheduled && !this.flushing) {
        this.scheduled = true;
        // At the end of the current run of microtasks, not at the next turn of the event loop:
        // a request waits for its entry without yielding the turn (which a busy loop makes long).
        queueMicrotask(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    const lines = this.pending;
    const waiters = this.waiters;
    this.pending = [];
    this.waiters = [];
    this.flushing = (async () => {
      try {
        await this.writeBatch(lines);
        for (const w of waiters) w.resolve();
      } catch (err) {
        const e = err instanceof Error ? err : new Error(String(err));
        for (const w of waiters) w.reject(e);
      }
    })();
    await this.flushing;
    this.flushing = undefined;
    if (this.pending.length > 0) await this.flush();
  }

  /** Waits until nothing is pending. */
  protected async drain(): Promise<void> {
    while (this.flushing || this.pending.length > 0) {
      if (this.flushing) await this.flushing;
      else await this.flush();
    }
  }

  protected abstract writeBatch(lines: string[]): Promise<void> | void;
  abstract reopen(): void;
  abstract close(): Promise<void>;
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
    const buf = Buffer.from(lines.join('\n') + '\n');
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
