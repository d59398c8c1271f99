/**
 * Builds the service (src/ → dist/) as plain JavaScript bundles, which is what `npm start`, the
 * `dock-notify` command and the container run. Node then never loads its TypeScript stripper (about
 * 15 MB in each of the process's threads), and the bundles, without the comments and the unused
 * code of the service's dependencies, hold about 9 MB less in the idle service than the same code
 * loaded module by module (see docs/benchmarks.md, bench:memory). Types are checked by
 * `npm run typecheck`, not here.
 *
 * The layout is what src/files.ts relies on:
 * - dist/cli.js, the entry point, and the chunks it loads (the sandbox, the PostgreSQL adapter and
 *   the like only when used, as in the sources) directly in dist/;
 * - the threads' modules at their paths below src/ (dist/store/sqlite/worker.js), imported by no
 *   chunk (their top level runs the thread);
 * - the files that are not code (the sandbox's chat page) at their paths below src/.
 * Source maps sit beside the bundles (`node --enable-source-maps` maps a stack trace back to src/),
 * and dist/THIRD-PARTY-LICENSES.md carries the licences of the bundled packages.
 *
 * The new build is made beside the old one and takes its place whole, so a service running from
 * dist/ meanwhile (it starts threads and reads pages later) never finds half a build.
 *
 *   npm run build:server
 */
import { cpSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { basename, join } from "node:path";
import { type OutputChunk, rolldown } from "rolldown";

const root = join(import.meta.dirname, "..");
const src = join(root, "src");
const dist = join(root, "dist");
const next = join(root, `.dist-${process.pid}`);
const old = join(root, `.dist-old-${process.pid}`);

const THREADS = ["store/sqlite/worker", "store/sqlite/checkpointer", "http/payload-worker"] as const;

/**
 * Loaded from node_modules as they are, not bundled:
 * - Swagger UI serves files from its own package folder (and is loaded only when someone opens /docs);
 * - node-fetch (grammY's HTTP client on Node) calls `url.parse`, and its URL library Node's
 *   `punycode`: Node says both are deprecated, once, unless the caller is in node_modules;
 * - pg-native is an optional add-on of pg that the service never asks for.
 */
const EXTERNAL = ["@fastify/swagger-ui", "node-fetch", "pg-native"];

try {
  const bundle = await rolldown({
    input: Object.fromEntries([
      ["cli", join(src, "cli.ts")],
      ...THREADS.map((t) => [t, join(src, `${t}.ts`)]),
    ]),
    platform: "node",
    external: (id) =>
      id.startsWith("node:") ||
      builtinModules.includes(id) ||
      EXTERNAL.some((name) => id === name || id.startsWith(`${name}/`)),
  });
  let output: Awaited<ReturnType<typeof bundle.write>>["output"];
  try {
    ({ output } = await bundle.write({
      dir: next,
      format: "esm",
      sourcemap: true,
      // No comment left, and every other character beyond ASCII escaped: V8 keeps each script's
      // source in memory, and a single such character (a "—" or a "🔥" in a string, an "ä" in a
      // licence comment) makes it keep the whole bundle at two bytes a character — 2.4 MB more
      // in the idle service (heap snapshot). The licences are in THIRD-PARTY-LICENSES.md.
      comments: { legal: false, annotation: false, jsdoc: false },
      charset: "ascii",
      // Chunks directly in dist/ (src/files.ts finds everything from there).
      chunkFileNames: "[name]-[hash].js",
    }));
  } finally {
    await bundle.close();
  }
  const chunks = output.filter((file): file is OutputChunk => file.type === "chunk");
  checkLayout(chunks);
  writeFileSync(join(next, "THIRD-PARTY-LICENSES.md"), licences(chunks));
  // Not the TypeScript sources, nor the chat page's tsconfig.json (for `npm run typecheck` only).
  cpSync(src, next, {
    recursive: true,
    filter: (source) => !source.endsWith(".ts") && basename(source) !== "tsconfig.json",
  });
  removeEmptyFolders(next);
  // Two renames: the old build is out of the way for an instant, never half there.
  rmSync(old, { recursive: true, force: true });
  try {
    renameSync(dist, old);
  } catch {
    // No build yet.
  }
  renameSync(next, dist);
  rmSync(old, { recursive: true, force: true });
} finally {
  rmSync(next, { recursive: true, force: true });
}

/** What src/files.ts and the threads need of the bundles' layout; a build that breaks it fails. */
function checkLayout(chunks: OutputChunk[]): void {
  const threadFiles = new Set(THREADS.map((thread) => `${thread}.js`));
  for (const chunk of chunks) {
    const imported = [...chunk.imports, ...chunk.dynamicImports].filter((file) => threadFiles.has(file));
    if (imported.length > 0) {
      throw new Error(`${chunk.fileName} imports ${imported.join(", ")}: that would run a thread's code`);
    }
    if (chunk.moduleIds.includes(join(src, "files.ts")) && chunk.fileName.includes("/")) {
      throw new Error(`src/files.ts was bundled into ${chunk.fileName}, not a file directly in dist/`);
    }
  }
}

/** The licence of every package whose code is in the bundles, as their authors ask when it is copied. */
function licences(chunks: OutputChunk[]): string {
  const packages = new Set<string>();
  for (const id of chunks.flatMap((chunk) => chunk.moduleIds)) {
    const match = /^(.*[/\\]node_modules[/\\](?:@[^/\\]+[/\\])?[^/\\]+)[/\\]/.exec(id);
    if (match?.[1]) packages.add(match[1]);
  }
  const sections = [...packages].sort().map((folder) => {
    const manifest = JSON.parse(readFileSync(join(folder, "package.json"), "utf8")) as {
      name: string;
      version: string;
      license?: string;
      author?: string | { name?: string };
    };
    const file = readdirSync(folder).find((name) => /^(licen[cs]e|copying)/i.test(name));
    // Without a licence file, what the package says of itself: its licence's name and its author.
    const author = typeof manifest.author === "string" ? manifest.author : manifest.author?.name;
    const text = file
      ? readFileSync(join(folder, file), "utf8").trim()
      : `No licence file in the package; package.json: license ${manifest.license ?? "not stated"}${author ? `, author ${author}` : ""}.`;
    return `## ${manifest.name} ${manifest.version} (${manifest.license ?? "licence not stated"})\n\n\`\`\`\n${text}\n\`\`\``;
  });
  return `# Third-party licences\n\nThe bundles in this folder contain code of these packages.\n\n${sections.join("\n\n")}\n`;
}

/** The copy of src/ leaves a folder for every folder of sources; only those with files stay. */
function removeEmptyFolders(folder: string): boolean {
  let empty = true;
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    if (!entry.isDirectory() || !removeEmptyFolders(path)) empty = false;
  }
  if (empty && folder !== next) rmSync(folder, { recursive: true });
  return empty;
}
