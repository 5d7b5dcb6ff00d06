import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

/**
 * Every column that holds SecretBox output (secrets/secret-box.ts), with what opening a
 * value needs: its row key and the context it was sealed with. Master key rotation
 * re-seals exactly these; a feature that stores a new sealed column adds it here (the
 * rotation test then covers it), and so does anything that must know where secrets are.
 */
export interface SealedColumn {
  /** `table.column`, for logs and status. */
  name: string;
  table: string;
  column: string;
  /** The row's key (one column, unique among the rows `where` keeps), walked in order. */
  key: string;
  /** Columns the context is made of, besides the key. */
  extra?: string[];
  /** Only rows whose columns hold these values. */
  where?: Record<string, string>;
  /** The column holds the sealed value as a JSON string (pki_settings values are JSON). */
  json?: boolean;
  /** The SecretBox context the owning service seals with. */
  context(row: Record<string, string>): string;
}

export const SEALED_COLUMNS: readonly SealedColumn[] = [
  {
    name: 'data_keys.sealed',
    table: 'data_keys',
    column: 'sealed',
    key: 'id',
    context: (r) => `data-key:${r['id']}`,
  },
  {
    name: 'pki_keys.sealed_private_key',
    table: 'pki_keys',
    column: 'sealed_private_key',
    key: 'id',
    context: (r) => `pki-key:${r['id']}`,
  },
  {
    name: 'pki_external_policy.sealed_client_key',
    table: 'pki_external_policy',
    column: 'sealed_client_key',
    key: 'mount_id',
    context: (r) => `pki-external-policy-client-key:${r['mount_id']}`,
  },
  {
    name: 'pki_acme_eab.sealed_key',
    table: 'pki_acme_eab',
    column: 'sealed_key',
    key: 'id',
    extra: ['mount_id'],
    context: (r) => `pki-acme-eab:${r['mount_id']}:${r['id']}`,
  },
  {
    name: 'pki_settings.value (acme_nonce_key)',
    table: 'pki_settings',
    column: 'value',
    key: 'mount_id',
    where: { name: 'acme_nonce_key' },
    json: true,
    context: (r) => `pki-acme-nonce-key:${r['mount_id']}`,
  },
  {
    name: 'tfe_state_versions.upload_token_sealed',
    table: 'tfe_state_versions',
    column: 'upload_token_sealed',
    key: 'id',
    context: (r) => `tfe-state-upload:${r['id']}:state`,
  },
  {
    name: 'tfe_state_versions.json_upload_token_sealed',
    table: 'tfe_state_versions',
    column: 'json_upload_token_sealed',
    key: 'id',
    context: (r) => `tfe-state-upload:${r['id']}:json`,
  },
];

/** One sealed value as stored, with the sealed text itself and its context. */
export interface SealedValue {
  key: string;
  stored: string;
  sealed: string;
  context: string;
}

/** The non-null values of a sealed column after the key `after`, in key order. */
export async function sealedValues(
  db: Kysely<Database>,
  c: SealedColumn,
  after: string,
  limit: number,
): Promise<SealedValue[]> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tables and columns come from the registry
  const k = db as unknown as Kysely<any>;
  let q = k
    .selectFrom(c.table)
    .select([c.key, c.column, ...(c.extra ?? [])])
    .where(c.key, '>', after)
    .where(c.column, 'is not', null);
  for (const [col, v] of Object.entries(c.where ?? {})) q = q.where(col, '=', v);
  const rows = (await q.orderBy(c.key).limit(limit).execute()) as Array<Record<string, string>>;
  return rows.map((r) => {
    const stored = r[c.column] as string;
    return {
      key: r[c.key] as string,
      stored,
      sealed: c.json ? (JSON.parse(stored) as string) : stored,
      context: c.context(r),
    };
  });
}

/** Replaces a sealed value, only if the row still holds `v.stored`; true when it did. */
export async function replaceSealed(
  db: Kysely<Database>,
  c: SealedColumn,
  v: SealedValue,
  sealed: string,
): Promise<boolean> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tables and columns come from the registry
  const k = db as unknown as Kysely<any>;
  let q = k
    .updateTable(c.table)
    .set({ [c.column]: c.json ? JSON.stringify(sealed) : sealed })
    .where(c.key, '=', v.key)
    .where(c.column, '=', v.stored);
  for (const [col, val] of Object.entries(c.where ?? {})) q = q.where(col, '=', val);
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}
