import { createHash } from 'node:crypto';
import type { Clock } from '../../shared/clock.js';
import { PeerChanges } from '../../shared/peer-changes.js';
import { invalid } from '../../shared/errors.js';
import { uuid } from '../../shared/ids.js';
import { aiaIsEmpty, expandAiaUrls, EMPTY_AIA } from '../config/mount-config.js';
import type { AiaUrls } from '../config/mount-config.js';
import type { Executor, MountConfigService } from '../config/mount-config-service.js';
import { createIssuerContext } from '../crypto/cert-builder.js';
import type { CsrOptions } from '../crypto/csr.js';
import type { NativeEcdsa } from '../crypto/native-ecdsa.js';
import type { AuthorityUrls, IssuerContext } from '../crypto/cert-builder.js';
import { parseCertificate, verifyCertificateSignature } from '../crypto/cert-parser.js';
import type { ParsedCertificate } from '../crypto/cert-parser.js';
import { subjectKeyIdFromSpki } from '../crypto/keys.js';
import { pemEncode } from '../crypto/pem.js';
import { BoundedCache } from '../keys/bounded-cache.js';
import { refNotFound, resolveRef, validateObjectName } from '../keys/key.js';
import type { KeyService } from '../keys/key-service.js';
import { ALL_USAGES, applyIssuerUpdate, buildChains, hasUsage } from './issuer.js';
import type { IssuerUpdate, IssuerUsage, PkiIssuer } from './issuer.js';
import type { IssuerRepo, StoredCertificate } from './issuer-repo.js';

export type { StoredCertificate };
export type { IssuerUpdate };

const sha256Hex = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** PEM of a certificate without the trailing newline, as Vault returns certificates. */
export const certificatePem = (der: Buffer): string => pemEncode('CERTIFICATE', der).trimEnd();

/** Everything needed to sign with an issuer (leaf issuance, intermediates, CRLs, OCSP). */
export interface SigningContext {
  issuer: PkiIssuer;
  /** Pre-encoded issuer name, AKI, AIA/CRL extensions and the cached private key, for buildCertificate(). */
  context: IssuerContext;
  /** PEM of the issuer certificate (no trailing newline). */
  certificatePem: string;
  /** PEMs of the issuer's chain: the issuer first, then its parents up to the root. */
  caChainPems: string[];
  /**
   * The AIA/CRL URLs placed in what this issuer signs: per-issuer ones if set, else config/urls, templates expanded.
   */
  urls: AuthorityUrls;
}

/** Config of config/issuers. */
export interface IssuersConfig {
  defaultIssuerId: string;
  defaultFollowsLatestIssuer: boolean;
}

/**
 * Issuers of a mount: lookup by `default | id | name`, chains, defaults, the editable
 * issuer fields, stored certificates, and the signing context used by issuance.
 */
export class IssuerService {
  readonly #repo: IssuerRepo;
  readonly #keys: KeyService;
  readonly #config: MountConfigService;
  readonly #clock: Clock;
  readonly #contexts = new BoundedCache<IssuerContext>(256);
  readonly #pems = new BoundedCache<string>(1024);
  readonly #listeners: ((mountId: string) => void)[] = [];
  /**
   * Resolved signing contexts for a short time (default 1 s), so issuance does not query
   * the issuer on every certificate. Local changes clear them at once; a change made on
   * another node is seen within this window, like mount lookups.
   */
  readonly #signing = new BoundedCache<{ at: number; epoch: number; ctx: SigningContext }>(1024);
  readonly #signingCacheMs: number;

  constructor(deps: {
    repo: IssuerRepo;
    keys: KeyService;
    config: MountConfigService;
    clock: Clock;
    signingCacheMs?: number;
    /** The native addon issuers sign with and CSRs are checked with (native_crypto); default none. */
    native?: NativeEcdsa | null;
    peers?: PeerChanges;
  }) {
    this.peers = deps.peers ?? new PeerChanges();
    this.#signingCacheMs = deps.signingCacheMs ?? 1000;
    this.native = deps.native ?? null;
    this.csrOptions = Object.freeze({ native: this.native });
    // New URLs or cluster paths change what every signing context carries.
    deps.config.onChange((mountId) => this.#notify(mountId));
    this.#repo = deps.repo;
    this.#keys = deps.keys;
    this.#config = deps.config;
    this.#clock = deps.clock;
  }

  /**
   * The other workers of this machine: a change of a mount's issuers or settings is reported
   * to them, and the caches of issuers here and in issuance and revocation key on its epoch.
   */
  readonly peers: PeerChanges;

  /** The native addon this engine uses (null: node:crypto only). */
  readonly native: NativeEcdsa | null;
  /** How this engine reads CSRs (with `native`): one object, not one per request. */
  readonly csrOptions: Readonly<CsrOptions>;

  get keys(): KeyService {
    return this.#keys;
  }

  transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    return this.#config.transaction(fn);
  }

