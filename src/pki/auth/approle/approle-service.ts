import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../../shared/clock.js';
import { cidrsAllow } from '../../../shared/cidr.js';
import { forbidden, invalid, notFound } from '../../../shared/errors.js';
import type { AuthMount } from '../auth-mount.js';
import type { AuthMountService, LoginOutcome } from '../auth-mount-service.js';
import type { AuthRoleRepo } from '../auth-role-repo.js';
import { checkCidrs } from '../login-token.js';
import { LOGIN_FAILED, assertRoleName, planSecretId, updateAppRole } from './approle.js';
import type { AppRole, AppRoleFields, SecretIdEntry } from './approle.js';
import type { AppRoleRepo } from './approle-repo.js';

export interface SecretIdRequest {
  /** A caller-chosen secret id (custom-secret-id); generated otherwise. */
  secretId?: string;
  metadata: Record<string, string>;
  cidrList: string[];
  tokenBoundCidrs: string[];
  ttl: number;
  numUses: number;
}

/**
 * AppRole: roles, their role ids and secret ids, and login with both. Secret ids are kept
 * only as SHA-256 hashes (with the mount id, so equal secrets on two mounts differ).
 */
export class AppRoleService {
  constructor(
    private readonly deps: { roles: AuthRoleRepo; repo: AppRoleRepo; auth: AuthMountService; clock: Clock },
  ) {}

  async listRoles(mount: AuthMount): Promise<string[]> {
    return this.deps.roles.names(mount.id);
  }

  async readRole(mount: AuthMount, name: string): Promise<AppRole> {
    const r = await this.deps.roles.get<AppRole>(mount.id, name);
    if (!r) throw notFound(`role "${name}" does not exist`);
    return r.data;
  }

  /** Creates or updates a role; a new role gets a random role_id. */
  async writeRole(
    mount: AuthMount,
    name: string,
    body: Record<string, unknown>,
    fields: AppRoleFields & { role_id?: string },
  ): Promise<AppRole> {
    assertRoleName(name);
    const current = await this.deps.roles.get<AppRole>(mount.id, name);
    const data = updateAppRole(current?.data, body, fields);
    const roleId =
      fields.role_id !== undefined && fields.role_id !== '' ? fields.role_id : (current?.roleId ?? randomUUID());
    await this.deps.roles.put(mount.id, { name, roleId, data }, this.deps.clock.now());
    return data;
  }

  async deleteRole(mount: AuthMount, name: string): Promise<void> {
    await this.deps.roles.delete(mount.id, name);
    await this.deps.repo.deleteRole(mount.id, name);
  }

  async roleId(mount: AuthMount, name: string): Promise<string> {
    return (await this.role(mount, name)).roleId ?? '';
  }

  async setRoleId(mount: AuthMount, name: string, roleId: string): Promise<void> {
    if (roleId === '') throw invalid('missing role_id', 'role_id');
    const r = await this.role(mount, name);
    await this.deps.roles.put(mount.id, { ...r, roleId }, this.deps.clock.now());
  }

