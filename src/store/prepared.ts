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
 * The row counts a multi-row INSERT is compiled for: every count up to 16, then 32, 64, 128 and
 * 256. A batch of another size is stored by a few of them (see chunkSizes): the SQLite thread keeps
 * each statement it prepares, and a statement's memory grows with its rows (~1.4 KB a row for the
 * messages and fan-outs together), so one statement per batch size seen grew with the load's
 * largest batches, towards 47 MB for all 256 sizes (bench:soak, docs/benchmarks.md); these few
 * hold under 1 MB.
 */
const EXACT_UP_TO = 16;

/** How a batch of `rows` rows is split into statements: largest first, each a size compiled once. */
export function chunkSizes(rows: number): number[] {
  const sizes: number[] = [];
  let left = rows;
  while (left > EXACT_UP_TO) {
    const size = 2 ** Math.floor(Math.log2(left));
    sizes.push(size);
    left -= size;
  }
  if (left > 0) sizes.push(left);
  return sizes;
}

/**
 * A multi-row INSERT of `columns` into `table`, compiled once per row count and kept: a batch of
 * messages is stored by one statement, or a few (chunkSizes), instead of one per message. Rows are
 * arrays of values in `columns` order; the statements insert them in that order. Dialect-neutral,
 * like prepare.
 */
export function prepareInsert<DB>(
  kysely: Kysely<DB>,
  table: keyof DB & string,
  columns: readonly string[],
  /**
   * Whether a batch is split into statements of the sizes chunkSizes gives: where statements are
   * kept prepared (SQLite's thread, PostgreSQL's named statements), so that they stay few.
   */
  chunked = true,
): (rows: ReadonlyArray<ReadonlyArray<unknown>>) => CompiledQuery[] {
  const byCount = new Map<number, { compiled: CompiledQuery; positions: [number, number][] }>();
  const compiledFor = (count: number) => {
    let entry = byCount.get(count);
    if (entry === undefined) {
      const values = Array.from({ length: count }, (_, row) =>
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
      byCount.set(count, entry);
    }
    return entry;
  };
  return (rows) => {
    const queries: CompiledQuery[] = [];
    let first = 0;
    for (const size of chunked ? chunkSizes(rows.length) : rows.length > 0 ? [rows.length] : []) {
      const { compiled, positions } = compiledFor(size);
      const from = first;
      queries.push({ ...compiled, parameters: positions.map(([row, col]) => rows[from + row]?.[col]) });
      first += size;
    }
    return queries;
  };
}