  /** Resolves `default`, an id or a name; undefined when nothing matches. */
  async find(mountId: string, ref: string, ex: Executor = this.#repo.executor): Promise<PkiIssuer | undefined> {
    return resolveRef('issuer', ref, {
      defaultId: async () => (await this.#config.getDefaults(mountId, ex)).defaultIssuerId,
      byId: (id) => this.#repo.byId(ex, mountId, id),
      byName: (name) => this.#repo.byName(ex, mountId, name),
    });
  }

  /** Like find() but an unknown reference is an error (400, as Vault answers). */
  async resolve(mountId: string, ref: string, ex: Executor = this.#repo.executor): Promise<PkiIssuer> {
    const issuer = await this.find(mountId, ref, ex);
    if (!issuer) throw refNotFound('issuer', ref);
    return issuer;
  }

  /** The default issuer, or undefined when none is configured (raw CA fetches then answer 204). */
  async defaultIssuer(mountId: string): Promise<PkiIssuer | undefined> {
    const { defaultIssuerId } = await this.#config.getDefaults(mountId);
    return defaultIssuerId === '' ? undefined : this.#repo.byId(this.#repo.executor, mountId, defaultIssuerId);
  }

  async list(mountId: string): Promise<{ issuers: PkiIssuer[]; defaultIssuerId: string }> {
    const [issuers, defaults] = await Promise.all([
      this.#repo.list(this.#repo.executor, mountId),
      this.#config.getDefaults(mountId),
    ]);
    return { issuers, defaultIssuerId: defaults.defaultIssuerId };
  }

  /** PEMs of the issuer's ca_chain, the issuer first. Certificates never change, so PEMs are cached by id. */
  async chainPems(issuer: PkiIssuer, ex: Executor = this.#repo.executor): Promise<string[]> {
    const missing = issuer.caChain.filter((id) => id !== issuer.id && !this.#pems.has(id));
    if (!this.#pems.has(issuer.id)) this.#pems.set(issuer.id, certificatePem(issuer.certificateDer));
    for (const i of await this.#repo.byIds(ex, issuer.mountId, missing))
      this.#pems.set(i.id, certificatePem(i.certificateDer));
    const chain = issuer.caChain.length > 0 ? issuer.caChain : [issuer.id];
    return chain.map((id) => this.#pems.get(id)).filter((p): p is string => p !== undefined);
  }

  /**
   * Creates an issuer record for a CA certificate in the caller's transaction, links it
   * to `keyId`, and makes it the default when the mount has none (or when the mount's
   * default follows the latest issuer). Chains are rebuilt by the caller afterwards.
   */
  async insertIssuer(
    tx: Executor,
    mountId: string,
    cert: ParsedCertificate,
    opts: { id?: string; name: string; keyId: string; revocationSignatureAlgorithm: string; updateDefault: boolean },
  ): Promise<{ issuer: PkiIssuer; becameDefault: boolean }> {
    validateObjectName('issuer', opts.name);
    const issuer: PkiIssuer = {
      id: opts.id ?? uuid(),
      mountId,
      name: opts.name,
      keyId: opts.keyId,
      certificateDer: cert.der,
      certificateSha256: sha256Hex(cert.der),
      serial: cert.serialHex,
      subjectDer: cert.subject.der,
      issuerDer: cert.issuer.der,
      publicKeySha256: sha256Hex(cert.spkiDer),
      keyType: cert.key.type,
      subjectKeyId: (cert.extensions.subjectKeyId ?? subjectKeyIdFromSpki(cert.spkiDer)).toString('hex'),
      authorityKeyId: cert.extensions.authorityKeyId?.toString('hex') ?? '',
      notBefore: cert.notBefore,
      notAfter: cert.notAfter,
      leafNotAfterBehavior: 'err',
      usage: [...ALL_USAGES],
      manualChain: null,
      caChain: [],
      revocationSignatureAlgorithm: opts.revocationSignatureAlgorithm,
      aia: { ...EMPTY_AIA },
      revokedAt: null,
      createdAt: this.#clock.now(),
      seq: await this.#repo.nextSeq(tx, mountId),
    };
    await this.#repo.insert(tx, issuer);
    let becameDefault = false;
    if (opts.updateDefault && issuer.keyId !== '') {
      const defaults = await this.#config.getDefaults(mountId, tx);
      if (defaults.defaultFollowsLatestIssuer) {
        await this.#config.setDefaultIssuer(tx, mountId, issuer.id);
        becameDefault = true;
      } else {
        becameDefault = await this.#config.setDefaultIssuerIfUnset(tx, mountId, issuer.id);
      }
    }
    return { issuer, becameDefault };
  }

  /** Recomputes every issuer's ca_chain of the mount and writes the ones that changed. */
  async rebuildChains(tx: Executor, mountId: string): Promise<void> {
    const issuers = await this.#repo.list(tx, mountId);
    const parsed = new Map<string, ParsedCertificate>(issuers.map((i) => [i.id, parseCertificate(i.certificateDer)]));
    const chains = buildChains(issuers, (child, parent) =>
      verifyCertificateSignature(parsed.get(child.id)!, parsed.get(parent.id)!.publicKey),
    );
    for (const i of issuers) {
      const next = chains.get(i.id) ?? [i.id];
      if (JSON.stringify(next) !== JSON.stringify(i.caChain)) await this.#repo.setChain(tx, mountId, i.id, next);
    }
  }

  /**
   * Stores an issued certificate for cert/:serial and LIST certs. The (mount, serial)
   * primary key keeps serials unique across the mount's issuers: a duplicate is `conflict`.
   */
  async storeCertificate(cert: StoredCertificate, tx: Executor = this.#repo.executor): Promise<void> {
    await this.#repo.insertCertificate(tx, cert);
  }

  /**
   * Revokes an issuer (issuer/:ref/revoke): records the time and removes the
   * issuing-certificates usage, as a revoked issuer must not issue again. False when it
   * was already revoked.
   */
  async markRevoked(mountId: string, issuerId: string, tx: Executor = this.#repo.executor): Promise<boolean> {
    const issuer = await this.#repo.byId(tx, mountId, issuerId);
    if (!issuer) throw refNotFound('issuer', issuerId);
    const usage = issuer.usage.filter((u) => u !== 'issuing-certificates');
    const changed = await this.#repo.markRevoked(tx, mountId, issuerId, this.#clock.now(), usage.join(','));
    if (changed) this.#notify(mountId);
    return changed;
  }

  /**
   * Registers a listener called after issuers of a mount were created, imported, changed
   * or deleted (committed), e.g. to rebuild CRLs. Listener errors are the listener's to handle.
   */
  onIssuersChanged(listener: (mountId: string) => void): void {
    this.#listeners.push(listener);
  }

  /** Tells listeners that the mount's issuers changed; called by the services after commit. */
  notifyIssuersChanged(mountId: string): void {
    this.#notify(mountId);
  }

  #notify(mountId: string): void {
    this.#invalidate(mountId);
    this.peers.changed();
    for (const l of this.#listeners) l(mountId);
  }

  #invalidate(mountId: string): void {
    this.#signing.deletePrefix(`${mountId}|`);
  }

  /** A stored certificate by storage-form serial, or undefined. */
  async storedCertificate(mountId: string, serialHex: string): Promise<StoredCertificate | undefined> {
    return this.#repo.certificate(this.#repo.executor, mountId, serialHex);
  }

  async storedCertificateSerials(mountId: string): Promise<string[]> {
    return this.#repo.certificateSerials(this.#repo.executor, mountId);
  }

  /** config/issuers read. */
  async getIssuersConfig(mountId: string): Promise<IssuersConfig> {
    const d = await this.#config.getDefaults(mountId);
    return { defaultIssuerId: d.defaultIssuerId, defaultFollowsLatestIssuer: d.defaultFollowsLatestIssuer };
  }

  async getIssuersConfigIn(tx: Executor, mountId: string): Promise<IssuersConfig> {
    const d = await this.#config.getDefaults(mountId, tx);
    return { defaultIssuerId: d.defaultIssuerId, defaultFollowsLatestIssuer: d.defaultFollowsLatestIssuer };
  }

  async setDefaultIn(tx: Executor, mountId: string, issuerId: string): Promise<void> {
    await this.#config.setDefaultIssuer(tx, mountId, issuerId);
  }

  /** config/issuers write: `default` must resolve to an existing issuer; omitted values are kept. */
  async setIssuersConfig(
    mountId: string,
    patch: { defaultRef?: string; defaultFollowsLatestIssuer?: boolean },
  ): Promise<{ config: IssuersConfig; warnings: string[] }> {
    if (patch.defaultRef !== undefined && (patch.defaultRef.trim() === '' || patch.defaultRef === 'default')) {
      throw invalid("Invalid issuer specification; must be non-empty and can't be 'default'.", 'default');
    }
    return this.transaction(async (tx) => {
      const warnings: string[] = [];
      if (patch.defaultRef !== undefined) {
        const issuer = await this.resolve(mountId, patch.defaultRef, tx);
        if (issuer.keyId === '')
          warnings.push(
            `issuer ${issuer.id} has no key; it cannot issue certificates or sign CRLs as the default issuer`,
          );
        await this.#config.setDefaultIssuer(tx, mountId, issuer.id);
      }
      if (patch.defaultFollowsLatestIssuer !== undefined)
        await this.#config.setDefaultFollowsLatestIssuer(tx, mountId, patch.defaultFollowsLatestIssuer);
      const d = await this.#config.getDefaults(mountId, tx);
      return {
        config: { defaultIssuerId: d.defaultIssuerId, defaultFollowsLatestIssuer: d.defaultFollowsLatestIssuer },
        warnings,
      };
    }).then((r) => {
      // Issuance and revocation keep the default issuer too: they are told as of any issuer change.
      this.#notify(mountId);
      return r;
    });
  }

  /**
   * Returns what issuance needs to sign with an issuer: the issuer, a prepared
   * IssuerContext (cached per issuer, key and URL set), its chain PEMs and the effective
   * AIA/CRL URLs. Throws `invalid` when the issuer lacks a key or the requested usage.
   */
  async getSigningContext(
    mountId: string,
    issuerRef: string,
    opts: { usage?: IssuerUsage } = {},
  ): Promise<SigningContext> {
    const usage = opts.usage ?? 'issuing-certificates';
    const cacheKey = `${mountId}|${issuerRef}|${usage}`;
    const nowMs = this.#clock.now().getTime();
    const epoch = this.peers.epoch;
    const hit = this.#signing.get(cacheKey);
    if (hit && nowMs - hit.at < this.#signingCacheMs && nowMs >= hit.at && hit.epoch === epoch) return hit.ctx;
    const ctx = await this.#loadSigningContext(mountId, issuerRef, usage);
    this.#signing.set(cacheKey, { at: nowMs, epoch, ctx });
    return ctx;
  }

  async #loadSigningContext(mountId: string, issuerRef: string, usage: IssuerUsage): Promise<SigningContext> {
    // One settings query and one issuer query on the hot path; the rest is cached.
    const settings = await this.#config.getSigningSettings(mountId);
    const ex = this.#repo.executor;
    const issuer = await resolveRef('issuer', issuerRef, {
      defaultId: async () => settings.defaultIssuerId,
      byId: (id) => this.#repo.byId(ex, mountId, id),
      byName: (name) => this.#repo.byName(ex, mountId, name),
    });
    if (!issuer) throw refNotFound('issuer', issuerRef);
    if (issuer.keyId === '') throw invalid(`issuer ${issuer.id} has no private key in this mount and cannot sign`);
    if (!hasUsage(issuer, usage))
      throw invalid(`issuer ${issuer.id} is not allowed to sign: it lacks the ${usage} usage`);
    let urls = aiaIsEmpty(issuer.aia) ? settings.urls : issuer.aia;
    if (urls.enableTemplating) urls = expandAiaUrls(urls, { issuerId: issuer.id, cluster: settings.cluster });
    const authority: AuthorityUrls = {
      issuingCertificates: urls.issuingCertificates,
      crlDistributionPoints: urls.crlDistributionPoints,
      ocspServers: urls.ocspServers,
      deltaCrlDistributionPoints: urls.deltaCrlDistributionPoints,
    };
    const cacheKey = `${issuer.id}|${issuer.keyId}|${JSON.stringify(authority)}`;
    let context = this.#contexts.get(cacheKey);
    if (!context) {
      const privateKey = await this.#keys.privateKey(mountId, issuer.keyId);
      context = createIssuerContext({
        nameDer: issuer.subjectDer,
        keyId: Buffer.from(issuer.subjectKeyId, 'hex'),
        privateKey,
        urls: authority,
        native: this.native,
      });
      this.#contexts.set(cacheKey, context);
    }
    const caChainPems = await this.chainPems(issuer);
    return {
      issuer,
      context,
      certificatePem: caChainPems[0] ?? certificatePem(issuer.certificateDer),
      caChainPems,
      urls: authority,
    };
  }

  /** Per-issuer AIA when any of its lists is set, else config/urls; templates expanded for this issuer. */
  async effectiveUrls(
    mountId: string,
    issuer: Pick<PkiIssuer, 'id' | 'aia'>,
    ex: Executor = this.#repo.executor,
  ): Promise<AiaUrls> {
    const base = aiaIsEmpty(issuer.aia) ? await this.#config.getUrls(mountId, ex) : issuer.aia;
    if (!base.enableTemplating) return base;
    return expandAiaUrls(base, { issuerId: issuer.id, cluster: await this.#config.getCluster(mountId, ex) });
  }

  /**
   * Changes an issuer's editable fields. Only the fields present in `patch` change: POST
   * passes every field (with defaults for omitted ones), PATCH only what was sent.
   */
  async update(mountId: string, ref: string, patch: IssuerUpdate): Promise<{ issuer: PkiIssuer; warnings: string[] }> {
    return this.transaction(async (tx) => {
      const current = await this.resolve(mountId, ref, tx);
      const next = applyIssuerUpdate(
        current,
        patch,
        () => parseCertificate(current.certificateDer).extensions.keyUsage?.includes('CRLSign') === true,
      );
      const warnings: string[] = [];
      let chainChanged = false;
      if (patch.manualChain !== undefined) {
        const ids: string[] = [];
        for (const [i, r] of patch.manualChain.entries()) {
          const id = r === 'self' ? current.id : (await this.resolve(mountId, r, tx)).id;
          if (i === 0 && id !== current.id)
            throw invalid(
              `expected the first issuer of manual_chain to be this issuer (or "self"), got ${r}`,
              'manual_chain',
            );
          if (!ids.includes(id)) ids.push(id);
        }
        next.manualChain = ids.length > 0 ? ids : null;
        chainChanged = JSON.stringify(next.manualChain) !== JSON.stringify(current.manualChain);
      }
      await this.#repo.update(tx, next);
      if (chainChanged) await this.rebuildChains(tx, mountId);
      const stored = (await this.#repo.byId(tx, mountId, current.id))!;
      return { issuer: stored, warnings };
    }).then((r) => {
      this.#notify(mountId);
      return r;
    });
  }

  /** Deletes an issuer (never its key). Unknown references are a no-op. */
  async delete(mountId: string, ref: string): Promise<{ deleted: boolean; wasDefault: boolean }> {
    return this.transaction(async (tx) => {
      let issuer: PkiIssuer | undefined;
      try {
        issuer = await this.find(mountId, ref, tx);
      } catch {
        issuer = undefined;
      }
      if (!issuer) return { deleted: false, wasDefault: false };
      const wasDefault = await this.#config.clearDefaultIssuerIf(tx, mountId, issuer.id);
      await this.#repo.delete(tx, mountId, issuer.id);
      await this.rebuildChains(tx, mountId);
      return { deleted: true, wasDefault };
    }).then((r) => {
      if (r.deleted) this.#notify(mountId);
      return r;
    });
  }

  /** Removes every issuer and key of the mount and the default configuration (DELETE root). */
  async deleteAll(mountId: string): Promise<void> {
    await this.transaction(async (tx) => {
      await this.#repo.deleteAll(tx, mountId);
      await this.#keys.deleteAll(tx, mountId);
      await this.#config.clearDefaults(tx, mountId);
    });
    this.#notify(mountId);
  }

  /** Removes everything the mount stored here: issuers, keys, settings and certificates (mount disabled). */
  async purgeMount(mountId: string): Promise<void> {
    await this.transaction(async (tx) => {
      await this.#repo.deleteAll(tx, mountId);
      await this.#keys.deleteAll(tx, mountId);
      await this.#repo.deleteAllCertificates(tx, mountId);
      await this.#config.purge(tx, mountId);
    });
    this.#invalidate(mountId);
  }

  /** Links keyless issuers whose public key matches `keyId`'s (after a key import). */
  async linkKey(tx: Executor, mountId: string, issuer: PkiIssuer, keyId: string): Promise<void> {
    if (issuer.keyId === '') await this.#repo.setKey(tx, mountId, issuer.id, keyId);
  }

  async byCertificateSha256(tx: Executor, mountId: string, sha: string): Promise<PkiIssuer | undefined> {
    return this.#repo.byCertificateSha256(tx, mountId, sha);
  }

  async byId(mountId: string, id: string, ex: Executor = this.#repo.executor): Promise<PkiIssuer | undefined> {
    return this.#repo.byId(ex, mountId, id);
  }
}
