/**
 * A small RFC 8555 client for the load generator and the tests: JWS with any of the
 * server's algorithms, nonces, accounts (with EAB), orders, challenges, finalize,
 * download, revocation and key rollover. Written against the RFC, not against our server,
 * so it drives pebble just the same.
 */
import { createHash, createHmac, createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

export type AcmeAlg = 'RS256' | 'ES256' | 'ES384' | 'ES512' | 'EdDSA';

export interface AcmeKey {
  alg: AcmeAlg;
  privateKey: KeyObject;
  jwk: Record<string, unknown>;
  thumbprint: string;
}

/** ACME JSON documents as the tests and the load generator read them (shapes vary by resource). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Loose = any;

export interface AcmeResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: Loose;
}

export function generateAccountKey(alg: AcmeAlg = 'ES256'): AcmeKey {
  const { privateKey } =
    alg === 'RS256'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : alg === 'EdDSA'
        ? generateKeyPairSync('ed25519')
        : generateKeyPairSync('ec', { namedCurve: { ES256: 'P-256', ES384: 'P-384', ES512: 'P-521' }[alg] });
  return accountKeyOf(privateKey, alg);
}

export function accountKeyOf(privateKey: KeyObject, alg: AcmeAlg): AcmeKey {
  const full = createPublicKey(privateKey).export({ format: 'jwk' }) as Record<string, unknown>;
  const members =
    full.kty === 'RSA'
      ? { e: full.e, kty: 'RSA', n: full.n }
      : full.kty === 'EC'
        ? { crv: full.crv, kty: 'EC', x: full.x, y: full.y }
        : { crv: full.crv, kty: 'OKP', x: full.x };
  return {
    alg,
    privateKey,
    jwk: members,
    thumbprint: createHash('sha256').update(JSON.stringify(members)).digest('base64url'),
  };
}

const HASH: Record<AcmeAlg, string | null> = {
  RS256: 'sha256',
  ES256: 'sha256',
  ES384: 'sha384',
  ES512: 'sha512',
  EdDSA: null,
};

/** A flattened JWS (RFC 7515 section 7.2.2). `payload` undefined is POST-as-GET. */
export function jws(
  key: AcmeKey,
  header: Record<string, unknown>,
  payload: unknown,
): { protected: string; payload: string; signature: string } {
  const p = Buffer.from(JSON.stringify({ alg: key.alg, ...header })).toString('base64url');
  const body = payload === undefined ? '' : Buffer.from(JSON.stringify(payload)).toString('base64url');
  const signature = sign(HASH[key.alg], Buffer.from(`${p}.${body}`), {
    key: key.privateKey,
    dsaEncoding: 'ieee-p1363',
  }).toString('base64url');
  return { protected: p, payload: body, signature };
}

export function eabBinding(kid: string, hmacKeyB64url: string, url: string, accountJwk: Record<string, unknown>) {
  const p = Buffer.from(JSON.stringify({ alg: 'HS256', kid, url })).toString('base64url');
  const body = Buffer.from(JSON.stringify(accountJwk)).toString('base64url');
  const signature = createHmac('sha256', Buffer.from(hmacKeyB64url, 'base64url'))
    .update(`${p}.${body}`)
    .digest('base64url');
  return { protected: p, payload: body, signature };
}

export interface Directory {
  newNonce: string;
  newAccount: string;
  newOrder: string;
  revokeCert: string;
  keyChange: string;
  renewalInfo?: string;
  meta?: { externalAccountRequired?: boolean };
}

/** One HTTP(S) connection pool and a stock of nonces for one server. */
export class AcmeHttp {
  readonly #agent: HttpAgent | HttpsAgent;
  readonly #nonces: string[] = [];
  /** Where a URL is actually sent (another node behind the same name, in tests). */
  readonly #rewrite: (url: string) => string;
  directory: Directory | undefined;

  constructor(
    readonly directoryUrl: string,
    opts: { ca?: string | Buffer; maxSockets?: number; rewrite?: (url: string) => string } = {},
  ) {
    this.#rewrite = opts.rewrite ?? ((u) => u);
    const common = { keepAlive: true, maxSockets: opts.maxSockets ?? 64 };
    this.#agent = directoryUrl.startsWith('https:')
      ? new HttpsAgent({ ...common, ...(opts.ca ? { ca: opts.ca } : { rejectUnauthorized: false }) })
      : new HttpAgent(common);
  }

  request(method: string, url: string, body?: string, contentType?: string): Promise<AcmeResponse> {
    const u = new URL(this.#rewrite(url));
    const send = u.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = send(
        u,
        {
          method,
          agent: this.#agent,
          headers: body !== undefined ? { 'content-type': contentType ?? 'application/jose+json' } : {},
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const nonce = res.headers['replay-nonce'];
            if (typeof nonce === 'string') this.#nonces.push(nonce);
            let json: unknown;
            try {
              json = text === '' ? undefined : JSON.parse(text);
            } catch {
              json = undefined;
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
          });
          res.on('error', reject);
        },
      );
      // A server that stops answering fails the request instead of hanging the load generator.
      req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${url}: no answer in 30 s`)));
      req.on('error', reject);
      req.end(body);
    });
  }

  async getDirectory(): Promise<Directory> {
    if (!this.directory) {
      const r = await this.request('GET', this.directoryUrl);
      if (r.status !== 200) throw new Error(`directory: HTTP ${r.status} ${r.text}`);
      this.directory = r.json as Directory;
    }
    return this.directory;
  }

  async nonce(): Promise<string> {
    const n = this.#nonces.pop();
    if (n) return n;
    const d = await this.getDirectory();
    const r = await this.request('HEAD', d.newNonce);
    const fresh = r.headers['replay-nonce'];
    this.#nonces.length = 0;
    if (typeof fresh !== 'string') throw new Error(`newNonce: no Replay-Nonce (HTTP ${r.status})`);
    return fresh;
  }

  /** Signs and posts; retries once on badNonce as RFC 8555 section 6.5 asks clients to. */
  async post(
    url: string,
    key: AcmeKey,
    ident: { kid: string } | { jwk: true },
    payload: unknown,
  ): Promise<AcmeResponse> {
    for (let attempt = 0; ; attempt++) {
      const header = { nonce: await this.nonce(), url, ...('kid' in ident ? { kid: ident.kid } : { jwk: key.jwk }) };
      const r = await this.request('POST', url, JSON.stringify(jws(key, header, payload)));
      if (r.status === 400 && r.json?.type === 'urn:ietf:params:acme:error:badNonce' && attempt < 3) continue;
      return r;
    }
  }

  close(): void {
    this.#agent.destroy();
  }
}

/** An account on one server: the usual flows as one call each. */
export class AcmeAccountClient {
  kid = '';
  constructor(
    readonly http: AcmeHttp,
    public key: AcmeKey = generateAccountKey(),
  ) {}

  async register(opts: { contact?: string[]; eab?: { kid: string; hmac: string } } = {}): Promise<AcmeResponse> {
    const d = await this.http.getDirectory();
    const payload: Record<string, unknown> = { termsOfServiceAgreed: true };
    if (opts.contact) payload.contact = opts.contact;
    if (opts.eab) payload.externalAccountBinding = eabBinding(opts.eab.kid, opts.eab.hmac, d.newAccount, this.key.jwk);
    const r = await this.http.post(d.newAccount, this.key, { jwk: true }, payload);
    if (r.status === 200 || r.status === 201) this.kid = String(r.headers.location);
    return r;
  }

  post(url: string, payload?: unknown): Promise<AcmeResponse> {
    return this.http.post(url, this.key, { kid: this.kid }, payload);
  }

  async newOrder(identifiers: { type: string; value: string }[], extra: Record<string, unknown> = {}) {
    const d = await this.http.getDirectory();
    return this.post(d.newOrder, { identifiers, ...extra });
  }

  keyAuthorization(token: string): string {
    return `${token}.${this.key.thumbprint}`;
  }

  /** Polls `url` (POST-as-GET) until `done` says so; throws after `deadlineMs`. */
  async poll(url: string, done: (r: AcmeResponse) => boolean, deadlineMs = 30_000): Promise<AcmeResponse> {
    const end = Date.now() + deadlineMs;
    for (;;) {
      const r = await this.post(url);
      if (done(r)) return r;
      if (Date.now() > end) throw new Error(`polling ${url}: still ${r.status} ${r.text}`);
      const after = Number(r.headers['retry-after'] ?? 0);
      await new Promise((res) => setTimeout(res, Math.min(Math.max(after * 1000, 20), 1000)));
    }
  }
}

/** A CSR for `names` (DNS names) made with node:crypto's key and a tiny DER writer. */
export function makeCsr(
  names: string[],
  keyType: 'ec' | 'rsa' = 'ec',
  cn: string | null = names[0] ?? null,
): { der: Buffer; privateKey: KeyObject } {
  const { privateKey, publicKey } =
    keyType === 'ec'
      ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
      : generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { der: csrFor(names, privateKey, publicKey, cn), privateKey };
}

/** CSR with the first name as CN and every name as a SAN (dNSName or iPAddress). */
export function csrFor(
  names: string[],
  privateKey: KeyObject,
  publicKey: KeyObject,
  cn: string | null = names[0] ?? null,
): Buffer {
  const spki = publicKey.export({ format: 'der', type: 'spki' });
  const ipBytes = (v: string): Buffer | undefined =>
    /^\d+\.\d+\.\d+\.\d+$/.test(v) ? Buffer.from(v.split('.').map(Number)) : undefined;
  const sans = seq(
    ...names.map((n) => {
      const ip = ipBytes(n);
      return ip ? tlv(0x87, ip) : tlv(0x82, Buffer.from(n));
    }),
  );
  const ext = seq(seq(oid('2.5.29.17'), tlv(0x04, sans)));
  const attr = tlv(0xa0, seq(oid('1.2.840.113549.1.9.14'), tlv(0x31, ext)));
  const subject = cn ? seq(tlv(0x31, seq(oid('2.5.4.3'), tlv(0x0c, Buffer.from(cn))))) : seq();
  const info = seq(tlv(0x02, Buffer.from([0])), subject, spki, attr);
  const isEc = privateKey.asymmetricKeyType === 'ec';
  const alg = isEc ? seq(oid('1.2.840.10045.4.3.2')) : seq(oid('1.2.840.113549.1.1.11'), Buffer.from([5, 0]));
  const sig = sign('sha256', info, privateKey);
  return seq(info, alg, tlv(0x03, Buffer.concat([Buffer.from([0]), sig])));
}

function len(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v >>= 8) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}
const tlv = (tag: number, body: Buffer): Buffer => Buffer.concat([Buffer.from([tag]), len(body.length), body]);
const seq = (...parts: Buffer[]): Buffer => tlv(0x30, Buffer.concat(parts));
function oid(text: string): Buffer {
  const p = text.split('.').map(Number);
  const out = [40 * p[0]! + p[1]!];
  for (const v of p.slice(2)) {
    const b = [v & 0x7f];
    for (let x = v >> 7; x > 0; x >>= 7) b.unshift((x & 0x7f) | 0x80);
    out.push(...b);
  }
  return tlv(0x06, Buffer.from(out));
}
