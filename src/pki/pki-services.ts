import { snapshotRoutes } from './sys/snapshot-routes.js';
import type { FastifyInstance } from 'fastify';
import type { CoreDeps } from '../deps.js';
import { PolicyRepo } from './acl/policy-repo.js';
import { policyRoutes } from './acl/policy-routes.js';
import { PolicyService } from './acl/policy-service.js';
import { MountRepo } from './mounts/mount-repo.js';
import { sysMountRoutes } from './mounts/mount-routes.js';
import { MOUNT_PURGE_JOB, MountService } from './mounts/mount-service.js';
import { RouteTable } from './mounts/route-table.js';
import { MountConfigRepo } from './config/mount-config-repo.js';
import { mountConfigRoutes } from './config/mount-config-routes.js';
import { MountConfigService } from './config/mount-config-service.js';
import { authorityRoutes } from './issuers/authority-routes.js';
import { caRoutes } from './issuers/ca-routes.js';
import { CaService } from './issuers/ca-service.js';
import { IssuerRepo } from './issuers/issuer-repo.js';
import { issuerRoutes } from './issuers/issuer-routes.js';
import { IssuerService } from './issuers/issuer-service.js';
import { KeyRepo } from './keys/key-repo.js';
import { keyRoutes } from './keys/key-routes.js';
import { KeyService } from './keys/key-service.js';
import { registerDispatcher } from './pki-dispatch.js';
import { CertRepo } from './certs/cert-repo.js';
import { certRoutes } from './certs/cert-routes.js';
import { CertSearchRepo } from './certs/cert-search-repo.js';
import { CertSearchIndex } from './certs/cert-search-index.js';
import { CertService } from './certs/cert-service.js';
import { CERT_LEASE_KIND } from './certs/cert.js';
import { KeyPool } from './crypto/key-pool.js';
import { issuanceRoutes } from './issuance/issuance-routes.js';
import { IssuanceService } from './issuance/issuance-service.js';
import { ExternalPolicyRepo } from './external-policy/external-policy-repo.js';
import { externalPolicyRoutes } from './external-policy/external-policy-routes.js';
import { ExternalPolicyService } from './external-policy/external-policy-service.js';
import { privilegedSigningRoutes } from './issuance/privileged-signing-routes.js';
import { PrivilegedSigningService } from './issuance/privileged-signing-service.js';
import { CRL_AUTO_REBUILD_JOB, CRL_DELTA_JOB, CrlService } from './revocation/crl-service.js';
import { RevocationRepo } from './revocation/revocation-repo.js';
import { revocationRoutes } from './revocation/revocation-routes.js';
import { RevocationService } from './revocation/revocation-service.js';
import { ocspSettings } from './ocsp/ocsp.js';
import { ocspRoutes } from './ocsp/ocsp-routes.js';
import { OcspService } from './ocsp/ocsp-service.js';
import { RoleRepo } from './roles/role-repo.js';
import { roleRoutes } from './roles/role-routes.js';
import { RoleService } from './roles/role-service.js';
import type { MountInfo, PkiRoute } from './pki-route.js';
import { EXPIRY_SWEEP_JOB } from './sys/expiry-sweep.js';
import { LeaseRepo } from './sys/lease-repo.js';
import { LeaseService } from './sys/lease-service.js';
import { openApiRoutes } from './sys/openapi-routes.js';
import type { SystemRoute } from './sys/system-route.js';
import { sysRoutes, tokenAuthEntry, uuidFrom } from './sys/sys-routes.js';
import { keyRotationRoutes } from './sys/key-rotation-routes.js';
import { auditRoutes } from './sys/audit-routes.js';
import { QuotaRepo } from './quotas/quota-repo.js';
import { QuotaService } from './quotas/quota-service.js';
import { quotaRoutes, registerQuotaGuard } from './quotas/quota-routes.js';
import { TokenRepo } from './tokens/token-repo.js';
import { tokenRoutes } from './tokens/token-routes.js';
import { TokenService } from './tokens/token-service.js';
import { TidyRepo } from './tidy/tidy-repo.js';
import { tidyRoutes } from './tidy/tidy-routes.js';
import { AUTO_TIDY_JOB, TIDY_JOB, TidyService } from './tidy/tidy-service.js';
import type { TidyJobPayload } from './tidy/tidy-service.js';
import { nativeEcdsaIf } from './crypto/native-ecdsa.js';
import { AcmeRepo } from './acme/acme-repo.js';
import { acmeProtocolRoutes } from './acme/acme-protocol-routes.js';
import { acmeRoutes } from './acme/acme-routes.js';
import { AcmeService } from './acme/acme-service.js';
import { AuthMountRepo } from './auth/auth-mount-repo.js';
import { sysAuthRoutes } from './auth/auth-mount-routes.js';
import { methodOf } from './auth/auth-mount.js';
import { AuthMountService } from './auth/auth-mount-service.js';
import { AuthRoleRepo } from './auth/auth-role-repo.js';
import type { AuthRoute } from './auth/auth-route.js';
import { AppRoleRepo } from './auth/approle/approle-repo.js';
import { appRoleRoutes } from './auth/approle/approle-routes.js';
import { AppRoleService } from './auth/approle/approle-service.js';
import { JwtKeySource } from './auth/jwt/jwt-key-source.js';
import { jwtRoutes } from './auth/jwt/jwt-routes.js';
import { JwtService } from './auth/jwt/jwt-service.js';
import { certAuthRoutes } from './auth/cert/cert-auth-routes.js';
import { CertAuthService } from './auth/cert/cert-auth-service.js';

