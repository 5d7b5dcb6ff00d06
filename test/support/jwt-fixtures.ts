import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { generateKeyPairSync, sign } from 'node:crypto';
import type { KeyObject } from 'node:crypto';

/** A signing key of a test identity provider, with its public JWK. */
export interface TestSigningKey {
  alg: 'RS256' | 'ES256' | 'EdDSA';
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  publicPem: string;
}

export function signingKey(alg: TestSigningKey['alg'], kid: string): TestSigningKey {
  const pair =
    alg === 'RS256'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : alg === 'ES256'
        ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
        : generateKeyPairSync('ed25519');
  return {
    alg,
    kid,
    privateKey: pair.privateKey,
    publicKey: pair.publicKey,
    publicPem: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

/** A compact JWS of `claims` signed by `key` (header kid unless `kid: null`). */
export function mintJwt(
  key: TestSigningKey,
  claims: Record<string, unknown>,
  opts: { kid?: string | null } = {},
): string {
  const kid = opts.kid === undefined ? key.kid : opts.kid;
  const header = { alg: key.alg, typ: 'JWT', ...(kid === null ? {} : { kid }) };
  const enc = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const input = `${enc(header)}.${enc(claims)}`;
  const sig =
    key.alg === 'EdDSA'
      ? sign(null, Buffer.from(input), key.privateKey)
      : key.alg === 'ES256'
        ? sign('sha256', Buffer.from(input), { key: key.privateKey, dsaEncoding: 'ieee-p1363' })
        : sign('sha256', Buffer.from(input), key.privateKey);
  return `${input}.${sig.toString('base64url')}`;
}

/**
 * A local identity provider: /.well-known/openid-configuration and /jwks over HTTP, serving
 * whichever keys are in `keys` at the time of the request, and counting JWKS fetches.
 */
export interface TestJwksServer {
  url: string;
  issuer: string;
  keys: TestSigningKey[];
  jwksFetches: number;
  close(): Promise<void>;
}

export async function startJwksServer(
  keys: TestSigningKey[],
  opts: { tls?: { certPem: string; keyPem: string } } = {},
): Promise<TestJwksServer> {
  const state = { jwksFetches: 0 };
  let base = '';
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/jwks') {
      state.jwksFetches++;
      const body = {
        keys: out.keys.map((k) => ({ ...k.publicKey.export({ format: 'jwk' }), kid: k.kid, alg: k.alg, use: 'sig' })),
      };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      return;
    }
    if (req.url === '/.well-known/openid-configuration') {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(
          JSON.stringify({ issuer: base, jwks_uri: `${base}/jwks`, id_token_signing_alg_values_supported: ['RS256'] }),
        );
      return;
    }
    res.writeHead(404).end();
  };
  const server: Server = opts.tls
    ? (createHttpsServer({ cert: opts.tls.certPem, key: opts.tls.keyPem }, handler) as unknown as Server)
    : createServer(handler);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const addr = server.address();
  base = `${opts.tls ? 'https' : 'http'}://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const out: TestJwksServer = {
    url: base,
    issuer: base,
    keys,
    get jwksFetches() {
      return state.jwksFetches;
    },
    set jwksFetches(n: number) {
      state.jwksFetches = n;
    },
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
  return out;
}
