import type { Clock } from '../../shared/clock.js';
import { invalid } from '../../shared/errors.js';
import { CERT_LEASE_KIND } from '../certs/cert.js';
import type { CertLeaseData } from '../certs/cert.js';
import type { CertService, InTransaction } from '../certs/cert-service.js';
import { buildCertificateAsync } from '../crypto/cert-builder.js';
import type { PolicyInformation } from '../crypto/extensions.js';
import { isSelfSigned, parseCertificate } from '../crypto/cert-parser.js';
import { csrCheckRejection, parseCsrDeferred } from '../crypto/csr.js';
import type { ParsedCsr, SignatureCheck } from '../crypto/csr.js';
import { generateKey } from '../crypto/key-generation.js';
import type { GeneratedKey, KeyType } from '../crypto/key-generation.js';
import { checkKeyAgainstRole, exportPrivateKeyDer, resolveKeyParams } from '../crypto/keys.js';
import { encodeSubject } from '../crypto/names.js';
import { pemEncode } from '../crypto/pem.js';
import type { KeyPool } from '../crypto/key-pool.js';
import { formatSerial } from '../crypto/serial.js';
import type { IssuerService, SigningContext } from '../issuers/issuer-service.js';
import type { MountInfo } from '../pki-route.js';
import { parsePolicyIdentifier } from '../roles/role.js';
import type { PkiRole } from '../roles/role.js';
import { computeValidity, leafExtKeyUsages, resolveNames } from '../roles/role-policy.js';
import type { CertNames } from '../roles/role-policy.js';
import type { RoleService } from '../roles/role-service.js';
import { leaseEnvelope } from '../sys/lease.js';
import type { LeaseService } from '../sys/lease-service.js';
import {
  capValidity,
  certificateData,
  checkCertMetadata,
  checkSignatureBits,
  csrNames,
  parseFormat,
  parsePrivateKeyFormat,
  subjectAltNames,
} from './issuance.js';
import type { IssuanceOverrides, IssueInput, OutputFormat } from './issuance.js';

/**
 * How long a signing context (issuer, cached private KeyObject, chain PEMs, AIA URLs) is
 * reused for one `(mount, issuer_ref)`. Issuer changes made on this node, or on another
 * worker of this machine (decision 0056), apply at once; changes made on another node are
 * seen after at most this long: a default-issuer switch, new config/urls or a revoked usage
 * take effect within a second, while at thousands of requests a second the issuer lookup
 * leaves the hot path.
 */
export const SIGNING_CONTEXT_CACHE_MS = 1000;

export interface IssueRequest {
  mount: MountInfo;
  /** Path relative to the mount, for the lease id. */
  path: string;
  roleName: string;
  /** Issuer from the path (issuer/:ref/...); undefined uses the role's issuer_ref. */
  issuerRef: string | undefined;
  input: IssueInput;
  tokenAccessor: string | undefined;
  mountDefaultTtl: number;
  mountMaxTtl: number;
  overrides?: IssuanceOverrides;
}

export interface RecordIssuedInput {
  mount: MountInfo;
  /** Request path relative to the mount (the lease id starts with `<mount>/<path>/`). */
  path: string;
  tokenAccessor: string | undefined;
  issuerId: string;
  cert: { serialHex: string; der: Buffer; notAfter: Date };
  /** The role applied, if any: its name goes with cert_metadata, no_store keeps the certificate out of storage. */
  role?: { name: string; noStore: boolean };
  /** cert_metadata as given ('' for none); kept under the serial even under no_store (reference 12). */
  metadata: string;
  /** Write-only statements of the caller, in the same commit. */
  writes?: InTransaction;
  /** No lease (IssuanceOverrides.withoutLease). */
  withoutLease?: boolean;
}

interface Prepared {
  format: OutputFormat;
  names: CertNames;
  signing: SigningContext;
  validity: { notBefore: Date; notAfter: Date };
  warnings: string[];
}

export interface IssueResult {
  data: Record<string, unknown>;
  warnings: string[];
  leaseId: string;
  leaseDuration: number;
}

/** issue/:role and sign/:role (and their issuer/:ref/ forms) under role policy. */
export class IssuanceService {
  readonly #contexts = new Map<string, { at: number; epoch: number; ctx: Promise<SigningContext> }>();
  readonly #rootFlags = new WeakMap<SigningContext, { issuer: boolean; chain: boolean[] }>();

