/**
 * The one outbound call of external-policy issuance: a synchronous HTTPS POST of a JSON
 * body to the configured service, trusted either through a CA bundle (chain and host name
 * verified) or through pinned leaf certificates (the presented certificate must be one of
 * them, byte for byte), optionally with a client certificate. Redirects are never
 * followed; the status and body are returned for the caller to judge.
 */
import { request as httpRequest } from 'node:http';
import { isIP } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { TLSSocket } from 'node:tls';
import { pemDecodeAll } from '../crypto/pem.js';
import { ExternalPolicyFailure } from './external-policy.js';

export interface PolicyServiceEndpoint {
  url: string;
  timeoutMs: number;
  /** PEM CA bundle; the service's chain and host name are verified against it. */
  trustedCa?: string;
  /** PEM certificates; the service must present one of them exactly. */
  pinnedLeaves?: string;
  clientCertPem?: string;
  clientKeyPem?: string;
}

export interface PolicyServiceReply {
  status: number;
  location: string | undefined;
  body: string;
}

/** Largest answer read; a template certificate and a few warnings fit many times over. */
export const MAX_ANSWER_BYTES = 1024 * 1024;

/** POSTs `body` as JSON; throws ExternalPolicyFailure on connection, TLS, size or time problems. */
export async function postToPolicyService(ep: PolicyServiceEndpoint, body: string): Promise<PolicyServiceReply> {
  const url = new URL(ep.url);
  const { socket, ready } = openTls(url, ep);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ExternalPolicyFailure(`no answer within the timeout of ${ep.timeoutMs / 1000}s`)),
      ep.timeoutMs,
    );
  });
  const exchange = ready.then(() => sendRequest(socket, url, body));
  // The losing promise must not surface as an unhandled rejection.
  exchange.catch(() => undefined);
  try {
    return await Promise.race([exchange, timeout]);
  } finally {
    clearTimeout(timer);
    // Also ends a handshake or an answer still under way when the time ran out.
    socket.destroy();
  }
}

function openTls(url: URL, ep: PolicyServiceEndpoint): { socket: TLSSocket; ready: Promise<void> } {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const pinned = ep.pinnedLeaves
    ? pemDecodeAll(ep.pinnedLeaves)
        .filter((b) => b.label === 'CERTIFICATE')
        .map((b) => b.der)
    : undefined;
  const socket = tlsConnect({
    host,
    port: url.port === '' ? 443 : Number(url.port),
    ...(isIP(host) === 0 ? { servername: host } : {}),
    ALPNProtocols: ['http/1.1'],
    // Pinned mode judges the presented certificate itself below; CA mode lets OpenSSL verify chain and name.
    rejectUnauthorized: pinned === undefined,
    ...(ep.trustedCa ? { ca: ep.trustedCa } : {}),
    ...(ep.clientCertPem && ep.clientKeyPem ? { cert: ep.clientCertPem, key: ep.clientKeyPem } : {}),
  });
  const ready = new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', () => {
      if (pinned) {
        const presented = socket.getPeerCertificate().raw;
        if (!presented || !pinned.some((der) => der.equals(presented))) {
          socket.destroy();
          reject(
            new ExternalPolicyFailure(
              'the service presented a certificate that is not in trusted_leaf_certificate_bundle',
            ),
          );
          return;
        }
      }
      resolve();
    });
    // A persistent listener: a late error on this socket must never go unhandled.
    socket.on('error', (err) => reject(new ExternalPolicyFailure(`cannot reach ${url.origin}: ${err.message}`, err)));
  });
  return { socket, ready };
}

function sendRequest(socket: TLSSocket, url: URL, body: string): Promise<PolicyServiceReply> {
  return new Promise<PolicyServiceReply>((resolve, reject) => {
    const req = httpRequest(
      {
        method: 'POST',
        host: url.hostname,
        port: url.port,
        path: `${url.pathname}${url.search}`,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'content-length': Buffer.byteLength(body),
          connection: 'close',
        },
        createConnection: () => socket,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_ANSWER_BYTES) {
            res.destroy();
            reject(new ExternalPolicyFailure(`the answer is larger than ${MAX_ANSWER_BYTES} bytes`));
            return;
          }
          chunks.push(c);
        });
        res.on('end', () => {
          const loc = res.headers.location;
          resolve({
            status: res.statusCode ?? 0,
            location: typeof loc === 'string' ? loc : undefined,
            body: Buffer.concat(chunks).toString('utf8'),
          });
        });
        res.on('error', (err) => reject(new ExternalPolicyFailure(`the answer was cut off: ${err.message}`, err)));
      },
    );
    req.on('error', (err) => reject(new ExternalPolicyFailure(`the request failed: ${err.message}`, err)));
    req.end(body);
  });
}
