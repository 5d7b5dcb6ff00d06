import type { Compilable, CompiledQuery, QueryResult } from 'kysely';

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
