/**
 * Every connection waiting on the listening socket taken whenever the event loop takes one
 * (decision 0057).
 *
 * Node.js 20's event loop accepts one connection per pass. A saturated server's pass lasts
 * as long as the requests it reads in it, tens of milliseconds, so 128 clients that connect
 * at once wait up to 128 passes, seconds, for their first answer while the connections
 * already taken are served at every pass: the tail of every figure at saturation, and
 * clients that time out while throughput looks fine. With the native addon, each connection
 * the event loop takes is followed by the ones waiting behind it (up to EAGER_ACCEPT_MAX),
 * set up the way the server sets up its own, so all of them are read from the next pass on.
 */
import { closeSync } from 'node:fs';
import { Socket } from 'node:net';
import type { Server } from 'node:net';
import { nativeAddon } from '../shared/native-addon.js';

/**
 * At most this many more connections per connection the event loop takes. Workers that share
 * the listening socket each take their turn: one busy worker does not empty the queue for all.
 */
const EAGER_ACCEPT_MAX = 64;

type AcceptPending = (fd: number, max: number) => number[];

/** The fields of node:net's Server that its own accept reads to set up a connection. */
interface ServerFields {
  _handle?: { fd?: number } | null;
  _connections: number;
  allowHalfOpen?: boolean;
  pauseOnConnect?: boolean;
  highWaterMark?: number;
  noDelay?: boolean;
  keepAlive?: boolean;
  /** Seconds. */
  keepAliveInitialDelay?: number;
}

/**
 * Makes `server` (listening, plain or TLS) take the waiting connections with each one its
 * event loop takes. False where that cannot be done: without the addon, or a server whose
 * listening socket is not its own (node:cluster's round-robin).
 */
export function acceptEagerly(server: Server): boolean {
  const accept = nativeAddon()?.acceptPending as AcceptPending | undefined;
  const fields = server as unknown as ServerFields;
  if (typeof accept !== 'function' || listeningFd(fields) === undefined) return false;
  let taking = false;
  server.prependListener('connection', () => {
    // The connections this listener hands on come back through it.
    if (taking) return;
    // Read each time: after close the number may belong to another file.
    const fd = listeningFd(fields);
    if (fd === undefined) return;
    taking = true;
    try {
      for (const c of accept(fd, EAGER_ACCEPT_MAX)) adopt(server, fields, c);
    } finally {
      taking = false;
    }
  });
  return true;
}

/** The listening socket's descriptor while the server has its own open one. */
function listeningFd(fields: ServerFields): number | undefined {
  const fd = fields._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : undefined;
}

/** A connection accepted here, set up and counted as node:net sets up and counts its own. */
function adopt(server: Server, fields: ServerFields, fd: number): void {
  let socket: Socket;
  try {
    socket = new Socket({
      fd,
      allowHalfOpen: fields.allowHalfOpen,
      pauseOnCreate: fields.pauseOnConnect,
      readable: true,
      writable: true,
      readableHighWaterMark: fields.highWaterMark,
      writableHighWaterMark: fields.highWaterMark,
    } as ConstructorParameters<typeof Socket>[0]);
  } catch {
    closeSync(fd);
    return;
  }
  if (fields.noDelay) socket.setNoDelay(true);
  if (fields.keepAlive) socket.setKeepAlive(true, (fields.keepAliveInitialDelay ?? 0) * 1000);
  // Counted like the server's own: close waits for it, and its end is subtracted by node:net.
  fields._connections++;
  const owned = socket as Socket & { server: Server; _server: Server };
  owned.server = server;
  owned._server = server;
  server.emit('connection', socket);
}