/** Certificate group commits in flight at once on PostgreSQL, which overlaps concurrent commits (BatchQueue). */
const PG_COMMITS_IN_FLIGHT = 4;

/**
 * The PKI engine's composition root: builds its repos and services from the core
 * dependencies and registers its routes inside the /v1 plugin.
 */
export interface PkiServices {
  registerRoutes(app: FastifyInstance): Promise<void>;
  jobHandlers: Record<
    string,
    (payload: unknown, ctx: { jobId: string; attempt: number; signal: AbortSignal }) => Promise<void>
  >;
  /** Releases background resources (key pools, timers) at shutdown. */
  close?(): Promise<void>;
  /** Adds routes served inside every PKI mount (also after registerRoutes). */
  addRoutes(routes: readonly PkiRoute[]): void;
  /** Every route served inside PKI mounts (for checks over all paths, such as the ACL audit). */
  mountRoutes(): readonly PkiRoute[];
  /** Every route served inside auth mounts, by method (for checks over all paths, such as the OpenAPI test). */
  authRoutes(): Readonly<Record<'approle' | 'jwt' | 'cert', readonly AuthRoute[]>>;
  mounts: MountService;
  leases: LeaseService;
  tokens: TokenService;
  policies: PolicyService;
  /** Revocation status, revocations and their event; CRL builds (for OCSP, tidy and tests). */
  revocation: RevocationService;
  crls: CrlService;
}

