import type { Compilable, CompiledQuery, Kysely } from 'kysely';

/**
 * A query with exactly one parameter, built and compiled once and then run with new
 * values. Building and compiling a Kysely query costs about as much as running a primary
 * key lookup on SQLite, so the hottest reads keep their compiled form.
 *
 * The template is only reused when compiling it with the first value gave exactly that
 * one parameter; otherwise every call builds the query anew, so a query whose SQL
 * depends on the value can never be answered with the wrong text.
 */
export class OneParamQuery<Row> {
  private compiled: CompiledQuery<Row> | null = null;
  private reusable = true;

  constructor(private readonly build: (value: string) => Compilable<Row>) {}

  async execute<DB>(executor: Kysely<DB>, value: string): Promise<Row[]> {
    if (this.compiled) {
      const res = await executor.executeQuery<Row>({ ...this.compiled, parameters: [value] });
      return res.rows;
    }
    const compiled = this.build(value).compile();
    if (this.reusable && compiled.parameters.length === 1 && compiled.parameters[0] === value) this.compiled = compiled;
    else this.reusable = false;
    return (await executor.executeQuery<Row>(compiled)).rows;
  }

  async first<DB>(executor: Kysely<DB>, value: string): Promise<Row | undefined> {
    return (await this.execute(executor, value))[0];
  }
}
