import { createHash } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import type { Clock } from '../../shared/clock.js';
import { uuid } from '../../shared/ids.js';
import { aiaIsEmpty, EMPTY_AIA } from '../config/mount-config.js';
import type { Executor } from '../config/mount-config-service.js';
import type { BuiltCertificate } from '../crypto/cert-builder.js';
import { parseCertificate } from '../crypto/cert-parser.js';
import type { ParsedCertificate } from '../crypto/cert-parser.js';
import { spkiDer } from '../crypto/keys.js';
import { validateObjectName } from '../keys/key.js';
import type { PkiKey } from '../keys/key.js';
import type { PreparedKey } from '../keys/key-service.js';
import { buildIntermediateCsr, buildRootCertificate } from './ca-builder.js';
import { caKeyUsage, rejectManagedKeys, rootValidity, subjectAltNames, subjectDer } from './ca-request.js';
import type { IntermediateRequest, KeyRequest, RootRequest } from './ca-request.js';
import type { PkiIssuer } from './issuer.js';
import { parseImportBundle } from './issuer-import.js';
import type { IssuerService } from './issuer-service.js';

const sha256Hex = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

export interface MountLimits {
  defaultTtlSeconds: number;
  maxTtlSeconds: number;
}

export interface RootResult {
  issuer: PkiIssuer;
  key: PkiKey;
  certificate: BuiltCertificate;
  /** Set for `exported`: the key, to be shown once. */
  privateKey: KeyObject | undefined;
  warnings: string[];
}

export interface IntermediateResult {
  csr: { der: Buffer; pem: string };
  key: PkiKey;
  privateKey: KeyObject | undefined;
  warnings: string[];
}

export interface ImportResult {
  importedIssuers: string[];
  importedKeys: string[];
  existingIssuers: string[];
  existingKeys: string[];
  /** issuer id -> key id ('' when the mount holds no key for it). */
  mapping: Record<string, string>;
  warnings: string[];
}

/**
 * Creating and importing CAs: root generation and rotation, intermediate CSRs,
 * imports of signed intermediates and PEM bundles, and DELETE root.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#generate-root
 */
export class CaService {
  readonly #issuers: IssuerService;
  readonly #clock: Clock;

  constructor(deps: { issuers: IssuerService; clock: Clock }) {
    this.#issuers = deps.issuers;
    this.#clock = deps.clock;
  }

