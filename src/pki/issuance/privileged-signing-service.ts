import type { Clock } from '../../shared/clock.js';
import { invalid } from '../../shared/errors.js';
import type { CertService } from '../certs/cert-service.js';
import { buildCertificateAsync, resignCertificate } from '../crypto/cert-builder.js';
import type { BuiltCertificate } from '../crypto/cert-builder.js';
import { isCa, isSelfIssued, isSelfSigned, parseCertificate, parseCertificateBundle } from '../crypto/cert-parser.js';
import type { ParsedCertificate } from '../crypto/cert-parser.js';
import { parseCsrAsync } from '../crypto/csr.js';
import type { ParsedCsr } from '../crypto/csr.js';
import { EXT } from '../crypto/extensions.js';
import type { RawExtension } from '../crypto/extensions.js';
import type { GeneralName } from '../crypto/general-names.js';
import { checkKeyAgainstRole } from '../crypto/keys.js';
import { commonName } from '../crypto/names.js';
import { isPem } from '../crypto/pem.js';
import { formatSerial } from '../crypto/serial.js';
import { subjectAltNames as caSubjectAltNames, subjectDer, subjectRequest } from '../issuers/ca-request.js';
import type { IssuerService, SigningContext } from '../issuers/issuer-service.js';
import type { MountInfo } from '../pki-route.js';
import { computeValidity } from '../roles/role-policy.js';
import type { ValidityInput } from '../roles/role-policy.js';
import type { RoleService } from '../roles/role-service.js';
import {
  capValidity,
  certificateData,
  checkCertMetadata,
  checkSignatureBits,
  parseFormat,
  parsePrivateKeyFormat,
} from './issuance.js';
import type { IssuanceOverrides, OutputFormat } from './issuance.js';
import { recordWith } from './issuance-service.js';
import type { IssuanceService, IssueResult } from './issuance-service.js';
import {
  copiedCsrExtensions,
  intermediateKeyUsage,
  intermediatePathLength,
  nameConstraintsFrom,
  notAfterBehavior,
  parseSkid,
  signatureOptionsOf,
  subjectWithUserIds,
  verbatimUsages,
} from './privileged-signing.js';
import type { SignIntermediateInput, SignVerbatimInput } from './privileged-signing.js';

/**
 * The CSR's extensions as sign-verbatim copies them. With an empty subject the subject
 * alternative names are the only names, and RFC 5280 section 4.2.1.6 makes the extension
 * critical then; CSRs made without a common name (certbot's) rarely mark it so.
 */
function verbatimExtensions(csr: ParsedCsr, dropExtKeyUsage: boolean): RawExtension[] {
  const emptySubject = csr.subject.der.length <= 2;
  return copiedCsrExtensions(csr.extensions.all)
    .filter((e) => !(dropExtKeyUsage && e.oid === EXT.extKeyUsage))
    .map((e) => (emptySubject && e.oid === EXT.subjectAltName && !e.critical ? { ...e, critical: true } : e));
}

/** The envelope of an answer without a lease. */
const NO_LEASE = { leaseId: '', leaseDuration: 0 } as const;

export interface PrivilegedRequest {
  mount: MountInfo;
  /** Path relative to the mount, for lease ids. */
  path: string;
  /** Issuer from the path (issuer/:ref/...); undefined uses the role's issuer_ref or `default`. */
  issuerRef: string | undefined;
  tokenAccessor: string | undefined;
  mountDefaultTtl: number;
  mountMaxTtl: number;
}

/**
 * The privileged signing paths (reference 4.4-4.6): CA certificates for intermediates,
 * re-signed self-issued CA certificates (root rollover), and leaves signed with the CSR's
 * own values. No role restricts names here; these paths are for trusted operators.
 */
export class PrivilegedSigningService {
  constructor(
    private readonly deps: {
      issuers: IssuerService;
      roles: RoleService;
      certs: CertService;
      issuance: IssuanceService;
      clock: Clock;
    },
  ) {}

