/**
 * In-process micro-benchmark of what one audited /v1 request costs the event loop: the
 * request and response entries of a `sign` (CSR in, certificate and chain out) formatted
 * with their strings HMAC'd, and both written to a file device through its grouped writes,
 * 64 requests in flight at a time. The CSR and certificate differ per request; the token and
 * CA chain repeat, as they do. One core, no HTTP.
 *
 *   npx tsc -p . && node dist/bench/micro/audit-entry.js [requests]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { auditHasher, formatEntry } from '../../src/audit/audit-entry.js';
import type { VaultAuditRecord } from '../../src/audit/audit-entry.js';
import { FileSink } from '../../src/audit/audit-sinks.js';

const n = Number(process.argv[2] ?? 50_000);
const pem = (label: string, bytes: number) =>
  `-----BEGIN ${label}-----\n${Buffer.alloc(bytes, 7)
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')}\n-----END ${label}-----`;
const csr = pem('CERTIFICATE REQUEST', 300);
const cert = pem('CERTIFICATE', 650);
const ca = pem('CERTIFICATE', 500);
const hash = auditHasher('3f0a9c1e-2b7d-4c55-9e1a-0d2f6b8c7a41');
const format = { hash, logRaw: false, hmacAccessor: true, elideListResponses: false, prefix: '' };

/** The token check's cached answer, the same object for every request of the caller. */
const CALLER = {};

/** What a request's two entries share (as the /v1 pipeline passes them). */
function shared(i: number): Pick<VaultAuditRecord, 'auth' | 'request' | 'memo'> {
  return {
    memo: new Map(),
    auth: {
      clientToken: 'hvs.CAESIJ1bench0token0value0000000000000000',
      accessor: 'k3Vb0accessor000000000000',
      displayName: 'token-bench',
      policies: ['sign'],
      tokenPolicies: ['sign'],
      metadata: null,
      tokenType: 'service',
      tokenTtl: 3600,
      key: CALLER,
    },
    request: {
      id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      operation: 'update',
      mountPoint: 'pki/',
      mountType: 'pki',
      mountAccessor: 'pki_5f1c2a3b',
      path: 'pki/sign/web',
      data: { csr: `${csr}${i}`, common_name: 'a.example.com', ttl: '1h' },
      remoteAddress: '127.0.0.1',
      remotePort: 50000,
      clientToken: 'hvs.CAESIJ1bench0token0value0000000000000000',
      clientTokenAccessor: 'k3Vb0accessor000000000000',
    },
  };
}

function record(i: number, type: 'request' | 'response', parts: ReturnType<typeof shared>): VaultAuditRecord {
  return {
    type,
    time: new Date(),
    ...parts,
    ...(type === 'response'
      ? {
          response: {
            status: 200,
            data: {
              certificate: `${cert}${i}`,
              issuing_ca: ca,
              ca_chain: [ca],
              serial_number: '3a:4f:10:22:91:7c:aa:01:5e:6b:0c:19:d2:44:8f:e3:11:09:7b:c5',
              expiration: 1764150000,
            },
            warnings: null,
            auth: null,
          },
        }
      : {}),
    error: '',
    isList: false,
  };
}

const dir = mkdtempSync(join(tmpdir(), 'audit-micro-'));
const sink = new FileSink(join(dir, 'audit.log'), 0o600);
const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
for (let done = 0; done < n; done += 64) {
  await Promise.all(
    Array.from({ length: Math.min(64, n - done) }, async (_, j) => {
      const parts = shared(done + j);
      await sink.write(formatEntry(record(done + j, 'request', parts), format));
      await sink.write(formatEntry(record(done + j, 'response', parts), format));
    }),
  );
}
const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
const cpu = process.cpuUsage(cpu0);
await sink.close();
rmSync(dir, { recursive: true, force: true });
const perRequestUs = ((cpu.user + cpu.system) / n).toFixed(1);
console.log(`${n} audited requests: ${perRequestUs} µs of CPU each (wall ${((wallMs / n) * 1000).toFixed(1)} µs)`);
