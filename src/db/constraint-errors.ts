/**
 * Recognises constraint violations from either driver so repos can turn them into
 * domain errors. Unique indexes are named `<table>_<col1>_<col2>_key` so that the name
 * derived from SQLite's message equals PostgreSQL's constraint name.
 */
export interface ConstraintViolation {
  type: 'unique' | 'foreign_key' | 'not_null' | 'check';
  /** Constraint name on PostgreSQL; `<table>_<cols>_key` derived from the message on SQLite. */
  constraint: string | undefined;
}

export function constraintViolation(err: unknown): ConstraintViolation | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { code?: string; constraint?: string; message?: string };
  switch (e.code) {
    case '23505':
      return { type: 'unique', constraint: e.constraint };
    case '23503':
      return { type: 'foreign_key', constraint: e.constraint };
    case '23502':
      return { type: 'not_null', constraint: e.constraint };
    case '23514':
      return { type: 'check', constraint: e.constraint };
    case 'SQLITE_CONSTRAINT_UNIQUE':
    case 'SQLITE_CONSTRAINT_PRIMARYKEY': {
      // An index on expressions is named in the message: "UNIQUE constraint failed: index 'name'".
      const named = /constraint failed: index '([^']+)'/.exec(e.message ?? '');
      if (named) return { type: 'unique', constraint: named[1] };
      const m = /constraint failed: (.+)$/.exec(e.message ?? '');
      const cols = (m?.[1] ?? '').split(',').map((c) => c.trim());
      const table = cols[0]?.split('.')[0];
      const names = cols.map((c) => c.split('.')[1]);
      return { type: 'unique', constraint: table ? `${table}_${names.join('_')}_key` : undefined };
    }
    case 'SQLITE_CONSTRAINT_FOREIGNKEY':
      return { type: 'foreign_key', constraint: undefined };
    case 'SQLITE_CONSTRAINT_NOTNULL':
      return { type: 'not_null', constraint: undefined };
    case 'SQLITE_CONSTRAINT_CHECK':
      return { type: 'check', constraint: undefined };
    default:
      return undefined;
  }
}

export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const v = constraintViolation(err);
  return v?.type === 'unique' && (constraint === undefined || v.constraint === constraint);
}
