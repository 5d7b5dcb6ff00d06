import { randomBytes } from 'node:crypto';
import type { SecretBox } from '../../secrets/secret-box.js';
import type { Clock } from '../../shared/clock.js';
import { PeerChanges } from '../../shared/peer-changes.js';
import { addSeconds } from '../../shared/clock.js';
import { DomainError, invalid, isDomainError, notFound } from '../../shared/errors.js';
import { uuid } from '../../shared/ids.js';
import type { MountConfigService } from '../config/mount-config-service.js';
import { ExternalPolicyFailure, ExternalPolicyRefusal } from '../external-policy/external-policy.js';
import type { ExternalPolicyService } from '../external-policy/external-policy-service.js';
import { parseCsrDeferred } from '../crypto/csr.js';
import { checkKeyAgainstRole } from '../crypto/keys.js';
import { pemEncode } from '../crypto/pem.js';
import { ISSUE_FIELDS, csrNames } from '../issuance/issuance.js';
import type { IssuanceOverrides, IssuedWrites } from '../issuance/issuance.js';
import type { IssuanceService, IssueResult } from '../issuance/issuance-service.js';
import { SIGN_VERBATIM_FIELDS } from '../issuance/privileged-signing.js';
import type { PrivilegedSigningService } from '../issuance/privileged-signing-service.js';
import { normalizeSerial, serialToHex } from '../crypto/serial.js';
import type { MountInfo } from '../pki-route.js';
import type { RevocationService } from '../revocation/revocation-service.js';
import { resolveNames } from '../roles/role-policy.js';
import type { RoleService } from '../roles/role-service.js';
import {
  AcmeError,
  DEFAULT_ACME_CONFIG,
  NONCE_LIFETIME_SECONDS,
  ORDER_LIFETIME_SECONDS,
  acmeError,
  authzStatusAt,
  challengeTypesFor,
  csrMatchesOrder,
  directoryIssuance,
  directoryPrefix,
  effectiveMaxTtl,
  listAllows,
  normalizeIdentifiers,
  orderStatusAt,
  validateAcmeConfig,
} from './acme.js';
import type {
  AcmeAccount,
  AcmeAuthorization,
  AcmeConfig,
  AcmeOrder,
  AcmeProblem,
  ChallengeType,
  DirectoryPath,
  Identifier,
  IssuancePolicy,
} from './acme.js';
import type { AcmeRepo, StoredEab, VersionedAuthz } from './acme-repo.js';
import { ProcessNonces, SharedNonces } from './acme-nonces.js';
import type { CheckedNonce, NonceStore } from './acme-nonces.js';
import { AcmeValidationService } from './acme-validation-service.js';
import type { Validate } from './acme-validator.js';

/** How long config/acme and config/cluster are reused per mount (as signing contexts are). */
const CONFIG_CACHE_MS = 1000;
/**
 * How long an account read for a `kid` is reused. Changes made on this node apply at once;
 * a revocation or deactivation made on another node within this long.
 */
const ACCOUNT_CACHE_MS = 1000;
/** How many recent orders (as made, and chains of those finalized) a node keeps in memory. */
const RECENT_ORDERS = 2000;
const EAB_CONTEXT = (mountId: string, id: string) => `pki-acme-eab:${mountId}:${id}`;

/** A directory a request came in through, with what it needs to serve it. */
export interface AcmeDirectory {
  mount: MountInfo;
  path: DirectoryPath;
  /** Relative to the mount: `acme/`, `roles/web/acme/`… */
  prefix: string;
  /** Absolute URL of the directory's resources: config/cluster path + `/` + prefix. */
  baseUrl: string;
  config: AcmeConfig;
  policy: IssuancePolicy;
}

/** What a new account asks for (RFC 8555 section 7.3). */
export interface NewAccountInput {
  jwk: Record<string, unknown>;
  thumbprint: string;
  contact: string[] | undefined;
  termsOfServiceAgreed: boolean;
  onlyReturnExisting: boolean;
  /** The external account binding: its key id and a check of its MAC. */
  eab: { kid: string; verify(key: Buffer): boolean } | undefined;
}

export interface NewEab {
  id: string;
  keyType: string;
  /** base64url HMAC key: shown once. */
  key: string;
  directory: string;
  createdAt: Date;
}

export interface AccountDetails {
  account: AcmeAccount;
  orders: AcmeOrder[];
}

/**
 * The ACME server of every PKI mount: configuration, accounts, orders, authorizations,
 * challenges and issuance through the directory's policy (the role as `sign` applies it,
 * sign-verbatim, or the external policy service). Knows nothing of JWS or HTTP: the edge
 * hands it verified keys and payloads.
 */
export class AcmeService {
  readonly #configs = new Map<
    string,
    { at: number; epoch: number; value: Promise<{ config: AcmeConfig; clusterPath: string }> }
  >();
  readonly #nonces: NonceStore;
  /** Chains of the orders this node finalized lately, by mount and order. */
  readonly #chains = new Map<string, { accountId: string; chain: string }>();
  /** Orders this node made lately as made (their identifiers, account and expiry never change). */
  readonly #createdHere = new Map<string, AcmeOrder>();
  /** Accounts as `kid` requests find them, reused for ACCOUNT_CACHE_MS. */
  readonly #accounts = new Map<string, { at: number; epoch: number; account: AcmeAccount }>();
  readonly #peers: PeerChanges;
  readonly validations: AcmeValidationService;

