import type { SecretBox } from '../../secrets/secret-box.js';
import type { Clock } from '../../shared/clock.js';
import { DomainError, invalid } from '../../shared/errors.js';
import { uuid } from '../../shared/ids.js';
import type { CertService } from '../certs/cert-service.js';
import { buildCertificateAsync } from '../crypto/cert-builder.js';
import { isSelfSigned, parseCertificate } from '../crypto/cert-parser.js';
import { buildCsr, parseCsrAsync } from '../crypto/csr.js';
import { generateKey } from '../crypto/key-generation.js';
import type { GeneratedKey, KeyType } from '../crypto/key-generation.js';
import { exportPrivateKeyDer, resolveKeyParams } from '../crypto/keys.js';
import { pemEncode } from '../crypto/pem.js';
import type { KeyPool } from '../crypto/key-pool.js';
import { formatSerial } from '../crypto/serial.js';
import { certificateData, parseFormat, parsePrivateKeyFormat } from '../issuance/issuance.js';
import type { IssuedWrites, OutputFormat } from '../issuance/issuance.js';
import { recordWith } from '../issuance/issuance-service.js';
import type { IssuerService, SigningContext } from '../issuers/issuer-service.js';
import type { MountInfo, TokenInfo } from '../pki-route.js';
import {
  DISABLED_CONFIG,
  ExternalPolicyFailure,
  ExternalPolicyRefusal,
  buildCiepsRequest,
  changesService,
  normalizeCertificates,
  parseCiepsAnswer,
  parseClientBundle,
  parseTemplate,
  resignTemplate,
  validateConfig,
} from './external-policy.js';
import type {
  CiepsAnswer,
  ConfigPatch,
  ExternalPolicyConfig,
  IssuanceMode,
  RequestedIssuer,
} from './external-policy.js';
import { postToPolicyService } from './external-policy-client.js';
import type { PolicyServiceEndpoint, PolicyServiceReply } from './external-policy-client.js';
import type { ExternalPolicyRepo, StoredExternalPolicy } from './external-policy-repo.js';

/** An issue, sign or sign-intermediate request on an external-policy path. */
export interface ExternalPolicyRequest {
  mount: MountInfo;
  mode: IssuanceMode;
  /** `:policy` from the path; '' when absent. */
  policyName: string;
  /** `issuer/:ref/...` of the path; undefined on the paths without one. */
  issuerRef: string | undefined;
  /** Every parameter the caller sent, forwarded unchanged. */
  userValues: Record<string, unknown>;
  format: string;
  privateKeyFormat: string;
  removeRootsFromChain: boolean;
  /** issue only: the key made here ('' or absent: rsa). */
  keyType?: string;
  /** issue only: 0 or absent is the key type's default size. */
  keyBits?: number;
  /** sign and sign-intermediate only: the caller's PEM CSR. */
  csr?: string;
  actor: TokenInfo | undefined;
  mountDefaultTtl: number;
  mountMaxTtl: number;
  /**
   * Stores the certificate whatever the service's `store_certificate` says, with this
   * cert_metadata (base64) beside it: ACME needs every certificate it issues stored.
   */
  store?: { metadata: string; recordWith?: IssuedWrites };
}

export interface ExternalPolicyResult {
  data: Record<string, unknown>;
  warnings: string[];
}

const EMPTY_NAME = Buffer.from([0x30, 0x00]);
const keyContext = (mountId: string): string => `pki-external-policy-client-key:${mountId}`;

/**
 * External-policy issuance (CIEPS): the mount configuration, and issue / sign /
 * sign-intermediate decided by the configured policy service. Private keys made for
 * issue stay here: the service only ever sees a CSR without a subject.
 */
export class ExternalPolicyService {
  readonly #post: (ep: PolicyServiceEndpoint, body: string) => Promise<PolicyServiceReply>;

