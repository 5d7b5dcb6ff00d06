import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import type { IncomingMessage, RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Readable } from 'node:stream';
import { CliError, EXIT_REMOTE, EXIT_USAGE } from './vault-api.js';
import type { ClientEnv } from './vault-api.js';

/**
 * The small HTTP client behind the `strongroom tfe workspace|state` commands: it talks to
 * a running server's /api/v2 as the Terraform CLI does, with a bearer token. HTTPS checks
 * the server against --ca-cert, STRONGROOM_CACERT or SSL_CERT_FILE when one is given (the
 * system's roots otherwise), so the same CA file serves Terraform and this command.
 */
export interface TfeTarget {
  addr: string;
  token: string;
  ca: Buffer | undefined;
}

const JSONAPI = 'application/vnd.api+json';

export function resolveTfeTarget(
  env: ClientEnv,
  flags: { address?: string; token?: string; caCert?: string },
): TfeTarget {
  const addr = (flags.address ?? env['STRONGROOM_ADDR'] ?? 'http://127.0.0.1:8200').replace(/\/+$/, '');
  if (!/^https?:\/\//.test(addr))
    throw new CliError(`invalid address "${addr}": expected http(s)://host:port`, EXIT_USAGE);
  const token = flags.token ?? env['STRONGROOM_TOKEN'] ?? env['TFE_TOKEN'] ?? '';
  if (!token) throw new CliError('no token: give --token or set STRONGROOM_TOKEN (or TFE_TOKEN)', EXIT_USAGE);
  const caFile = flags.caCert ?? env['STRONGROOM_CACERT'] ?? env['SSL_CERT_FILE'];
  let ca: Buffer | undefined;
  if (caFile && addr.startsWith('https:')) {
    try {
      ca = readFileSync(caFile);
    } catch (err) {
      throw new CliError(`cannot read the CA file ${caFile}: ${(err as Error).message}`, EXIT_USAGE);
    }
  }
  return { addr, token, ca };
}

interface Answer {
  status: number;
  body: Buffer;
}

/** One request; the body is JSON (sent as JSON:API), raw bytes, or a stream of `length` bytes. */
export function send(
  target: TfeTarget,
  method: string,
  url: string,
  body?: { json: unknown } | { stream: Readable; length: number },
  opts: { auth?: boolean } = {},
): Promise<Answer> {
  const u = new URL(url, target.addr);
  const headers: Record<string, string | number> = { accept: JSONAPI };
  if (opts.auth !== false) headers['authorization'] = `Bearer ${target.token}`;
  let payload: Buffer | undefined;
  if (body && 'json' in body) {
    payload = Buffer.from(JSON.stringify(body.json));
    headers['content-type'] = JSONAPI;
    headers['content-length'] = payload.length;
  } else if (body) {
    headers['content-type'] = 'application/octet-stream';
    headers['content-length'] = body.length;
  }
  const options: RequestOptions & { ca?: Buffer } = { method, headers, ...(target.ca ? { ca: target.ca } : {}) };
  const make = u.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<Answer>((resolve, reject) => {
    const req = make(u, options, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', (err) => reject(new CliError(`cannot reach ${u.origin}: ${(err as Error).message}`, EXIT_REMOTE)));
    if (payload) req.end(payload);
    else if (body && 'stream' in body) body.stream.pipe(req);
    else req.end();
  });
}

/** A JSON:API call that must succeed; returns the parsed document (undefined for an empty answer). */
export async function call(
  target: TfeTarget,
  method: string,
  path: string,
  json?: unknown,
): Promise<Record<string, unknown> | undefined> {
  const answer = await send(target, method, `/api/v2${path}`, json === undefined ? undefined : { json });
  return expectOk(answer, `${method} /api/v2${path}`);
}

export function expectOk(answer: Answer, what: string): Record<string, unknown> | undefined {
  const text = answer.body.toString('utf8');
  let doc: unknown;
  try {
    doc = text ? JSON.parse(text) : undefined;
  } catch {
    doc = undefined;
  }
  if (answer.status >= 200 && answer.status < 300) return doc as Record<string, unknown> | undefined;
  const errors = (doc as { errors?: Array<{ detail?: string; title?: string }> } | undefined)?.errors;
  const detail = errors?.map((e) => e.detail ?? e.title ?? '').join('; ') || text.slice(0, 200) || '(no details)';
  throw new CliError(`${what} answered ${answer.status}: ${detail}`, EXIT_REMOTE);
}
