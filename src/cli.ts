import { Command, CommanderError, Option } from "commander";
import pkg from "../package.json" with { type: "json" };
import { type Config, ConfigError, loadConfig } from "./config.ts";
import { validateDockFields } from "./domain/dock.ts";
import { explained, loadCheckedEncryptionKey, openMigratedDb, serve } from "./main.ts";
import { runSandbox } from "./sandbox/standalone.ts";
import { migrate, openDb } from "./store/db.ts";
import { type Dock, DockRepository, type DockWithSecret } from "./store/docks.ts";

/** A failure the operator caused: printed as one line, exit code 2 (1 for "not found"). */
class UsageError extends Error {
  readonly code: "invalid_input" | "not_found";
  constructor(message: string, code: "invalid_input" | "not_found" = "invalid_input") {
    super(message);
    this.code = code;
  }

  get exitCode(): number {
    return this.code === "not_found" ? 1 : 2;
  }
}

function dockJson(dock: Dock | DockWithSecret, withSecret: boolean) {
  return {
    id: dock.id,
    name: dock.name,
    link: dock.link,
    description: dock.description,
    owner_id: dock.ownerId,
    active_subscribers: dock.activeSubscribers,
    created_at: new Date(dock.createdAt).toISOString(),
    updated_at: new Date(dock.updatedAt).toISOString(),
    ...(withSecret && "secretKey" in dock ? { secret_key: dock.secretKey } : {}),
  };
}

function printDock(dock: DockWithSecret, config: Config): void {
  const lines = [
    `Dock "${dock.name}"`,
    `  Dock ID:      ${dock.id}`,
    `  Secret key:   ${dock.secretKey}`,
    `  Owner:        ${dock.ownerId}`,
    `  Link:         ${dock.link ?? "-"}`,
    `  Description:  ${dock.description ?? "-"}`,
    `  Subscribers:  ${dock.activeSubscribers} active`,
    `  Created:      ${new Date(dock.createdAt).toISOString()}`,
    "",
    "  Send a message:",
    `    curl -d '{"dock_id":"${dock.id}","secret_key":"${dock.secretKey}","msg":"Hello"}' ${config.publicUrl}/ping`,
  ];
  console.log(lines.join("\n"));
}