  constructor(
    private readonly deps: {
      roles: RoleService;
      issuers: IssuerService;
      certs: CertService;
      leases: LeaseService;
      clock: Clock;
      keyPool?: KeyPool;
    },
  ) {
    // A local issuer change (e.g. a revoked issuer losing issuing-certificates) applies at once.
    deps.issuers.onIssuersChanged((mountId) => {
      for (const k of [...this.#contexts.keys()]) if (k.startsWith(`${mountId}\n`)) this.#contexts.delete(k);
    });
  }

  /** Generates a key and issues a certificate for it. The private key is returned, never stored or logged. */
  async issue(req: IssueRequest): Promise<IssueResult> {
    const role = await this.deps.roles.forIssuance(req.mount.id, req.roleName);
    if (role.key_type === 'any')
      throw invalid('role key type "any" not allowed for issuing certificates, only signing', 'key_type');
    const key = resolveKeyParams(role.key_type, role.key_bits);
    const prepared = await this.#prepare(req, role, undefined);
    const generated = await this.#generate(key.type as KeyType, key.bits);
    const pkcs8 = parsePrivateKeyFormat(req.input.private_key_format) === 'pkcs8';
    const exported = exportPrivateKeyDer(generated, pkcs8);
    const pem = pemEncode(exported.label, exported.der).trimEnd();
    // The key inside a pem_bundle keeps its native encoding whatever private_key_format says.
    let bundlePem: string | undefined;
    if (prepared.format === 'pem_bundle' && pkcs8) {
      const native = exportPrivateKeyDer(generated, false);
      bundlePem = pemEncode(native.label, native.der).trimEnd();
    }
    // base64 of the DER is what format=der answers; the PEM is what the other formats answer.
    const base64 = prepared.format === 'der' ? exported.der.toString('base64') : '';
    return this.#finish(req, role, prepared, generated.spki, { pem, base64, bundlePem, type: key.type });
  }

  /**
   * Signs a CSR: its self-signature and key are checked, names come from it or the request
   * per role. The self-signature is checked in the same threadpool job that signs the
   * certificate (nothing is signed unless it holds); when the request fails on something
   * else, a bad self-signature is still the error reported, as Vault checks it first.
   */
  async sign(req: IssueRequest): Promise<IssueResult> {
    const role = await this.deps.roles.forIssuance(req.mount.id, req.roleName);
    if (req.input.csr.trim() === '') throw invalid('"csr" is empty', 'csr');
    const { csr, check } = parseCsrDeferred(req.input.csr, this.deps.issuers.csrOptions);
    let prepared: Prepared;
    try {
      const keyError = checkKeyAgainstRole(csr.key, role.key_type, role.key_bits);
      if (keyError) throw invalid(keyError, 'csr');
      prepared = await this.#prepare(req, role, csr);
    } catch (err) {
      if (!(await check.verifyAsync())) throw csrCheckRejection('invalid');
      throw err;
    }
    if (csr.extensions.basicConstraints && !role.basic_constraints_valid_for_non_ca) {
      prepared.warnings.push('the CSR asks for a Basic Constraints extension, which is ignored on this path');
    }
    return this.#finish(req, role, prepared, csr.spkiDer, undefined, check);
  }

  /** Everything checked before any key is made or signed: names, validity, format, metadata. */
  async #prepare(
    req: IssueRequest,
    role: PkiRole,
    csr: Omit<ParsedCsr, 'signatureValid'> | undefined,
  ): Promise<Prepared> {
    const input = req.input;
    const format = parseFormat(input.format);
    parsePrivateKeyFormat(input.private_key_format);
    checkSignatureBits(input.signature_bits);
    checkCertMetadata(input.cert_metadata);
    if (input.cert_metadata !== '' && role.no_store_metadata) {
      throw invalid('cert_metadata cannot be stored: the role has no_store_metadata set', 'cert_metadata');
    }
    const names = resolveNames(
      {
        commonName: input.common_name,
        altNames: input.alt_names,
        ipSans: input.ip_sans,
        uriSans: input.uri_sans,
        otherSans: input.other_sans,
        userIds: input.user_ids,
        serialNumber: input.serial_number,
        excludeCnFromSans: input.exclude_cn_from_sans,
      },
      role,
      csr ? csrNames(csr) : undefined,
    );
    const signing = await this.#signingContext(req.mount.id, req.issuerRef ?? role.issuer_ref);
    const computed = computeValidity({
      now: this.deps.clock.now(),
      ttl: input.ttl,
      notAfter: input.not_after,
      role,
      roleName: req.roleName,
      mountDefaultTtl: req.mountDefaultTtl,
      mountMaxTtl: req.mountMaxTtl,
      issuerNotAfter: signing.issuer.notAfter,
      leafNotAfterBehavior: signing.issuer.leafNotAfterBehavior,
    });
    const validity = capValidity(computed, req.overrides?.notAfterCap);
    return { format, names, signing, validity, warnings: [...names.warnings, ...validity.warnings] };
  }

  async #finish(
    req: IssueRequest,
    role: PkiRole,
    p: Prepared,
    spki: Buffer,
    privateKey: { pem: string; base64: string; bundlePem: string | undefined; type: string } | undefined,
    requestCheck?: SignatureCheck,
  ): Promise<IssueResult> {
    const { names, signing, validity } = p;
    const input = req.input;
    const derived = roleDerived(role);
    const built = await buildCertificateAsync(
      signing.context,
      {
        subject: encodeSubject({
          commonName: names.commonName,
          country: role.country,
          province: role.province,
          locality: role.locality,
          streetAddress: role.street_address,
          postalCode: role.postal_code,
          organization: role.organization,
          ou: role.ou,
          serialNumber: names.serialNumber,
          userIds: names.userIds,
        }),
        spki,
        notBefore: validity.notBefore,
        notAfter: validity.notAfter,
        basicConstraints: role.basic_constraints_valid_for_non_ca ? { ca: false } : undefined,
        keyUsage: role.key_usage,
        extKeyUsage: req.overrides?.extKeyUsage ?? derived.extKeyUsage,
        subjectAltNames: subjectAltNames(names),
        policies: derived.policies,
        signatureBits: input.signature_bits !== 0 ? input.signature_bits : role.signature_bits,
        usePss: input.use_pss || role.use_pss,
      },
      requestCheck,
    );

    const lease = await this.recordIssued({
      mount: req.mount,
      path: req.path,
      tokenAccessor: req.tokenAccessor,
      issuerId: signing.issuer.id,
      cert: built,
      role: { name: req.roleName, noStore: role.no_store },
      metadata: input.cert_metadata || (role.no_store_metadata ? '' : (req.overrides?.metadata ?? '')),
      writes: recordWith(req.overrides, built, signing),
      withoutLease: req.overrides?.withoutLease,
    });

    const chain = input.remove_roots_from_chain ? this.#withoutRoots(signing) : signing.caChainPems;
    const data = certificateData(
      {
        certificatePem: built.pem.trimEnd(),
        issuingCaPem: signing.certificatePem,
        chainPems: chain,
        serialNumber: formatSerial(built.serial),
        expiration: Math.floor(built.notAfter.getTime() / 1000),
        privateKey,
        issuerIsSelfSigned: () => this.#rootFlagsOf(signing).issuer,
      },
      p.format,
    );
    return { data, warnings: p.warnings, ...lease };
  }

