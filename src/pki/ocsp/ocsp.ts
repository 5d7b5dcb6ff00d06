/**
 * Rules of the OCSP responder (RFC 6960) of a PKI mount: which issuer answers a CertID,
 * the validity window of an answer, when a pre-signed answer may be served again, and
 * how HTTP caches may keep it. The DER codec is in crypto/ocsp.ts.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#ocsp-request
 */
import { createHash } from 'node:crypto';
import { TAG, decodeBitString, parseDer } from '../crypto/der.js';
import type { OcspCertId } from '../crypto/ocsp.js';
import type { HashName } from '../crypto/signature.js';
import type { CrlConfig } from '../revocation/revocation.js';
import { parseDurationSeconds } from '../../shared/durations.js';

/** The OCSP part of config/crl (reference 9.3). */
export interface OcspSettings {
  /** `ocsp_disable`: every request is answered `unauthorized`. */
  disabled: boolean;
  /** `ocsp_expiry` in seconds: nextUpdate = thisUpdate + this; 0 writes no nextUpdate. */
  expirySeconds: number;
}

/** The OCSP settings of a mount's config/crl (its defaults: enabled, 12h). */
export function ocspSettings(config: Pick<CrlConfig, 'ocspDisable' | 'ocspExpiry'>): OcspSettings {
  return { disabled: config.ocspDisable, expirySeconds: parseDurationSeconds(config.ocspExpiry, 'ocsp_expiry') };
}

/** What the responder needs to know about an issuer of the mount. */
export interface ResponderCandidate {
  issuerId: string;
  /** Whether the mount holds the issuer's key. */
  hasKey: boolean;
  /** Whether the issuer has the `ocsp-signing` usage. */
  ocspSigning: boolean;
}

export type ResponderChoice<C extends ResponderCandidate> =
  /** The issuer named by the CertID signs an answer about the serial. */
  | { kind: 'issuer'; candidate: C }
  /** No issuer of the mount is named by the CertID: `unknown`, signed by the default issuer. */
  | { kind: 'unknown'; candidate: C }
  /** Nobody may sign: `unauthorized` (HTTP 401), as Vault answers. */
  | { kind: 'unauthorized' };

/**
 * Picks the signer for a request (reference 11): among the issuers whose name and key
 * hashes match the CertID, the one that recorded the certificate when it is among them,
 * else the first with a key and `ocsp-signing`. Matching issuers that may not sign give
 * `unauthorized`; no match at all gives `unknown` from the default issuer when it may sign.
 */
export function chooseResponder<C extends ResponderCandidate>(
  matching: readonly C[],
  opts: { recordedIssuerId?: string; defaultIssuer?: C },
): ResponderChoice<C> {
  const usable = (c: C | undefined): c is C => c !== undefined && c.hasKey && c.ocspSigning;
  if (matching.length > 0) {
    const recorded = matching.find((c) => c.issuerId === opts.recordedIssuerId);
    const pick = usable(recorded) ? recorded : matching.find(usable);
    return pick ? { kind: 'issuer', candidate: pick } : { kind: 'unauthorized' };
  }
  return usable(opts.defaultIssuer) ? { kind: 'unknown', candidate: opts.defaultIssuer } : { kind: 'unauthorized' };
}

/** thisUpdate and nextUpdate of an answer signed at `now`. */
export function answerWindow(now: Date, settings: OcspSettings): { thisUpdate: Date; nextUpdate: Date | undefined } {
  return {
    thisUpdate: now,
    nextUpdate: settings.expirySeconds > 0 ? new Date(now.getTime() + settings.expirySeconds * 1000) : undefined,
  };
}

/** How long an answer without nextUpdate is reused: such an answer says newer information is always available. */
export const NO_NEXT_UPDATE_REUSE_MS = 60_000;
/** Longest reuse of a pre-signed answer, whatever ocsp_expiry says. */
export const MAX_REUSE_MS = 3600_000;