  constructor(
    private readonly deps: {
      repo: ExternalPolicyRepo;
      issuers: IssuerService;
      certs: CertService;
      secrets: SecretBox;
      clock: Clock;
      keyPool?: KeyPool;
      post?: (ep: PolicyServiceEndpoint, body: string) => Promise<PolicyServiceReply>;
    },
  ) {
    this.#post = deps.post ?? postToPolicyService;
  }

  /** config/external-policy of a mount; the defaults when it was never written. */
  async getConfig(mountId: string): Promise<ExternalPolicyConfig> {
    return (await this.deps.repo.get(mountId))?.config ?? { ...DISABLED_CONFIG };
  }

  /**
   * Updates the fields present in `patch`. The client key is sealed with the SecretBox
   * and never returned. Changing how the service is reached resets its validated status.
   */
  async updateConfig(mountId: string, patch: ConfigPatch): Promise<ExternalPolicyConfig> {
    const stored = await this.deps.repo.get(mountId);
    const cur = stored?.config ?? { ...DISABLED_CONFIG };
    const next: ExternalPolicyConfig = { ...cur };
    if (patch.enabled !== undefined) next.enabled = patch.enabled;
    if (patch.serviceUrl !== undefined) next.serviceUrl = patch.serviceUrl.trim();
    if (patch.timeoutSeconds !== undefined) next.timeoutSeconds = patch.timeoutSeconds;
    if (patch.trustedCa !== undefined) next.trustedCa = normalizeCertificates('trusted_ca', patch.trustedCa);
    if (patch.trustedLeafBundle !== undefined)
      next.trustedLeafBundle = normalizeCertificates('trusted_leaf_certificate_bundle', patch.trustedLeafBundle);
    let sealedClientKey = stored?.sealedClientKey ?? null;
    if (patch.clientBundle !== undefined) {
      if (patch.clientBundle.trim() === '') {
        next.clientCertBundle = '';
        sealedClientKey = null;
      } else {
        const bundle = parseClientBundle(patch.clientBundle);
        next.clientCertBundle = bundle.certificatesPem;
        sealedClientKey = this.deps.secrets.seal(bundle.keyPem, keyContext(mountId));
      }
    }
    next.hasClientKey = sealedClientKey !== null;
    validateConfig(next);
    const now = this.deps.clock.now();
    if (stored === undefined || changesService(patch)) {
      next.updatedAt = now;
      next.validatedAt = null;
    }
    await this.deps.repo.put(mountId, { config: next, sealedClientKey });
    return next;
  }

  async purgeMount(mountId: string): Promise<void> {
    await this.deps.repo.delete(mountId);
  }

