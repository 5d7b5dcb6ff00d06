/**
 * The reference external policy service: a small HTTPS server that answers CIEPS version
 * 1 requests from declarative rules (reference-service-rules.ts). It builds a template
 * certificate for the CSR it receives; Strongroom re-signs the template with the issuer
 * the answer names. Signed here with a throwaway key, the template's own signature means
 * nothing. Started by `strongroom policy-service`; tests start it in-process.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock } from '../../shared/clock.js';
import type { Clock } from '../../shared/clock.js';
import { parseDurationSeconds } from '../../shared/durations.js';
import { buildCertificate, createIssuerContext } from '../crypto/cert-builder.js';
import type { IssuerContext } from '../crypto/cert-builder.js';
import { parseCsr } from '../crypto/csr.js';
import type { ParsedCsr } from '../crypto/csr.js';
import type { GeneralName } from '../crypto/general-names.js';
import { commonName, encodeName, encodeSubject } from '../crypto/names.js';
import { decide, listValue } from './reference-service-rules.js';
import type { PolicyRules, RequestedNames } from './reference-service-rules.js';

export interface ReferenceServiceOptions {
  rules: PolicyRules;
  /** PEM certificate (chain) and key the server presents. */
  certPem: string;
  keyPem: string;
  /** When set, clients must present a certificate issued by one of these CAs (mutual TLS). */
  clientCaPem?: string;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Sees every parsed request body (for audit logs and tests). */
  onRequest?: (body: Record<string, unknown>) => void;
  /** One line per decision. */
  log?: (line: string) => void;
  /** Source of the template's validity; the system clock by default. */
  clock?: Clock;
}

export interface RunningReferenceService {
  url: string;
  port: number;
  close(): Promise<void>;
}

const MAX_REQUEST_BYTES = 1024 * 1024;
/** Templates start this much in the past, like the engine's own backdating. */
const BACKDATE_SECONDS = 30;

export async function startReferencePolicyService(opts: ReferenceServiceOptions): Promise<RunningReferenceService> {
  const templateSigner = throwawaySigner();
  const server = createServer(
    {
      cert: opts.certPem,
      key: opts.keyPem,
      ...(opts.clientCaPem ? { ca: opts.clientCaPem, requestCert: true, rejectUnauthorized: true } : {}),
    },
    (req, res) => {
      void handle(req, res, opts, templateSigner);
    },
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `https://${host}:${addr.port}/`,
    port: addr.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  opts: ReferenceServiceOptions,
  signer: IssuerContext,
): Promise<void> {
  const send = (status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  if (req.method !== 'POST') return send(405, { error: 'only POST is served' });
  let text: string;
  try {
    text = await readBody(req);
  } catch (err) {
    return send(413, { error: (err as Error).message });
  }
  let body: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
    body = parsed as Record<string, unknown>;
  } catch {
    return send(400, { error: 'the request is not a JSON object' });
  }
  opts.onRequest?.(body);
  const uuid = typeof body.request_uuid === 'string' ? body.request_uuid : '';
  if (body.request_version !== 1) return send(400, { error: 'only request_version 1 is understood' });
  const user = record(body.user_request_key_values);
  const vault = record(body.vault_request_values);
  const answer = (a: Record<string, unknown>): void => send(200, { request_uuid: uuid, ...a });

  let csr: ParsedCsr;
  try {
    csr = parseCsr(typeof user.csr === 'string' ? user.csr : '');
  } catch (err) {
    return answer({ error: `the request's CSR cannot be used: ${(err as Error).message}` });
  }
  const mode = String(vault.issuance_mode ?? '');
  const policy = String(vault.policy_name ?? '');
  let names: RequestedNames;
  try {
    names = requestedNames(user, csr);
  } catch (err) {
    return answer({ error: (err as Error).message });
  }
  const d = decide(opts.rules, policy, mode, names, String(vault.requested_issuer_id ?? ''));
  if (!d.allow) {
    opts.log?.(`deny policy=${JSON.stringify(policy)} mode=${mode}: ${d.message}`);
    return answer({ error: d.message });
  }
  const now = (opts.clock ?? systemClock).now().getTime();
  const sans: GeneralName[] = [
    ...d.dnsNames.map((value): GeneralName => ({ type: 'dns', value })),
    ...d.ipSans.map((value): GeneralName => ({ type: 'ip', value })),
  ];
  const ca = mode === 'ica';
  let pem: string;
  try {
    pem = buildCertificate(signer, {
      subject: encodeSubject({ commonName: d.commonName }),
      spki: csr.spkiDer,
      notBefore: new Date(now - BACKDATE_SECONDS * 1000),
      notAfter: new Date(now + d.ttlSeconds * 1000),
      ...(ca
        ? { basicConstraints: { ca: true }, keyUsage: ['CertSign', 'CRLSign'] }
        : { keyUsage: ['DigitalSignature', 'KeyEncipherment'], extKeyUsage: d.rule.extKeyUsage }),
      subjectAltNames: sans,
    }).pem;
  } catch (err) {
    return answer({ error: `the certificate cannot be built: ${(err as Error).message}` });
  }
  opts.log?.(
    `allow policy=${JSON.stringify(d.policy)} mode=${mode} names=${d.dnsNames.join(',')} ` +
      `ttl=${d.ttlSeconds}s issuer=${d.issuerRef}`,
  );
  answer({
    certificate: pem,
    issuer_ref: d.issuerRef,
    warnings: d.warnings,
    store_certificate: d.rule.storeCertificate,
    generate_lease: false,
  });
}

/** Names from the request parameters; a CSR's own names only when the request gives none. */
function requestedNames(user: Record<string, unknown>, csr: ParsedCsr): RequestedNames {
  let cn = typeof user.common_name === 'string' ? user.common_name.trim() : '';
  let dns = listValue(user.alt_names);
  const ips = listValue(user.ip_sans);
  if (cn === '' && dns.length === 0 && ips.length === 0) {
    cn = commonName(csr.subject);
    dns = (csr.extensions.subjectAltNames ?? []).filter((n) => n.type === 'dns').map((n) => n.value);
  }
  const ttl = user.ttl;
  const ttlSeconds = ttl === undefined || ttl === '' ? 0 : parseDurationSeconds(ttl as string | number, 'ttl');
  return { commonName: cn, dnsNames: dns, ipSans: ips, ttlSeconds };
}

function throwawaySigner(): IssuerContext {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return createIssuerContext({
    nameDer: encodeName([{ type: 'CN', value: 'reference policy service template' }]),
    keyId: randomBytes(20),
    privateKey,
  });
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_REQUEST_BYTES) {
        reject(new Error('request too large'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function record(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}
