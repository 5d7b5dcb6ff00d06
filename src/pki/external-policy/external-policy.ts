/**
 * Pure rules of external-policy issuance (Vault's Certificate Issuance External Policy
 * Service, CIEPS): the mount configuration and its validation, the request sent to the
 * policy service, the checks on its answer, and how its template certificate is turned
 * into what the chosen issuer signs.
 * https://developer.hashicorp.com/vault/docs/secrets/pki/cieps
 * https://developer.hashicorp.com/vault/api-docs/secret/pki (config/external-policy)
 */
import { DomainError, invalid } from '../../shared/errors.js';
import type { AuthorityUrls, CertificateTemplate } from '../crypto/cert-builder.js';
import { isCa, parseCertificate, parseCertificateBundle } from '../crypto/cert-parser.js';
import type { ParsedCertificate } from '../crypto/cert-parser.js';
import { EXT } from '../crypto/extensions.js';
import type { KeyDescription } from '../crypto/key-generation.js';
import { parsePrivateKey, samePublicKey } from '../crypto/keys.js';
import { pemDecodeAll, pemEncode } from '../crypto/pem.js';
import type { VerifyParams } from '../crypto/signature.js';

export const DEFAULT_TIMEOUT_SECONDS = 15;
/** A request holds the client's connection open while the service thinks; beyond this it is a misconfiguration. */
export const MAX_TIMEOUT_SECONDS = 300;

/** config/external-policy of one mount. */
export interface ExternalPolicyConfig {
  enabled: boolean;
  serviceUrl: string;
  timeoutSeconds: number;
  /** PEM CA certificates that verify the service's certificate chain and host name. */
  trustedCa: string;
  /** PEM certificates pinned as the only acceptable service certificates. */
  trustedLeafBundle: string;
  /** PEM certificates of the mutual-TLS client certificate (never the key). */
  clientCertBundle: string;
  /** Whether a client key is stored (sealed) with the client certificate. */
  hasClientKey: boolean;
  /** When the service settings last changed; null before the first write. */
  updatedAt: Date | null;
  /** Last well-formed answer since the settings changed. */
  validatedAt: Date | null;
  /** Last well-formed answer of the service. */
  lastSuccessAt: Date | null;
}

export const DISABLED_CONFIG: Readonly<ExternalPolicyConfig> = Object.freeze({
  enabled: false,
  serviceUrl: '',
  timeoutSeconds: DEFAULT_TIMEOUT_SECONDS,
  trustedCa: '',
  trustedLeafBundle: '',
  clientCertBundle: '',
  hasClientKey: false,
  updatedAt: null,
  validatedAt: null,
  lastSuccessAt: null,
});

/** Fields of a config write; undefined leaves the stored value. */
export interface ConfigPatch {
  enabled?: boolean;
  serviceUrl?: string;
  timeoutSeconds?: number;
  trustedCa?: string;
  trustedLeafBundle?: string;
  /** PEM private key and certificate(s); '' removes the client certificate. */
  clientBundle?: string;
}

/** Client certificate split into what may be shown (certificates) and the secret (key PEM). */
export interface ClientBundle {
  certificatesPem: string;
  keyPem: string;
}

/** The service URL must be absolute https without credentials. */
export function validateServiceUrl(url: string): void {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw invalid(`external_service_url is not a valid URL: ${url}`, 'external_service_url');
  }
  if (u.protocol !== 'https:') throw invalid('external_service_url must use https://', 'external_service_url');
  if (u.hostname === '') throw invalid('external_service_url has no host', 'external_service_url');
  if (u.username !== '' || u.password !== '')
    throw invalid('external_service_url must not carry credentials', 'external_service_url');
}

export function validateTimeout(seconds: number): void {
  if (seconds <= 0 || seconds > MAX_TIMEOUT_SECONDS) {
    throw invalid(`timeout must be between 1s and ${MAX_TIMEOUT_SECONDS}s`, 'timeout');
  }
}

/** Parses a PEM list of certificates for a trust field; returns it re-encoded one per block. */
export function normalizeCertificates(field: string, pem: string): string {
  if (pem.trim() === '') return '';
  let certs: ParsedCertificate[];
  try {
    certs = parseCertificateBundle(pem);
  } catch (err) {
    throw invalid(`${field}: ${(err as Error).message}`, field);
  }
  if (certs.length === 0) throw invalid(`${field} holds no PEM certificate`, field);
  if (pemDecodeAll(pem).some((b) => b.label !== 'CERTIFICATE'))
    throw invalid(`${field} must hold only certificates`, field);
  return certs.map((c) => pemEncode('CERTIFICATE', c.der)).join('');
}

