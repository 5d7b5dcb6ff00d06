import type { Clock } from '../../shared/clock.js';
import { CachedEntries, PeerChanges } from '../../shared/peer-changes.js';
import { invalid, notFound } from '../../shared/errors.js';
import type { IssuerService } from '../issuers/issuer-service.js';
import { normalizeRole, validateRoleName } from './role.js';
import type { PkiRole, ROLE_FIELD_NAMES } from './role.js';
import type { Executor, RoleRepo } from './role-repo.js';

/**
 * How long a role read for issuance is served from memory. Writes on this node drop the
 * entry at once, and other workers of this machine before the write is answered (decision
 * 0056); another node sees a change within this time. One second keeps the hot
 * path free of a role query per certificate while a changed role takes effect promptly
 * everywhere.
 */
export const ROLE_CACHE_MS = 1000;

type RoleInput = Record<(typeof ROLE_FIELD_NAMES)[number], unknown>;

/** Role use cases: write (full replace), patch, read, list, delete, and cached lookup for issuance. */
export class RoleService {
  /** Roles for issuance by `<mount id>\n<name>`; an unknown role is not kept. */
  readonly #cache: CachedEntries<PkiRole | undefined>;

  constructor(private readonly deps: { repo: RoleRepo; issuers: IssuerService; clock: Clock; peers?: PeerChanges }) {
    this.#cache = new CachedEntries({
      nowMs: () => deps.clock.now().getTime(),
      ttlMs: ROLE_CACHE_MS,
      peers: deps.peers ?? new PeerChanges(),
      max: 4096,
    });
  }

  /** POST roles/:name: every omitted field takes its default. */
  async write(mountId: string, name: string, input: RoleInput): Promise<{ role: PkiRole; warnings: string[] }> {
    validateRoleName(name);
    const { role, warnings } = normalizeRole(input);
    await this.#checkIssuerRef(mountId, role, warnings);
    await this.deps.repo.upsert(this.deps.repo.executor, mountId, name, role, this.deps.clock.now());
    this.#forget(mountId, name);
    return { role, warnings };
  }

  /** PATCH roles/:name: only the supplied fields change. */
  async patch(
    mountId: string,
    name: string,
    changes: Partial<RoleInput>,
  ): Promise<{ role: PkiRole; warnings: string[] }> {
    const out = await this.deps.repo.transaction(async (tx) => {
      const current = await this.deps.repo.find(tx, mountId, name);
      if (!current) throw invalid('Unable to fetch role entry to patch');
      const merged = { ...current.role, ...changes } as unknown as RoleInput;
      const { role, warnings } = normalizeRole(merged);
      await this.#checkIssuerRef(mountId, role, warnings, tx);
      await this.deps.repo.upsert(tx, mountId, name, role, this.deps.clock.now());
      return { role, warnings };
    });
    this.#forget(mountId, name);
    return out;
  }

  async read(mountId: string, name: string): Promise<PkiRole> {
    const r = await this.deps.repo.find(this.deps.repo.executor, mountId, name);
    if (!r) throw notFound(`role ${name} not found`);
    return r.role;
  }

  async list(mountId: string, opts: { after?: string; limit?: number } = {}): Promise<string[]> {
    return this.deps.repo.list(this.deps.repo.executor, mountId, opts);
  }

  async delete(mountId: string, name: string): Promise<void> {
    await this.deps.repo.delete(this.deps.repo.executor, mountId, name);
    this.#forget(mountId, name);
  }

  /** After a committed change: this process's entry now, the other workers' before the change is answered. */
  #forget(mountId: string, name: string): void {
    const key = `${mountId}\n${name}`;
    this.#cache.forget((k) => k === key);
  }

  async purgeMount(mountId: string): Promise<void> {
    await this.deps.repo.deleteAll(this.deps.repo.executor, mountId);
    this.#cache.forget((k) => k.startsWith(`${mountId}\n`));
  }

  /** The role for an issuance request; unknown roles are a 400 `unknown role: <name>`. */
  async forIssuance(mountId: string, name: string): Promise<PkiRole> {
    const key = `${mountId}\n${name}`;
    const role =
      this.#cache.get(key) ??
      (await this.#cache.load(
        key,
        async () => (await this.deps.repo.find(this.deps.repo.executor, mountId, name))?.role,
        (r) => (r ? Infinity : undefined),
      ));
    if (!role) throw invalid(`unknown role: ${name}`, 'name');
    return role;
  }

  /** Pass the open transaction, if any: SQLite has one connection, so a query outside it would wait forever. */
  async #checkIssuerRef(mountId: string, role: PkiRole, warnings: string[], ex?: Executor): Promise<void> {
    let found = false;
    try {
      found = (await this.deps.issuers.find(mountId, role.issuer_ref, ex)) !== undefined;
    } catch {
      found = false;
    }
    if (!found)
      warnings.push(
        `Issuing Certificate was set to ${role.issuer_ref} but no issuing certificate configured with that name or ID`,
      );
  }
}
