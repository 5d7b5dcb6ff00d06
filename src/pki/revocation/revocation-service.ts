import type { BatchQueue } from '../../shared/batch-queue.js';
import type { Clock } from '../../shared/clock.js';
import { invalid, isDomainError } from '../../shared/errors.js';
import type { CertService } from '../certs/cert-service.js';
import type { CertLeaseData } from '../certs/cert.js';
import { parseCertificate, verifyCertificateSignature } from '../crypto/cert-parser.js';
import type { ParsedCertificate } from '../crypto/cert-parser.js';
import { parsePrivateKey, samePublicKey } from '../crypto/keys.js';
import { formatSerial, normalizeSerial } from '../crypto/serial.js';
import type { PkiIssuer } from '../issuers/issuer.js';
import type { IssuerService } from '../issuers/issuer-service.js';
import type { Lease } from '../sys/lease.js';
import type { CrlService } from './crl-service.js';
import type { RevocationStatus, RevokeOutcome } from './revocation.js';
import type { RevocationRepo } from './revocation-repo.js';

/** What revoke / revoke-with-key were given (reference 5.1). */
export interface RevokeInput {
  serialNumber?: string;
  certificate?: string;
  /** revoke-with-key: proof of possession. */
  privateKey?: string;
}

/** Called after revocations were committed, with the storage-form serials newly revoked. */
export type RevokedListener = (mountId: string, serials: readonly string[]) => void;

type Outcome = RevokeOutcome & { warnings: string[] };

interface Pending {
  mountId: string;
  serial: string;
  resolve(r: Outcome): void;
  reject(err: unknown): void;
}

const MAX_BATCH = 2000;

const notFoundSerial = (serial: string) =>
  invalid(`certificate with serial ${formatSerial(serial)} not found.`, 'serial_number');

/** Expired certificates are not added to CRLs; Vault answers 200 with only this warning. */
const expiredOutcome = (serial: string): Outcome => ({
  kind: 'expired',
  serial,
  warning: `certificate with serial ${formatSerial(serial)} already expired; refusing to add to CRL`,
  warnings: [],
});
const ISSUER_CACHE_MS = 1000;

/**
 * Revoking certificates and issuers, and the revocation status of a serial.
 *
 * Revocations are durable before they are answered, but concurrent ones share one
 * transaction (group commit, as certificate inserts do), and without auto_rebuild they
 * share the CRL rebuild that follows: one UPDATE and one CRL per batch, not per request.
 */
export class RevocationService {
  readonly #listeners: RevokedListener[] = [];
  readonly #issuerCache = new Map<string, { at: number; epoch: number; issuers: PkiIssuer[] }>();
  readonly #batches: BatchQueue<Pending>;

  constructor(
    private readonly deps: {
      repo: RevocationRepo;
      crls: CrlService;
      issuers: IssuerService;
      certs: CertService;
      clock: Clock;
    },
  ) {
    this.#batches = deps.repo.units.batches<Pending>((batch) => this.#write(batch), { maxBatch: MAX_BATCH });
    deps.issuers.onIssuersChanged((mountId) => {
      this.#issuerCache.delete(mountId);
      deps.crls.rebuildInBackground(mountId);
    });
  }

  /**
   * Subscribes to revocations: `listener(mountId, serials)` runs after each commit that
   * revoked certificates (issuer revocations included). Listener errors are its own.
   */
  onRevoked(listener: RevokedListener): void {
    this.#listeners.push(listener);
  }

  /** The revocation status of a serial (any separator form) in a mount. */
  async status(mountId: string, serialText: string): Promise<RevocationStatus> {
    const serial = normalizeSerial(serialText);
    return (await this.statusMany(mountId, [serial])).get(serial)!;
  }

  /** status() of many storage-form serials of a mount, read together (OCSP reads them in batches). */
  async statusMany(mountId: string, serials: readonly string[]): Promise<Map<string, RevocationStatus>> {
    const out = new Map<string, RevocationStatus>();
    for (const row of await this.deps.repo.certStates(mountId, serials)) {
      out.set(row.serial, {
        serial: row.serial,
        status: row.revokedAt ? 'revoked' : 'good',
        issuerId: row.issuerId,
        revokedAt: row.revokedAt,
        notAfter: row.notAfter,
      });
    }
    const missing = serials.filter((s) => !out.has(s));
    if (missing.length > 0) {
      const issuers = await this.#issuers(mountId);
      for (const serial of missing) {
        const issuer = issuers.find((i) => i.serial === serial);
        out.set(
          serial,
          issuer
            ? {
                serial,
                status: issuer.revokedAt ? 'revoked' : 'good',
                issuerId: issuer.caChain[1] ?? issuer.id,
                revokedAt: issuer.revokedAt,
                notAfter: issuer.notAfter,
              }
            : { serial, status: 'unknown', issuerId: '', revokedAt: null, notAfter: null },
        );
      }
    }
    return out;
  }