  /** Signs a CA CSR as an intermediate of the selected issuer; the result is stored under certs. */
  async signIntermediate(req: PrivilegedRequest, v: SignIntermediateInput): Promise<IssueResult> {
    const format = parseFormat(v.format);
    checkSignatureBits(v.signature_bits);
    const skid = parseSkid(v.skid);
    const nameConstraints = nameConstraintsFrom(v);
    const csr = await this.#csr(v.csr);
    const signing = await this.deps.issuers.getSigningContext(req.mount.id, req.issuerRef ?? 'default');
    const signer = parseCertificate(signing.issuer.certificateDer);
    const path = intermediatePathLength(v.max_path_length, signer.extensions.basicConstraints?.pathLen);
    const warnings = [...path.warnings];

    let subject: Buffer;
    let sans: GeneralName[] = [];
    let extra: RawExtension[] = [];
    let keyUsage: string[];
    if (v.use_csr_values) {
      subject = csr.subject.der;
      extra = copiedCsrExtensions(csr.extensions.all);
      keyUsage = intermediateKeyUsage(csr.extensions.keyUsage ?? v.key_usage);
    } else {
      const cn = v.common_name !== '' ? v.common_name : commonName(csr.subject);
      if (cn === '')
        throw invalid('the common_name field is required (or must be the subject CN of the CSR)', 'common_name');
      const r = { ...subjectRequest(v), commonName: cn };
      subject = subjectDer(r);
      sans = caSubjectAltNames(r);
      keyUsage = intermediateKeyUsage(v.key_usage);
    }

    const validity = this.#validity(
      req,
      signing,
      v.ttl,
      v.not_after,
      v.not_before_duration,
      v.enforce_leaf_not_after_behavior,
      warnings,
    );
    const built = await buildCertificateAsync(signing.context, {
      subject,
      spki: csr.spkiDer,
      notBefore: validity.notBefore,
      notAfter: validity.notAfter,
      basicConstraints: { ca: true, pathLen: path.pathLen },
      keyUsage,
      subjectAltNames: sans,
      subjectKeyId: skid,
      nameConstraints,
      extraExtensions: extra,
      signatureBits: v.signature_bits,
      usePss: v.use_pss,
    });
    if (subject.length <= 2) warnings.push('the subject of the signed intermediate is empty');
    if (path.pathLen === 0)
      warnings.push('the signed intermediate has a max path length of 0: it cannot sign further CA certificates');
    if (
      !signing.urls.issuingCertificates?.length &&
      !signing.urls.crlDistributionPoints?.length &&
      !signing.urls.ocspServers?.length
    ) {
      warnings.push(
        'no authority information access URLs are configured (config/urls); clients may be unable to fetch the ' +
          'chain or revocation status',
      );
    }
    // Signed intermediates are always stored (reference 16.13), without a lease.
    await this.#storeWithoutLease(req, built, signing, undefined);
    const certificatePem = built.pem.trimEnd();
    return {
      data: this.#data(built, signing, signer, format, [certificatePem, ...signing.caChainPems]),
      warnings,
      ...NO_LEASE,
    };
  }

  /**
   * Re-signs a self-issued CA certificate with the selected issuer (root rollover): only
   * the issuer name, the authority key id and the distribution points change. Not stored.
   */
  async signSelfIssued(
    req: Pick<PrivilegedRequest, 'mount' | 'issuerRef'>,
    v: { certificate: string; require_matching_certificate_algorithms: boolean },
  ): Promise<IssueResult> {
    if (v.certificate.trim() === '') throw invalid('"certificate" is empty', 'certificate');
    const certs = isPem(v.certificate) ? parseCertificateBundle(v.certificate) : [parseCertificate(v.certificate)];
    if (certs.length !== 1) throw invalid(`exactly one certificate is expected, found ${certs.length}`, 'certificate');
    const cert = certs[0]!;
    if (!isCa(cert)) throw invalid('given certificate is not a CA certificate', 'certificate');
    if (!isSelfIssued(cert)) throw invalid('given certificate is not self-issued', 'certificate');
    const signing = await this.deps.issuers.getSigningContext(req.mount.id, req.issuerRef ?? 'default');
    const sameKeyType = cert.key.type === signing.context.key.type;
    if (!sameKeyType && v.require_matching_certificate_algorithms) {
      throw invalid(
        `the issuer's key type (${signing.context.key.type}) does not match the certificate's (${cert.key.type}) ` +
          `and require_matching_certificate_algorithms is set`,
        'require_matching_certificate_algorithms',
      );
    }
    // With different key types the issuer's default signature algorithm is used.
    const built = resignCertificate(
      signing.context,
      cert,
      sameKeyType ? signatureOptionsOf(cert.signatureAlgorithm) : {},
    );
    return {
      data: { certificate: built.pem.trimEnd(), issuing_ca: signing.certificatePem },
      warnings: [],
      ...NO_LEASE,
    };
  }

  /**
   * Signs a CSR with its own subject, names and extensions (never a CA). With a role, its
   * ttl, max_ttl, issuer_ref, generate_lease, no_store, no_store_metadata and
   * not_before_duration apply; nothing else of it does.
   */
  async signVerbatim(
    req: PrivilegedRequest & { roleName: string | undefined; overrides?: IssuanceOverrides },
    v: SignVerbatimInput,
  ): Promise<IssueResult> {
    const format = parseFormat(v.format);
    parsePrivateKeyFormat(v.private_key_format);
    checkSignatureBits(v.signature_bits);
    checkCertMetadata(v.cert_metadata);
    const role = req.roleName ? await this.deps.roles.forIssuance(req.mount.id, req.roleName) : undefined;
    if (v.cert_metadata !== '') {
      if (!role) throw invalid('cert_metadata needs a role on sign-verbatim: use sign-verbatim/:role', 'cert_metadata');
      if (role.no_store_metadata)
        throw invalid('cert_metadata cannot be stored: the role has no_store_metadata set', 'cert_metadata');
    }
    const csr = await this.#csr(v.csr);
    if (csr.extensions.basicConstraints?.ca === true) {
      throw invalid(
        'the CSR requests a CA certificate (Basic Constraints CA:TRUE); sign-verbatim does not issue CA ' +
          'certificates, use sign-intermediate',
        'csr',
      );
    }
    const usages = verbatimUsages(csr.extensions, v);
    const signing = await this.deps.issuers.getSigningContext(
      req.mount.id,
      req.issuerRef ?? role?.issuer_ref ?? 'default',
    );
    const warnings: string[] = [];
    const validity = capValidity(
      this.#validity(
        req,
        signing,
        v.ttl,
        v.not_after,
        role?.not_before_duration ?? 30,
        v.enforce_leaf_not_after_behavior,
        warnings,
        role ? { ttl: role.ttl, max_ttl: role.max_ttl } : undefined,
      ),
      req.overrides?.notAfterCap,
    );
    const built = await buildCertificateAsync(signing.context, {
      subject: subjectWithUserIds(csr.subject, v.user_ids),
      spki: csr.spkiDer,
      notBefore: validity.notBefore,
      notAfter: validity.notAfter,
      keyUsage: usages.keyUsage,
      extKeyUsage: req.overrides?.extKeyUsage ?? usages.extKeyUsage,
      extraExtensions: verbatimExtensions(csr, req.overrides?.extKeyUsage !== undefined),
      signatureBits: v.signature_bits,
      usePss: v.use_pss,
    });
    // With a role the certificate is leased like sign/:role (its no_store applies); without
    // one it is stored with no lease (docs/decisions/0039-privileged-signing.md).
    const lease = role
      ? await this.deps.issuance.recordIssued({
          mount: req.mount,
          path: req.path,
          tokenAccessor: req.tokenAccessor,
          issuerId: signing.issuer.id,
          cert: built,
          role: { name: req.roleName!, noStore: role.no_store },
          metadata: v.cert_metadata || (role.no_store_metadata ? '' : (req.overrides?.metadata ?? '')),
          writes: recordWith(req.overrides, built, signing),
          withoutLease: req.overrides?.withoutLease,
        })
      : await this.#storeWithoutLease(req, built, signing, req.overrides);
    const signer = parseCertificate(signing.issuer.certificateDer);
    const chain = v.remove_roots_from_chain
      ? signing.caChainPems.filter((p) => !isSelfSigned(parseCertificate(p)))
      : signing.caChainPems;
    return { data: this.#data(built, signing, signer, format, chain), warnings, ...lease };
  }

  async #storeWithoutLease(
    req: PrivilegedRequest,
    built: BuiltCertificate,
    signing: SigningContext,
    overrides: IssuanceOverrides | undefined,
  ): Promise<typeof NO_LEASE> {
    const metadata = overrides?.metadata ?? '';
    const cert = {
      mountId: req.mount.id,
      serial: built.serialHex,
      issuerId: signing.issuer.id,
      der: built.der,
      notAfter: built.notAfter,
    };
    const meta = metadata !== '' ? { ...cert, role: '', metadata } : undefined;
    const writes = recordWith(overrides, built, signing);
    await this.deps.certs.store({ ...cert, createdAt: this.deps.clock.now() }, meta, undefined, writes);
    return NO_LEASE;
  }

  /** A CSR whose self-signature verifies and whose key any role could accept (RSA >= 2048, EC >= P-224, Ed25519). */
  async #csr(text: string): Promise<ParsedCsr> {
    if (text.trim() === '') throw invalid('"csr" is empty', 'csr');
    const csr = await parseCsrAsync(text, this.deps.issuers.csrOptions);
    const keyError = checkKeyAgainstRole(csr.key, 'any', 0);
    if (keyError) throw invalid(keyError, 'csr');
    return csr;
  }

  /**
   * Validity on the privileged paths: ttl (role, then mount default) bounded by the role's
   * max_ttl or the mount maximum, then truncated to the signer's notAfter unless
   * enforce_leaf_not_after_behavior selects the issuer's own rule.
   */
  #validity(
    req: PrivilegedRequest,
    signing: SigningContext,
    ttl: number,
    notAfter: string,
    notBeforeDuration: number,
    enforce: boolean,
    warnings: string[],
    role: { ttl: number; max_ttl: number } | undefined = undefined,
  ): { notBefore: Date; notAfter: Date } {
    const input: ValidityInput = {
      now: this.deps.clock.now(),
      ttl,
      notAfter,
      role: { ttl: role?.ttl ?? 0, max_ttl: role?.max_ttl ?? 0, not_after: '', not_before_duration: notBeforeDuration },
      mountDefaultTtl: req.mountDefaultTtl,
      mountMaxTtl: req.mountMaxTtl,
      issuerNotAfter: signing.issuer.notAfter,
      leafNotAfterBehavior: notAfterBehavior(enforce, signing.issuer.leafNotAfterBehavior),
    };
    const v = computeValidity(input);
    warnings.push(...v.warnings);
    if (
      input.leafNotAfterBehavior === 'truncate' &&
      computeValidity({ ...input, leafNotAfterBehavior: 'permit' }).notAfter > signing.issuer.notAfter
    ) {
      warnings.push(
        `the requested notAfter is beyond the expiration of the signing certificate; it was truncated to ` +
          `${signing.issuer.notAfter.toISOString()}`,
      );
    }
    return v;
  }

  #data(
    built: BuiltCertificate,
    signing: SigningContext,
    signer: ParsedCertificate,
    format: OutputFormat,
    chain: string[],
  ): Record<string, unknown> {
    return certificateData(
      {
        certificatePem: built.pem.trimEnd(),
        issuingCaPem: signing.certificatePem,
        chainPems: chain,
        serialNumber: formatSerial(built.serial),
        expiration: Math.floor(built.notAfter.getTime() / 1000),
        issuerIsSelfSigned: () => isSelfSigned(signer),
      },
      format,
    );
  }
}
