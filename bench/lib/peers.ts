import { spawnSync } from 'node:child_process';
import { accessSync, constants, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, waitForHttp } from './processes.js';
import type { Managed } from './processes.js';
import { Skip } from './types.js';
import type { RunContext } from './types.js';

const SEARCH_PATH = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

export function findCommand(name: string): string | null {
  const dirs = [...(process.env.PATH ?? '').split(':').filter(Boolean), ...SEARCH_PATH];
  for (const d of dirs) {
    const p = join(d, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // keep looking
    }
  }
  return null;
}

/**
 * Returns the path of `command`, installing Debian package `pkg` when it is missing and installing
 * is allowed. Throws Skip when the peer cannot be had, so the scenario reports it and goes on.
 */
export function ensureDebianCommand(ctx: RunContext, command: string, pkgs: string[]): string {
  const found = findCommand(command);
  if (found) return found;
  if (!ctx.opts.install) throw new Skip(`peer not installed: ${command} (Debian package ${pkgs.join(' or ')})`);
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    throw new Skip(`peer not installed: ${command}; install ${pkgs[0]} as root (apt-get install ${pkgs[0]})`);
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = (pkg: string) =>
    spawnSync('apt-get', ['install', '-y', '--no-install-recommends', pkg], { env, stdio: 'ignore', timeout: 300_000 })
      .status === 0;
  for (const pkg of pkgs) {
    ctx.log(`installing ${pkg} (apt-get install -y --no-install-recommends ${pkg})`);
    if (install(pkg)) break;
    spawnSync('apt-get', ['update'], { env, stdio: 'ignore', timeout: 300_000 });
    if (install(pkg)) break;
  }
  const after = findCommand(command);
  if (!after) throw new Skip(`peer unavailable: could not install ${pkgs.join(' or ')} for ${command}`);
  return after;
}

export interface Peer {
  url: string;
  pid: number;
  managed: Managed;
}

const PEERS_DIR = fileURLToPath(new URL('../peers/', import.meta.url));

/** Bare Fastify answering a fixed JSON body: the ceiling of an HTTP JSON server on this machine. */
export async function startCeiling(ctx: RunContext): Promise<Peer> {
  const port = await freePort();
  const m = ctx.group.start('fastify-ceiling', process.execPath, [join(PEERS_DIR, 'ceiling-server.js'), String(port)]);
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/`, m);
  return { url, pid: m.pid, managed: m };
}

/** Bare Node.js server that writes, MD5-hashes and fsyncs each PUT body into `dir`. */
export async function startUploadSink(ctx: RunContext, dir: string): Promise<Peer> {
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const m = ctx.group.start('node-upload-sink', process.execPath, [
    join(PEERS_DIR, 'upload-sink.js'),
    String(port),
    dir,
  ]);
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/ready`, m);
  return { url, pid: m.pid, managed: m };
}

/**
 * nginx in the foreground with a generated config: WebDAV PUT under /up/, static files under /files/.
 * One worker process, like the one Node.js event loop it is compared with.
 */
export async function startNginx(ctx: RunContext, name: string): Promise<Peer & { filesDir: string }> {
  const bin = ensureDebianCommand(ctx, 'nginx', ['nginx-light', 'nginx']);
  const prefix = join(ctx.tmpDir, `nginx-${name}`);
  const www = join(prefix, 'www');
  for (const d of [
    '',
    'www/up',
    'www/files',
    'tmp/body',
    'tmp/proxy',
    'tmp/fastcgi',
    'tmp/uwsgi',
    'tmp/scgi',
    'logs',
  ]) {
    mkdirSync(join(prefix, d), { recursive: true });
  }
  const port = await freePort();
  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const conf = `${asRoot ? 'user root;\n' : ''}worker_processes 1;
daemon off;
pid ${prefix}/nginx.pid;
error_log ${prefix}/logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  client_max_body_size 0;
  client_body_buffer_size 1m;
  client_body_temp_path ${prefix}/tmp/body;
  proxy_temp_path ${prefix}/tmp/proxy;
  fastcgi_temp_path ${prefix}/tmp/fastcgi;
  uwsgi_temp_path ${prefix}/tmp/uwsgi;
  scgi_temp_path ${prefix}/tmp/scgi;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:${port};
    root ${www};
    location = /ready { return 200 "ok"; }
    location /up/ { dav_methods PUT; create_full_put_path on; dav_access user:rw; }
    location /files/ { }
  }
}
`;
  const confPath = join(prefix, 'nginx.conf');
  writeFileSync(confPath, conf);
  const m = ctx.group.start('nginx', bin, ['-p', prefix, '-c', confPath, '-e', join(prefix, 'logs', 'error.log')]);
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/ready`, m);
  return { url, pid: m.pid, managed: m, filesDir: join(www, 'files') };
}

/** Runs a command to completion and returns stdout; throws with stderr on failure. */
export function run(command: string, args: string[], opts: { cwd?: string; input?: string | Buffer } = {}): Buffer {
  const r = spawnSync(command, args, {
    cwd: opts.cwd,
    input: opts.input,
    timeout: 120_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} failed (${r.status ?? r.signal}): ` +
        `${r.stderr?.toString('utf8').trim() ?? r.error?.message}`,
    );
  }
  return r.stdout;
}
