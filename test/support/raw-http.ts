import { connect as netConnect } from 'node:net';
import type { Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { connect as tlsConnect } from 'node:tls';

/** One HTTP/1.1 response as read off the wire. */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * An HTTP/1.1 client over one raw TCP (or TLS) connection, for tests that must control how
 * request bytes are split across writes and what is pipelined: it writes exactly the bytes
 * given and parses responses (Content-Length or chunked bodies) in order.
 */
export class RawHttpConnection {
  private buf = Buffer.alloc(0);
  private closed = false;
  private wake: (() => void) | undefined;

  private constructor(readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.wake?.();
    });
    const end = () => {
      this.closed = true;
      this.wake?.();
    };
    socket.on('end', end);
    socket.on('close', end);
    socket.on('error', end);
  }

  static async open(url: string, caFile?: string): Promise<RawHttpConnection> {
    const u = new URL(url);
    const port = Number(u.port);
    const socket =
      u.protocol === 'https:'
        ? tlsConnect({ host: u.hostname, port, ca: caFile ? readFileSync(caFile) : undefined, servername: 'localhost' })
        : netConnect({ host: u.hostname, port });
    await new Promise<void>((resolve, reject) => {
      socket.once(u.protocol === 'https:' ? 'secureConnect' : 'connect', () => resolve());
      socket.once('error', reject);
    });
    return new RawHttpConnection(socket);
  }

  /**
   * Writes each part separately and lets the event loop pass a poll phase between parts, so
   * that a server in this process reads each part on its own.
   */
  async send(parts: Buffer[]): Promise<void> {
    for (const [i, part] of parts.entries()) {
      await new Promise<void>((resolve, reject) => this.socket.write(part, (e) => (e ? reject(e) : resolve())));
      if (i < parts.length - 1) await pollTurn();
    }
  }

  /** The next complete response; fails if the connection closes first. */
  async read(): Promise<RawResponse> {
    for (;;) {
      const r = this.parse();
      if (r) return r;
      if (this.closed) throw new Error(`connection closed; unparsed: ${JSON.stringify(this.buf.toString('latin1'))}`);
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }

  /** Resolves true once the server has closed the connection with nothing more to read. */
  async closedByServer(): Promise<boolean> {
    while (!this.closed) {
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
    return this.buf.length === 0;
  }

  close(): void {
    this.socket.destroy();
  }

  private parse(): RawResponse | undefined {
    const headEnd = this.buf.indexOf('\r\n\r\n');
    if (headEnd < 0) return undefined;
    const [statusLine, ...lines] = this.buf.toString('latin1', 0, headEnd).split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1]);
    const headers: Record<string, string> = {};
    for (const l of lines) {
      const i = l.indexOf(':');
      headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    let at = headEnd + 4;
    let body: Buffer;
    if (headers['transfer-encoding'] === 'chunked') {
      const parts: Buffer[] = [];
      for (;;) {
        const lineEnd = this.buf.indexOf('\r\n', at);
        if (lineEnd < 0) return undefined;
        const size = parseInt(this.buf.toString('latin1', at, lineEnd), 16);
        if (this.buf.length < lineEnd + 2 + size + 2) return undefined;
        parts.push(this.buf.subarray(lineEnd + 2, lineEnd + 2 + size));
        at = lineEnd + 2 + size + 2;
        if (size === 0) break;
      }
      body = Buffer.concat(parts);
    } else {
      const length = Number(headers['content-length'] ?? 0);
      if (this.buf.length < at + length) return undefined;
      body = this.buf.subarray(at, at + length);
      at += length;
    }
    this.buf = this.buf.subarray(at);
    return { status, headers, body: body.toString('utf8') };
  }
}

/** Resolves after the event loop has passed through a poll phase (where sockets are read). */
export function pollTurn(): Promise<void> {
  return new Promise((resolve) => setTimeout(() => setImmediate(resolve), 0));
}

/** Every way to cut `bytes` in two, and the cut into single bytes. */
export function everySplit(bytes: Buffer): Buffer[][] {
  const out: Buffer[][] = [[bytes]];
  for (let i = 1; i < bytes.length; i++) out.push([bytes.subarray(0, i), bytes.subarray(i)]);
  out.push([...bytes].map((b) => Buffer.from([b])));
  return out;
}