  /**
   * Runs one external-policy issuance: builds or checks the CSR, asks the service, and
   * signs its template with the issuer it chose. Nothing is signed or stored unless the
   * service's answer is complete and well-formed.
   */
  async issue(req: ExternalPolicyRequest): Promise<ExternalPolicyResult> {
    const stored = await this.deps.repo.get(req.mount.id);
    if (!stored?.config.enabled)
      throw invalid('external policy issuance is not enabled on this mount (see config/external-policy)');
    const format = parseFormat(req.format);
    const pkcs8 = parsePrivateKeyFormat(req.privateKeyFormat) === 'pkcs8';

    let key: GeneratedKey | undefined;
    let csrPem: string;
    let spki: Buffer;
    if (req.mode === 'issue') {
      const keyType = (req.keyType ?? '').trim().toLowerCase();
      const params = resolveKeyParams(keyType === '' ? 'rsa' : keyType, req.keyBits ?? 0);
      key = await this.#generate(params.type as KeyType, params.bits);
      csrPem = buildCsr({ subjectDer: EMPTY_NAME, privateKey: key.privateKey }).pem;
      spki = key.spki;
    } else {
      const csrText = req.csr ?? '';
      if (csrText.trim() === '') throw invalid('"csr" is empty', 'csr');
      const csr = await parseCsrAsync(csrText, this.deps.issuers.csrOptions);
      csrPem = csrText;
      spki = csr.spkiDer;
    }

    const requested = await this.#requestedIssuer(req);
    const requestUuid = uuid();
    const body = buildCiepsRequest({
      uuid: requestUuid,
      mode: req.mode,
      policyName: req.policyName,
      mountPath: req.mount.path,
      userValues: { ...req.userValues, ...this.#pathValues(req), csr: csrPem },
      identity: identityOf(req.actor),
      requestedIssuer: requested && describeIssuer(requested),
      mountDefaultTtlSeconds: req.mountDefaultTtl,
      mountMaxTtlSeconds: req.mountMaxTtl,
    });
    const answer = await this.#ask(stored, req.mount.id, JSON.stringify(body), requestUuid);
    const warnings = [...answer.warnings];
    if (answer.certificate === '') {
      await this.#recordAnswer(req.mount.id, stored);
      throw new ExternalPolicyRefusal(answer.error);
    }
    if (answer.error !== '') warnings.push(answer.error);
    const template = parseTemplate(answer.certificate);
    const signing = await this.#signingIssuer(req.mount.id, answer, requested);
    const plan = resignTemplate({
      mode: req.mode,
      template,
      requestSpki: spki,
      issuerKey: signing.context.key,
      issuerNotAfter: signing.issuer.notAfter,
      leafNotAfterBehavior: signing.issuer.leafNotAfterBehavior,
    });
    await this.#recordAnswer(req.mount.id, stored);
    warnings.push(...plan.warnings);
    const built = await buildCertificateAsync(signing.context, plan.template);

    if (answer.storeCertificate || req.store) {
      const cert = {
        mountId: req.mount.id,
        serial: built.serialHex,
        issuerId: signing.issuer.id,
        der: built.der,
        notAfter: built.notAfter,
        createdAt: this.deps.clock.now(),
      };
      const metadata = req.store?.metadata
        ? {
            mountId: cert.mountId,
            serial: cert.serial,
            issuerId: cert.issuerId,
            role: '',
            notAfter: cert.notAfter,
            metadata: req.store.metadata,
          }
        : undefined;
      const writes = recordWith(req.store, built, signing);
      await this.deps.certs.store(cert, metadata, undefined, writes);
    }
    if (answer.generateLease) {
      warnings.push(
        'the external policy service asked for a lease; certificates issued through external-policy paths carry no ' +
          'lease (revoke them by serial number)',
      );
    }
    return { data: this.#respond(req, format, pkcs8, built, signing, key), warnings };
  }

  #respond(
    req: ExternalPolicyRequest,
    format: OutputFormat,
    pkcs8: boolean,
    built: { pem: string; serial: Buffer; notAfter: Date },
    signing: SigningContext,
    key: GeneratedKey | undefined,
  ): Record<string, unknown> {
    const certPem = built.pem.trimEnd();
    let chain = req.removeRootsFromChain ? signing.caChainPems.filter((p) => !isSelfSignedPem(p)) : signing.caChainPems;
    // sign-intermediate lists the new CA first, then the issuer's chain (reference 16.12).
    if (req.mode === 'ica') chain = [certPem, ...chain];
    const exported = key ? exportPrivateKeyDer(key, pkcs8) : undefined;
    // The key inside a pem_bundle keeps its native encoding whatever private_key_format says.
    const native = key && format === 'pem_bundle' && pkcs8 ? exportPrivateKeyDer(key, false) : undefined;
    return certificateData(
      {
        certificatePem: certPem,
        issuingCaPem: signing.certificatePem,
        chainPems: chain,
        serialNumber: formatSerial(built.serial),
        expiration: Math.floor(built.notAfter.getTime() / 1000),
        privateKey:
          key && exported
            ? {
                pem: pemEncode(exported.label, exported.der).trimEnd(),
                base64: exported.der.toString('base64'),
                type: key.description.type,
                bundlePem: native ? pemEncode(native.label, native.der).trimEnd() : undefined,
              }
            : undefined,
        issuerIsSelfSigned: () => isSelfSignedPem(signing.certificatePem),
      },
      format,
    );
  }

  /** The issuer on the path, else the mount's default (which may not exist: the service must then choose). */
  async #requestedIssuer(req: ExternalPolicyRequest): Promise<SigningContext | undefined> {
    if (req.issuerRef !== undefined) return this.deps.issuers.getSigningContext(req.mount.id, req.issuerRef);
    try {
      return await this.deps.issuers.getSigningContext(req.mount.id, 'default');
    } catch (err) {
      if (err instanceof DomainError) return undefined;
      throw err;
    }
  }