  constructor(
    private readonly deps: {
      repo: AcmeRepo;
      clock: Clock;
      secrets: SecretBox;
      mountConfig: MountConfigService;
      roles: RoleService;
      issuance: IssuanceService;
      privileged: PrivilegedSigningService;
      externalPolicy: ExternalPolicyService;
      revocation: RevocationService;
      validate?: Validate;
      onError?: (err: unknown) => void;
      /**
       * `process` when this server is the only one on its database (SQLite): nonces are then
       * kept in memory. Default `shared`: used nonces are rows every node sees.
       */
      nonceScope?: 'shared' | 'process';
      peers?: PeerChanges;
    },
  ) {
    this.#peers = deps.peers ?? new PeerChanges();
    this.#nonces =
      deps.nonceScope === 'process'
        ? new ProcessNonces()
        : new SharedNonces({ repo: deps.repo, secrets: deps.secrets, mountConfig: deps.mountConfig });
    this.validations = new AcmeValidationService({
      repo: deps.repo,
      clock: deps.clock,
      validate: deps.validate,
      onError: deps.onError,
      configOf: async (mountId) => (await this.#settings(mountId)).config,
    });
  }

  /** The service's clock (renewal windows are computed at the edge from it). */
  now(): Date {
    return this.deps.clock.now();
  }

  // ----- configuration

  async getConfig(mountId: string): Promise<AcmeConfig> {
    const v = (await this.deps.mountConfig.getSetting(mountId, 'acme')) as Partial<AcmeConfig> | undefined;
    return { ...DEFAULT_ACME_CONFIG, ...v };
  }

  /** Partial update of config/acme: only supplied fields change. */
  async updateConfig(mountId: string, patch: Partial<AcmeConfig>): Promise<AcmeConfig> {
    const next: AcmeConfig = { ...(await this.getConfig(mountId)) };
    for (const [k, v] of Object.entries(patch))
      if (v !== undefined) (next as unknown as Record<string, unknown>)[k] = v;
    validateAcmeConfig(next);
    await this.deps.mountConfig.putSetting(mountId, 'acme', next);
    this.#configs.delete(mountId);
    this.#peers.changed();
    return next;
  }

  #settings(mountId: string): Promise<{ config: AcmeConfig; clusterPath: string }> {
    const now = this.deps.clock.now().getTime();
    const epoch = this.#peers.epoch;
    const hit = this.#configs.get(mountId);
    if (hit && now - hit.at < CONFIG_CACHE_MS && now >= hit.at && hit.epoch === epoch) return hit.value;
    const value = Promise.all([this.getConfig(mountId), this.deps.mountConfig.getCluster(mountId)]).then(
      ([config, cluster]) => ({ config, clusterPath: cluster.path }),
    );
    this.#configs.set(mountId, { at: now, epoch, value });
    value.catch(() => this.#configs.delete(mountId));
    return value;
  }

  /**
   * The directory a request came in through: ACME must be enabled (else not found, as
   * Vault answers), config/cluster `path` set, and the path's issuer and role allowed.
   */
  async directory(mount: MountInfo, path: DirectoryPath): Promise<AcmeDirectory> {
    const { config, clusterPath } = await this.#settings(mount.id);
    if (!config.enabled) throw notFound('ACME is disabled on this mount (config/acme enabled=false)');
    if (clusterPath === '')
      throw acmeError(
        'serverInternal',
        'ACME needs the mount\'s externally reachable URL: set "path" in config/cluster of this mount',
      );
    const prefix = directoryPrefix(path);
    const policy = directoryIssuance(config, path);
    return { mount, path, prefix, baseUrl: `${clusterPath.replace(/\/+$/, '')}/${prefix}`, config, policy };
  }

  // ----- nonces

  /** A fresh nonce of the mount. */
  newNonce(mountId: string): Promise<string> {
    return this.#nonces.mint(mountId, addSeconds(this.deps.clock.now(), NONCE_LIFETIME_SECONDS));
  }

  /** A nonce this server made for the mount, else undefined (checked before the signature). */
  checkNonce(mountId: string, nonce: string): Promise<CheckedNonce | undefined> {
    return this.#nonces.check(mountId, nonce);
  }

  /** Uses up a checked nonce once the request's signature holds; badNonce when expired or used before. */
  async useNonce(n: CheckedNonce): Promise<void> {
    if (n.expiresAt <= this.deps.clock.now()) throw acmeError('badNonce', 'the nonce has expired');
    if (!(await this.#nonces.use(n))) throw acmeError('badNonce', 'the nonce was already used');
  }

  // ----- accounts

  /**
   * newAccount (RFC 8555 section 7.3): returns the existing account of this key (any
   * directory of the mount answers it, the key is unique per mount) or creates one, with the
   * external account binding the eab_policy asks for; the EAB key is consumed.
   */
  async newAccount(dir: AcmeDirectory, input: NewAccountInput): Promise<{ account: AcmeAccount; created: boolean }> {
    const repo = this.deps.repo;
    const existing = await repo.accountByThumbprint(repo.executor, dir.mount.id, input.thumbprint);
    if (existing) {
      if (existing.status !== 'valid') throw acmeError('unauthorized', `the account of this key is ${existing.status}`);
      return { account: existing, created: false };
    }
    if (input.onlyReturnExisting) throw acmeError('accountDoesNotExist', 'no account exists for this key');
    const contact = checkContacts(input.contact ?? []);
    const eabPolicy = dir.config.eabPolicy;
    if (!input.eab && eabPolicy !== 'not-required')
      throw acmeError('externalAccountRequired', 'this server requires an external account binding for new accounts');
    const now = this.deps.clock.now();
    const account: AcmeAccount = {
      id: uuid(),
      mountId: dir.mount.id,
      directory: dir.prefix,
      thumbprint: input.thumbprint,
      jwk: input.jwk,
      status: 'valid',
      contact,
      termsAgreed: input.termsOfServiceAgreed,
      eab: undefined,
      createdAt: now,
      revokedAt: undefined,
    };
    let eab: StoredEab | undefined;
    if (input.eab) {
      eab = await repo.eab(repo.executor, dir.mount.id, input.eab.kid);
      if (!eab || eab.directory !== dir.prefix)
        throw acmeError('unauthorized', 'the external account binding names an unknown key for this directory');
      const key = this.deps.secrets.open(eab.sealedKey, EAB_CONTEXT(dir.mount.id, eab.id));
      if (!input.eab.verify(key)) throw acmeError('unauthorized', 'the external account binding MAC does not verify');
      account.eab = { id: eab.id, createdAt: eab.createdAt };
    }
    try {
      await repo.transaction(async (tx) => {
        if (eab && !(await repo.deleteEab(tx, dir.mount.id, eab.id)))
          throw acmeError('unauthorized', 'the external account binding key was already used');
        await repo.insertAccount(tx, account);
      });
    } catch (err) {
      // Two requests with one new key: the second finds the first's account.
      const raced = await repo.accountByThumbprint(repo.executor, dir.mount.id, input.thumbprint);
      if (raced && !(err instanceof AcmeError)) return { account: raced, created: false };
      throw err;
    }
    return { account, created: true };
  }

  /** The account a `kid` names; it must exist on this mount and be valid. */
  async accountFor(dir: AcmeDirectory, id: string): Promise<AcmeAccount> {
    const key = `${dir.mount.id}\n${id}`;
    const now = this.deps.clock.now().getTime();
    const epoch = this.#peers.epoch;
    const hit = this.#accounts.get(key);
    let a: AcmeAccount | undefined;
    if (hit && now - hit.at < ACCOUNT_CACHE_MS && now >= hit.at && hit.epoch === epoch) a = hit.account;
    else {
      a = await this.deps.repo.account(this.deps.repo.executor, dir.mount.id, id);
      if (a) {
        if (this.#accounts.size >= 10_000) this.#accounts.delete(this.#accounts.keys().next().value!);
        this.#accounts.set(key, { at: now, epoch, account: a });
      }
    }
    if (!a) throw acmeError('accountDoesNotExist', 'no such account');
    if (a.status !== 'valid') throw acmeError('unauthorized', `the account is ${a.status}`);
    return a;
  }

  /** Account update (contacts) or deactivation (RFC 8555 section 7.3.2 and 7.3.6). */
  async updateAccount(
    dir: AcmeDirectory,
    account: AcmeAccount,
    patch: { contact?: string[]; status?: string },
  ): Promise<AcmeAccount> {
    if (patch.status !== undefined && patch.status !== 'deactivated' && patch.status !== 'valid')
      throw acmeError('malformed', 'an account can only be deactivated');
    const contact = patch.contact !== undefined ? checkContacts(patch.contact) : undefined;
    const status = patch.status === 'deactivated' ? 'deactivated' : undefined;
    if (contact === undefined && status === undefined) return account;
    const at = this.deps.clock.now();
    const ok = await this.deps.repo.transaction((tx) =>
      this.deps.repo.updateAccount(tx, account.id, { contact, status, at }),
    );
    this.#forgetAccount(account.mountId, account.id);
    if (!ok) throw acmeError('unauthorized', 'the account is no longer valid');
    return { ...account, ...(contact ? { contact } : {}), ...(status ? { status } : {}) };
  }

  /** keyChange (RFC 8555 section 7.3.5): the new key must not belong to another account. */
  async changeKey(
    dir: AcmeDirectory,
    account: AcmeAccount,
    next: { jwk: Record<string, unknown>; thumbprint: string },
  ): Promise<AcmeAccount> {
    const repo = this.deps.repo;
    const other = await repo.accountByThumbprint(repo.executor, dir.mount.id, next.thumbprint);
    if (other)
      throw new DomainError('conflict', 'the new key already belongs to an account', { meta: { accountId: other.id } });
    const ok = await repo
      .transaction((tx) => repo.replaceKey(tx, account.id, account.thumbprint, next, this.deps.clock.now()))
      .catch((err: unknown) => {
        throw isDomainError(err) ? err : new DomainError('conflict', 'the new key already belongs to an account');
      });
    this.#forgetAccount(account.mountId, account.id);
    if (!ok) throw acmeError('unauthorized', 'the account key changed meanwhile');
    return { ...account, ...next };
  }

  // ----- orders

  /** newOrder (RFC 8555 section 7.4): identifiers checked against the directory's policy, one authorization each. */
  async newOrder(
    dir: AcmeDirectory,
    account: AcmeAccount,
    input: { identifiers: unknown; notBefore?: unknown; notAfter?: unknown; replaces?: unknown },
  ): Promise<{ order: AcmeOrder; authzs: AcmeAuthorization[] }> {
    const identifiers = normalizeIdentifiers(input.identifiers);
    if (input.notBefore !== undefined || input.notAfter !== undefined)
      throw acmeError('malformed', 'notBefore and notAfter are not supported: validity follows the directory policy');
    let replaces: string | undefined;
    if (input.replaces !== undefined) {
      if (typeof input.replaces !== 'string' || input.replaces === '')
        throw acmeError('malformed', '"replaces" must be a certificate identifier');
      replaces = await this.#checkReplaces(dir, account, input.replaces, identifiers);
    }
    await this.#checkIdentifiersAllowed(dir, identifiers);
    const now = this.deps.clock.now();
    const expiresAt = addSeconds(now, ORDER_LIFETIME_SECONDS);
    const orderId = uuid();
    const authzs: AcmeAuthorization[] = identifiers.map((identifier) => ({
      id: uuid(),
      mountId: dir.mount.id,
      accountId: account.id,
      orderId,
      identifier: identifier.value.startsWith('*.') ? { type: 'dns', value: identifier.value.slice(2) } : identifier,
      wildcard: identifier.value.startsWith('*.'),
      status: 'pending',
      expiresAt,
      token: randomBytes(32).toString('base64url'),
      challenges: challengeTypesFor(identifier).map((type) => ({
        type,
        status: 'pending',
        validated: undefined,
        error: undefined,
        attempts: 0,
      })),
      validationLeaseUntil: undefined,
    }));
    const order: AcmeOrder = {
      id: orderId,
      mountId: dir.mount.id,
      accountId: account.id,
      directory: dir.prefix,
      status: 'pending',
      identifiers,
      authzIds: authzs.map((a) => a.id),
      notBefore: undefined,
      notAfter: undefined,
      expiresAt,
      error: undefined,
      replaces,
      certSerial: undefined,
      certNotAfter: undefined,
      certChain: undefined,
      createdAt: now,
    };
    await this.deps.repo.transaction((tx) => this.deps.repo.insertOrder(tx, order, authzs));
    this.#remember(this.#createdHere, `${dir.mount.id}\n${orderId}`, order);
    return { order, authzs };
  }

  /** Under a role, the identifiers must be names the role allows, checked as `sign` checks them. */
  async #checkIdentifiersAllowed(dir: AcmeDirectory, identifiers: Identifier[]): Promise<void> {
    if (dir.policy.kind !== 'role') return;
    const role = await this.#role(dir, dir.policy.role);
    try {
      resolveNames(
        {
          commonName: '',
          altNames: identifiers.filter((i) => i.type === 'dns').map((i) => i.value),
          ipSans: identifiers.filter((i) => i.type === 'ip').map((i) => i.value),
          uriSans: [],
          otherSans: [],
          userIds: [],
          serialNumber: '',
          excludeCnFromSans: false,
        },
        { ...role, require_cn: false, use_csr_sans: false, use_csr_common_name: false },
      );
    } catch (err) {
      if (isDomainError(err) && err.kind === 'invalid') throw acmeError('rejectedIdentifier', err.message);
      throw err;
    }
  }

  async #role(dir: AcmeDirectory, name: string) {
    try {
      const role = await this.deps.roles.forIssuance(dir.mount.id, name);
      if (role.no_store)
        throw acmeError('unauthorized', `role "${name}" has no_store=true; ACME needs stored certificates`);
      if (dir.path.issuerRef === undefined && role.issuer_ref !== 'default') {
        if (!listAllows(dir.config.allowedIssuers, role.issuer_ref))
          throw acmeError('unauthorized', `the issuer of role "${name}" is not allowed by allowed_issuers`);
      }
      return role;
    } catch (err) {
      if (isDomainError(err) && err.kind === 'not_found')
        throw acmeError('unauthorized', `role "${name}" of this directory does not exist`);
      throw err;
    }
  }

  /** An order of the account (any other account's order is not found). */
  async order(dir: AcmeDirectory, account: AcmeAccount, id: string): Promise<AcmeOrder> {
    const o = await this.deps.repo.order(this.deps.repo.executor, dir.mount.id, id);
    if (!o || o.accountId !== account.id) throw notFound('no such order');
    return { ...o, status: orderStatusAt(o, this.deps.clock.now()) };
  }

  async orderIds(dir: AcmeDirectory, account: AcmeAccount): Promise<string[]> {
    const orders = await this.deps.repo.ordersOfAccount(this.deps.repo.executor, account.id);
    const now = this.deps.clock.now();
    return orders.filter((o) => orderStatusAt(o, now) !== 'invalid').map((o) => o.id);
  }

  /**
   * finalize (RFC 8555 section 7.4): the order must be ready and the CSR name exactly its
   * identifiers; then the directory's policy issues, as `sign` (role), `sign-verbatim` or
   * the external policy would. The order is valid when this returns.
   */
  async finalize(dir: AcmeDirectory, account: AcmeAccount, id: string, csrDer: Buffer): Promise<AcmeOrder> {
    const repo = this.deps.repo;
    const now = this.deps.clock.now();
    // An order made on this node is known without reading it (what is checked here never
    // changes); whether it is ready is up to the conditional update below.
    const known = this.#createdHere.get(`${dir.mount.id}\n${id}`);
    let order: AcmeOrder;
    let csr: { pem: string; commonName: string } | undefined;
    if (known && known.accountId === account.id && known.expiresAt > now) csr = csrIfAcceptable(csrDer, known);
    if (known && csr) order = known;
    else {
      order = await this.order(dir, account, id);
      if (order.status !== 'ready') throw notReady(order.status);
      csr = readCsr(csrDer, order);
    }
    if (!(await repo.transaction((tx) => repo.moveOrder(tx, id, ['ready'], 'processing', now))))
      throw notReady(order === known ? (await this.order(dir, account, id)).status : 'processing');
    // The order becomes valid in the commit that stores its certificate.
    let cert: { serial: string; notAfter: Date; chain: string } | undefined;
    const validWith: IssuedWrites = (signed) => {
      const issued = {
        serial: signed.serialHex,
        notAfter: signed.notAfter,
        chain: chainPem(signed.pem, signed.caChainPems),
      };
      cert = issued;
      const at = this.deps.clock.now();
      return (tx) => repo.recordOrderValid(tx, id, at, issued);
    };
    let result: IssueResult;
    try {
      result = await this.#issue(dir, account, order, csr, validWith);
    } catch (err) {
      const problem: AcmeProblem =
        err instanceof AcmeError
          ? { type: err.acmeType, detail: err.message }
          : isDomainError(err) && err.kind === 'invalid'
            ? { type: 'badCSR', detail: err.message }
            : { type: 'serverInternal', detail: 'issuance failed' };
      await repo.transaction((tx) =>
        repo.moveOrder(tx, id, ['processing'], 'invalid', this.deps.clock.now(), { error: problem }),
      );
      throw new AcmeError(problem.type, problem.detail, { cause: err });
    }
    if (!cert) {
      // A path that stored the certificate without the order: record it on its own.
      const data = result.data as {
        certificate: string;
        ca_chain?: string[];
        serial_number: string;
        expiration: number;
      };
      cert = {
        serial: normalizeSerial(data.serial_number),
        notAfter: new Date(data.expiration * 1000),
        chain: chainPem(data.certificate, data.ca_chain ?? []),
      };
      const issued = cert;
      await repo.transaction((tx) =>
        repo.moveOrder(tx, id, ['processing'], 'valid', this.deps.clock.now(), { cert: issued }),
      );
    }
    this.#remember(this.#chains, `${dir.mount.id}\n${id}`, { accountId: account.id, chain: cert.chain });
    return { ...order, status: 'valid', certSerial: cert.serial, certNotAfter: cert.notAfter, certChain: cert.chain };
  }

  async #issue(
    dir: AcmeDirectory,
    account: AcmeAccount,
    order: AcmeOrder,
    csr: { pem: string; commonName: string },
    recordWith: IssuedWrites,
  ): Promise<IssueResult> {
    const overrides: IssuanceOverrides = {
      notAfterCap: addSeconds(this.deps.clock.now(), effectiveMaxTtl(dir.config)),
      metadata: acmeCertMetadata(account, order, dir),
      recordWith,
      // As in Vault, ACME certificates have no lease: revoke them through ACME or `revoke`.
      withoutLease: true,
    };
    const limits = mountLimits(dir.mount);
    const path = `${dir.prefix}order/${order.id}/finalize`;
    const policy = dir.policy;
    // ACME certificates are server certificates unless the configuration lets the role decide.
    const serverAuthOnly = !dir.config.allowRoleExtKeyUsage || policy.kind !== 'role';
    if (serverAuthOnly) overrides.extKeyUsage = ['ServerAuth'];
    const firstDns = order.identifiers.find((i) => i.type === 'dns')?.value ?? '';
    switch (policy.kind) {
      case 'role': {
        await this.#role(dir, policy.role);
        const input = ISSUE_FIELDS.parse({ csr: csr.pem, common_name: csr.commonName === '' ? firstDns : '' }).values;
        return this.deps.issuance.sign({
          mount: dir.mount,
          path,
          roleName: policy.role,
          issuerRef: policy.issuerRef,
          input,
          tokenAccessor: undefined,
          mountDefaultTtl: limits.defaultTtlSeconds,
          mountMaxTtl: limits.maxTtlSeconds,
          overrides,
        });
      }
      case 'sign-verbatim': {
        const v = SIGN_VERBATIM_FIELDS.parse({ csr: csr.pem }).values;
        return this.deps.privileged.signVerbatim(
          {
            mount: dir.mount,
            path,
            issuerRef: policy.issuerRef,
            roleName: undefined,
            tokenAccessor: undefined,
            mountDefaultTtl: limits.defaultTtlSeconds,
            mountMaxTtl: limits.maxTtlSeconds,
            overrides,
          },
          v,
        );
      }
      case 'external-policy': {
        const r = await this.deps.externalPolicy
          .issue({
            mount: dir.mount,
            mode: 'sign',
            policyName: policy.policy,
            issuerRef: policy.issuerRef,
            userValues: { csr: csr.pem, acme_account_id: account.id, acme_directory: dir.prefix },
            format: 'pem',
            privateKeyFormat: 'der',
            removeRootsFromChain: false,
            csr: csr.pem,
            actor: undefined,
            mountDefaultTtl: limits.defaultTtlSeconds,
            mountMaxTtl: limits.maxTtlSeconds,
            // Stored whatever the service answers, with the account, as every ACME certificate.
            store: { metadata: overrides.metadata!, recordWith },
          })
          .catch((err: unknown) => {
            // The service's refusal is about what the order asks for; its failures are ours.
            if (err instanceof ExternalPolicyRefusal)
              throw acmeError('rejectedIdentifier', `the external policy refused the order: ${err.message}`);
            if (err instanceof ExternalPolicyFailure) throw acmeError('serverInternal', err.message);
            throw err;
          });
        return { ...r, leaseId: '', leaseDuration: 0 };
      }
    }
  }

  /**
   * The certificate chain of a valid order (PEM: the leaf, then its issuers). A valid order
   * never changes, so the chains of orders this node finalized are served from memory.
   */
  async certificate(dir: AcmeDirectory, account: AcmeAccount, id: string): Promise<string> {
    const hit = this.#chains.get(`${dir.mount.id}\n${id}`);
    if (hit && hit.accountId === account.id) return hit.chain;
    const o = await this.order(dir, account, id);
    if (o.status !== 'valid' || !o.certChain) throw notFound('the order has no certificate');
    return o.certChain;
  }

  // ----- authorizations and challenges

  /** An authorization of the account; a validation left behind by a node that stopped is taken over. */
  async authorization(dir: AcmeDirectory, account: AcmeAccount, id: string): Promise<AcmeAuthorization> {
    const a = await this.#authz(dir, account, id);
    this.validations.resumeIfAbandoned(a);
    return { ...a, status: authzStatusAt(a, this.deps.clock.now()) };
  }

  async #authz(dir: AcmeDirectory, account: AcmeAccount, id: string): Promise<VersionedAuthz> {
    const a = await this.deps.repo.authorization(this.deps.repo.executor, dir.mount.id, id);
    if (!a || a.accountId !== account.id) throw notFound('no such authorization');
    return a;
  }