export function buildPkiServices(core: CoreDeps): PkiServices {
  const db = core.db.kysely;
  const { clock, peers } = core;
  // This server's choice of crypto (native_crypto), handed to what signs, checks and makes keys.
  const native = nativeEcdsaIf(core.config.nativeCrypto);

  // Plumbing shared by every module: mounts, leases, tokens, ACL policies.
  const leases = new LeaseService({ db, repo: new LeaseRepo({ db, kind: core.db.kind }), clock, jobs: core.jobs });
  const mounts = new MountService({
    db,
    units: core.db.units,
    repo: new MountRepo({ db }),
    clock,
    jobs: core.jobs,
    peers,
  });
  mounts.onDisable((m) => leases.forgetMount(m.id));
  const tokens = new TokenService({
    db,
    units: core.db.units,
    repo: new TokenRepo({ db }),
    clock,
    jobs: core.jobs,
    adminTokens: core.adminTokens,
    leases,
    peers,
  });
  const policies = new PolicyService({ repo: new PolicyRepo({ db }), clock, peers });
  const quotas = new QuotaService({
    repo: new QuotaRepo({ db, units: core.db.units }),
    mounts,
    clock,
    logger: core.logger.child({ component: 'vault-quotas' }),
    // Several nodes on PostgreSQL, or several workers on one SQLite file, share one count.
    shared: core.db.kind === 'postgres' || core.config.workers > 1,
  });

  // Auth methods under auth/: logins end in a token of the token store.
  const authMounts = new AuthMountService({
    db,
    units: core.db.units,
    repo: new AuthMountRepo({ db }),
    clock,
    tokens,
    peers,
  });
  const authRoles = new AuthRoleRepo({ db });
  authMounts.onDisable((m) => authRoles.purgeMount(m.id));
  const authRoutes = {
    approle: new RouteTable<AuthRoute>(),
    jwt: new RouteTable<AuthRoute>(),
    cert: new RouteTable<AuthRoute>(),
  };
  const approle = new AppRoleService({ roles: authRoles, repo: new AppRoleRepo({ db }), auth: authMounts, clock });
  authRoutes.approle.addAll(appRoleRoutes(approle));
  const jwtKeys = new JwtKeySource({ nowMs: () => clock.now().getTime() });
  authRoutes.jwt.addAll(jwtRoutes(new JwtService({ roles: authRoles, auth: authMounts, keys: jwtKeys, clock })));
  authMounts.onDisable(async (m) => jwtKeys.forget(m.id));

  /**
   * Routes served inside every PKI mount. Each module adds its PkiRoute array here, e.g.
   * `mountRoutes.addAll(keyRoutes(keyService))`; a module that stores per-mount data also
   * registers `mounts.onDisable(...)` to remove it, and one that hands out leases registers
   * `leases.registerRevoker(kind, ...)`.
   */
  const mountRoutes = new RouteTable<PkiRoute>();

  // Keys, issuers and authority information (config/urls, config/cluster, CA fetches).
  const mountConfig = new MountConfigService({ repo: new MountConfigRepo({ db, units: core.db.units }), clock });
  const keys = new KeyService({ repo: new KeyRepo({ db }), config: mountConfig, secrets: core.secrets, clock });
  const issuers = new IssuerService({ repo: new IssuerRepo({ db }), keys, config: mountConfig, clock, native, peers });
  const ca = new CaService({ issuers, clock });
  // Paginated LIST certs is registered before the authority routes so it is the one served.
  const certSearch = new CertSearchRepo({ db, kind: core.db.kind, units: core.db.units });
  const certSearchIndex = new CertSearchIndex({
    repo: certSearch,
    log: core.logger.child({ component: 'pki-cert-search' }),
  });
  certSearchIndex.start();
  const certs = new CertService({
    repo: new CertRepo({ db, units: core.db.units }),
    clock,
    leases,
    search: certSearch,
    searchIndex: certSearchIndex,
    commitsInFlight: core.db.kind === 'postgres' ? PG_COMMITS_IN_FLIGHT : 1,
    resolveIssuer: async (mountId, ref) => (await issuers.resolve(mountId, ref)).id,
  });
  mountRoutes.addAll(certRoutes(certs));
  mountRoutes.addAll([
    ...mountConfigRoutes(mountConfig),
    ...keyRoutes(keys),
    ...issuerRoutes(issuers, ca),
    ...caRoutes(ca),
    ...authorityRoutes(issuers),
  ]);
  mounts.onDisable((m) => issuers.purgeMount(m.id));

  // Roles and issuance. Keys for issue come from a bounded background pool (EC P-256/P-384 in batches, RSA 2048).
  const keyPool = new KeyPool({
    kinds: [
      { type: 'ec', bits: 256, capacity: 256 },
      { type: 'ec', bits: 384, capacity: 64 },
      { type: 'rsa', bits: 2048, capacity: 8 },
    ],
    // One RSA generation (tens of ms) and one EC batch (about a millisecond) at a time.
    maxPending: 2,
    native,
  });
  keyPool.start();
  const roles = new RoleService({ repo: new RoleRepo({ db, units: core.db.units }), issuers, clock, peers });
  const issuance = new IssuanceService({ roles, issuers, certs, leases, clock, keyPool });
  mountRoutes.addAll([...roleRoutes(roles), ...issuanceRoutes(issuance)]);
  // sign-intermediate, sign-self-issued and sign-verbatim: no role policy, trusted operators only.
  const privileged = new PrivilegedSigningService({ issuers, roles, certs, issuance, clock });
  mountRoutes.addAll(privilegedSigningRoutes(privileged));
  mounts.onDisable(async (m) => {
    await roles.purgeMount(m.id);
    await certs.purgeMount(m.id);
  });
  // Issuance decided by an external policy service (CIEPS).
  const externalPolicy = new ExternalPolicyService({
    repo: new ExternalPolicyRepo({ db }),
    issuers,
    certs,
    secrets: core.secrets,
    clock,
    keyPool,
  });
  mountRoutes.addAll(externalPolicyRoutes(externalPolicy));
  mounts.onDisable((m) => externalPolicy.purgeMount(m.id));

  // Revocation and CRLs. Revoking a certificate's lease revokes it exactly as `revoke` does.
  const revocationRepo = new RevocationRepo({ db, units: core.db.units });
  const crls = new CrlService({
    repo: revocationRepo,
    issuers,
    jobs: core.jobs,
    clock,
    logger: core.logger.child({ component: 'pki-crl' }),
  });
  const revocation = new RevocationService({ repo: revocationRepo, crls, issuers, certs, clock });
  mountRoutes.addAll(revocationRoutes(revocation, crls, issuers));
  mounts.onDisable((m) => crls.purgeMount(m.id));
  leases.registerRevoker(CERT_LEASE_KIND, (lease) => revocation.revokeLease(lease));

  // TLS certificate logins: a certificate a mount of this server holds as revoked cannot log in.
  authRoutes.cert.addAll(
    certAuthRoutes(
      new CertAuthService({
        roles: authRoles,
        auth: authMounts,
        clock,
        isRevoked: async (serial) => {
          for (const m of await mounts.list())
            if ((await revocation.statusMany(m.id, [serial])).get(serial)?.status === 'revoked') return true;
          return false;
        },
      }),
    ),
  );

  // ACME (RFC 8555) on every mount: issuance through the directory's role, sign-verbatim or external policy.
  const acmeLogger = core.logger.child({ component: 'pki-acme' });
  const acme = new AcmeService({
    repo: new AcmeRepo({ db, units: core.db.units }),
    clock,
    secrets: core.secrets,
    mountConfig,
    roles,
    issuance,
    privileged,
    externalPolicy,
    revocation,
    onError: (err) => acmeLogger.warn({ err }, 'ACME challenge validation could not record its outcome'),
    // A SQLite file serves one server at a time (its lock), so nonces need no shared table.
    // Nonces in memory only where this process is the database's only server (one worker on SQLite).
    nonceScope: core.db.kind === 'sqlite' && core.config.workers <= 1 ? 'process' : 'shared',
    peers,
  });
  mountRoutes.addAll([...acmeRoutes(acme), ...acmeProtocolRoutes(acme)]);
  mounts.onDisable((m) => acme.purgeMount(m.id));

  // Tidy: removes expired certificates, revocation entries, issuers and metadata as a job.
  const tidy = new TidyService({
    repo: new TidyRepo({ db, units: core.db.units }),
    certs,
    issuers,
    jobs: core.jobs,
    clock,
    logger: core.logger.child({ component: 'pki-tidy' }),
    rebuildCrl: async (mountId) => {
      await crls.request(mountId, { complete: true, delta: true, issuers: 'all' });
    },
    tidyAcme: (mountId, opts) => acme.tidy(mountId, opts),
  });
  mountRoutes.addAll(tidyRoutes(tidy));
  mounts.onDisable((m) => tidy.purgeMount(m.id));
  core.metrics.onScrape(async () => {
    const [counts, all] = await Promise.all([tidy.publishedStoredCounts(), mounts.list()]);
    const paths = new Map(all.map((m) => [m.id, `${m.path}/`]));
    core.metrics.pkiCertificatesStored.reset();
    core.metrics.pkiRevokedCertificatesStored.reset();
    for (const c of counts) {
      const mount = paths.get(c.mountId);
      if (mount === undefined) continue;
      core.metrics.pkiCertificatesStored.set({ mount }, c.total);
      core.metrics.pkiRevokedCertificatesStored.set({ mount }, c.revoked);
    }
  });

  // OCSP: answers signed by each certificate's issuer; revocation status read per request.
  const ocsp = new OcspService({
    issuers,
    clock,
    sources: {
      revocationStatuses: (mountId, serials) => revocation.statusMany(mountId, serials),
      settings: async (mountId) => ocspSettings(await crls.getConfig(mountId)),
    },
  });
  mountRoutes.addAll(ocspRoutes(ocsp));
  issuers.onIssuersChanged((mountId) => ocsp.forgetMount(mountId));
  crls.onConfigChanged((mountId) => ocsp.forgetMount(mountId));
  mounts.onDisable(async (m) => ocsp.forgetMount(m.id));

  return {
    async registerRoutes(app) {
      app.addHook('onReady', () => tidy.scheduleAutoTidyCheck());
      app.addHook('onReady', () => quotas.start());
      registerQuotaGuard(app, quotas);
      const systemRoutes: SystemRoute[] = [];
      systemRoutes.push(
        ...openApiRoutes({
          systemRoutes: () => systemRoutes,
          mountRoutes: () => mountRoutes.routes(),
          authRoutes: (m) => authRoutes[methodOf(m.type)].routes(),
          mounts,
          authMounts,
          tokens,
          policies,
          version: '1',
        }),
        ...sysMountRoutes(mounts),
        ...auditRoutes(core.audit),
        ...sysAuthRoutes(authMounts, tokenAuthEntry(uuidFrom(core.config.databaseUrl))),
        ...policyRoutes(policies),
        ...quotaRoutes(quotas),
        ...tokenRoutes(tokens, clock),
        ...snapshotRoutes({ clock, takeSnapshot: () => core.takeBackup() }),
        ...keyRotationRoutes(core.masterKeyRotation),
        ...sysRoutes({
          clock,
          leases,
          tokens,
          policies,
          clusterSeed: core.config.databaseUrl,
          storageType: core.db.kind === 'postgres' ? 'postgresql' : 'sqlite',
        }),
      );
      registerDispatcher(app, {
        mounts,
        tokens,
        policies,
        mountRoutes,
        audit: core.audit,
        authMounts,
        authRoutes,
        systemRoutes,
      });
    },
    jobHandlers: {
      [MOUNT_PURGE_JOB]: async (payload) => mounts.purge((payload as { mount: MountInfo }).mount),
      [TIDY_JOB]: async (payload, ctx) => tidy.runJob(payload as TidyJobPayload, ctx.signal),
      [AUTO_TIDY_JOB]: async () => {
        await tidy.runAutoTidyCheck();
        await tidy.scheduleAutoTidyCheck();
      },
      [CRL_AUTO_REBUILD_JOB]: async (payload) => crls.runAutoRebuild((payload as { mountId: string }).mountId),
      [CRL_DELTA_JOB]: async (payload) => crls.runDeltaRebuild((payload as { mountId: string }).mountId),
      [EXPIRY_SWEEP_JOB]: async () => {
        await tokens.sweepExpired();
        await leases.sweepExpired();
      },
    },
    async close() {
      quotas.stop();
      await certSearchIndex.close();
      await acme.close();
      await keyPool.stop();
      await certs.drain();
      await revocation.drain();
    },
    addRoutes: (routes) => mountRoutes.addAll(routes),
    mountRoutes: () => mountRoutes.routes(),
    authRoutes: () => ({
      approle: authRoutes.approle.routes(),
      jwt: authRoutes.jwt.routes(),
      cert: authRoutes.cert.routes(),
    }),
    mounts,
    leases,
    tokens,
    policies,
    revocation,
    crls,
  };
}
