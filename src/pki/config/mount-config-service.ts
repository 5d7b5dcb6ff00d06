import type { Clock } from '../../shared/clock.js';
import { EMPTY_AIA, templatingWarning, validateAiaUrls, validateClusterConfig } from './mount-config.js';
import type { AiaUrls, ClusterConfig } from './mount-config.js';
import type { Executor, MountConfigRepo } from './mount-config-repo.js';

export type { Executor };

export interface DefaultsConfig {
  /** Default issuer id, '' when none. */
  defaultIssuerId: string;
  defaultFollowsLatestIssuer: boolean;
  /** Default key id, '' when none. */
  defaultKeyId: string;
}

/**
 * Mount-wide settings of the PKI engine: AIA URLs, cluster paths and the default issuer
 * and key. Methods that take an executor join the caller's transaction.
 */
export class MountConfigService {
  readonly #repo: MountConfigRepo;
  readonly #clock: Clock;
  readonly #listeners: ((mountId: string) => void)[] = [];
  constructor(deps: { repo: MountConfigRepo; clock: Clock }) {
    this.#repo = deps.repo;
    this.#clock = deps.clock;
  }

  /** Registers a listener called after a mount's settings changed (committed). */
  onChange(listener: (mountId: string) => void): void {
    this.#listeners.push(listener);
  }

  #changed(mountId: string): void {
    for (const l of this.#listeners) l(mountId);
  }

