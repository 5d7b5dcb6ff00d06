import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

/** Raised when the server cannot bind its address; the message says what to do. */
export class ListenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ListenError';
  }
}

/** A message for a failed bind of host:port that names the address, the cause, what holds it if known, and the flag. */
export function describeListenError(err: unknown, host: string, port: number): ListenError {
  const code = (err as NodeJS.ErrnoException).code;
  const address = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const change = 'choose another address with --listen HOST:PORT (STRONGROOM_LISTEN, config key "listen")';
  switch (code) {
    case 'EADDRINUSE': {
      const holder = processListeningOn(port);
      const by = holder ? ` by pid ${holder.pid} (${holder.command})` : '';
      return new ListenError(
        `cannot listen on ${address}: the address is already in use${by}. Stop that process, or ${change}.`,
      );
    }
    case 'EACCES':
      return new ListenError(
        `cannot listen on ${address}: permission denied (ports below 1024 need privileges). Use a port ` +
          `above 1023, or ${change}.`,
      );
    case 'EADDRNOTAVAIL':
      return new ListenError(`cannot listen on ${address}: this machine has no such address. ${upper(change)}.`);
    default:
      return new ListenError(
        `cannot listen on ${address}: ${(err as Error).message ?? String(err)}. ${upper(change)}.`,
      );
  }
}

const upper = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/**
 * Linux: the process holding a listening TCP socket on `port`, found through /proc (the
 * socket's inode in /proc/net/tcp*, then the process with that socket among its open
 * files). Undefined elsewhere, or when the holder belongs to a user we cannot inspect.
 */
export function processListeningOn(port: number): { pid: number; command: string } | undefined {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      const local = f[1];
      // Field 4 is the socket state: 0A is LISTEN; field 10 the inode.
      if (!local || f[3] !== '0A') continue;
      if (parseInt(local.slice(local.lastIndexOf(':') + 1), 16) === port && f[9] && f[9] !== '0') inodes.add(f[9]);
    }
  }
  if (inodes.size === 0) return undefined;
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let link: string;
      try {
        link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(link);
      if (m && inodes.has(m[1] as string)) return { pid: Number(pid), command: commandOf(pid) };
    }
  }
  return undefined;
}

function commandOf(pid: string): string {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    const text = argv.join(' ');
    return text.length > 120 ? `${text.slice(0, 117)}...` : text || '?';
  } catch {
    return '?';
  }
}