  /**
   * Makes an issued certificate durable together with its lease, the way issue and sign do,
   * for any path that hands out a leased certificate (sign-verbatim too): the certificate
   * row (unless the role has no_store), its cert_metadata, and a lease lasting until the
   * certificate expires are written in one transaction of the group commit. Resolves once
   * committed, with the envelope's lease_id and lease_duration. A no_store certificate's
   * lease carries the certificate, so revoking the lease can still put it on the CRL
   * (docs/decisions/0007-a-lease-for-every-role-certificate.md).
   */
  async recordIssued(r: RecordIssuedInput): Promise<{ leaseId: string; leaseDuration: number }> {
    const now = this.deps.clock.now();
    const noStore = r.role?.noStore ?? false;
    const data: CertLeaseData = noStore
      ? { serial: r.cert.serialHex, issuerId: r.issuerId, certificate: r.cert.der.toString('base64') }
      : { serial: r.cert.serialHex };
    const lease = r.withoutLease
      ? undefined
      : this.deps.leases.prepare({
          mount: r.mount,
          path: r.path,
          kind: CERT_LEASE_KIND,
          data,
          ttlSeconds: (r.cert.notAfter.getTime() - now.getTime()) / 1000,
          tokenAccessor: r.tokenAccessor,
        });
    const cert = {
      mountId: r.mount.id,
      serial: r.cert.serialHex,
      issuerId: r.issuerId,
      der: r.cert.der,
      notAfter: r.cert.notAfter,
      createdAt: now,
      role: r.role?.name,
    };
    await this.deps.certs.record({
      cert: noStore ? undefined : cert,
      metadata:
        r.metadata !== ''
          ? {
              mountId: r.mount.id,
              serial: r.cert.serialHex,
              issuerId: r.issuerId,
              role: r.role?.name ?? '',
              notAfter: r.cert.notAfter,
              metadata: r.metadata,
            }
          : undefined,
      lease,
      writes: r.writes,
    });
    return lease ? leaseEnvelope(lease) : { leaseId: '', leaseDuration: 0 };
  }

