import assert from 'node:assert/strict';
import { request as httpsRequest } from 'node:https';

/** A minimal JSON:API client over fetch for the TFE end-to-end tests. */
export interface TfeResponse {
  status: number;
  headers: Headers;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  text: string;
}

export class TfeHttp {
  constructor(
    readonly baseUrl: string,
    readonly token: string | undefined,
    /** The CA (PEM) to trust for an https server (fetch cannot be given one). */
    readonly ca?: string,
  ) {}

  as(token: string | undefined): TfeHttp {
    return new TfeHttp(this.baseUrl, token, this.ca);
  }

  async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<TfeResponse> {
    const h: Record<string, string> = { accept: 'application/vnd.api+json', ...headers };
    if (this.token !== undefined) h.authorization = `Bearer ${this.token}`;
    if (method !== 'GET' && h['content-type'] === undefined) h['content-type'] = 'application/vnd.api+json';
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const res =
      this.ca === undefined
        ? await fetch(`${this.baseUrl}${path}`, { method, headers: h, body: payload })
        : await httpsCall(`${this.baseUrl}${path}`, { method, headers: h, ca: this.ca }, payload);
    const text = await res.text();
    let parsed: unknown = undefined;
    if (text !== '') {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  }

  get(path: string, headers?: Record<string, string>) {
    return this.call('GET', path, undefined, headers);
  }
  post(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.call('POST', path, body, headers);
  }
  patch(path: string, body?: unknown) {
    return this.call('PATCH', path, body);
  }
  delete(path: string) {
    return this.call('DELETE', path);
  }
}

/** One request with node:https, answered in the shape of a fetch Response as far as TfeHttp reads it. */
function httpsCall(
  url: string,
  opts: { method: string; headers: Record<string, string>; ca: string },
  body: string | undefined,
): Promise<{ status: number; headers: Headers; text(): Promise<string> }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, opts, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const headers = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers.set(k, v);
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers, text: async () => text });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Asserts a JSON:API document response with the given status. */
export function assertDoc(res: TfeResponse, status: number): void {
  assert.equal(res.status, status, `expected ${status}, got ${res.status}: ${res.text}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/vnd\.api\+json/);
}

/** Asserts the exact JSON:API error envelope (one error, string status, optional pointer). */
export function assertError(res: TfeResponse, status: number, opts: { pointer?: string; detail?: RegExp } = {}): void {
  assertDoc(res, status);
  assert.ok(Array.isArray(res.body?.errors) && res.body.errors.length === 1, `error envelope: ${res.text}`);
  const e = res.body.errors[0];
  assert.equal(e.status, String(status));
  assert.equal(typeof e.title, 'string');
  assert.equal(typeof e.detail, 'string');
  if (opts.pointer) assert.deepEqual(e.source, { pointer: opts.pointer });
  if (opts.detail) assert.match(e.detail, opts.detail);
}

export const orgBody = (name: string, email = `${name}@example.com`) => ({
  data: { type: 'organizations', attributes: { name, email } },
});
export const wsBody = (name: string, attributes: Record<string, unknown> = {}) => ({
  data: { type: 'workspaces', attributes: { name, ...attributes } },
});