  /** revoke and revoke-with-key: exactly one of serial or certificate; with a key, it must match. */
  async revoke(
    mountId: string,
    input: RevokeInput,
    opts: { requireKey: boolean },
  ): Promise<RevokeOutcome & { warnings: string[] }> {
    const hasSerial = input.serialNumber !== undefined && input.serialNumber !== '';
    const hasCert = input.certificate !== undefined && input.certificate !== '';
    if (hasSerial && hasCert) throw invalid('Must provide either the certificate or the serial to revoke; not both.');
    if (!hasSerial && !hasCert) throw invalid('The serial number or certificate to revoke must be provided.');
    if (opts.requireKey && !input.privateKey)
      throw invalid('private key must be provided to revoke with proof of possession', 'private_key');
    const key = opts.requireKey ? parsePrivateKey(input.privateKey!).key : undefined;

    if (hasCert) {
      const cert = parseCertificate(input.certificate!);
      if (key && !samePublicKey(key, cert.publicKey))
        throw invalid("the private key does not match the certificate's public key", 'private_key');
      return this.#revokeCertificate(mountId, cert);
    }
    const serial = normalizeSerial(input.serialNumber!);
    this.#refuseIssuer(await this.#issuers(mountId), serial);
    if (key) {
      const der = await this.deps.repo.certDer(this.deps.repo.executor, mountId, serial);
      if (!der) throw notFoundSerial(serial);
      if (!samePublicKey(key, parseCertificate(der).publicKey))
        throw invalid("the private key does not match the certificate's public key", 'private_key');
    }
    // The hot path: the batch looks the serial up along with its neighbours.
    return this.#enqueue(mountId, serial);
  }

