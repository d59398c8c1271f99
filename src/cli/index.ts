// The command line: its program, the service's own commands (serve, sandbox, migrate, backup,
// doctor) and how a failure is reported; the operator's commands are in docks.ts, dock-access.ts and
// owners.ts. Only what every command needs is imported here: the service, the sandbox and the
// database are loaded by the commands that use them, so `--help` or a usage error answers without
// loading them.
import { Command, CommanderError, Option } from "commander";
import pkg from "../../package.json" with { type: "json" };
import { ConfigError, loadConfig } from "../runtime/config.ts";
import { withServedUrl } from "../runtime/service-url.ts";
import { type CliIo, lineWriter, PROCESS_IO, UsageError } from "./common.ts";
import { addDockAccessCommands } from "./dock-access.ts";
import { addAuditCommand, addDockCommands } from "./docks.ts";
import { CLI_ERRORS, type CliErrorCode } from "./errors.ts";
import { addOwnerCommands } from "./owners.ts";

export type { CliIo } from "./common.ts";

/** `doctor` found something wrong: it has printed every result, so nothing more is said; exit 1. */
class DoctorFound extends Error {
  override name = "DoctorFound";
}

/**
 * The commands, writing to `io`. `jsonErrors`: a script asked for `--json`; commander's own usage
 * errors are then not printed as text (runCli prints every error as one JSON line instead).
 */
function buildCli(io: CliIo, options: { jsonErrors?: boolean } = {}): Command {
  const out = lineWriter(io);
  const program = new Command("dock-notify")
    .description("Send notifications from any application to people on Telegram.")
    .version(pkg.version)
    // Before any subcommand is added: they copy these, and without exitOverride they exit 1 on a
    // usage error (a missing option, an unknown command) instead of throwing for runCli to exit 2.
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      ...(options.jsonErrors ? { outputError: () => {} } : {}),
    });
  if (!options.jsonErrors) program.showHelpAfterError();

  program
    .command("serve", { isDefault: true })
    .description("run the service (HTTP API, console, bot, delivery)")
    .action(async () => {
      const config = loadConfig(io.env);
      const { serve } = await import("../main.ts");
      await serve(config, io.logs, { ownsProcess: io === PROCESS_IO });
    });

  program
    .command("sandbox")
    .description(
      "run only the Telegram sandbox (Bot API emulator and chat page) on PORT, for several instances to share",
    )
    .action(async () => {
      const config = loadConfig(io.env);
      const { runSandbox } = await import("../sandbox/standalone.ts");
      await runSandbox(config, io.logs);
    });

  program
    .command("migrate")
    .description("bring the database schema up to date, then exit")
    .addOption(new Option("--json", "print JSON instead of text"))
    .action(async (opts: { json?: boolean }) => {
      const config = loadConfig(io.env);
      const { explained } = await import("../main.ts");
      const { migrate, openDb } = await import("../store/open.ts");
      // No DATABASE_TIMEOUT_SECONDS here: a migration may rightly take long.
      const db = await openDb(config.databaseUrl, {
        sqliteSynchronous: config.sqliteSynchronous,
        timeoutMs: 0,
      });
      try {
        const applied = await migrate(db).catch((error: unknown) => {
          throw explained(error, config);
        });
        if (opts.json) out(JSON.stringify({ applied }));
        else out(applied.length ? `applied: ${applied.join(", ")}` : "the database is up to date");
      } finally {
        await db.close();
      }
    });

  program
    .command("backup <file>")
    .description(
      "copy the SQLite database into <file>, consistent while the service runs (SQLite's online backup); PostgreSQL: use pg_dump",
    )
    .addOption(new Option("--force", "replace <file> if it exists"))
    .addOption(new Option("--json", "print JSON instead of text"))
    .action(async (file: string, opts: { force?: boolean; json?: boolean }) => {
      const config = loadConfig(io.env);
      if (!config.databaseUrl.startsWith("sqlite:")) {
        throw new Error(
          `backup copies a SQLite database, and DATABASE_URL is PostgreSQL: back it up with PostgreSQL's pg_dump instead, e.g. ${pgDumpCommand(config.databaseUrl, file)} (docs/upgrading.md)`,
        );
      }
      const { existsSync, realpathSync } = await import("node:fs");
      const { dirname, resolve } = await import("node:path");
      const source = config.databaseUrl.slice("sqlite:".length);
      const target = resolve(file);
      if (!existsSync(source)) {
        throw new Error(`there is no database at ${source} (DATA_DIR or DATABASE_URL names it)`);
      }
      if (existsSync(target) && realpathSync(target) === realpathSync(source)) {
        throw new UsageError(`${file} is the database itself: name another file`);
      }
      if (!existsSync(dirname(target))) throw new UsageError(`there is no folder ${dirname(target)}`);
      const refuseExisting = () =>
        new UsageError(`${file} exists: name another file, or add --force to replace it`);
      if (existsSync(target) && !opts.force) throw refuseExisting();
      const { backupSqliteFile } = await import("../store/open.ts");
      const made = await backupSqliteFile(source, target, { replace: opts.force === true });
      if (!made.made) throw refuseExisting();
      const key =
        config.encryptionKey === null ? resolve(config.dataDir, "encryption.key") : "ENCRYPTION_KEY";
      if (opts.json) out(JSON.stringify({ file: target, pages: made.pages, bytes: made.bytes }));
      else
        out(
          [
            `backed up ${source} to ${target} (${(made.bytes / 1024 / 1024).toFixed(1)} MB)`,
            `Keep the encryption key with it (${key}): without it the Docks' secret keys in the backup cannot be opened.`,
          ].join("\n"),
        );
    });

  program
    .command("doctor")
    .description(
      "check the configuration end to end (bot token, webhook or polling, PUBLIC_URL, data folder, encryption key, database), each result with its fix; exits 1 when something is wrong",
    )
    .addOption(new Option("--json", "print JSON instead of text"))
    .action(async (opts: { json?: boolean }) => {
      const config = loadConfig(io.env);
      const { doctorReport, runDoctor } = await import("./doctor.ts");
      const results = await runDoctor(config, withServedUrl(config, io.env).publicUrl);
      const failed = results.some((result) => result.status === "fail");
      if (opts.json) out(JSON.stringify({ ok: !failed, checks: results }, null, 2));
      else io.stdout.write(doctorReport(results));
      if (failed) throw new DoctorFound();
    });

  const docks = addDockCommands(program, io);
  addDockAccessCommands(docks, io);
  addAuditCommand(docks, io);
  addOwnerCommands(program, io);
  return program;
}

