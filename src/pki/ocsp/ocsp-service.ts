import type { Clock } from '../../shared/clock.js';
import { OCSP_STATUS, OcspRequestError, OcspResponder, ocspErrorResponse, parseOcspRequest } from '../crypto/ocsp.js';
import type { OcspCertId, OcspCertStatus, OcspRequest } from '../crypto/ocsp.js';
import type { RevocationStatus } from '../revocation/revocation.js';
import type { IssuerService } from '../issuers/issuer-service.js';
import { hasUsage } from '../issuers/issuer.js';
import type { PkiIssuer } from '../issuers/issuer.js';
import { parseCertificate } from '../crypto/cert-parser.js';
import { BatchQueue } from '../../shared/batch-queue.js';
import { BoundedCache } from '../keys/bounded-cache.js';
import {
  CertIdMatcher,
  MAX_OCSP_REQUEST_BYTES,
  answerDates,
  answerWindow,
  chooseResponder,
  ocspSignatureOptions,
  reuseUntil,
} from './ocsp.js';
import type { AnswerDates, OcspSettings, ResponderCandidate } from './ocsp.js';

/** The outcome of one OCSP request, in OCSP's own terms (the route maps it to HTTP). */
export interface OcspAnswer {
  status: 'successful' | 'malformedRequest' | 'unauthorized' | 'internalError';
  /** A DER OCSPResponse, whatever the status. */
  body: Buffer;
  /**
   * For successful answers: when it was answered, the validity window, and whether a nonce was echoed (then it must not
   * be cached).
   */
  nowMs?: number;
  dates?: AnswerDates;
  hasNonce?: boolean;
  /** For internalError: the failure, to be logged by the caller. */
  error?: unknown;
}

type SerialStatus = Pick<RevocationStatus, 'status' | 'issuerId' | 'revokedAt'>;

/** Where the responder reads revocation state and settings; both come from the database. */
export interface OcspSources {
  /** The statuses of storage-form serials of a mount, read afresh on every call (RevocationService.statusMany). */
  revocationStatuses(mountId: string, serials: readonly string[]): Promise<ReadonlyMap<string, SerialStatus>>;
  /** The OCSP part of config/crl. */
  settings(mountId: string): Promise<OcspSettings>;
}

interface Candidate extends ResponderCandidate {
  issuer: PkiIssuer;
  matcher: CertIdMatcher;
}

interface MountResponders {
  at: number;
  /** The other workers' change epoch when it was read (decision 0056). */
  epoch: number;
  candidates: Candidate[];
  defaultIssuerId: string;
  settings: OcspSettings;
}

interface StatusRead {
  mountId: string;
  serial: string;
  resolve(s: SerialStatus | undefined): void;
  reject(err: unknown): void;
}

interface CachedAnswer {
  response: Buffer;
  /** The revocation time the answer states, 0 for `good`. */
  revokedAtMs: number;
  thisUpdateMs: number;
  dates: AnswerDates;
  reuseUntilMs: number;
}

const hex = (id: OcspCertId): string => id.der.toString('latin1');

/**
 * The OCSP responder of every PKI mount (RFC 6960, reference 11). Each answer is signed
 * by the issuer the CertID names. Signed answers without a nonce are kept per issuer and
 * CertID and served again while the certificate's revocation status is unchanged; that
 * status is read from the database on every request, so a revocation made on any node is
 * answered `revoked` at once (docs/decisions/0007-ocsp-presigned-answers.md). The issuer
 * list and config/crl are re-read at most every `refreshMs` (1 s), like signing contexts.
 */
export class OcspService {
  readonly #mounts = new BoundedCache<MountResponders>(1024);
  readonly #answers: BoundedCache<CachedAnswer>;
  readonly #responders = new BoundedCache<OcspResponder>(1024);
  readonly #matchers = new BoundedCache<CertIdMatcher>(1024);
  readonly #refreshMs: number;
  /**
   * Status reads of concurrent requests share one query: a read queued while a query runs
   * waits for the next one, so each answer rests on a read that began after its request.
   */
  readonly #reads = new BatchQueue<StatusRead>((batch) => this.#readStatuses(batch), 1024);