  async #generate(type: KeyType, bits: number): Promise<GeneratedKey> {
    if (this.deps.keyPool) return this.deps.keyPool.take(type, bits);
    return generateKey(type, bits);
  }

  /** Chain PEMs without self-signed certificates (subject equals issuer and AKI matches SKI, or no AKI). */
  #withoutRoots(s: SigningContext): string[] {
    const flags = this.#rootFlagsOf(s).chain;
    return s.caChainPems.filter((_, i) => !flags[i]);
  }

  /** Which of a signing context's certificates are self-signed, worked out once per context. */
  #rootFlagsOf(s: SigningContext): { issuer: boolean; chain: boolean[] } {
    let flags = this.#rootFlags.get(s);
    if (!flags) {
      const chain = s.caChainPems.map((pem) => isSelfSignedPem(pem));
      flags = { issuer: s.caChainPems[0] === s.certificatePem ? chain[0]! : isSelfSignedPem(s.certificatePem), chain };
      this.#rootFlags.set(s, flags);
    }
    return flags;
  }

  #signingContext(mountId: string, ref: string): Promise<SigningContext> {
    const key = `${mountId}\n${ref}`;
    const now = this.deps.clock.now().getTime();
    const epoch = this.deps.issuers.peers.epoch;
    const hit = this.#contexts.get(key);
    if (hit && now - hit.at < SIGNING_CONTEXT_CACHE_MS && now >= hit.at && hit.epoch === epoch) return hit.ctx;
    const ctx = this.deps.issuers.getSigningContext(mountId, ref);
    this.#contexts.set(key, { at: now, epoch, ctx });
    // A failed lookup (no issuer yet) must not be remembered.
    ctx.catch(() => {
      if (this.#contexts.get(key)?.ctx === ctx) this.#contexts.delete(key);
    });
    if (this.#contexts.size > 1024) this.#contexts.delete(this.#contexts.keys().next().value!);
    return ctx;
  }
}

function isSelfSignedPem(pem: string): boolean {
  try {
    return isSelfSigned(parseCertificate(pem));
  } catch {
    return false;
  }
}

/**
 * What a role's fields give every certificate it issues, worked out once per role object (roles are cached, never
 * changed).
 */
const derivedByRole = new WeakMap<PkiRole, { extKeyUsage: string[]; policies: PolicyInformation[] }>();

function roleDerived(role: PkiRole): { extKeyUsage: string[]; policies: PolicyInformation[] } {
  let d = derivedByRole.get(role);
  if (!d) {
    d = { extKeyUsage: leafExtKeyUsages(role), policies: role.policy_identifiers.map(parsePolicyIdentifier) };
    derivedByRole.set(role, d);
  }
  return d;
}

/** The caller's write-only statements for a certificate just built (IssuanceOverrides.recordWith). */
export function recordWith(
  overrides: IssuanceOverrides | undefined,
  built: { serialHex: string; notAfter: Date; pem: string },
  signing: { caChainPems: readonly string[] },
): InTransaction | undefined {
  return overrides?.recordWith?.({
    serialHex: built.serialHex,
    notAfter: built.notAfter,
    pem: built.pem,
    caChainPems: signing.caChainPems,
  });
}
