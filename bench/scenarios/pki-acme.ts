import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { AcmeHttp } from '../lib/acme-client.js';
import { AcmeLoad, startResponderThread } from '../lib/acme-load.js';
import { api } from '../lib/api.js';
import { compareRounds, ratiosOf } from '../lib/compare.js';
import type { Contender } from '../lib/compare.js';
import { ensureDebianCommand } from '../lib/peers.js';
import { opensslSelfSigned } from '../lib/pki-peers.js';
import { PKI_MOUNT, ROLE_EC, benchPki } from '../lib/pki.js';
import { freePort } from '../lib/processes.js';
import { Skip } from '../lib/types.js';
import type { RunContext, Scenario } from '../lib/types.js';

/** The responder's address: a loopback address of its own, so port 80 is free whatever else runs. */
const RESPONDER_IP = '127.77.0.1';
const ZONE = 'acme.bench.test';

/** pebble over TLS with a throwaway certificate, validating against the bench DNS server and port 80. */
async function startPebble(ctx: RunContext, dnsAddress: string): Promise<{ directoryUrl: string; pid: number }> {
  const bin = ensureDebianCommand(ctx, 'pebble', ['pebble']);
  const dir = join(ctx.tmpDir, 'pebble');
  mkdirSync(dir, { recursive: true });
  const tls = opensslSelfSigned(dir, 'pebble', '/CN=pebble', 2, ['-addext', 'subjectAltName=IP:127.0.0.1']);
  const port = await freePort();
  const config = {
    pebble: {
      listenAddress: `127.0.0.1:${port}`,
      managementListenAddress: `127.0.0.1:${await freePort()}`,
      certificate: tls.cert,
      privateKey: tls.key,
      httpPort: 80,
      tlsPort: 443,
      ocspResponderURL: '',
      externalAccountBindingRequired: false,
    },
  };
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  // No artificial validation delay, no rejected nonces, no reused authorizations: every order is validated.
  const env = { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0', PEBBLE_AUTHZREUSE: '0' };
  const m = ctx.group.start('pebble', bin, ['-config', join(dir, 'config.json'), '-dnsserver', dnsAddress], {
    cwd: dir,
    env,
  });
  const directoryUrl = `https://127.0.0.1:${port}/dir`;
  const probe = new AcmeHttp(directoryUrl);
  for (let i = 0; ; i++) {
    if (m.child.exitCode !== null) throw new Error(`pebble exited:\n${m.output()}`);
    try {
      await probe.getDirectory();
      break;
    } catch (err) {
      if (i > 100) throw err;
      await sleep(100);
    }
  }
  probe.close();
  return { directoryUrl, pid: m.pid };
}

export const pkiAcmeOrder: Scenario = {
  name: 'pki-acme-order',
  title: `Complete ACME issuances on /v1/${PKI_MOUNT}/roles/:role/acme (order, http-01, finalize, download)`,
  target: '>= 150 orders/s and >= 1.0x pebble',
  peer: 'pebble (PEBBLE_VA_NOSLEEP=1, no nonce rejection, no authorization reuse), same load generator',
  defaultConnections: 64,
  notes:
    'Each connection is one ACME account running complete issuances in a loop: newOrder for a fresh name, the ' +
    'authorization, the http-01 challenge answered by a local responder on port 80 (both servers resolve the name ' +
    'through the same small DNS server), polls the order every 5 ms until ready, finalize with a P-256 CSR, and the ' +
    'PEM chain. For pebble the load generator never lets a newOrder overlap an authorization fetch: pebble 2.4 ' +
    'deadlocks on its own locks when they do (every request hangs from then on). ' +
    'One order is one "request" in the table. Strongroom stores every account, nonce, order, authorization and ' +
    'certificate durably (SQLite synchronous=FULL, or PostgreSQL) and applies the role as `sign` does; pebble keeps ' +
    'everything in memory. pebble only speaks HTTPS; Strongroom is measured over plain HTTP on keep-alive ' +
    'connections. The responder and the DNS server run on a thread of their own in the load generator, so that its ' +
    'busy event loop does not delay the validations; they all share the machine with the servers.',
  async run(ctx) {
    const sr = await ctx.strongroom();
    await benchPki(sr);
    let responder: Awaited<ReturnType<typeof startResponderThread>>;
    try {
      responder = await startResponderThread(ZONE, RESPONDER_IP);
    } catch (err) {
      throw new Skip(`peer responder unavailable: cannot bind ${RESPONDER_IP}:80 (${(err as Error).message})`);
    }
    const dns = { address: responder.dnsAddress };
    const loads: AcmeLoad[] = [];
    try {
      await api(sr, 'vault', 'POST', `/v1/${PKI_MOUNT}/config/cluster`, {
        body: { path: `${sr.url}/v1/${PKI_MOUNT}` },
      });
      await api(sr, 'vault', 'POST', `/v1/${PKI_MOUNT}/config/acme`, {
        body: { enabled: true, dns_resolver: dns.address },
      });
      const accounts = ctx.connections;
      const ours = new AcmeLoad({
        directoryUrl: `${sr.url}/v1/${PKI_MOUNT}/roles/${ROLE_EC}/acme/directory`,
        tokens: responder.tokens,
        zone: ZONE,
        accounts,
      });
      loads.push(ours);
      await ours.measure(ctx.opts.smoke ? 1 : 2);
      const contenders: Contender[] = [
        { label: 'Strongroom', kind: 'strongroom', pid: sr.pid, measure: (s) => ours.measure(s) },
      ];
      const facts: { label: string; value: string }[] = [{ label: 'accounts', value: String(accounts) }];
      try {
        const pebble = await startPebble(ctx, dns.address);
        const theirs = new AcmeLoad({
          directoryUrl: pebble.directoryUrl,
          tokens: responder.tokens,
          zone: ZONE,
          accounts,
          separateNewOrderFromAuthz: true,
        });
        loads.push(theirs);
        await theirs.measure(ctx.opts.smoke ? 1 : 2);
        contenders.push({ label: 'pebble', kind: 'peer', pid: pebble.pid, measure: (s) => theirs.measure(s) });
      } catch (err) {
        if (!(err instanceof Skip)) throw err;
        facts.push({ label: 'peer skipped', value: err.message });
      }
      const rows = await compareRounds(ctx, contenders);
      const ratios = ratiosOf(rows, 'req/s');
      const mine = rows.find((r) => r.kind === 'strongroom');
      const vsPebble = ratios.find((r) => r.against === 'pebble')?.value;
      const rate = mine?.median.reqPerSec ?? 0;
      for (const r of rows)
        if (r.cpuMicrosPerRequest !== null)
          facts.push({
            label: `${r.label} server CPU per order`,
            value: `${(r.cpuMicrosPerRequest / 1000).toFixed(2)} ms`,
          });
      const verdict = {
        met: rate >= 150 && (vsPebble === undefined || vsPebble >= 1.0),
        detail:
          `${rate.toFixed(0)} orders/s (target >= 150)` +
          (vsPebble !== undefined ? `, ${vsPebble.toFixed(2)}x pebble (target >= 1.0x)` : ', pebble not measured'),
      };
      return { rows, ratios, facts, verdict };
    } finally {
      for (const l of loads) l.close();
      await responder.close();
    }
  },
};