/**
 * A client certificate bundle: exactly one unencrypted private key and at least one
 * certificate, the first of which belongs to the key.
 */
export function parseClientBundle(pem: string): ClientBundle {
  const field = 'vault_client_cert_bundle';
  const blocks = pemDecodeAll(pem);
  const keys = blocks.filter((b) => /PRIVATE KEY$/.test(b.label));
  if (blocks.some((b) => b.label === 'ENCRYPTED PRIVATE KEY'))
    throw invalid(`${field}: encrypted private keys are not supported`, field);
  if (keys.length !== 1) throw invalid(`${field} must hold exactly one private key and its certificate`, field);
  const certsPem = blocks
    .filter((b) => b.label === 'CERTIFICATE')
    .map((b) => pemEncode('CERTIFICATE', b.der))
    .join('');
  const certificatesPem = normalizeCertificates(field, certsPem);
  if (certificatesPem === '') throw invalid(`${field} holds no certificate`, field);
  const key = keys[0]!;
  let parsedKey;
  try {
    parsedKey = parsePrivateKey(pemEncode(key.label, key.der));
  } catch (err) {
    throw invalid(`${field}: the private key cannot be read: ${(err as Error).message}`, field);
  }
  const first = parseCertificate(certificatesPem);
  if (!samePublicKey(parsedKey.key, first.publicKey))
    throw invalid(`${field}: the private key does not belong to the first certificate`, field);
  return { certificatesPem, keyPem: pemEncode(key.label, key.der) };
}

/**
 * Checks a configuration after a write is merged: an enabled mount needs a URL, and a
 * URL needs exactly one way of trusting the server (a CA bundle or pinned leaves).
 */
export function validateConfig(
  c: Pick<ExternalPolicyConfig, 'enabled' | 'serviceUrl' | 'timeoutSeconds' | 'trustedCa' | 'trustedLeafBundle'>,
): void {
  validateTimeout(c.timeoutSeconds);
  if (c.serviceUrl !== '') validateServiceUrl(c.serviceUrl);
  if (c.enabled && c.serviceUrl === '')
    throw invalid('external_service_url is required to enable external policy issuance', 'external_service_url');
  const ways = (c.trustedCa !== '' ? 1 : 0) + (c.trustedLeafBundle !== '' ? 1 : 0);
  if (ways > 1) throw invalid('set only one of trusted_ca and trusted_leaf_certificate_bundle', 'trusted_ca');
  if (c.serviceUrl !== '' && ways === 0)
    throw invalid(
      'one of trusted_ca or trusted_leaf_certificate_bundle is required to trust the external service',
      'trusted_ca',
    );
}

/** Whether a write changes how the service is reached (which resets the validated status). */
export function changesService(patch: ConfigPatch): boolean {
  return (
    patch.serviceUrl !== undefined ||
    patch.trustedCa !== undefined ||
    patch.trustedLeafBundle !== undefined ||
    patch.clientBundle !== undefined
  );
}

/**
 * The policy service failed to give a usable answer (unreachable, timeout, non-200,
 * malformed or mismatched answer, unusable template). Nothing is issued; the message is
 * meant for the caller.
 */
export class ExternalPolicyFailure extends DomainError {
  constructor(message: string, cause?: unknown) {
    super('unavailable', `external policy service: ${message}`, cause === undefined ? {} : { cause });
  }
}

/** The policy service answered with a refusal (an `error` and no certificate): a 400 with its message. */
export class ExternalPolicyRefusal extends DomainError {
  constructor(message: string) {
    super('invalid', message);
  }
}

export type IssuanceMode = 'issue' | 'sign' | 'ica';

/** The issuer the caller asked for (path or default), as the service is told about it. */
export interface RequestedIssuer {
  id: string;
  name: string;
  certificatePem: string;
  urls: AuthorityUrls;
  leafNotAfterBehavior: string;
}

export interface CiepsRequestInput {
  uuid: string;
  mode: IssuanceMode;
  policyName: string;
  /** Mount path as the engine knows it ("pki/"). */
  mountPath: string;
  /** Every parameter the caller sent, unvalidated; `csr` is set by the caller of this function. */
  userValues: Record<string, unknown>;
  /** Who asked; undefined for root tokens (as Vault omits identity for them). */
  identity: Record<string, unknown> | undefined;
  requestedIssuer: RequestedIssuer | undefined;
  mountDefaultTtlSeconds: number;
  mountMaxTtlSeconds: number;
}

