import { Command, CommanderError, Option } from "commander";
import pkg from "../package.json" with { type: "json" };
import { type Config, ConfigError, loadConfig } from "./config.ts";
import { validateDockFields } from "./domain/dock.ts";
import { loadEncryptionKey } from "./encryption-key.ts";
import { openMigratedDb, serve } from "./main.ts";
import { runSandbox } from "./sandbox/standalone.ts";
import { migrate, openDb } from "./store/db.ts";
import { type Dock, DockRepository, type DockWithSecret } from "./store/docks.ts";

/** A failure the operator caused: printed as one line, exit code 2 (1 for "not found"). */
class UsageError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 2) {
    super(message);
    this.exitCode = exitCode;
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
    const { key } = loadEncryptionKey(config.encryptionKey, config.dataDir);
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
  if (!dock) throw new UsageError(`no Dock with ID "${id}"`, 1);
  return dock;
}

export function buildCli(): Command {
  const program = new Command("dock-notify")
    .description("Send notifications from any application to people on Telegram.")
    .version(pkg.version)
    .showHelpAfterError()
    // Before any subcommand is added: they copy it, and without it they exit 1 on a usage error
    // (a missing option, an unknown command) instead of throwing for runCli to exit 2.
    .exitOverride();

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
    .action(async () => {
      const config = loadConfig();
      const db = openDb(config.databaseUrl, { sqliteSynchronous: config.sqliteSynchronous });
      try {
        const applied = await migrate(db);
        console.log(applied.length ? `applied: ${applied.join(", ")}` : "the database is up to date");
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
          console.log("no Docks yet; create one with: dock-notify docks create --owner <id> --name <name>");
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
        if (secretKey === undefined) throw new UsageError(`no Dock with ID "${id}"`, 1);
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
        if (!(await repo.delete(id))) throw new UsageError(`no Dock with ID "${id}"`, 1);
        if (opts.json) console.log(JSON.stringify({ id, deleted: true }));
        else console.log(`Deleted Dock ${id}.`);
      });
    });

  return program;
}

export async function runCli(argv: string[]): Promise<void> {
  const program = buildCli();
  try {
    await program.parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end with 0; every other commander error is a usage error.
      process.exitCode = error.exitCode === 0 ? 0 : 2;
      return;
    }
    if (error instanceof ConfigError) {
      console.error(`dock-notify: invalid configuration: ${error.message}`);
      process.exitCode = 2;
      return;
    }
    if (error instanceof UsageError) {
      console.error(`dock-notify: ${error.message}`);
      process.exitCode = error.exitCode;
      return;
    }
    console.error(`dock-notify: ${(error as Error).message}`);
    process.exitCode = 1;
  }
}

if (import.meta.main) await runCli(process.argv);