  /** Authorization deactivation (RFC 8555 section 7.5.2): its order becomes invalid. */
  async deactivateAuthorization(dir: AcmeDirectory, account: AcmeAccount, id: string): Promise<AcmeAuthorization> {
    const a = await this.#authz(dir, account, id);
    const status = authzStatusAt(a, this.deps.clock.now());
    if (status !== 'pending' && status !== 'valid')
      throw acmeError('malformed', `an authorization that is ${status} cannot be deactivated`);
    const next = { ...a, status: 'deactivated' as const, validationLeaseUntil: undefined };
    const at = this.deps.clock.now();
    const ok = await this.deps.repo.transaction(async (tx) => {
      if (!(await this.deps.repo.updateAuthz(tx, next, at))) return false;
      await this.deps.repo.moveOrder(tx, a.orderId, ['pending', 'ready'], 'invalid', at, {
        error: { type: 'unauthorized', detail: 'an authorization of the order was deactivated' },
      });
      return true;
    });
    if (!ok) throw new DomainError('conflict', 'the authorization changed meanwhile; try again');
    return next;
  }

  /** Responding to a challenge (RFC 8555 section 7.5.1): validation starts off the request path. */
  async respondToChallenge(
    dir: AcmeDirectory,
    account: AcmeAccount,
    authzId: string,
    type: string,
  ): Promise<{ authz: AcmeAuthorization; type: ChallengeType }> {
    const a = await this.#authz(dir, account, authzId);
    const challenge = a.challenges.find((c) => c.type === type);
    if (!challenge) throw notFound('no such challenge');
    const authz = await this.validations.start(a, challenge.type, account.thumbprint);
    return { authz, type: challenge.type };
  }