  /** A new key (generated outside the transaction) or an existing one for `existing`. */
  async #keyFor(
    mountId: string,
    req: KeyRequest,
  ): Promise<{ prepared: PreparedKey | undefined; existing: PkiKey | undefined; privateKey: KeyObject }> {
    rejectManagedKeys(req);
    const keys = this.#issuers.keys;
    if (req.type === 'existing') {
      const existing = await keys.resolve(mountId, req.keyRef === '' ? 'default' : req.keyRef);
      return { prepared: undefined, existing, privateKey: await keys.privateKey(mountId, existing.id) };
    }
    const prepared = await keys.prepareGenerated(mountId, {
      keyType: req.keyType,
      keyBits: req.keyBits,
      keyName: req.keyName,
    });
    return { prepared, existing: undefined, privateKey: prepared.privateKey };
  }

  /**
   * Generates a self-signed root (root/generate, issuers/generate/root, root/rotate).
   * Never replaces existing issuers or keys; the root is stored under certs.
   */
  async generateRoot(mountId: string, mount: MountLimits, req: RootRequest): Promise<RootResult> {
    validateObjectName('issuer', req.issuerName);
    const now = this.#clock.now();
    const { notBefore, notAfter, warnings } = rootValidity(req, now, mount);
    const sans = subjectAltNames(req);
    const subject = subjectDer(req);
    const { prepared, existing, privateKey } = await this.#keyFor(mountId, req);
    const issuerId = uuid();
    // Roots carry the mount's AIA as configured when they are generated.
    const globalUrls = await this.#issuers.effectiveUrls(mountId, { id: issuerId, aia: EMPTY_AIA });
    const urls = aiaIsEmpty(globalUrls) && globalUrls.deltaCrlDistributionPoints.length === 0 ? undefined : globalUrls;
    const certificate = buildRootCertificate({
      privateKey,
      subjectDer: subject,
      subjectAltNames: sans,
      notBefore,
      notAfter,
      maxPathLength: req.maxPathLength,
      keyUsage: caKeyUsage(req.keyUsage),
      permittedDnsDomains: req.permittedDnsDomains,
      urls,
      signatureBits: req.signatureBits,
      usePss: req.usePss,
    });
    const parsed = parseCertificate(certificate.der);
    if (subject.length <= 2)
      warnings.push('the subject of the generated root is empty; set common_name or other subject fields');
    if (!urls)
      warnings.push(
        'no authority information access URLs are configured (config/urls); clients may be unable to fetch the ' +
          'chain or revocation status',
      );
    if (req.maxPathLength === 0)
      warnings.push('max_path_length is 0: this root cannot sign intermediate CAs that issue further CAs');

    const issuer = await this.#issuers.transaction(async (tx) => {
      const key = existing ?? prepared!.key;
      if (prepared) await this.#issuers.keys.insert(tx, prepared);
      const { issuer } = await this.#issuers.insertIssuer(tx, mountId, parsed, {
        id: issuerId,
        name: req.issuerName,
        keyId: key.id,
        revocationSignatureAlgorithm: certificate.signatureAlgorithm,
        updateDefault: true,
      });
      await this.#issuers.storeCertificate(
        {
          mountId,
          serial: certificate.serialHex,
          issuerId,
          der: certificate.der,
          notAfter: certificate.notAfter,
          revokedAt: null,
          revocationIssuerId: '',
          createdAt: now,
        },
        tx,
      );
      await this.#issuers.rebuildChains(tx, mountId);
      return (await this.#issuers.byId(mountId, issuer.id, tx))!;
    });
    this.#issuers.notifyIssuersChanged(mountId);
    return {
      issuer,
      key: existing ?? prepared!.key,
      certificate,
      privateKey: req.type === 'exported' ? privateKey : undefined,
      warnings,
    };
  }

  /** root/rotate names the new issuer `next` when no name is given and `next` is free. */
  async rotateName(mountId: string, requested: string): Promise<string> {
    if (requested !== '') return requested;
    const taken = await this.#issuers.find(mountId, 'next').catch(() => undefined);
    return taken ? '' : 'next';
  }

  /**
   * Builds the CSR of a new intermediate (intermediate/generate, issuers/generate/intermediate,
   * intermediate/cross-sign). The key is stored; no issuer exists until the signed
   * certificate is imported.
   */
  async generateIntermediate(mountId: string, req: IntermediateRequest): Promise<IntermediateResult> {
    const sans = subjectAltNames(req);
    const subject = subjectDer(req);
    const { prepared, existing, privateKey } = await this.#keyFor(mountId, req);
    const csr = buildIntermediateCsr({
      privateKey,
      subjectDer: subject,
      subjectAltNames: sans,
      addBasicConstraints: req.addBasicConstraints,
      keyUsage: req.keyUsage,
      signatureBits: req.signatureBits,
    });
    if (prepared) await this.#issuers.transaction((tx) => this.#issuers.keys.insert(tx, prepared));
    const warnings: string[] = [];
    if (subject.length <= 2)
      warnings.push('the subject of the requested intermediate is empty; set common_name or other subject fields');
    return {
      csr,
      key: existing ?? prepared!.key,
      privateKey: req.type === 'exported' ? privateKey : undefined,
      warnings,
    };
  }

  /**
   * Imports CA certificates and keys from a PEM bundle. Keys are matched to issuers by
   * public key; certificates and keys already in the mount are reported, not duplicated.
   */
  async importBundle(mountId: string, pemBundle: string, opts: { allowKeys: boolean }): Promise<ImportResult> {
    const bundle = parseImportBundle(pemBundle, opts);
    const keys = this.#issuers.keys;
    const prepared = bundle.keys.map((k) => keys.prepareExisting(mountId, k, ''));
    return this.#issuers
      .transaction(async (tx) => {
        const out: ImportResult = {
          importedIssuers: [],
          importedKeys: [],
          existingIssuers: [],
          existingKeys: [],
          mapping: {},
          warnings: [],
        };
        const keyIds = new Map<string, string>();
        for (const p of prepared) {
          const found = await keys.byPublicKey(mountId, p.key.publicKeySha256, tx);
          if (found) {
            if (!out.existingKeys.includes(found.id)) out.existingKeys.push(found.id);
            keyIds.set(found.publicKeySha256, found.id);
          } else {
            await keys.insert(tx, p);
            out.importedKeys.push(p.key.id);
            keyIds.set(p.key.publicKeySha256, p.key.id);
          }
        }
        const newWithKey: PkiIssuer[] = [];
        for (const cert of bundle.certificates) {
          const issuer = await this.#importCertificate(tx, mountId, cert, out);
          if (issuer) {
            out.mapping[issuer.id] = issuer.keyId;
            if (issuer.keyId !== '' && out.importedIssuers.includes(issuer.id)) newWithKey.push(issuer);
          }
        }
        await this.#issuers.rebuildChains(tx, mountId);
        await this.#updateDefaultAfterImport(tx, mountId, newWithKey);
        if (bundle.certificates.length > 0 && Object.values(out.mapping).every((k) => k === '')) {
          out.warnings.push(
            'none of the imported issuers has its private key in this mount; they cannot sign until the ' +
              'key is imported',
          );
        }
        return out;
      })
      .then((out) => {
        this.#issuers.notifyIssuersChanged(mountId);
        return out;
      });
  }

  async #importCertificate(
    tx: Executor,
    mountId: string,
    cert: ParsedCertificate,
    out: ImportResult,
  ): Promise<PkiIssuer | undefined> {
    const keys = this.#issuers.keys;
    const key = await keys.byPublicKey(mountId, sha256Hex(spkiDer(cert.publicKey)), tx);
    const existing = await this.#issuers.byCertificateSha256(tx, mountId, sha256Hex(cert.der));
    if (existing) {
      if (!out.existingIssuers.includes(existing.id) && !out.importedIssuers.includes(existing.id))
        out.existingIssuers.push(existing.id);
      if (existing.keyId === '' && key) {
        await this.#issuers.linkKey(tx, mountId, existing, key.id);
        return { ...existing, keyId: key.id };
      }
      return existing;
    }
    const { issuer } = await this.#issuers.insertIssuer(tx, mountId, cert, {
      name: '',
      keyId: key?.id ?? '',
      revocationSignatureAlgorithm: '',
      updateDefault: false,
    });
    out.importedIssuers.push(issuer.id);
    return issuer;
  }

  /**
   * The first imported issuer with a key becomes the default when none is set; with follow-latest, only a single new
   * one.
   */
  async #updateDefaultAfterImport(tx: Executor, mountId: string, newWithKey: PkiIssuer[]): Promise<void> {
    if (newWithKey.length === 0) return;
    const cfg = await this.#issuers.getIssuersConfigIn(tx, mountId);
    if (cfg.defaultIssuerId === '') await this.#issuers.setDefaultIn(tx, mountId, newWithKey[0]!.id);
    else if (cfg.defaultFollowsLatestIssuer && newWithKey.length === 1)
      await this.#issuers.setDefaultIn(tx, mountId, newWithKey[0]!.id);
  }

  /** root/replace: makes `ref` (default `next`) the default issuer. */
  async replaceDefault(
    mountId: string,
    ref: string,
  ): Promise<{ defaultIssuerId: string; defaultFollowsLatestIssuer: boolean }> {
    const r = await this.#issuers.setIssuersConfig(mountId, { defaultRef: ref === '' ? 'next' : ref });
    return r.config;
  }

  /** DELETE root: every issuer, key and the defaults of the mount. */
  async deleteAll(mountId: string): Promise<void> {
    await this.#issuers.deleteAll(mountId);
  }
}
