import type { Clock } from '../../../shared/clock.js';
import { invalid, notFound } from '../../../shared/errors.js';
import type { AuthMount } from '../auth-mount.js';
import type { AuthMountService, LoginOutcome } from '../auth-mount-service.js';
import type { AuthRoleRepo } from '../auth-role-repo.js';
import { checkClaims, checkJwtConfig, SUPPORTED_ALGS, updateJwtRole } from './jwt.js';
import type { JwtConfig, JwtRole, JwtRoleFields } from './jwt.js';
import type { JwtKeySource } from './jwt-key-source.js';
import { parseJwt, verifyJwt } from './jwt-token.js';

/**
 * The JWT/OIDC method: its configuration, roles, and login with a signed JWT (GitHub
 * Actions' OIDC token, a Kubernetes service-account token, any OIDC provider's ID token).
 */
export class JwtService {
  constructor(
    private readonly deps: { roles: AuthRoleRepo; auth: AuthMountService; keys: JwtKeySource; clock: Clock },
  ) {}

  async readConfig(mount: AuthMount): Promise<JwtConfig> {
    const config = await this.deps.auth.methodConfig(mount);
    if (!config) throw notFound('no configuration');
    return config as unknown as JwtConfig;
  }

  /** Validates, then fetches the keys once (an unreachable JWKS or discovery URL is refused now). */
  async writeConfig(mount: AuthMount, config: JwtConfig): Promise<void> {
    checkJwtConfig(config);
    await this.deps.keys.probe(config);
    this.deps.keys.forget(mount.id);
    await this.deps.auth.setMethodConfig(mount, config as unknown as Record<string, unknown>);
  }

  async listRoles(mount: AuthMount): Promise<string[]> {
    return this.deps.roles.names(mount.id);
  }

  async readRole(mount: AuthMount, name: string): Promise<JwtRole> {
    const r = await this.deps.roles.get<JwtRole>(mount.id, name);
    if (!r) throw notFound(`role "${name}" could not be found`);
    return r.data;
  }

  async writeRole(mount: AuthMount, name: string, body: Record<string, unknown>, f: JwtRoleFields): Promise<void> {
    if (name === '') throw invalid('missing role name', 'name');
    const current = await this.deps.roles.get<JwtRole>(mount.id, name);
    const data = updateJwtRole(current?.data, body, f);
    await this.deps.roles.put(mount.id, { name, roleId: null, data }, this.deps.clock.now());
  }

  async deleteRole(mount: AuthMount, name: string): Promise<void> {
    await this.deps.roles.delete(mount.id, name);
  }

  /**
   * Login: the signature is checked first (against the mount's keys, whatever the role), so
   * a forged token learns nothing about roles; then the role's claim checks.
   */
  login(mount: AuthMount, roleName: string, token: string, clientIp: string): Promise<LoginOutcome> {
    return this.deps.auth.login(() => this.#login(mount, roleName, token, clientIp));
  }

  async #login(mount: AuthMount, roleName: string, token: string, clientIp: string): Promise<LoginOutcome> {
    const stored = await this.deps.auth.methodConfig(mount);
    if (!stored) throw invalid('could not load configuration');
    const config = stored as unknown as JwtConfig;
    const name = roleName || config.default_role;
    if (name === '') throw invalid('missing role');
    if (token === '') throw invalid('missing token');
    const jwt = parseJwt(token);
    const allowed = config.jwt_supported_algs.length > 0 ? config.jwt_supported_algs : SUPPORTED_ALGS;
    if (!allowed.includes(jwt.header.alg))
      throw invalid(`error validating token: unsupported signing algorithm "${jwt.header.alg}"`);
    const { keys, set } = await this.deps.keys.keysFor(mount.id, config, jwt.header.kid);
    if (!keys.some((k) => verifyJwt(jwt, k)))
      throw invalid('error validating token: failed to verify id token signature');
    const role = await this.deps.roles.get<JwtRole>(mount.id, name);
    if (!role) throw invalid(`role "${name}" could not be found`);
    const identity = checkClaims(jwt.claims, role.data, {
      issuer: config.bound_issuer || set.discoveredIssuer,
      now: this.deps.clock.now(),
      roleName: name,
    });
    return this.deps.auth.issueToken(
      mount,
      role.data,
      { displayName: `${mount.type}-${identity.alias}`.slice(0, 64), meta: identity.metadata },
      clientIp,
    );
  }
}