/** Go's time.Duration String() for whole seconds ("768h0m0s", "1m30s", "0s"), as Vault sends TTLs. */
export function goDuration(seconds: number): string {
  if (seconds === 0) return '0s';
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}

/** The JSON body of a CIEPS version 1 request (reference 15.2). */
export function buildCiepsRequest(i: CiepsRequestInput): Record<string, unknown> {
  const issuer = i.requestedIssuer;
  const urls = issuer?.urls ?? {};
  const vaultValues: Record<string, unknown> = {};
  if (i.policyName !== '') vaultValues.policy_name = i.policyName;
  Object.assign(vaultValues, {
    mount: i.mountPath,
    ns: '',
    vault_is_performance_standby: false,
    vault_is_performance_secondary: false,
    issuance_mode: i.mode,
    vault_generated_private_key: i.mode === 'issue',
    requested_issuer_name: issuer?.name ?? '',
    requested_issuer_id: issuer?.id ?? '',
    requested_issuer_cert: issuer?.certificatePem ?? '',
    requested_issuance_config: {
      aia_values: {
        issuing_certificates: urls.issuingCertificates ?? [],
        crl_distribution_points: urls.crlDistributionPoints ?? [],
        ocsp_servers: urls.ocspServers ?? [],
        delta_crl_distribution_points: urls.deltaCrlDistributionPoints ?? [],
      },
      leaf_not_after_behavior: issuer?.leafNotAfterBehavior ?? '',
      mount_default_ttl: goDuration(i.mountDefaultTtlSeconds),
      mount_max_ttl: goDuration(i.mountMaxTtlSeconds),
    },
  });
  const body: Record<string, unknown> = {
    request_version: 1,
    request_uuid: i.uuid,
    synchronous: true,
    user_request_key_values: i.userValues,
  };
  if (i.identity) body.identity_request_key_values = i.identity;
  body.vault_request_values = vaultValues;
  return body;
}

/** The service's decision (reference 15.3). */
export interface CiepsAnswer {
  requestUuid: string;
  error: string;
  warnings: string[];
  certificate: string;
  issuerRef: string;
  storeCertificate: boolean;
  generateLease: boolean;
}

const ANSWER_KEYS = new Set([
  'request_uuid',
  'error',
  'warnings',
  'certificate',
  'issuer_ref',
  'store_certificate',
  'generate_lease',
]);

/**
 * Reads the service's JSON answer strictly, as Vault does: unknown keys, wrong types and
 * a request_uuid other than ours are failures. JSON null counts as absent.
 */
export function parseCiepsAnswer(text: string, expectedUuid: string): CiepsAnswer {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new ExternalPolicyFailure('the answer is not JSON');
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new ExternalPolicyFailure('the answer is not a JSON object');
  const o = raw as Record<string, unknown>;
  const unknown = Object.keys(o)
    .filter((k) => !ANSWER_KEYS.has(k))
    .sort();
  if (unknown.length > 0) throw new ExternalPolicyFailure(`the answer has unknown keys: ${unknown.join(', ')}`);
  const str = (k: string): string => {
    const v = o[k];
    if (v === undefined || v === null) return '';
    if (typeof v !== 'string') throw new ExternalPolicyFailure(`"${k}" in the answer must be a string`);
    return v;
  };
  const bool = (k: string): boolean => {
    const v = o[k];
    if (v === undefined || v === null) return false;
    if (typeof v !== 'boolean') throw new ExternalPolicyFailure(`"${k}" in the answer must be a boolean`);
    return v;
  };
  const w = o.warnings;
  if (w !== undefined && w !== null && !(Array.isArray(w) && w.every((x) => typeof x === 'string'))) {
    throw new ExternalPolicyFailure('"warnings" in the answer must be a list of strings');
  }
  const answer: CiepsAnswer = {
    requestUuid: str('request_uuid'),
    error: str('error'),
    warnings: Array.isArray(w) ? (w as string[]) : [],
    certificate: str('certificate'),
    issuerRef: str('issuer_ref'),
    storeCertificate: bool('store_certificate'),
    generateLease: bool('generate_lease'),
  };
  if (answer.requestUuid !== expectedUuid) {
    throw new ExternalPolicyFailure(
      `the answer is for request ${JSON.stringify(answer.requestUuid)}, not for this request (${expectedUuid})`,
    );
  }
  if (answer.certificate === '' && answer.error === '')
    throw new ExternalPolicyFailure('the answer has neither a certificate nor an error');
  return answer;
}