/**
 * Until when a signed answer may be served again (while the certificate's revocation
 * status is unchanged): for half of its validity, at most an hour, so a client always gets
 * an answer with most of its window left and a changed ocsp_expiry shows within the hour.
 */
export function reuseUntil(thisUpdate: Date, nextUpdate: Date | undefined): number {
  const t = thisUpdate.getTime();
  if (!nextUpdate) return t + NO_NEXT_UPDATE_REUSE_MS;
  return t + Math.min(MAX_REUSE_MS, Math.floor((nextUpdate.getTime() - t) / 2));
}

/** HTTP dates of a signed answer, formatted once when it is signed. */
export interface AnswerDates {
  lastModified: string;
  /** undefined without nextUpdate. */
  expires: string | undefined;
  nextUpdateMs: number | undefined;
}

export function answerDates(thisUpdate: Date, nextUpdate: Date | undefined): AnswerDates {
  return {
    lastModified: thisUpdate.toUTCString(),
    expires: nextUpdate?.toUTCString(),
    nextUpdateMs: nextUpdate?.getTime(),
  };
}

/**
 * HTTP caching headers of an answer (RFC 5019 6.2): an answer without a nonce may be kept
 * until its nextUpdate; one with a nonce, or without nextUpdate, must not be reused.
 */
export function cacheHeaders(o: { nowMs: number; dates: AnswerDates; hasNonce: boolean }): Record<string, string> {
  const { dates } = o;
  if (o.hasNonce || dates.nextUpdateMs === undefined || dates.expires === undefined)
    return { 'cache-control': 'no-cache, no-store' };
  const maxAge = Math.max(0, Math.floor((dates.nextUpdateMs - o.nowMs) / 1000));
  return {
    'cache-control': `max-age=${maxAge}, public, no-transform, must-revalidate`,
    'last-modified': dates.lastModified,
    expires: dates.expires,
  };
}

/**
 * Signature options for an issuer's `revocation_signature_algorithm` (Go names such as
 * `SHA384WithRSA` or `ECDSAWithSHA512`; '' = the key's default). RSA-PSS is signed as
 * PKCS#1 v1.5 with the same hash, as Vault does for OCSP (reference 11).
 */
export function ocspSignatureOptions(revocationSignatureAlgorithm: string): { signatureBits: number } {
  const m = /SHA(256|384|512)/i.exec(revocationSignatureAlgorithm);
  return { signatureBits: m ? Number(m[1]) : 0 };
}

/** Vault's request size limit (reference 11): larger requests are malformed. */
export const MAX_OCSP_REQUEST_BYTES = 2048;

/**
 * The name and key hashes of one issuer under each CertID hash algorithm, computed on
 * first use: a CertID names the issuer when both match (RFC 6960 4.1.1).
 */
export class CertIdMatcher {
  readonly #hashes = new Map<HashName, { name: Buffer; key: Buffer }>();
  readonly #keyBits: Buffer;
  /** `nameDer`: the issuer's subject; `spkiDer`: its SubjectPublicKeyInfo (the key hash covers only the key bits). */
  constructor(
    private readonly nameDer: Buffer,
    spkiDer: Buffer,
  ) {
    const r = parseDer(spkiDer).children();
    r.expect(TAG.SEQUENCE, 'AlgorithmIdentifier');
    this.#keyBits = decodeBitString(r.expect(TAG.BIT_STRING, 'subjectPublicKey')).bytes;
  }

  matches(id: Pick<OcspCertId, 'hash' | 'issuerNameHash' | 'issuerKeyHash'>): boolean {
    if (!id.hash) return false;
    let h = this.#hashes.get(id.hash);
    if (!h) {
      h = {
        name: createHash(id.hash).update(this.nameDer).digest(),
        key: createHash(id.hash).update(this.#keyBits).digest(),
      };
      this.#hashes.set(id.hash, h);
    }
    return h.key.equals(id.issuerKeyHash) && h.name.equals(id.issuerNameHash);
  }
}