  async createSecretId(
    mount: AuthMount,
    name: string,
    req: SecretIdRequest,
  ): Promise<{ secretId: string; entry: SecretIdEntry }> {
    const role = (await this.role(mount, name)).data;
    if (!role.bind_secret_id) throw invalid('bind_secret_id is not set on the role', 'bind_secret_id');
    const cidrList = checkCidrs('cidr_list', req.cidrList);
    const tokenBoundCidrs = checkCidrs('token_bound_cidrs', req.tokenBoundCidrs);
    const plan = planSecretId(role, { ttl: req.ttl, numUses: req.numUses, cidrList, tokenBoundCidrs });
    if (req.secretId !== undefined && req.secretId === '') throw invalid('missing secret_id', 'secret_id');
    const secretId = req.secretId ?? randomUUID();
    const now = this.deps.clock.now();
    const entry: SecretIdEntry = {
      accessor: randomUUID(),
      roleName: name,
      usesLeft: plan.numUses > 0 ? plan.numUses : null,
      numUses: plan.numUses,
      ttl: plan.ttl,
      expiresAt: plan.ttl > 0 ? new Date(now.getTime() + plan.ttl * 1000) : null,
      cidrList,
      tokenBoundCidrs,
      metadata: req.metadata,
      createdAt: now,
      updatedAt: now,
    };
    await this.deps.repo.insert(mount.id, this.#hash(mount, secretId), entry);
    return { secretId, entry };
  }

  async listSecretIdAccessors(mount: AuthMount, name: string): Promise<string[]> {
    await this.role(mount, name);
    return this.deps.repo.accessors(mount.id, name);
  }

  /** The secret id's entry; undefined (Vault answers 204) when it is unknown, spent or expired. */
  async lookupSecretId(mount: AuthMount, name: string, secretId: string): Promise<SecretIdEntry | undefined> {
    if (secretId === '') throw invalid('missing secret_id', 'secret_id');
    await this.role(mount, name);
    const e = await this.deps.repo.findByHash(mount.id, this.#hash(mount, secretId));
    return e && e.roleName === name && this.#alive(e) ? e : undefined;
  }

  async lookupSecretIdAccessor(mount: AuthMount, name: string, accessor: string): Promise<SecretIdEntry> {
    if (accessor === '') throw invalid('missing secret_id_accessor', 'secret_id_accessor');
    await this.role(mount, name);
    const e = await this.deps.repo.findByAccessor(mount.id, name, accessor);
    if (!e) throw invalid(`failed to find accessor entry for secret_id_accessor: "${accessor}"`, 'secret_id_accessor');
    return e;
  }

  async destroySecretId(mount: AuthMount, name: string, secretId: string): Promise<void> {
    if (secretId === '') throw invalid('missing secret_id', 'secret_id');
    await this.role(mount, name);
    await this.deps.repo.deleteByHash(mount.id, name, this.#hash(mount, secretId));
  }

  async destroySecretIdAccessor(mount: AuthMount, name: string, accessor: string): Promise<void> {
    await this.lookupSecretIdAccessor(mount, name, accessor);
    await this.deps.repo.deleteByAccessor(mount.id, name, accessor);
  }

  /** Removes expired secret ids (tidy/secret-id). */
  async tidy(): Promise<number> {
    return this.deps.repo.deleteExpired(this.deps.clock.now());
  }

  /**
   * Login with role_id and secret_id. Every failure to match says LOGIN_FAILED, whichever
   * part was wrong, and costs the same work: the secret id is hashed and looked up even when
   * the role id is unknown. A source address outside the CIDRs is refused (403) only after
   * the secret id matched, and before a use is spent.
   */
  login(mount: AuthMount, roleId: string, secretId: string, clientIp: string): Promise<LoginOutcome> {
    return this.deps.auth.login(() => this.#login(mount, roleId, secretId, clientIp));
  }

  async #login(mount: AuthMount, roleId: string, secretId: string, clientIp: string): Promise<LoginOutcome> {
    if (roleId === '') throw invalid('missing role_id', 'role_id');
    const role = await this.deps.roles.findByRoleId<AppRole>(mount.id, roleId);
    const data = role?.data;
    let secret: SecretIdEntry | undefined;
    let hash = '';
    if (!data || data.bind_secret_id) {
      if (secretId === '' && data) throw invalid('missing secret_id', 'secret_id');
      hash = this.#hash(mount, secretId);
      const found = await this.deps.repo.findByHash(mount.id, hash);
      const owner = found ? found.roleName : '';
      const matches = sameText(owner, role?.name ?? '\u0000');
      if (!role || !found || !matches || !this.#alive(found)) throw invalid(LOGIN_FAILED);
      secret = found;
    }
    if (!role || !data) throw invalid(LOGIN_FAILED);
    if (!cidrsAllow(data.secret_id_bound_cidrs, clientIp) || (secret && !cidrsAllow(secret.cidrList, clientIp)))
      throw forbidden(`source address "${clientIp}" unauthorized through CIDR restrictions on the secret ID`);
    if (secret && secret.usesLeft !== null && !(await this.deps.repo.spendUse(hash, this.deps.clock.now())))
      throw invalid(LOGIN_FAILED);
    const meta: Record<string, string> = { role_name: role.name, ...(secret?.metadata ?? {}) };
    return this.deps.auth.issueToken(
      mount,
      data,
      {
        displayName: 'approle',
        meta,
        boundCidrs: secret?.tokenBoundCidrs,
      },
      clientIp,
    );
  }

  private async role(mount: AuthMount, name: string) {
    const r = await this.deps.roles.get<AppRole>(mount.id, name);
    if (!r) throw invalid(`role "${name}" does not exist`, 'role_name');
    return r;
  }

  #alive(e: SecretIdEntry): boolean {
    if (e.usesLeft !== null && e.usesLeft <= 0) return false;
    return e.expiresAt === null || e.expiresAt.getTime() > this.deps.clock.now().getTime();
  }

  #hash(mount: AuthMount, secretId: string): string {
    return createHash('sha256').update(`${mount.id}\n${secretId}`).digest('hex');
  }
}

/** Compares two strings in time that depends only on their hashes' length. */
export function sameText(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}