/** Parses the template certificate of an answer; anything unreadable is the service's fault. */
export function parseTemplate(pem: string): ParsedCertificate {
  const blocks = pemDecodeAll(pem);
  if (blocks.length !== 1 || blocks[0]!.label !== 'CERTIFICATE')
    throw new ExternalPolicyFailure('the template must be exactly one PEM certificate');
  try {
    return parseCertificate(blocks[0]!.der);
  } catch (err) {
    throw new ExternalPolicyFailure(`the template certificate cannot be parsed: ${(err as Error).message}`, err);
  }
}

/** Extensions that belong to the signing issuer; the template's are replaced (CIEPS docs). */
const ISSUER_BOUND = new Set<string>([
  EXT.authorityKeyIdentifier,
  EXT.authorityInfoAccess,
  EXT.crlDistributionPoints,
  EXT.freshestCrl,
]);

/**
 * The template's signature algorithm when the issuer key can sign with it; otherwise
 * undefined, and the issuer's default is used.
 */
export function templateSignatureOptions(
  alg: VerifyParams,
  issuerKey: KeyDescription,
): { signatureBits: number; usePss: boolean } | undefined {
  if (
    issuerKey.type !== 'rsa' ||
    (alg.kind !== 'rsa' && alg.kind !== 'rsa-pss') ||
    alg.hash === null ||
    alg.hash === 'sha1'
  )
    return undefined;
  return { signatureBits: Number(alg.hash.slice(3)), usePss: alg.kind === 'rsa-pss' };
}

export interface ResignInput {
  mode: IssuanceMode;
  template: ParsedCertificate;
  /** SubjectPublicKeyInfo of the key the caller holds (the CSR's). */
  requestSpki: Buffer;
  issuerKey: KeyDescription;
  issuerNotAfter: Date;
  leafNotAfterBehavior: string;
}

/**
 * What the issuer signs for a template: subject, validity, public key, subject key id
 * and every extension of the template except the issuer-bound ones (AKI, AIA, CRL
 * distribution points) which come from the issuer, and the template's signature
 * algorithm when the issuer can use it. The serial is always a fresh random one, so
 * serials stay unique across the mount whatever the service wrote.
 *
 * The template must certify the caller's key; a leaf template must not be a CA and a
 * sign-intermediate template must be one. Validity beyond the issuer follows the
 * issuer's leaf_not_after_behavior for leaves and is truncated for intermediates (as
 * sign-intermediate does).
 */
export function resignTemplate(i: ResignInput): { template: CertificateTemplate; warnings: string[] } {
  const t = i.template;
  if (!t.spkiDer.equals(i.requestSpki))
    throw new ExternalPolicyFailure('the template certifies a different public key than the one in the request');
  if (i.mode === 'ica' && !isCa(t))
    throw new ExternalPolicyFailure(
      'a sign-intermediate template must be a CA certificate (Basic Constraints CA:TRUE)',
    );
  if (i.mode !== 'ica' && isCa(t))
    throw new ExternalPolicyFailure('the template is a CA certificate; use sign-intermediate for CA certificates');
  if (t.notAfter.getTime() <= t.notBefore.getTime())
    throw new ExternalPolicyFailure("the template's notAfter is not after its notBefore");
  const warnings: string[] = [];
  let notAfter = t.notAfter;
  if (notAfter.getTime() > i.issuerNotAfter.getTime()) {
    const behavior = i.mode === 'ica' ? 'truncate' : i.leafNotAfterBehavior;
    if (behavior === 'err') {
      throw invalid(
        `cannot satisfy request, as the template's NotAfter (${t.notAfter.toISOString()}) is beyond the expiration ` +
          `of the CA certificate at ${i.issuerNotAfter.toISOString()}`,
      );
    }
    if (behavior !== 'permit') {
      notAfter = i.issuerNotAfter;
      warnings.push(`the certificate's NotAfter was truncated to the issuer's (${i.issuerNotAfter.toISOString()})`);
    }
  }
  const sig = templateSignatureOptions(t.signatureAlgorithm, i.issuerKey);
  return {
    template: {
      subject: t.subject.der,
      spki: t.spkiDer,
      notBefore: t.notBefore,
      notAfter,
      subjectKeyId: t.extensions.subjectKeyId,
      extraExtensions: t.extensions.all.filter((e) => !ISSUER_BOUND.has(e.oid)),
      ...(sig ?? {}),
    },
    warnings,
  };
}