async function withDocks<T>(fn: (docks: DockRepository, config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const db = await openMigratedDb(config);
  try {
    const { key } = await loadCheckedEncryptionKey(config, db).catch((error: unknown) => {
      throw explained(error, config);
    });
    return await fn(new DockRepository(db, key), config);
  } finally {
    await db.close();
  }
}

function parseOwner(value: string): number {
  if (!/^[1-9]\d{0,15}$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new UsageError(`--owner must be a Telegram user id (a positive whole number), got "${value}"`);
  }
  return Number(value);
}

async function requireDock(docks: DockRepository, id: string): Promise<DockWithSecret> {
  const dock = await docks.get(id);
  if (!dock) throw new UsageError(`no Dock with ID "${id}"`, "not_found");
  return dock;
}

/**
 * `jsonErrors`: a script asked for `--json`; commander's own usage errors are then not printed
 * as text (runCli prints every error as one JSON line instead).
 */
export function buildCli(options: { jsonErrors?: boolean } = {}): Command {
  const program = new Command("dock-notify")
    .description("Send notifications from any application to people on Telegram.")
    .version(pkg.version)
    // Before any subcommand is added: they copy these, and without exitOverride they exit 1 on a
    // usage error (a missing option, an unknown command) instead of throwing for runCli to exit 2.
    .exitOverride();
  if (options.jsonErrors) program.configureOutput({ outputError: () => {} });
  else program.showHelpAfterError();

  program
    .command("serve", { isDefault: true })
    .description("run the service (HTTP API, console, bot, delivery)")
    .action(async () => serve(loadConfig()));

  program
    .command("sandbox")
    .description(
      "run only the Telegram sandbox (Bot API emulator and chat page) on PORT, for several instances to share",
    )
    .action(async () => runSandbox(loadConfig()));

  program
    .command("migrate")
    .description("bring the database schema up to date, then exit")
    .addOption(new Option("--json", "print JSON instead of text"))
    .action(async (opts: { json?: boolean }) => {
      const config = loadConfig();
      // No DATABASE_TIMEOUT_SECONDS here: a migration may rightly take long.
      const db = openDb(config.databaseUrl, { sqliteSynchronous: config.sqliteSynchronous, timeoutMs: 0 });
      try {
        const applied = await migrate(db).catch((error: unknown) => {
          throw explained(error, config);
        });
        if (opts.json) console.log(JSON.stringify({ applied }));
        else console.log(applied.length ? `applied: ${applied.join(", ")}` : "the database is up to date");
      } finally {
        await db.close();
      }
    });

  const docks = program.command("docks").description("manage Docks as an operator (owners use the console)");
  const json = new Option("--json", "print JSON instead of text");

  docks
    .command("create")
    .description("create a Dock and print its ID and secret key")
    .requiredOption("--owner <telegram_user_id>", "Telegram user id of the owner")
    .requiredOption("--name <name>", "name shown to subscribers (1-64 characters)")
    .option("--link <url>", "http(s) link of the application")
    .option("--description <text>", "what the Dock sends (up to 512 characters)")
    .addOption(json)
    .action(
      async (opts: { owner: string; name: string; link?: string; description?: string; json?: boolean }) => {
        const owner = parseOwner(opts.owner);
        const fields = validateDockFields(opts);
        if (!fields.ok) throw new UsageError(fields.errors.map((e) => `--${e.message}`).join("; "));
        await withDocks(async (repo, config) => {
          const dock = await repo.create(owner, fields.value);
          if (opts.json) console.log(JSON.stringify(dockJson(dock, true), null, 2));
          else printDock(dock, config);
        });
      },
    );

  docks
    .command("list")
    .description("list Docks, newest first")
    .option("--owner <telegram_user_id>", "only this owner's Docks")
    .addOption(json)
    .action(async (opts: { owner?: string; json?: boolean }) => {
      const owner = opts.owner === undefined ? undefined : parseOwner(opts.owner);
      await withDocks(async (repo) => {
        const list = await repo.list(owner);
        if (opts.json) {
          console.log(
            JSON.stringify(
              list.map((d) => dockJson(d, false)),
              null,
              2,
            ),
          );
          return;
        }
        if (list.length === 0) {
          const create = `dock-notify docks create --owner ${owner ?? "<id>"} --name <name>`;
          console.log(
            `${owner === undefined ? "no Docks yet" : `owner ${owner} has no Docks`}; create one with: ${create}`,
          );
          return;
        }
        console.log(["ID".padEnd(22), "SUBSCRIBERS", "OWNER".padEnd(12), "NAME"].join("  "));
        for (const d of list) {
          console.log(
            [d.id, String(d.activeSubscribers).padStart(11), String(d.ownerId).padEnd(12), d.name].join("  "),
          );
        }
      });
    });

  docks
    .command("show <id>")
    .description("show one Dock with its secret key")
    .addOption(json)
    .action(async (id: string, opts: { json?: boolean }) => {
      await withDocks(async (repo, config) => {
        const dock = await requireDock(repo, id);
        if (opts.json) console.log(JSON.stringify(dockJson(dock, true), null, 2));
        else printDock(dock, config);
      });
    });

  docks
    .command("rotate-secret <id>")
    .description("replace the secret key; the old one stops working at once")
    .addOption(json)
    .action(async (id: string, opts: { json?: boolean }) => {
      await withDocks(async (repo) => {
        const secretKey = await repo.rotateSecret(id);
        if (secretKey === undefined) throw new UsageError(`no Dock with ID "${id}"`, "not_found");
        if (opts.json) console.log(JSON.stringify({ id, secret_key: secretKey }, null, 2));
        else console.log(`New secret key for ${id}: ${secretKey}\nThe old key no longer works.`);
      });
    });

  docks
    .command("delete <id>")
    .description("delete a Dock, its subscriptions and its undelivered messages")
    .addOption(json)
    .action(async (id: string, opts: { json?: boolean }) => {
      await withDocks(async (repo) => {
        if (!(await repo.delete(id))) throw new UsageError(`no Dock with ID "${id}"`, "not_found");
        if (opts.json) console.log(JSON.stringify({ id, deleted: true }));
        else console.log(`Deleted Dock ${id}.`);
      });
    });

  return program;
}

/** How runCli reports a failure: exit code, stable code (for `--json`), and the one line to print. */
function failure(error: unknown): { exitCode: number; code: string; message: string } {
  if (error instanceof CommanderError) {
    // --help and --version end with 0; every other commander error is a usage error.
    const exitCode = error.exitCode === 0 ? 0 : 2;
    // One line: commander may add "(Did you mean …?)" on a line of its own.
    const message = error.message.replace(/^error: /, "").replace(/\s*\n\s*/g, " ");
    return { exitCode, code: "invalid_input", message };
  }
  if (error instanceof ConfigError) {
    return { exitCode: 2, code: "invalid_configuration", message: `invalid configuration: ${error.message}` };
  }
  if (error instanceof UsageError)
    return { exitCode: error.exitCode, code: error.code, message: error.message };
  return { exitCode: 1, code: "failed", message: error instanceof Error ? error.message : String(error) };
}

/**
 * Runs the command line. A failure is one line on stderr (with `--json`, a JSON object in the send
 * API's error format) and its exit code: 1 not found or failed, 2 invalid input or configuration.
 */
export async function runCli(argv: string[]): Promise<void> {
  // Options end at "--": after it, "--json" is an argument (a Dock named so), not a request for JSON.
  const args = argv.slice(2);
  const end = args.indexOf("--");
  const json = (end === -1 ? args : args.slice(0, end)).includes("--json");
  const program = buildCli({ jsonErrors: json });
  try {
    await program.parseAsync(argv);
  } catch (error) {
    const { exitCode, code, message } = failure(error);
    process.exitCode = exitCode;
    // Commander has printed its own (help, version, or the usage error as text).
    if (exitCode === 0 || (error instanceof CommanderError && !json)) return;
    if (json) console.error(JSON.stringify({ ok: false, error: { code, message } }));
    else console.error(`dock-notify: ${message}`);
  }
}

if (import.meta.main) await runCli(process.argv);
