import { Duplex } from 'node:stream';
import type { Socket } from 'node:net';
import type { Server } from 'node:http';

/**
 * Vault clients (hvac, curl -X LIST) send the `LIST` method, which Node's HTTP parser
 * rejects before any handler runs. When a request line starts with LIST, the parser
 * fails with HPE_INVALID_METHOD and hands back the raw bytes; we rewrite that request to
 * `GET …?list=true` (which Vault treats the same) and feed the connection back to the
 * server through a thin wrapper. Responses on such a connection close it, so the rewrite
 * only ever concerns the first request and ordinary connections keep Node's fast path.
 */
export function rewriteListRequest(raw: Buffer): Buffer | undefined {
  if (raw.length < 6 || raw.toString('latin1', 0, 5) !== 'LIST ') return undefined;
  const lineEnd = raw.indexOf('\r\n');
  if (lineEnd < 0) return undefined;
  const line = raw.toString('latin1', 0, lineEnd);
  const m = /^LIST (\S+) (HTTP\/1\.[01])$/.exec(line);
  if (!m) return undefined;
  const target = m[1] as string;
  const sep = target.includes('?') ? '&' : '?';
  const rewritten = `GET ${target}${sep}list=true ${m[2]}\r\nx-original-method: LIST`;
  return Buffer.concat([Buffer.from(rewritten, 'latin1'), raw.subarray(lineEnd)]);
}

const WRAPPED = Symbol('strongroom.listWrapped');

export function isListRewrittenSocket(socket: unknown): boolean {
  return Boolean(socket && (socket as Record<symbol, unknown>)[WRAPPED]);
}

/** Returns a Fastify clientErrorHandler that revives LIST requests and otherwise answers 400. */
export function listAwareClientErrorHandler(getServer: () => Server, secure: boolean) {
  return (err: Error, socket: Socket): void => {
    const e = err as Error & { code?: string; rawPacket?: unknown };
    const rewritten =
      e.code === 'HPE_INVALID_METHOD' && Buffer.isBuffer(e.rawPacket) ? rewriteListRequest(e.rawPacket) : undefined;
    if (!rewritten || socket.destroyed) {
      if (socket.writable && !socket.destroyed) {
        socket.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      } else {
        socket.destroy();
      }
      return;
    }
    const wrapper = new Duplex({
      read() {
        socket.resume();
      },
      write(chunk: Buffer, _enc, cb) {
        socket.write(chunk, cb);
      },
      final(cb) {
        socket.end(cb);
      },
      destroy(e, cb) {
        socket.destroy(e ?? undefined);
        cb(e);
      },
    });
    Object.assign(wrapper, {
      [WRAPPED]: true,
      remoteAddress: socket.remoteAddress,
      remotePort: socket.remotePort,
      encrypted: secure,
    });
    socket.on('data', (d: Buffer) => {
      if (!wrapper.push(d)) socket.pause();
    });
    socket.on('end', () => wrapper.push(null));
    socket.on('close', () => wrapper.destroy());
    socket.on('error', (e) => wrapper.destroy(e));
    wrapper.push(rewritten);
    const server = getServer();
    server.emit(secure ? 'secureConnection' : 'connection', wrapper);
  };
}