  /** Runs `fn` in one database transaction shared by every PKI repo call made with `tx`. */
  transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    return this.#repo.transaction(fn);
  }

  /** The executor outside any transaction. */
  get executor(): Executor {
    return this.#repo.executor;
  }

  /** The global AIA URLs of a mount (config/urls); empty lists when never written. */
  async getUrls(mountId: string, ex: Executor = this.executor): Promise<AiaUrls> {
    const v = (await this.#repo.get(ex, mountId, 'urls')) as Partial<AiaUrls> | undefined;
    return { ...EMPTY_AIA, ...v } as AiaUrls;
  }

  /** Partial update of config/urls: only supplied keys change. Returns the result and warnings. */
  async updateUrls(mountId: string, patch: Partial<AiaUrls>): Promise<{ urls: AiaUrls; warnings: string[] }> {
    return this.transaction(async (tx) => {
      const current = await this.getUrls(mountId, tx);
      const next: AiaUrls = { ...current };
      for (const [k, v] of Object.entries(patch))
        if (v !== undefined) (next as unknown as Record<string, unknown>)[k] = v;
      validateAiaUrls(next);
      await this.#repo.put(tx, mountId, 'urls', next, this.#clock.now());
      const warning = templatingWarning(next, await this.getCluster(mountId, tx));
      return { urls: next, warnings: warning ? [warning] : [] };
    }).then((r) => {
      this.#changed(mountId);
      return r;
    });
  }

  async getCluster(mountId: string, ex: Executor = this.executor): Promise<ClusterConfig> {
    const v = (await this.#repo.get(ex, mountId, 'cluster')) as Partial<ClusterConfig> | undefined;
    return { path: v?.path ?? '', aiaPath: v?.aiaPath ?? '' };
  }

  async updateCluster(mountId: string, patch: Partial<ClusterConfig>): Promise<ClusterConfig> {
    return this.transaction(async (tx) => {
      const current = await this.getCluster(mountId, tx);
      const next: ClusterConfig = { path: patch.path ?? current.path, aiaPath: patch.aiaPath ?? current.aiaPath };
      validateClusterConfig(next);
      await this.#repo.put(tx, mountId, 'cluster', next, this.#clock.now());
      return next;
    }).then((r) => {
      this.#changed(mountId);
      return r;
    });
  }

  /** A setting of another module (config/acme…), as stored JSON; undefined when never written. */
  async getSetting(mountId: string, name: string): Promise<unknown> {
    return this.#repo.get(this.executor, mountId, name);
  }

  /** Writes a setting of another module; with `onlyIfAbsent`, true only when this call wrote it. */
  async putSetting(mountId: string, name: string, value: unknown, opts: { onlyIfAbsent?: boolean } = {}) {
    const at = this.#clock.now();
    if (opts.onlyIfAbsent) return this.#repo.putIfAbsent(this.executor, mountId, name, value, at);
    await this.#repo.put(this.executor, mountId, name, value, at);
    return true;
  }

  async getDefaults(mountId: string, ex: Executor = this.executor): Promise<DefaultsConfig> {
    const m = await this.#repo.getMany(ex, mountId, ['default_issuer', 'default_follows_latest_issuer', 'default_key']);
    return {
      defaultIssuerId: (m.get('default_issuer') as string | undefined) ?? '',
      defaultFollowsLatestIssuer: (m.get('default_follows_latest_issuer') as boolean | undefined) ?? false,
      defaultKeyId: (m.get('default_key') as string | undefined) ?? '',
    };
  }

  /** The settings issuance reads on every request, in one query. */
  async getSigningSettings(
    mountId: string,
    ex: Executor = this.executor,
  ): Promise<{ defaultIssuerId: string; urls: AiaUrls; cluster: ClusterConfig }> {
    const m = await this.#repo.getMany(ex, mountId, ['default_issuer', 'urls', 'cluster']);
    const cluster = m.get('cluster') as Partial<ClusterConfig> | undefined;
    return {
      defaultIssuerId: (m.get('default_issuer') as string | undefined) ?? '',
      urls: { ...EMPTY_AIA, ...(m.get('urls') as Partial<AiaUrls> | undefined) } as AiaUrls,
      cluster: { path: cluster?.path ?? '', aiaPath: cluster?.aiaPath ?? '' },
    };
  }

  async setDefaultIssuer(ex: Executor, mountId: string, issuerId: string): Promise<void> {
    await this.#repo.put(ex, mountId, 'default_issuer', issuerId, this.#clock.now());
  }

  /** Sets the default issuer only when none is set; true when this call set it. */
  async setDefaultIssuerIfUnset(ex: Executor, mountId: string, issuerId: string): Promise<boolean> {
    return this.#repo.putIfAbsent(ex, mountId, 'default_issuer', issuerId, this.#clock.now());
  }

  /** Clears the default issuer when it is `issuerId`; true when it was. */
  async clearDefaultIssuerIf(ex: Executor, mountId: string, issuerId: string): Promise<boolean> {
    return this.#repo.removeIfValue(ex, mountId, 'default_issuer', issuerId);
  }

  async setDefaultFollowsLatestIssuer(ex: Executor, mountId: string, value: boolean): Promise<void> {
    await this.#repo.put(ex, mountId, 'default_follows_latest_issuer', value, this.#clock.now());
  }

  async setDefaultKey(ex: Executor, mountId: string, keyId: string): Promise<void> {
    await this.#repo.put(ex, mountId, 'default_key', keyId, this.#clock.now());
  }

  async setDefaultKeyIfUnset(ex: Executor, mountId: string, keyId: string): Promise<boolean> {
    return this.#repo.putIfAbsent(ex, mountId, 'default_key', keyId, this.#clock.now());
  }

  async clearDefaultKeyIf(ex: Executor, mountId: string, keyId: string): Promise<boolean> {
    return this.#repo.removeIfValue(ex, mountId, 'default_key', keyId);
  }

  /** Forgets the default issuer and key (DELETE root). */
  async clearDefaults(ex: Executor, mountId: string): Promise<void> {
    await this.#repo.remove(ex, mountId, 'default_issuer');
    await this.#repo.remove(ex, mountId, 'default_key');
  }

  /** Removes every setting of a mount (the mount was disabled). */
  async purge(ex: Executor, mountId: string): Promise<void> {
    await this.#repo.removeAll(ex, mountId);
  }
}
