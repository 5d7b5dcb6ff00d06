import type { Compilable, CompiledQuery, Kysely } from 'kysely';

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
export class ParamQuery<Row, V extends readonly string[]> {
  private compiled: CompiledQuery<Row> | null = null;
  private positions: number[] = [];
  private reusable = true;

  constructor(private readonly build: (...values: V) => Compilable<Row>) {}

  async execute<DB>(executor: Kysely<DB>, ...values: V): Promise<Row[]> {
    if (this.compiled) {
      const parameters = this.positions.map((i) => values[i]);
      return (await executor.executeQuery<Row>({ ...this.compiled, parameters })).rows;
    }
    const compiled = this.build(...values).compile();
    if (this.reusable) {
      // Compiled once more with probe values that cannot be mistaken for constants: the
      // template is kept only if the SQL does not change and every parameter is a probe.
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
    return (await executor.executeQuery<Row>(compiled)).rows;
  }

  async first<DB>(executor: Kysely<DB>, ...values: V): Promise<Row | undefined> {
    return (await this.execute(executor, ...values))[0];
  }
}

/** A ParamQuery of one value. */
export class OneParamQuery<Row> extends ParamQuery<Row, [string]> {}