  /** The lease revoker of certificate leases: same effect as `revoke`; unknown and expired certificates are fine. */
  async revokeLease(lease: Lease): Promise<void> {
    const d = lease.data as CertLeaseData;
    try {
      if (d.certificate !== undefined) {
        await this.#revokeCertificate(
          lease.mountId,
          parseCertificate(Buffer.from(d.certificate, 'base64')),
          d.issuerId,
        );
        return;
      }
      const row = await this.deps.repo.certState(this.deps.repo.executor, lease.mountId, d.serial);
      if (!row) return;
      await this.#enqueue(lease.mountId, row.serial);
    } catch (err) {
      // A CA certificate (an issuer) is never revoked through its lease, as in Vault.
      if (isDomainError(err) && err.kind === 'invalid' && /own CRL/.test(err.message)) return;
      throw err;
    }
  }

  /**
   * issuer/:ref/revoke: records the revocation (the issuer loses issuing-certificates),
   * lists the issuer on its parent's CRL when the parent is in the mount, and rebuilds
   * every CRL of the mount. Irreversible; revoking again returns the issuer unchanged.
   */
  async revokeIssuer(mountId: string, ref: string): Promise<{ issuer: PkiIssuer; warnings: string[] }> {
    const issuer = await this.deps.issuers.resolve(mountId, ref);
    if (issuer.revokedAt) return { issuer, warnings: [] };
    const changed = await this.deps.issuers.transaction(async (tx) => {
      const changed = await this.deps.issuers.markRevoked(mountId, issuer.id, tx);
      const stored = (await this.deps.issuers.byId(mountId, issuer.id, tx))!;
      // A root has no parent: its own certificate row is marked, attributed to no CRL ('').
      await this.deps.repo.markIssuerCertRevoked(
        tx,
        mountId,
        issuer.serial,
        issuer.caChain[1] ?? '',
        stored.revokedAt ?? this.deps.clock.now(),
      );
      return changed;
    });
    this.#issuerCache.delete(mountId);
    const warnings = await this.deps.crls.request(mountId, { complete: true, delta: true, issuers: 'all' });
    if (changed) this.#emit(mountId, [issuer.serial]);
    return { issuer: (await this.deps.issuers.byId(mountId, issuer.id))!, warnings };
  }

  /** LIST certs/revoked: storage-form serials, paginated like LIST certs. */
  async listRevoked(mountId: string, opts: { after?: string; limit?: number } = {}): Promise<string[]> {
    return this.deps.repo.listRevokedSerials(this.deps.repo.executor, mountId, opts);
  }

  /** Waits for queued revocations and background CRL builds (shutdown). */
  async drain(): Promise<void> {
    await this.#batches.drain();
    await this.deps.crls.drain();
  }

  async #revokeCertificate(
    mountId: string,
    cert: ParsedCertificate,
    knownIssuerId?: string,
  ): Promise<RevokeOutcome & { warnings: string[] }> {
    const issuers = await this.#issuers(mountId);
    this.#refuseIssuer(issuers, cert.serialHex, cert.der);
    let issuerId = knownIssuerId;
    if (issuerId === undefined) {
      const signer = issuers.find(
        (i) =>
          i.subjectDer.equals(cert.issuer.der) &&
          verifyCertificateSignature(cert, parseCertificate(i.certificateDer).publicKey),
      );
      if (!signer)
        throw invalid(
          'unable to verify signature on presented cert from any present issuer in this mount; cannot revoke',
          'certificate',
        );
      issuerId = signer.id;
    }
    const ex = this.deps.repo.executor;
    let row = await this.deps.repo.certState(ex, mountId, cert.serialHex);
    if (row) {
      const der = await this.deps.repo.certDer(ex, mountId, cert.serialHex);
      if (der && !der.equals(cert.der)) {
        throw invalid(
          "certificate with same serial but unequal value already present in this cluster's storage; " +
            'refusing to revoke',
          'certificate',
        );
      }
    } else {
      if (cert.notAfter.getTime() > this.deps.clock.now().getTime()) {
        // Not stored (no_store): keep it now, so the revocation has its certificate.
        try {
          await this.deps.certs.store({
            mountId,
            serial: cert.serialHex,
            issuerId,
            der: cert.der,
            notAfter: cert.notAfter,
            createdAt: this.deps.clock.now(),
          });
        } catch (err) {
          if (!isDomainError(err) || err.kind !== 'conflict') throw err;
        }
        row = await this.deps.repo.certState(ex, mountId, cert.serialHex);
      }
    }
    if (!row) return expiredOutcome(cert.serialHex);
    return this.#enqueue(mountId, cert.serialHex);
  }

  #enqueue(mountId: string, serial: string): Promise<Outcome> {
    return new Promise<Outcome>((resolve, reject) => this.#batches.push({ mountId, serial, resolve, reject }));
  }

  async #write(batch: Pending[]): Promise<void> {
    const byMount = new Map<string, Pending[]>();
    for (const p of batch) {
      const list = byMount.get(p.mountId);
      if (list) list.push(p);
      else byMount.set(p.mountId, [p]);
    }
    await Promise.all(
      [...byMount].map(([mountId, items]) =>
        this.#writeMount(mountId, items).catch((err: unknown) => items.forEach((p) => p.reject(err))),
      ),
    );
  }

  async #writeMount(mountId: string, items: Pending[]): Promise<void> {
    const repo = this.deps.repo;
    const serials = [...new Set(items.map((p) => p.serial))];
    const at = this.deps.clock.now();
    const { newly, states, config } = await repo.transaction(async (tx) => {
      const newly = new Map((await repo.markRevoked(tx, mountId, serials, at)).map((r) => [r.serial, r.issuerId]));
      // Unknown, already revoked or expired: read why (rare).
      const states = await repo.statesIn(
        tx,
        mountId,
        serials.filter((s) => !newly.has(s)),
      );
      const config = await this.deps.crls.getConfig(mountId, tx);
      if (newly.size > 0 && config.autoRebuild) await this.deps.crls.scheduleAfterRevocation(tx, mountId, config);
      return { newly, states, config };
    });
    let warnings: string[] = [];
    if (newly.size > 0) {
      this.#emit(mountId, [...newly.keys()]);
      if (!config.autoRebuild)
        warnings = await this.deps.crls.request(mountId, {
          complete: true,
          delta: false,
          issuers: new Set(newly.values()),
        });
    }
    for (const p of items) {
      const issuerId = newly.get(p.serial);
      const state = states.get(p.serial);
      if (issuerId !== undefined)
        p.resolve({ kind: 'revoked', serial: p.serial, revokedAt: at, issuerId, newlyRevoked: true, warnings });
      else if (!state) p.reject(notFoundSerial(p.serial));
      else if (state.revokedAt)
        p.resolve({
          kind: 'revoked',
          serial: p.serial,
          revokedAt: state.revokedAt,
          issuerId: state.issuerId,
          newlyRevoked: false,
          warnings: [],
        });
      else p.resolve(expiredOutcome(p.serial));
    }
  }

  #emit(mountId: string, serials: readonly string[]): void {
    for (const l of this.#listeners) {
      try {
        l(mountId, serials);
      } catch {
        /* a listener's failure is its own */
      }
    }
  }

  #refuseIssuer(issuers: readonly PkiIssuer[], serial: string, der?: Buffer): void {
    const hit = issuers.find((i) => i.serial === serial || (der !== undefined && i.certificateDer.equals(der)));
    if (hit) throw invalid(`adding issuer (id: ${hit.id}) to its own CRL is not allowed`);
  }

  /** The mount's issuers, cached briefly (cleared at once by local issuer changes). */
  async #issuers(mountId: string): Promise<PkiIssuer[]> {
    const now = this.deps.clock.now().getTime();
    const epoch = this.deps.issuers.peers.epoch;
    const hit = this.#issuerCache.get(mountId);
    if (hit && now - hit.at < ISSUER_CACHE_MS && hit.epoch === epoch) return hit.issuers;
    const { issuers } = await this.deps.issuers.list(mountId);
    this.#issuerCache.set(mountId, { at: now, epoch, issuers });
    return issuers;
  }
}
