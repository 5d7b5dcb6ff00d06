import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { isUniqueViolation } from '../db/constraint-errors.js';
import { invalid } from '../shared/errors.js';
import type { AuditDevice, AuditDeviceType } from './audit-device.js';

/** A device as stored, with its sealed salt. */
export interface StoredAuditDevice extends AuditDevice {
  sealedSalt: string;
}

export class AuditRepo {
  constructor(private readonly deps: { db: Kysely<Database> }) {}

  async list(): Promise<StoredAuditDevice[]> {
    const rows = await this.deps.db.selectFrom('audit_devices').selectAll().orderBy('path').execute();
    return rows.map((r) => ({
      path: r.path,
      type: r.type as AuditDeviceType,
      description: r.description,
      options: JSON.parse(r.options) as Record<string, string>,
      local: r.local === 1,
      createdAt: new Date(r.created_at),
      sealedSalt: r.salt,
    }));
  }

  async insert(d: StoredAuditDevice): Promise<void> {
    try {
      await this.deps.db
        .insertInto('audit_devices')
        .values({
          path: d.path,
          type: d.type,
          description: d.description,
          options: JSON.stringify(d.options),
          local: d.local ? 1 : 0,
          salt: d.sealedSalt,
          created_at: d.createdAt.toISOString(),
        })
        .execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw invalid(`path already in use at ${d.path}/`);
      throw err;
    }
  }

  async delete(path: string): Promise<boolean> {
    const res = await this.deps.db.deleteFrom('audit_devices').where('path', '=', path).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }
}
