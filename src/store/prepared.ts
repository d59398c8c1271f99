import type { Compilable, CompiledQuery } from "kysely";

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