  // ----- revocation and renewal information

  /**
   * revokeCert (RFC 8555 section 7.6): by the account that ordered the certificate, or by
   * whoever holds the certificate's key (the edge checked that signature).
   */
  async revoke(
    dir: AcmeDirectory,
    by: { account: AcmeAccount } | { certificateKey: true },
    serial: string,
  ): Promise<void> {
    const order = await this.deps.repo.orderBySerial(this.deps.repo.executor, dir.mount.id, serial);
    if (!order) throw acmeError('unauthorized', 'this server did not issue the certificate through ACME');
    if ('account' in by && order.accountId !== by.account.id)
      throw acmeError('unauthorized', 'the certificate was not ordered by this account');
    const status = await this.deps.revocation.status(dir.mount.id, serial);
    if (status.status === 'revoked') throw acmeError('alreadyRevoked', 'the certificate is already revoked');
    const outcome = await this.deps.revocation.revoke(dir.mount.id, { serialNumber: serial }, { requireKey: false });
    if (outcome.kind === 'expired') throw acmeError('malformed', 'the certificate has expired');
  }

  /** Whether a certificate of this mount is revoked (for renewal information). */
  async isRevoked(mountId: string, serial: string): Promise<boolean> {
    return (await this.deps.revocation.status(mountId, serial)).status === 'revoked';
  }

