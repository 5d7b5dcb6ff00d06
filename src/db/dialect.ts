import { sql } from 'kysely';
import type { RawBuilder } from 'kysely';
import type { DatabaseKind } from './database.js';

/**
 * The few places where SQLite and PostgreSQL differ. Repos call these instead of
 * branching on the driver themselves.
 */

/** Row-locking suffix for a claim subquery: PostgreSQL skips rows other nodes hold. */
export function skipLockedClause(kind: DatabaseKind): RawBuilder<unknown> {
  return kind === 'postgres' ? sql`for update skip locked` : sql``;
}

/** Column type for binary data. */
export function binaryType(kind: DatabaseKind): 'bytea' | 'blob' {
  return kind === 'postgres' ? 'bytea' : 'blob';
}

/** Escapes LIKE wildcards (and the escape character) with a backslash; use with `escape '\'`. */
export function likeEscape(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}
