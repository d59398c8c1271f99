import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * docs/architecture.md promises that the outbox (src/store/outbox*.ts) is the only writer of the
 * `deliveries` table, besides the migrations that shape it: a copy's state moves only through its
 * transitions, which keep the delivery's lease, attempts and Telegram message ids consistent. This reads every source file and finds each
 * write to the table — a Kysely `insertInto` / `updateTable` / `deleteFrom` / `replaceInto` /
 * `mergeInto` naming it, or SQL text that inserts into, updates, merges into or deletes from it (schema-qualified
 * too).
 */
const SRC = join(import.meta.dirname, "..", "..", "src");
const WRITES = new Set(["insertInto", "updateTable", "deleteFrom", "replaceInto", "mergeInto"]);
const SQL_WRITE =
  /\b(?:insert\s+(?:or\s+\w+\s+)?into|update(?:\s+only)?|delete\s+from|merge\s+into)\s+(?:"?\w+"?\.)?"?deliveries\b/i;

/** Whether a path may write the table: the outbox, and the migrations that shape it. */
const mayWrite = (path: string) => /^store\/(outbox[^/]*\.ts$|migrations\/)/.test(path);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

/** Every write to `deliveries` in a file's text: "line: what". */
function deliveriesWrites(fileName: string, text: string): string[] {
  const file = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const at = (node: ts.Node) => file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1;
  const visit = (node: ts.Node) => {
    if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      WRITES.has(node.expression.name.text)
    ) {
      const table = node.arguments[0];
      if (table !== undefined && ts.isStringLiteralLike(table) && /^deliveries\b/.test(table.text)) {
        found.push(`${at(node)}: ${node.expression.name.text}("${table.text}")`);
      }
    }
    if (
      (ts.isStringLiteralLike(node) ||
        ts.isTemplateHead(node) ||
        ts.isTemplateMiddle(node) ||
        ts.isTemplateTail(node)) &&
      SQL_WRITE.test(node.text)
    ) {
      found.push(`${at(node)}: SQL ${JSON.stringify(node.text.trim().slice(0, 60))}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

describe("the outbox is the only writer of deliveries", () => {
  const files = sources(SRC).map((path) => ({
    path: relative(SRC, path).replaceAll("\\", "/"),
    text: readFileSync(path, "utf8"),
  }));

  it("finds the outbox's own writes (the check sees what it looks for)", () => {
    const text = files.find((file) => file.path === "store/outbox.ts")?.text ?? "";
    const writes = deliveriesWrites("store/outbox.ts", text);
    expect(writes.some((write) => write.includes('insertInto("deliveries")'))).toBe(true);
    expect(writes.some((write) => write.includes('updateTable("deliveries")'))).toBe(true);
    expect(writes.some((write) => write.includes('deleteFrom("deliveries")'))).toBe(true);
  });

  it("recognises each way of writing, and not a read", () => {
    const sample = [
      'db.insertInto("deliveries").values(row);',
      'db.updateTable("deliveries as d").set({ state: "sent" });',
      "db.deleteFrom(\n  'deliveries',\n);",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the sample is source text with a placeholder
      "sql`UPDATE deliveries SET state = ${state}`;",
      'const text = "insert or ignore into deliveries (id) values (1)";',
      'db.selectFrom("deliveries").selectAll();',
      'const note = "the deliveries are updated by the outbox";',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the sample is source text with a placeholder
      "sql`WITH gone AS (${sub}) DELETE FROM public.deliveries WHERE id IN (SELECT id FROM gone)`;",
    ].join("\n");
    expect(deliveriesWrites("sample.ts", sample).map((write) => write.split(":")[0])).toEqual([
      "1",
      "2",
      "3",
      "6",
      "7",
      "10",
    ]);
  });

  it("finds no write anywhere else in src/", () => {
    const elsewhere = files
      .filter((file) => !mayWrite(file.path))
      .flatMap((file) => deliveriesWrites(file.path, file.text).map((write) => `${file.path}:${write}`));
    expect(elsewhere).toEqual([]);
  });
});