  /** The service's issuer_ref when it names one, else the requested issuer. */
  async #signingIssuer(
    mountId: string,
    answer: CiepsAnswer,
    requested: SigningContext | undefined,
  ): Promise<SigningContext> {
    if (answer.issuerRef === '') {
      if (!requested)
        throw new ExternalPolicyFailure('the answer names no issuer_ref and the mount has no default issuer');
      return requested;
    }
    try {
      return await this.deps.issuers.getSigningContext(mountId, answer.issuerRef);
    } catch (err) {
      if (err instanceof DomainError)
        throw new ExternalPolicyFailure(
          `issuer_ref ${JSON.stringify(answer.issuerRef)} of the answer cannot sign: ${err.message}`,
          err,
        );
      throw err;
    }
  }

  /** Path captures are part of the parameters Vault forwards. */
  #pathValues(req: ExternalPolicyRequest): Record<string, string> {
    const out: Record<string, string> = {};
    if (req.policyName !== '') out.policy = req.policyName;
    if (req.issuerRef !== undefined) out.issuer_ref = req.issuerRef;
    return out;
  }

  async #ask(stored: StoredExternalPolicy, mountId: string, body: string, requestUuid: string): Promise<CiepsAnswer> {
    const c = stored.config;
    const ep: PolicyServiceEndpoint = { url: c.serviceUrl, timeoutMs: c.timeoutSeconds * 1000 };
    if (c.trustedCa !== '') ep.trustedCa = c.trustedCa;
    if (c.trustedLeafBundle !== '') ep.pinnedLeaves = c.trustedLeafBundle;
    if (stored.sealedClientKey !== null && c.clientCertBundle !== '') {
      ep.clientCertPem = c.clientCertBundle;
      ep.clientKeyPem = this.deps.secrets.openString(stored.sealedClientKey, keyContext(mountId));
    }
    const reply = await this.#post(ep, body);
    if (reply.status >= 300 && reply.status < 400) {
      throw new ExternalPolicyFailure(
        `answered HTTP ${reply.status} (redirect to ${reply.location ?? 'nowhere'}); redirects are not followed`,
      );
    }
    if (reply.status !== 200) throw new ExternalPolicyFailure(`answered HTTP ${reply.status} instead of 200`);
    return parseCiepsAnswer(reply.body, requestUuid);
  }

  async #recordAnswer(mountId: string, stored: StoredExternalPolicy): Promise<void> {
    await this.deps.repo.recordAnswer(mountId, stored.config.updatedAt ?? new Date(0), this.deps.clock.now());
  }

  async #generate(type: KeyType, bits: number): Promise<GeneratedKey> {
    if (this.deps.keyPool) return this.deps.keyPool.take(type, bits);
    return generateKey(type, bits);
  }
}

function describeIssuer(s: SigningContext): RequestedIssuer {
  return {
    id: s.issuer.id,
    name: s.issuer.name,
    certificatePem: s.certificatePem,
    urls: s.urls,
    leafNotAfterBehavior: s.issuer.leafNotAfterBehavior,
  };
}

/**
 * Who asked. Tokens here have no identity entity, so the token's own identity is sent;
 * root tokens send none, as Vault omits identity for them.
 */
function identityOf(actor: TokenInfo | undefined): Record<string, unknown> | undefined {
  if (!actor || actor.isRoot) return undefined;
  return {
    entity_id: '',
    token_accessor: actor.accessor,
    token_display_name: actor.displayName,
    token_policies: actor.policies,
  };
}

function isSelfSignedPem(pem: string): boolean {
  try {
    return isSelfSigned(parseCertificate(pem));
  } catch {
    return false;
  }
}