/**
 * The pg_dump command that backs up the PostgreSQL database at `url` into `file`, to print: the
 * URL without its password (pg_dump asks for it, or reads PGPASSWORD or ~/.pgpass).
 */
function pgDumpCommand(url: string, file: string): string {
  let target = "<DATABASE_URL>";
  try {
    const parsed = new URL(url);
    parsed.password = "";
    for (const name of [...parsed.searchParams.keys()]) {
      if (/pass/i.test(name)) parsed.searchParams.delete(name);
    }
    target = parsed.toString();
  } catch {
    // An unparseable URL is not repeated.
  }
  const quote = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;
  return `pg_dump --format=custom --file ${quote(file)} ${quote(target)}`;
}

/** How runCli reports a failure: exit code, stable code (for `--json`), and the one line to print. */
function failure(error: unknown): { exitCode: number; code: CliErrorCode; message: string } {
  if (error instanceof CommanderError) {
    // --help and --version end with 0; every other commander error is a usage error.
    const exitCode = error.exitCode === 0 ? 0 : 2;
    // One line: commander may add "(Did you mean …?)" on a line of its own.
    const message = error.message.replace(/^error: /, "").replace(/\s*\n\s*/g, " ");
    return { exitCode, code: "invalid_input", message };
  }
  if (error instanceof ConfigError) {
    return {
      exitCode: CLI_ERRORS.invalid_configuration.exitCode,
      code: "invalid_configuration",
      message: `invalid configuration: ${error.message}`,
    };
  }
  if (error instanceof UsageError)
    return { exitCode: error.exitCode, code: error.code, message: error.message };
  return {
    exitCode: CLI_ERRORS.failed.exitCode,
    code: "failed",
    message: error instanceof Error ? error.message : String(error),
  };
}

/**
 * Runs the command line (`args` without node and the script) and resolves to its exit code: 0,
 * 1 not found or failed, 2 invalid input or configuration. A failure is one line on stderr (with
 * `--json`, a JSON object in the send API's error format). Every command closes what it opened
 * before it resolves, except `serve` and `sandbox`, which resolve once they listen and stop the
 * process on SIGTERM/SIGINT.
 */
export async function runCli(args: string[], io: CliIo = PROCESS_IO): Promise<number> {
  // Options end at "--": after it, "--json" is an argument (a Dock named so), not a request for JSON.
  const end = args.indexOf("--");
  const json = (end === -1 ? args : args.slice(0, end)).includes("--json");
  const program = buildCli(io, { jsonErrors: json });
  try {
    await program.parseAsync(args, { from: "user" });
    return 0;
  } catch (error) {
    if (error instanceof DoctorFound) return CLI_ERRORS.failed.exitCode;
    const { exitCode, code, message } = failure(error);
    // Commander has printed its own (help, version, or the usage error as text).
    if (exitCode === 0 || (error instanceof CommanderError && !json)) return exitCode;
    if (json) io.stderr.write(`${JSON.stringify({ ok: false, error: { code, message } })}\n`);
    else io.stderr.write(`dock-notify: ${message}\n`);
    return exitCode;
  }
}
