/**
 * The DNS server and http-01 responder of the ACME benchmark, on a thread of their own so
 * that the load generator's busy event loop does not delay the answers both servers'
 * validations wait for (pebble's DNS client gives up after 2 s and fails the order).
 * Messages: { set: token, value } (acknowledged with { ack: id }) and { delete: token }.
 */
import { createServer } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';
import { startBenchDns } from './acme-load.js';

const port = parentPort!;
const { zone, ip } = workerData as { zone: string; ip: string };
const tokens = new Map<string, string>();

const dns = await startBenchDns(zone, ip);
const server = createServer((req, res) => {
  const token = (req.url ?? '').slice('/.well-known/acme-challenge/'.length);
  const v = tokens.get(token);
  res.writeHead(v ? 200 : 404, { 'content-type': 'text/plain' }).end(v ?? '');
});
server.keepAliveTimeout = 30_000;
try {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(80, ip, resolve);
  });
  port.postMessage({ ready: true, dnsAddress: dns.address });
} catch (err) {
  await dns.close();
  port.postMessage({ ready: false, error: (err as Error).message });
}

port.on('message', (m: { id?: number; set?: string; value?: string; delete?: string; close?: true }) => {
  if (m.set !== undefined) {
    tokens.set(m.set, m.value ?? '');
    port.postMessage({ ack: m.id });
  } else if (m.delete !== undefined) tokens.delete(m.delete);
  else if (m.close) {
    server.closeAllConnections();
    server.close(() => void dns.close().then(() => port.close()));
  }
});