  constructor(
    private readonly deps: {
      issuers: IssuerService;
      sources: OcspSources;
      clock: Clock;
      refreshMs?: number;
      maxCachedAnswers?: number;
    },
  ) {
    this.#refreshMs = deps.refreshMs ?? 1000;
    this.#answers = new BoundedCache<CachedAnswer>(deps.maxCachedAnswers ?? 100_000);
  }

  /**
   * Answers a DER OCSPRequest for the mount. Never throws: a bad request is answered
   * `malformedRequest`, a disabled responder or an issuer that may not sign `unauthorized`,
   * any other failure `internalError`.
   */
  async answer(mountId: string, der: Buffer | undefined): Promise<OcspAnswer> {
    try {
      const mount = await this.#mount(mountId);
      if (mount.settings.disabled) return failure('unauthorized');
      let request: OcspRequest;
      try {
        request = parseOcspRequest(der ?? Buffer.alloc(0), { maxBytes: MAX_OCSP_REQUEST_BYTES });
      } catch (err) {
        if (err instanceof OcspRequestError) return failure('malformedRequest');
        throw err;
      }
      return await this.#answerParsed(mountId, mount, request);
    } catch (err) {
      if (err instanceof OcspRequestError) return failure('malformedRequest');
      return { ...failure('internalError'), error: err };
    }
  }

  /** Forgets pre-signed answers and issuer lists of a mount (its issuers or settings changed here). */
  forgetMount(mountId: string): void {
    this.#mounts.delete(mountId);
    this.#answers.deletePrefix(`${mountId}|`);
  }

