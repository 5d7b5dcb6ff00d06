import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { nativeAddon } from '../../src/shared/native-addon.js';
import { describeWithServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import { opensslTestCa } from './pki-external-policy-helpers.js';

/**
 * Connections that wait while the server is busy are all taken in its next pass of the event
 * loop (decision 0057), over plain TCP and TLS, and each is served; with eager_accept=false
 * the event loop takes them one per pass. The server's event loop is held (Atomics.wait)
 * while a child process connects, so the connections wait in the kernel's accept queue as
 * they do behind a saturated server.
 */

const CONNECTIONS = 24;
const ca = opensslTestCa('Strongroom accept test CA');
const serverCert = ca.issue('localhost');

// Connects every socket, says so with a file, then sends one request on each and exits 0
// once each was answered 200 (TLS: trusting CA_FILE).
const CLIENT = `
import net from 'node:net';
import tls from 'node:tls';
import { readFileSync, writeFileSync } from 'node:fs';
const [port, n, secure, marker, caFile] = process.argv.slice(1);
const sockets = await Promise.all(Array.from({ length: Number(n) }, () => new Promise((resolve, reject) => {
  const s = net.connect(Number(port), '127.0.0.1', () => resolve(s));
  s.on('error', reject);
})));
writeFileSync(marker, 'connected');
const answers = await Promise.all(sockets.map((raw) => new Promise((resolve, reject) => {
  const s = secure === '1' ? tls.connect({ socket: raw, servername: 'localhost', ca: readFileSync(caFile) }) : raw;
  let text = '';
  s.on('data', (d) => { text += d; if (text.includes('\\r\\n\\r\\n')) { resolve(text.split(' ')[1]); s.destroy(); } });
  s.on('error', reject);
  s.write('GET /healthz HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n');
})));
const ok = answers.filter((a) => a === '200').length;
console.log(ok);
process.exit(ok === Number(n) ? 0 : 1);
`;

/** Which pass of the server's event loop took each connection, with the client's exit code and output. */
async function connectWhileBusy(server: TestServer, secure: boolean): Promise<{ passes: number[]; code: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'eager-accept-'));
  const marker = join(dir, 'connected');
  let pass = 0;
  let counting = true;
  const tick = () => {
    pass++;
    if (counting) setImmediate(tick);
  };
  setImmediate(tick);
  const passes: number[] = [];
  const onConnection = () => passes.push(pass);
  const http = server.app.server;
  http.on('connection', onConnection);
  const port = String((http.address() as { port: number }).port);
  const child = spawn(
    process.execPath,
    ['--input-type=module', '-e', CLIENT, port, String(CONNECTIONS), secure ? '1' : '0', marker, ca.certFile],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  try {
    // Hold this process's event loop, server included, until every client socket is connected.
    const cell = new Int32Array(new SharedArrayBuffer(4));
    const until = Date.now() + 20_000;
    while (!existsSync(marker) && Date.now() < until) Atomics.wait(cell, 0, 0, 10);
    assert.ok(existsSync(marker), 'the client connected within 20 s');
    const code = await new Promise<number>((resolve) => child.on('exit', (c) => resolve(c ?? -1)));
    assert.equal(out.trim(), String(CONNECTIONS), 'every connection was answered 200');
    return { passes, code };
  } finally {
    counting = false;
    http.off('connection', onConnection);
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

const addon = nativeAddon() !== null;

for (const secure of [false, true]) {
  const tlsConfig = secure ? { tlsCertFile: serverCert.certFile, tlsKeyFile: serverCert.keyFile } : {};
  describeWithServer(`eager accept over ${secure ? 'TLS' : 'TCP'}`, { config: tlsConfig }, (server) => {
    it(
      'takes every waiting connection in one pass of the event loop, and serves each',
      { skip: addon ? false : 'needs the native addon' },
      async () => {
        const { passes, code } = await connectWhileBusy(server, secure);
        assert.equal(code, 0);
        assert.equal(passes.length, CONNECTIONS);
        assert.equal(new Set(passes).size, 1, `passes that took connections: ${[...new Set(passes)].join(',')}`);
      },
    );
  });

  describeWithServer(
    `eager_accept=false over ${secure ? 'TLS' : 'TCP'}`,
    { config: { ...tlsConfig, eagerAccept: false } },
    (server) => {
      it('the event loop alone takes one waiting connection per pass', async () => {
        const { passes, code } = await connectWhileBusy(server, secure);
        assert.equal(code, 0);
        assert.equal(passes.length, CONNECTIONS);
        assert.equal(new Set(passes).size, CONNECTIONS);
      });
    },
  );
}
