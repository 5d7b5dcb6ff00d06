import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { ExternalPolicyConfig } from './external-policy.js';

/** A stored configuration: the shown fields plus the sealed client key. */
export interface StoredExternalPolicy {
  config: ExternalPolicyConfig;
  sealedClientKey: string | null;
}

const date = (s: string | null): Date | null => (s === null ? null : new Date(s));

/** SQL of config/external-policy (pki_external_policy). */
export class ExternalPolicyRepo {
  constructor(private readonly deps: { db: Kysely<Database> }) {}

  async get(mountId: string): Promise<StoredExternalPolicy | undefined> {
    const r = await this.deps.db
      .selectFrom('pki_external_policy')
      .selectAll()
      .where('mount_id', '=', mountId)
      .executeTakeFirst();
    if (!r) return undefined;
    return {
      config: {
        enabled: r.enabled === 1,
        serviceUrl: r.service_url,
        timeoutSeconds: r.timeout_seconds,
        trustedCa: r.trusted_ca,
        trustedLeafBundle: r.trusted_leaf_bundle,
        clientCertBundle: r.client_cert_bundle,
        hasClientKey: r.sealed_client_key !== null,
        updatedAt: date(r.updated_at),
        validatedAt: date(r.validated_at),
        lastSuccessAt: date(r.last_success_at),
      },
      sealedClientKey: r.sealed_client_key,
    };
  }

  async put(mountId: string, s: StoredExternalPolicy): Promise<void> {
    const c = s.config;
    const row = {
      enabled: c.enabled ? 1 : 0,
      service_url: c.serviceUrl,
      timeout_seconds: c.timeoutSeconds,
      trusted_ca: c.trustedCa,
      trusted_leaf_bundle: c.trustedLeafBundle,
      client_cert_bundle: c.clientCertBundle,
      sealed_client_key: s.sealedClientKey,
      updated_at: (c.updatedAt ?? new Date(0)).toISOString(),
      validated_at: c.validatedAt?.toISOString() ?? null,
      last_success_at: c.lastSuccessAt?.toISOString() ?? null,
    };
    await this.deps.db
      .insertInto('pki_external_policy')
      .values({ mount_id: mountId, ...row })
      .onConflict((oc) => oc.column('mount_id').doUpdateSet(row))
      .execute();
  }

  /**
   * Records a well-formed answer of the service. `validated_at` is set only while the
   * settings are those the request used (`updatedAt`), so an answer of a replaced service
   * does not mark the new one validated; both instants only move forward.
   */
  async recordAnswer(mountId: string, settingsUpdatedAt: Date, at: Date): Promise<void> {
    const iso = at.toISOString();
    // One statement (one commit on SQLite) per answer, conditional column by column.
    await this.deps.db
      .updateTable('pki_external_policy')
      .set((eb) => ({
        last_success_at: eb
          .case()
          .when(eb.or([eb('last_success_at', 'is', null), eb('last_success_at', '<', iso)]))
          .then(iso)
          .else(eb.ref('last_success_at'))
          .end(),
        validated_at: eb
          .case()
          .when(
            eb.and([
              eb('updated_at', '=', settingsUpdatedAt.toISOString()),
              eb.or([eb('validated_at', 'is', null), eb('validated_at', '<', iso)]),
            ]),
          )
          .then(iso)
          .else(eb.ref('validated_at'))
          .end(),
      }))
      .where('mount_id', '=', mountId)
      .execute();
  }

  async delete(mountId: string): Promise<void> {
    await this.deps.db.deleteFrom('pki_external_policy').where('mount_id', '=', mountId).execute();
  }
}
