import type { Compilable, CompiledQuery, Kysely } from "kysely";

const MARK = "\u0000prepared:";

/** Placeholders for a prepared query's parameters, by name. */
export type Slots<P> = { readonly [K in keyof P]: P[K] };

/**
 * A query built and compiled by Kysely once, then run many times with new parameter values.
 * Building and compiling a small query costs more than running it in SQLite; on the hot path
 * (every accepted message) that cost is paid once instead of per request. Dialect-neutral: Kysely
 * writes the SQL for whichever database the builder belongs to.
 *
 *   const byId = prepare((p: Slots<{ id: string }>) => db.selectFrom("docks").selectAll().where("id", "=", p.id));
 *   await db.executeQuery(byId({ id }));
 *
 * `build` must use each slot as a plain parameter (a value compared, inserted or cast), not as
 * something that changes the query's shape (an `in` list, an identifier).
 */
export function prepare<P extends Record<string, unknown>, R>(
  build: (slots: Slots<P>) => Compilable<R>,
): (values: P) => CompiledQuery<R> {
  const slots = new Proxy({} as Slots<P>, { get: (_target, name) => `${MARK}${String(name)}` });
  const compiled = build(slots).compile();
  const positions = compiled.parameters.map((value) => {
    if (typeof value === "string" && value.startsWith(MARK)) return { slot: value.slice(MARK.length) };
    return { constant: value };
  });
  return (values) => ({
    ...compiled,
    parameters: positions.map((p) => ("slot" in p ? values[p.slot as keyof P] : p.constant)),
  });
}

/**
 * A multi-row INSERT of `columns` into `table`, compiled once per row count and kept: a batch of
 * messages is stored by one statement instead of one per message. Rows are arrays of values in
 * `columns` order. Dialect-neutral, like prepare.
 */
export function prepareInsert<DB>(
  kysely: Kysely<DB>,
  table: keyof DB & string,
  columns: readonly string[],
): (rows: ReadonlyArray<ReadonlyArray<unknown>>) => CompiledQuery {
  const byCount = new Map<number, { compiled: CompiledQuery; positions: [number, number][] }>();
  return (rows) => {
    let entry = byCount.get(rows.length);
    if (entry === undefined) {
      const values = rows.map((_, row) =>
        Object.fromEntries(columns.map((column, col) => [column, `${MARK}${row}:${col}`])),
      );
      // Kysely's builder types want a known table; the slots are strings whatever the column.
      const compiled = (kysely as unknown as Kysely<Record<string, Record<string, string>>>)
        .insertInto(table)
        .values(values)
        .compile();
      const positions = compiled.parameters.map((value) => {
        if (typeof value !== "string" || !value.startsWith(MARK)) {
          throw new Error(`prepareInsert: unexpected parameter in ${compiled.sql}`);
        }
        const [row, col] = value.slice(MARK.length).split(":").map(Number);
        return [row, col] as [number, number];
      });
      entry = { compiled, positions };
      byCount.set(rows.length, entry);
    }
    const { compiled, positions } = entry;
    return { ...compiled, parameters: positions.map(([row, col]) => rows[row]?.[col]) };
  };
}