  async #answerParsed(mountId: string, mount: MountResponders, request: OcspRequest): Promise<OcspAnswer> {
    // Only the first CertID is answered, as Vault does (reference 11).
    const id = request.certIds[0]!;
    const matching = mount.candidates.filter((c) => c.matcher.matches(id));
    const stored = matching.length > 0 ? await this.#status(mountId, id.serialHex) : undefined;
    // A serial the mount never stored is `good` under an issuer that matches, as Vault answers (reference 11).
    const defaultIssuer = mount.candidates.find((c) => c.issuerId === mount.defaultIssuerId);
    const choice = chooseResponder(matching, { recordedIssuerId: stored?.issuerId || undefined, defaultIssuer });
    if (choice.kind === 'unauthorized') return failure('unauthorized');
    const issuer = choice.candidate.issuer;
    const status: OcspCertStatus =
      choice.kind === 'unknown'
        ? { status: 'unknown' }
        : stored?.status === 'revoked' && stored.revokedAt
          ? { status: 'revoked', revocationTime: stored.revokedAt, reason: 0 }
          : { status: 'good' };
    const revokedAtMs = status.status === 'revoked' ? status.revocationTime.getTime() : 0;
    const now = this.deps.clock.now();
    const key = `${mountId}|${issuer.id}|${status.status === 'unknown' ? 'u' : 'k'}|${hex(id)}`;
    const hasNonce = request.nonceExtension !== undefined;
    if (!hasNonce) {
      const hit = this.#answers.get(key);
      const nowMs = now.getTime();
      if (hit && hit.revokedAtMs === revokedAtMs && nowMs < hit.reuseUntilMs && nowMs >= hit.thisUpdateMs) {
        return { status: 'successful', body: hit.response, nowMs, dates: hit.dates, hasNonce: false };
      }
    }
    const responder = await this.#responder(mountId, issuer);
    const { thisUpdate, nextUpdate } = answerWindow(now, mount.settings);
    const single = responder.singleResponse(id, status, { thisUpdate, nextUpdate });
    const response = responder.respond([single], { producedAt: now, nonceExtension: request.nonceExtension });
    const dates = answerDates(thisUpdate, nextUpdate);
    if (!hasNonce)
      this.#answers.set(key, {
        response,
        revokedAtMs,
        thisUpdateMs: thisUpdate.getTime(),
        dates,
        reuseUntilMs: reuseUntil(thisUpdate, nextUpdate),
      });
    return { status: 'successful', body: response, nowMs: now.getTime(), dates, hasNonce };
  }

  #status(mountId: string, serial: string): Promise<SerialStatus | undefined> {
    return new Promise((resolve, reject) => this.#reads.push({ mountId, serial, resolve, reject }));
  }

  async #readStatuses(batch: StatusRead[]): Promise<void> {
    const byMount = new Map<string, StatusRead[]>();
    for (const r of batch) {
      const list = byMount.get(r.mountId);
      if (list) list.push(r);
      else byMount.set(r.mountId, [r]);
    }
    for (const [mountId, reads] of byMount) {
      try {
        const statuses = await this.deps.sources.revocationStatuses(mountId, [...new Set(reads.map((r) => r.serial))]);
        for (const r of reads) r.resolve(statuses.get(r.serial));
      } catch (err) {
        for (const r of reads) r.reject(err);
      }
    }
  }

  async #mount(mountId: string): Promise<MountResponders> {
    const nowMs = this.deps.clock.now().getTime();
    const epoch = this.deps.issuers.peers.epoch;
    const hit = this.#mounts.get(mountId);
    if (hit && nowMs - hit.at < this.#refreshMs && nowMs >= hit.at && hit.epoch === epoch) return hit;
    const [{ issuers, defaultIssuerId }, settings] = await Promise.all([
      this.deps.issuers.list(mountId),
      this.deps.sources.settings(mountId),
    ]);
    const candidates = issuers.map((issuer): Candidate => ({
      issuerId: issuer.id,
      hasKey: issuer.keyId !== '',
      ocspSigning: hasUsage(issuer, 'ocsp-signing'),
      issuer,
      matcher: this.#matcher(issuer),
    }));
    const next = { at: nowMs, epoch, candidates, defaultIssuerId, settings };
    // A changed issuer set or window invalidates what was signed under the old one.
    if (hit && (hit.settings.expirySeconds !== settings.expirySeconds || signature(hit) !== signature(next)))
      this.#answers.deletePrefix(`${mountId}|`);
    this.#mounts.set(mountId, next);
    return next;
  }

  #matcher(issuer: PkiIssuer): CertIdMatcher {
    let m = this.#matchers.get(issuer.certificateSha256);
    if (!m) {
      const spki = spkiOf(issuer);
      m = new CertIdMatcher(issuer.subjectDer, spki);
      this.#matchers.set(issuer.certificateSha256, m);
    }
    return m;
  }

  async #responder(mountId: string, issuer: PkiIssuer): Promise<OcspResponder> {
    const key = `${issuer.id}|${issuer.keyId}|${issuer.revocationSignatureAlgorithm}`;
    let r = this.#responders.get(key);
    if (!r) {
      const signing = await this.deps.issuers.getSigningContext(mountId, issuer.id, { usage: 'ocsp-signing' });
      // Signed by the CA itself and named by its subject, without the certificate (reference 11).
      r = new OcspResponder({
        issuer: signing.context,
        issuerSpki: spkiOf(issuer),
        responderId: 'byName',
        signatureBits: ocspSignatureOptions(issuer.revocationSignatureAlgorithm).signatureBits,
      });
      this.#responders.set(key, r);
    }
    return r;
  }
}

/** What signed answers depend on in the issuer list: who may sign, with which key and algorithm. */
function signature(m: MountResponders): string {
  return (
    m.candidates
      .map((c) => `${c.issuerId}:${c.issuer.keyId}:${c.ocspSigning}:${c.issuer.revocationSignatureAlgorithm}`)
      .join(',') + `|${m.defaultIssuerId}`
  );
}

function spkiOf(issuer: PkiIssuer): Buffer {
  return parseCertificate(issuer.certificateDer).spkiDer;
}

function failure(status: 'malformedRequest' | 'unauthorized' | 'internalError'): OcspAnswer {
  return { status, body: ocspErrorResponse(OCSP_STATUS[status]) };
}