  /** The stored order that issued `serial` (renewal information, `replaces`). */
  async orderOfSerial(mountId: string, serial: string): Promise<AcmeOrder | undefined> {
    return this.deps.repo.orderBySerial(this.deps.repo.executor, mountId, serial);
  }

  async #checkReplaces(
    dir: AcmeDirectory,
    account: AcmeAccount,
    certId: string,
    identifiers: Identifier[],
  ): Promise<string> {
    const serial = serialOfCertId(certId);
    const old = serial ? await this.orderOfSerial(dir.mount.id, serial) : undefined;
    if (!old || old.accountId !== account.id)
      throw acmeError('malformed', '"replaces" names no certificate this account ordered');
    const shared = old.identifiers.some((i) => identifiers.some((j) => i.type === j.type && i.value === j.value));
    if (!shared) throw acmeError('malformed', 'the replacement shares no identifier with the certificate it replaces');
    return certId;
  }

  // ----- external account binding and account management (Vault API)

  /** acme/new-eab: a single-use HMAC key bound to one directory; its key is returned only here. */
  async newEab(mount: MountInfo, path: DirectoryPath): Promise<NewEab> {
    const key = randomBytes(32);
    const id = uuid();
    const createdAt = this.deps.clock.now();
    const directory = directoryPrefix(path);
    await this.deps.repo.insertEab({
      id,
      mountId: mount.id,
      directory,
      keyType: 'hs',
      sealedKey: this.deps.secrets.seal(key, EAB_CONTEXT(mount.id, id)),
      createdAt,
    });
    return { id, keyType: 'hs', key: key.toString('base64url'), directory, createdAt };
  }

  async listEab(mountId: string): Promise<StoredEab[]> {
    return this.deps.repo.listEab(mountId);
  }

  async deleteEab(mountId: string, id: string): Promise<void> {
    await this.deps.repo.deleteEab(this.deps.repo.executor, mountId, id);
  }

  async accountIds(mountId: string): Promise<string[]> {
    return this.deps.repo.accountIds(mountId);
  }

  async accountDetails(mountId: string, id: string): Promise<AccountDetails> {
    const account = await this.deps.repo.account(this.deps.repo.executor, mountId, id);
    if (!account) throw notFound(`no ACME account ${id}`);
    const now = this.deps.clock.now();
    const orders = (await this.deps.repo.ordersOfAccount(this.deps.repo.executor, id)).map((o) => ({
      ...o,
      status: orderStatusAt(o, now),
    }));
    return { account, orders };
  }

  /** Vault's account management: `revoked` stops the account, `valid` brings back a revoked one. */
  async setAccountStatus(mountId: string, id: string, status: string): Promise<AccountDetails> {
    if (status !== 'valid' && status !== 'revoked') throw invalid('status must be "valid" or "revoked"', 'status');
    const current = await this.accountDetails(mountId, id);
    if (current.account.status !== status) {
      const from = status === 'revoked' ? (['valid'] as const) : (['revoked'] as const);
      const at = this.deps.clock.now();
      const ok = await this.deps.repo.transaction((tx) =>
        this.deps.repo.updateAccount(tx, id, { status, at, from: [...from] }),
      );
      this.#forgetAccount(mountId, id);
      if (!ok) throw invalid(`the account is ${current.account.status} and cannot become ${status}`, 'status');
    }
    return this.accountDetails(mountId, id);
  }

  // ----- lifecycle

  /**
   * tidy_acme: orders whose certificate expired (or which expired unfinished) more than
   * `safetyBuffer` ago go with their authorizations; accounts left without orders are
   * revoked after `accountSafetyBuffer`, and deleted once revoked that long.
   */
  async tidy(
    mountId: string,
    opts: { safetyBuffer: number; accountSafetyBuffer: number },
  ): Promise<{ ordersDeleted: number; accountsRevoked: number; accountsDeleted: number; accountsTotal: number }> {
    const now = this.deps.clock.now();
    let ordersDeleted = 0;
    for (;;) {
      const n = await this.deps.repo.deleteOrdersBefore(mountId, addSeconds(now, -opts.safetyBuffer), 500);
      ordersDeleted += n;
      if (n < 500) break;
    }
    if (ordersDeleted > 0) this.#forgetOrders(mountId);
    const cutoff = addSeconds(now, -opts.accountSafetyBuffer);
    let accountsRevoked = 0;
    let accountsDeleted = 0;
    for (const a of await this.deps.repo.idleAccounts(mountId, cutoff)) {
      if (a.status === 'revoked' && a.revokedAt && a.revokedAt < cutoff) {
        await this.deps.repo.deleteAccount(a.id);
        this.#forgetAccount(mountId, a.id);
        accountsDeleted++;
      } else if (a.status !== 'revoked') {
        const ok = await this.deps.repo.transaction((tx) =>
          this.deps.repo.updateAccount(tx, a.id, { status: 'revoked', at: now, from: ['valid', 'deactivated'] }),
        );
        this.#forgetAccount(mountId, a.id);
        if (ok) accountsRevoked++;
      }
    }
    await this.deps.repo.deleteExpiredNonces(now);
    return {
      ordersDeleted,
      accountsRevoked,
      accountsDeleted,
      accountsTotal: await this.deps.repo.countAccounts(mountId),
    };
  }

  /** Keeps `value` in one of the bounded maps of what this node made lately (the oldest goes first). */
  #remember<V>(map: Map<string, V>, key: string, value: V): void {
    if (map.size >= RECENT_ORDERS) map.delete(map.keys().next().value!);
    map.set(key, value);
  }

  #forgetOrders(mountId: string): void {
    for (const map of [this.#chains, this.#createdHere])
      for (const k of [...map.keys()]) if (k.startsWith(`${mountId}\n`)) map.delete(k);
  }

  /** After a committed change of an account: here, and on the other workers (decision 0056). */
  #forgetAccount(mountId: string, id: string): void {
    this.#accounts.delete(`${mountId}\n${id}`);
    this.#peers.changed();
  }

  async purgeMount(mountId: string): Promise<void> {
    await this.deps.repo.purgeMount(mountId);
    this.#configs.delete(mountId);
    this.#nonces.forgetMount(mountId);
    for (const k of [...this.#accounts.keys()]) if (k.startsWith(`${mountId}\n`)) this.#accounts.delete(k);
    this.#forgetOrders(mountId);
    this.#peers.changed();
  }

  /** Stops validations in flight (shutdown). */
  async close(): Promise<void> {
    await this.validations.close();
    await this.#nonces.close();
  }
}

const notReady = (status: string): AcmeError =>
  status === 'processing'
    ? acmeError('orderNotReady', 'the order is being finalized already')
    : acmeError('orderNotReady', `the order is ${status}, not ready to be finalized`);

/** readCsr, or undefined when the CSR is not acceptable (the caller then looks closer). */
function csrIfAcceptable(der: Buffer, order: AcmeOrder): { pem: string; commonName: string } | undefined {
  try {
    return readCsr(der, order);
  } catch {
    return undefined;
  }
}

/**
 * The finalize CSR: it must parse, carry a key any role could accept, and name exactly the
 * order's identifiers (its self-signature is checked where it is signed).
 */
function readCsr(der: Buffer, order: AcmeOrder): { pem: string; commonName: string } {
  let csr: ReturnType<typeof parseCsrDeferred>['csr'];
  try {
    csr = parseCsrDeferred(der).csr;
  } catch (err) {
    throw new AcmeError('badCSR', err instanceof Error ? err.message : 'the CSR does not parse', { cause: err });
  }
  const weak = checkKeyAgainstRole(csr.key, 'any', 0);
  if (weak) throw acmeError('badCSR', `the CSR's key is not acceptable: ${weak}`);
  if (csr.extensions.basicConstraints?.ca === true) throw acmeError('badCSR', 'the CSR asks for a CA certificate');
  const names = csrNames(csr);
  const mismatch = csrMatchesOrder(order, {
    commonName: names.commonName,
    dns: names.dns,
    ips: names.ips,
    otherNames: names.emails.length + names.uris.length + names.otherSans.length,
  });
  if (mismatch) throw acmeError('badCSR', mismatch);
  return { pem: pemEncode('CERTIFICATE REQUEST', der), commonName: names.commonName };
}

/** The PEM chain an order serves: the leaf, then its issuers (the leaf not twice). */
function chainPem(leaf: string, caChain: readonly string[]): string {
  return [leaf, ...caChain.filter((p) => p.trim() !== leaf.trim())].map((p) => `${p.trim()}\n`).join('');
}

/** The cert_metadata (base64 JSON) of an ACME certificate: who ordered it, which order, through which directory. */
function acmeCertMetadata(account: AcmeAccount, order: AcmeOrder, dir: AcmeDirectory): string {
  const meta = { acme_account_id: account.id, acme_order_id: order.id, acme_directory: dir.prefix };
  return Buffer.from(JSON.stringify(meta)).toString('base64');
}

/** Mount TTLs with 0 meaning the system value (768h), as Vault treats them. */
function mountLimits(m: MountInfo): { defaultTtlSeconds: number; maxTtlSeconds: number } {
  const system = 768 * 3600;
  const max = m.maxLeaseTtlSeconds > 0 ? m.maxLeaseTtlSeconds : system;
  const def = m.defaultLeaseTtlSeconds > 0 ? m.defaultLeaseTtlSeconds : system;
  return { defaultTtlSeconds: Math.min(def, max), maxTtlSeconds: max };
}

/** Contacts are mailto: URLs (RFC 8555 section 7.3). */
function checkContacts(contact: unknown): string[] {
  if (!Array.isArray(contact) || contact.some((c) => typeof c !== 'string'))
    throw acmeError('malformed', '"contact" must be an array of URLs');
  if (contact.length > 10) throw acmeError('invalidContact', 'at most 10 contacts');
  for (const c of contact as string[]) {
    if (!c.startsWith('mailto:')) throw acmeError('unsupportedContact', `only mailto: contacts are supported: ${c}`);
    const addr = c.slice(7);
    if (!/^[^@\s,?]+@[^@\s,?]+\.[^@\s,?]+$/.test(addr)) throw acmeError('invalidContact', `"${c}" is not an address`);
  }
  return contact as string[];
}

/**
 * The serial of an ARI certificate identifier (RFC 9773 section 4.1):
 * base64url(AKI keyIdentifier) "." base64url(serial DER bytes); undefined when malformed.
 */
export function serialOfCertId(certId: string): string | undefined {
  const m = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/.exec(certId);
  if (!m) return undefined;
  const bytes = Buffer.from(m[2]!, 'base64url');
  if (bytes.length === 0 || bytes.length > 21) return undefined;
  return serialToHex(bytes);
}
