import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { KeyObject } from 'node:crypto';
import { invalid } from '../../../shared/errors.js';
import type { JwtConfig } from './jwt.js';
import { keyFromJwk, keyFromPem } from './jwt-token.js';

/**
 * Where a JWT method's verification keys come from: the PEMs of jwt_validation_pubkeys, a
 * JWKS URL, or the jwks_uri of an OIDC discovery document. Remote key sets are cached per
 * mount and fetched again when a token names a key id the cache does not have, at most once
 * per REFRESH_MIN_MS (concurrent logins share one fetch), so a flood of tokens with made-up
 * key ids costs the identity provider nothing and the server one fetch per interval.
 */
export const REFRESH_MIN_MS = 5000;
const FETCH_TIMEOUT_MS = 10_000;
const MAX_BYTES = 1024 * 1024;

export interface KeySet {
  /** Keys by kid; keys without a kid are under ''. */
  byKid: Map<string, KeyObject[]>;
  all: KeyObject[];
  /** The issuer the discovery document names (empty for other sources). */
  discoveredIssuer: string;
}

interface Entry {
  fingerprint: string;
  set: KeySet | undefined;
  fetchedAt: number;
  inflight: Promise<KeySet> | undefined;
}

export class JwtKeySource {
  readonly #cache = new Map<string, Entry>();
  /** Fetches made (for tests and metrics). */
  fetches = 0;

  constructor(private readonly deps: { nowMs: () => number }) {}

  /**
   * Keys that may have signed a token with `kid`: the cached set, refreshed first when the
   * kid is unknown (subject to the minimum interval).
   */
  async keysFor(
    mountId: string,
    config: JwtConfig,
    kid: string | undefined,
  ): Promise<{ keys: KeyObject[]; set: KeySet }> {
    if (config.jwt_validation_pubkeys.length > 0) {
      const keys = config.jwt_validation_pubkeys.map(keyFromPem);
      return { keys, set: { byKid: new Map([['', keys]]), all: keys, discoveredIssuer: '' } };
    }
    const fingerprint = JSON.stringify([
      config.jwks_url,
      config.oidc_discovery_url,
      config.jwks_ca_pem,
      config.oidc_discovery_ca_pem,
    ]);
    let entry = this.#cache.get(mountId);
    if (!entry || entry.fingerprint !== fingerprint) {
      entry = { fingerprint, set: undefined, fetchedAt: 0, inflight: undefined };
      this.#cache.set(mountId, entry);
    }
    let set = entry.set ?? (await this.#refresh(entry, config));
    if (kid !== undefined && !set.byKid.has(kid) && this.deps.nowMs() - entry.fetchedAt >= REFRESH_MIN_MS)
      set = await this.#refresh(entry, config);
    const keys = kid === undefined ? set.all : (set.byKid.get(kid) ?? []);
    return { keys, set };
  }

  /** Checks a configuration by fetching its keys once (config writes do this, as Vault does). */
  async probe(config: JwtConfig): Promise<void> {
    if (config.jwt_validation_pubkeys.length > 0) {
      config.jwt_validation_pubkeys.forEach(keyFromPem);
      return;
    }
    await load(config);
  }

  forget(mountId: string): void {
    this.#cache.delete(mountId);
  }

  #refresh(entry: Entry, config: JwtConfig): Promise<KeySet> {
    if (entry.inflight) return entry.inflight;
    this.fetches++;
    const p = load(config).then(
      (set) => {
        entry.set = set;
        entry.fetchedAt = this.deps.nowMs();
        entry.inflight = undefined;
        return set;
      },
      (err: unknown) => {
        entry.fetchedAt = this.deps.nowMs();
        entry.inflight = undefined;
        if (entry.set) return entry.set;
        throw err;
      },
    );
    entry.inflight = p;
    return p;
  }
}

async function load(config: JwtConfig): Promise<KeySet> {
  let jwksUrl = config.jwks_url;
  let ca = config.jwks_ca_pem;
  let discoveredIssuer = '';
  if (config.oidc_discovery_url !== '') {
    const base = config.oidc_discovery_url.replace(/\/+$/, '');
    const doc = await fetchJson(`${base}/.well-known/openid-configuration`, config.oidc_discovery_ca_pem).catch(
      (err: Error) => {
        throw invalid(`error checking oidc discovery URL: ${err.message}`, 'oidc_discovery_url');
      },
    );
    if (typeof doc['jwks_uri'] !== 'string')
      throw invalid('error checking oidc discovery URL: no jwks_uri in the discovery document', 'oidc_discovery_url');
    jwksUrl = doc['jwks_uri'];
    ca = config.oidc_discovery_ca_pem;
    discoveredIssuer = typeof doc['issuer'] === 'string' ? doc['issuer'] : '';
  }
  const jwks = await fetchJson(jwksUrl, ca).catch((err: Error) => {
    throw invalid(`error checking jwks URL: ${err.message}`, 'jwks_url');
  });
  const list = Array.isArray(jwks['keys']) ? (jwks['keys'] as unknown[]) : undefined;
  if (!list) throw invalid('error checking jwks URL: the answer is not a JSON Web Key Set', 'jwks_url');
  const byKid = new Map<string, KeyObject[]>();
  const all: KeyObject[] = [];
  for (const raw of list) {
    if (typeof raw !== 'object' || raw === null) continue;
    const jwk = raw as Record<string, unknown>;
    const key = keyFromJwk(jwk);
    if (!key) continue;
    const kid = typeof jwk['kid'] === 'string' ? jwk['kid'] : '';
    byKid.set(kid, [...(byKid.get(kid) ?? []), key]);
    all.push(key);
  }
  return { byKid, all, discoveredIssuer };
}

/** GET a JSON document over http(s), trusting `caPem` (when given) instead of the system store. */
function fetchJson(url: string, caPem: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const opts = { method: 'GET', timeout: FETCH_TIMEOUT_MS, headers: { accept: 'application/json' } };
    const req =
      u.protocol === 'https:'
        ? httpsRequest(u, { ...opts, ...(caPem ? { ca: caPem } : {}) })
        : u.protocol === 'http:'
          ? httpRequest(u, opts)
          : undefined;
    if (!req) {
      reject(new Error(`unsupported URL scheme ${u.protocol}`));
      return;
    }
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (d: Buffer) => {
        size += d.length;
        if (size > MAX_BYTES) req.destroy(new Error('answer too large'));
        else chunks.push(d);
      });
      res.on('end', () => {
        if ((res.statusCode ?? 0) !== 200) {
          reject(new Error(`status ${res.statusCode ?? 0} from ${url}`));
          return;
        }
        try {
          const v: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not a JSON object');
          resolve(v as Record<string, unknown>);
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      });
      res.on('error', reject);
    });
    req.end();
  });
}
