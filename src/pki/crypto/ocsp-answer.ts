/**
 * Answering OCSP requests with a per-process cache. An answer is one SingleResponse per
 * CertID, encoded once and reusable until its cache entry expires; without a nonce the
 * whole signed response is reusable, so a repeated question costs a Map lookup instead of
 * a signature.
 */
import { OCSP_STATUS, ocspErrorResponse } from './ocsp.js';
import type { OcspCertId, OcspCertStatus, OcspRequest, OcspResponder } from './ocsp.js';

/**
 * Answers cached per CertID: the signed response for nonce-less requests and the
 * SingleResponse for the others. Entries expire on the clock passed in and are dropped
 * by serial when a certificate is revoked; the oldest go first beyond `maxEntries`.
 */
export class OcspCache {
  readonly #entries = new Map<string, { until: number; serialHex: string; response?: Buffer; single?: Buffer }>();
  constructor(private readonly maxEntries = 100_000) {}

  static key(id: OcspCertId): string {
    return id.der.toString('latin1');
  }
  get(id: OcspCertId, nowMs: number): { response?: Buffer; single?: Buffer } | undefined {
    const k = OcspCache.key(id);
    const e = this.#entries.get(k);
    if (!e) return undefined;
    if (e.until <= nowMs) {
      this.#entries.delete(k);
      return undefined;
    }
    return e;
  }
  set(id: OcspCertId, untilMs: number, value: { response?: Buffer; single?: Buffer }): void {
    const k = OcspCache.key(id);
    const prev = this.#entries.get(k);
    this.#entries.delete(k);
    this.#entries.set(k, {
      until: untilMs,
      serialHex: id.serialHex,
      ...(prev && prev.until === untilMs ? prev : {}),
      ...value,
    });
    if (this.#entries.size > this.maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
  }
  /** Forgets every answer about `serialHex` (call after revoking it). */
  invalidateSerial(serialHex: string): void {
    for (const [k, e] of this.#entries) if (e.serialHex === serialHex) this.#entries.delete(k);
  }
  clear(): void {
    this.#entries.clear();
  }
  get size(): number {
    return this.#entries.size;
  }
}

export interface OcspAnswerContext {
  /** The responder for a CertID's issuer, or undefined when no known CA matches. */
  findResponder(id: OcspCertId): OcspResponder | undefined;
  /** Signs `unknown` for CertIDs no CA matches; without it such requests get `unauthorized`. */
  defaultResponder?: OcspResponder;
  /** The status of a certificate of `responder`'s CA. */
  status(id: OcspCertId, responder: OcspResponder): OcspCertStatus | Promise<OcspCertStatus>;
  now: Date;
  /** nextUpdate = thisUpdate + this; 0 or undefined writes no nextUpdate. */
  nextUpdateMs?: number;
  /** How long an answer may be served from `cache` (capped at half of nextUpdateMs when set). */
  cacheForMs?: number;
  cache?: OcspCache;
  includeCertificate?: boolean;
}

/**
 * Answers a parsed request: every CertID the first one's CA signs for is looked up, the
 * others are `unknown`; the nonce is echoed. A nonce-less single-CertID request is served
 * whole from the cache when possible; otherwise cached SingleResponses are reused and only
 * the signature is fresh.
 */
export async function answerOcspRequest(req: OcspRequest, ctx: OcspAnswerContext): Promise<Buffer> {
  const first = req.certIds[0]!;
  const matched = ctx.findResponder(first);
  const responder = matched ?? ctx.defaultResponder;
  if (!responder) return ocspErrorResponse(OCSP_STATUS.unauthorized);
  const nowMs = ctx.now.getTime();
  const cache = ctx.cache;
  const wholeCacheable = cache !== undefined && !req.nonceExtension && req.certIds.length === 1;
  if (wholeCacheable) {
    const hit = cache.get(first, nowMs)?.response;
    if (hit) return hit;
  }
  let ttl = ctx.cacheForMs ?? 60_000;
  if (ctx.nextUpdateMs) ttl = Math.min(ttl, Math.floor(ctx.nextUpdateMs / 2));
  const times = { thisUpdate: ctx.now, nextUpdate: ctx.nextUpdateMs ? new Date(nowMs + ctx.nextUpdateMs) : undefined };
  const singles: Buffer[] = [];
  for (const id of req.certIds) {
    const mine = matched !== undefined && (id === first || responder.matches(id));
    // Only answers about this responder's CA come from the cache: another CA's would not verify under this signer.
    const cached = mine ? cache?.get(id, nowMs)?.single : undefined;
    if (cached) {
      singles.push(cached);
      continue;
    }
    const status: OcspCertStatus = mine ? await ctx.status(id, responder) : { status: 'unknown' };
    const single = responder.singleResponse(id, status, times);
    if (cache && mine) cache.set(id, nowMs + ttl, { single });
    singles.push(single);
  }
  const response = responder.respond(singles, {
    producedAt: ctx.now,
    nonceExtension: req.nonceExtension,
    includeCertificate: ctx.includeCertificate,
  });
  if (wholeCacheable && matched) cache.set(first, nowMs + ttl, { response });
  return response;
}
