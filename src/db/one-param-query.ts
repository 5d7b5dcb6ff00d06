import type { Compilable, CompiledQuery, QueryResult } from 'kysely';
import { fixedChunks } from './fixed-chunks.js';
import { RECORD_STATEMENT } from './unit-of-work.js';
import type { RecordStatement } from './unit-of-work.js';

/** What runs a compiled query: a Kysely instance or a transaction of any database type. */
export interface QueryRunner {
  executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>>;
}

/**
 * A query of fixed shape, built and compiled once and then run with new values. Building
 * and compiling a Kysely query costs about as much as running a primary key lookup on
 * SQLite, so the hottest reads keep their compiled form.
 *
 * The first call also compiles the query with distinct probe values and records where
 * each went. The compiled form is only reused when the SQL text was the same for both
 * and every parameter was a probe; otherwise every call builds the query anew, so a query
 * whose SQL depends on its values, or that carries constant parameters, is never answered
 * with the wrong text.
 */
export class ParamQuery<Row, V extends readonly unknown[]> {
  private compiled: CompiledQuery<Row> | null = null;
  private positions: number[] = [];
  private reusable = true;

  constructor(private readonly build: (...values: V) => Compilable<Row>) {}

  async execute(executor: QueryRunner, ...values: V): Promise<Row[]> {
    return (await this.run(executor, ...values)).rows;
  }

  /** The whole result (rows, and the affected row count of a write). */
  async run(executor: QueryRunner, ...values: V): Promise<QueryResult<Row>> {
    if (this.compiled) {
      const parameters = this.positions.map((i) => values[i]);
      return executor.executeQuery<Row>({ ...this.compiled, parameters });
    }
    const compiled = this.build(...values).compile();
    if (this.reusable) {
      // Compiled once more with probe values that cannot be mistaken for constants: the
      // template is kept only if the SQL does not change and every parameter is a probe.
      // The build function must therefore not compute with its values, only place them.
      const probes = values.map((_, i) => `\u0000probe-${i}`) as unknown as V;
      const probe = this.build(...probes).compile();
      const positions = probe.parameters.map((p) => (probes as readonly unknown[]).indexOf(p));
      if (probe.sql === compiled.sql && positions.every((i) => i >= 0)) {
        this.compiled = probe;
        this.positions = positions;
      } else {
        this.reusable = false;
      }
    }
    return executor.executeQuery<Row>(compiled);
  }

  async first(executor: QueryRunner, ...values: V): Promise<Row | undefined> {
    return (await this.execute(executor, ...values))[0];
  }
}

/** A ParamQuery of one value. */
export class OneParamQuery<Row> extends ParamQuery<Row, [string]> {}

/**
 * An INSERT of one row, compiled once per set of columns (the columns whose value is not
 * undefined) and then run with new values, like ParamQuery. `build` must place the row's
 * values and nothing else: a constant parameter would make the compiled form unusable,
 * and the row is then built anew on every call.
 */
export class RowInsert<R extends object> {
  readonly #byColumns = new Map<string, { compiled: CompiledQuery; columns: (keyof R)[] } | null>();

  constructor(private readonly build: (row: R) => Compilable<unknown>) {}

  async run(executor: QueryRunner, row: R): Promise<QueryResult<unknown>> {
    const columns = (Object.keys(row) as (keyof R)[]).filter((k) => row[k] !== undefined);
    const key = columns.join(',');
    let entry = this.#byColumns.get(key);
    if (entry === undefined) {
      const probes = columns.map((_, i) => `\u0000probe-${i}`);
      const probeRow = Object.fromEntries(columns.map((k, i) => [k, probes[i]])) as R;
      const compiled = this.build(probeRow).compile();
      const order = compiled.parameters.map((p) => probes.indexOf(p as string));
      entry = order.every((i) => i >= 0) ? { compiled, columns: order.map((i) => columns[i] as keyof R) } : null;
      this.#byColumns.set(key, entry);
    }
    if (entry === null) return executor.executeQuery(this.build(row).compile() as CompiledQuery<unknown>);
    return executor.executeQuery({ ...entry.compiled, parameters: entry.columns.map((k) => row[k]) });
  }
}

/**
 * INSERTs of whole rows (every column of `R` given on every row). On PostgreSQL rows go in
 * multi-row statements of the few sizes of fixedChunks (one round trip per chunk). On
 * SQLite every row is its own statement: a multi-row INSERT makes SQLite keep a statement
 * journal of every page it touches (so that a failing row can undo the rows before it),
 * which costs more than the statements it saves, and a statement is a function call there,
 * not a round trip. Each size is built with Kysely and compiled once, with probe values,
 * and then run with the rows' values in the recorded positions; a build whose SQL does not
 * place exactly the probes is rebuilt on every call instead. What it saves is building and
 * compiling statements for every batch of a group commit.
 */
export class RowsInsert<R extends object> {
  readonly #bySize = new Map<number, { compiled: CompiledQuery; slots: { row: number; column: keyof R }[] } | null>();

  constructor(
    private readonly columns: readonly (keyof R & string)[],
    private readonly build: (rows: R[]) => Compilable<unknown>,
    /** Read on every run, so it may depend on state set up after construction. */
    private readonly multiRow: () => boolean,
  ) {}

  async run(executor: QueryRunner, rows: readonly R[]): Promise<void> {
    const record = (executor as { [RECORD_STATEMENT]?: RecordStatement })[RECORD_STATEMENT];
    for (const chunk of this.multiRow() ? fixedChunks(rows) : rows.map((r) => [r])) {
      const entry = this.#template(chunk.length);
      if (entry === null) {
        await executor.executeQuery(this.build(chunk).compile());
        continue;
      }
      const parameters = new Array<unknown>(entry.slots.length);
      for (let i = 0; i < entry.slots.length; i++) {
        const s = entry.slots[i]!;
        parameters[i] = chunk[s.row]![s.column];
      }
      if (record) record(entry.compiled.sql, parameters);
      else await executor.executeQuery({ ...entry.compiled, parameters });
    }
  }

  #template(size: number): { compiled: CompiledQuery; slots: { row: number; column: keyof R }[] } | null {
    let entry = this.#bySize.get(size);
    if (entry !== undefined) return entry;
    const probes = new Map<string, { row: number; column: keyof R }>();
    const rows = Array.from({ length: size }, (_, row) => {
      const r: Record<string, string> = {};
      for (const column of this.columns) {
        const p = `\u0000probe-${row}-${column}`;
        probes.set(p, { row, column });
        r[column] = p;
      }
      return r as unknown as R;
    });
    const compiled = this.build(rows).compile();
    const slots = compiled.parameters.map((p) => probes.get(p as string));
    entry =
      slots.length === probes.size && slots.every((s) => s !== undefined)
        ? { compiled, slots: slots as { row: number; column: keyof R }[] }
        : null;
    this.#bySize.set(size, entry);
    return entry;
  }
}
