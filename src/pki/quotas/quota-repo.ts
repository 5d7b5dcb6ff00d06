import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { UnitsOfWork } from '../../db/unit-of-work.js';
import { DEFAULT_QUOTA_CONFIG } from './quota.js';
import type { QuotaConfig, RateLimitQuota } from './quota.js';

const CONFIG_KEY = 'vault.quotas.config';

export class QuotaRepo {
  constructor(private readonly deps: { db: Kysely<Database>; units: UnitsOfWork }) {}

  async list(): Promise<RateLimitQuota[]> {
    const rows = await this.deps.db.selectFrom('vault_quotas').selectAll().orderBy('name').execute();
    return rows.map((r) => ({
      name: r.name,
      path: r.path,
      rate: Number(r.rate),
      intervalSeconds: r.interval_seconds,
      blockIntervalSeconds: r.block_interval_seconds,
      inheritable: r.inheritable === 1,
    }));
  }

  async upsert(q: RateLimitQuota, now: Date): Promise<void> {
    const at = now.toISOString();
    const values = {
      path: q.path,
      rate: q.rate,
      interval_seconds: q.intervalSeconds,
      block_interval_seconds: q.blockIntervalSeconds,
      inheritable: q.inheritable ? 1 : 0,
      updated_at: at,
    };
    await this.deps.db
      .insertInto('vault_quotas')
      .values({ name: q.name, created_at: at, ...values })
      .onConflict((oc) => oc.column('name').doUpdateSet(values))
      .execute();
  }

  async delete(name: string): Promise<void> {
    await this.deps.db.deleteFrom('vault_quotas').where('name', '=', name).execute();
    await this.deps.db.deleteFrom('vault_quota_usage').where('quota_name', '=', name).execute();
  }

  async readConfig(): Promise<QuotaConfig> {
    const row = await this.deps.db
      .selectFrom('settings')
      .select('value')
      .where('key', '=', CONFIG_KEY)
      .executeTakeFirst();
    return row ? { ...DEFAULT_QUOTA_CONFIG, ...(JSON.parse(row.value) as Partial<QuotaConfig>) } : DEFAULT_QUOTA_CONFIG;
  }

  async writeConfig(config: QuotaConfig): Promise<void> {
    const value = JSON.stringify(config);
    await this.deps.db
      .insertInto('settings')
      .values({ key: CONFIG_KEY, value })
      .onConflict((oc) => oc.column('key').doUpdateSet({ value }))
      .execute();
  }

  /**
   * Adds this node's counts to the shared ones and returns the totals, in one statement per entry (a handful per
   * exchange: one for each client that sent requests under a quota in the current window).
   */
  async exchange(
    entries: readonly { quota: string; client: string; windowStart: number; delta: number }[],
  ): Promise<{ quota: string; client: string; windowStart: number; total: number }[]> {
    if (entries.length === 0) return [];
    return this.deps.units.readWrite(async (tx) => {
      const out: { quota: string; client: string; windowStart: number; total: number }[] = [];
      for (const e of entries) {
        const row = await tx
          .insertInto('vault_quota_usage')
          .values({ quota_name: e.quota, client: e.client, window_start: e.windowStart, count: e.delta })
          .onConflict((oc) =>
            oc
              .columns(['quota_name', 'client', 'window_start'])
              .doUpdateSet({ count: sql<number>`vault_quota_usage.count + ${e.delta}` }),
          )
          .returning('count')
          .executeTakeFirstOrThrow();
        out.push({ quota: e.quota, client: e.client, windowStart: e.windowStart, total: Number(row.count) });
      }
      return out;
    });
  }

  /** What every node together admitted in one window so far. */
  async total(quota: string, client: string, windowStart: number): Promise<number> {
    const row = await this.deps.db
      .selectFrom('vault_quota_usage')
      .select('count')
      .where('quota_name', '=', quota)
      .where('client', '=', client)
      .where('window_start', '=', windowStart)
      .executeTakeFirst();
    return row ? Number(row.count) : 0;
  }

  async pruneUsage(beforeMs: number): Promise<void> {
    await this.deps.db.deleteFrom('vault_quota_usage').where('window_start', '<', beforeMs).execute();
  }
}
