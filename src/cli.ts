// Only what every command needs is imported here: the service, the sandbox and the database are
// loaded by the commands that use them, so `--help` or a usage error answers without loading them.
import { Command, CommanderError, Option } from "commander";
import type { DestinationStream } from "pino";
import pkg from "../package.json" with { type: "json" };
import { CLI_ERRORS, type CliErrorCode } from "./cli-errors.ts";
import { type Config, ConfigError, loadConfig } from "./config.ts";
import {
  JOIN_PAYLOAD_PREFIX,
  parseDuration,
  VISIBILITIES,
  type Visibility,
  validateInviteRules,
} from "./domain/audience.ts";
import { CallbackTargets } from "./domain/callback-target.ts";
import { validateDockFields } from "./domain/dock.ts";
import { DOCK_ROLES, type DockRole } from "./domain/dock-roles.ts";
import { MAX_GITHUB_CREDENTIALS, SCOPES, type Scope } from "./domain/principal.ts";
import { personName, telegramUserId } from "./domain/telegram-identity.ts";
import { withServedUrl } from "./service-url.ts";
import type { Audience } from "./store/audience.ts";
import type { AuditBy, AuditLine, DockAudit } from "./store/audit.ts";
import type { CoOwnerRepository } from "./store/co-owners.ts";
import type { DockCredential } from "./store/dock-credentials.ts";
import type { Dock, DockRepository, DockWithSecret } from "./store/docks.ts";
import type { InviteLink } from "./store/invite-links.ts";
import type { Owner, OwnerRepository } from "./store/owners.ts";

/**
 * What the command line reads and writes besides its arguments. The binary passes the process's
 * own; a test passes its own, to run commands in its process.
 */
export interface CliIo {
  /** The environment the configuration is read from. */
  env: Record<string, string | undefined>;
  /** Where results go (standard output). */
  stdout: { write(text: string): unknown };
  /** Where errors go: one line each (standard error). */
  stderr: { write(text: string): unknown };
  /** Where `serve` and `sandbox` write their log lines; standard output when omitted. */
  logs?: DestinationStream;
}

const PROCESS_IO: CliIo = { env: process.env, stdout: process.stdout, stderr: process.stderr };

/** A failure the operator caused: printed as one line, exit code 2 (1 for "not found"). */
class UsageError extends Error {
  readonly code: "invalid_input" | "not_found";
  constructor(message: string, code: "invalid_input" | "not_found" = "invalid_input") {
    super(message);
    this.code = code;
  }

  get exitCode(): number {
    return CLI_ERRORS[this.code].exitCode;
  }
}

/** `doctor` found something wrong: it has printed every result, so nothing more is said; exit 1. */
class DoctorFound extends Error {
  override name = "DoctorFound";
}

function dockJson(dock: Dock | DockWithSecret, withSecret: boolean) {
  return {
    id: dock.id,
    name: dock.name,
    link: dock.link,
    description: dock.description,
    visibility: dock.visibility,
    callback_url: dock.callback_url ?? null,
    owner_id: dock.ownerId,
    active_subscribers: dock.activeSubscribers,
    created_at: new Date(dock.createdAt).toISOString(),
    updated_at: new Date(dock.updatedAt).toISOString(),
    ...(withSecret && "secretKey" in dock
      ? {
          secret_key: dock.secretKey,
          signing_secret: dock.signingSecret,
          hook_token: dock.hookToken,
          inbound_format: dock.inboundFormat,
        }
      : {}),
  };
}

/** How `docks show` says who may subscribe. */
const VISIBILITY_TEXT: Record<Visibility, string> = {
  open: "open (anyone with the Dock ID)",
  invite: "invite (only through an invite link)",
  approval: "approval (the owner approves each request)",
};

/** `--visibility`: who may subscribe. */
const visibilityOption = () =>
  new Option(
    "--visibility <visibility>",
    "who may subscribe: open (anyone with the Dock ID), invite (only through an invite link), approval (the owner approves each request)",
  ).choices(VISIBILITIES);

function printDock(dock: DockWithSecret, config: Config, io: CliIo): void {
  const lines = [
    `Dock "${dock.name}"`,
    `  Dock ID:      ${dock.id}`,
    `  Secret key:   ${dock.secretKey}`,
    `  Owner:        ${dock.ownerId}`,
    `  Link:         ${dock.link ?? "-"}`,
    `  Description:  ${dock.description ?? "-"}`,
    `  Callback URL: ${dock.callback_url ?? "-"}`,
    `  Who can subscribe: ${VISIBILITY_TEXT[dock.visibility]}`,
    `  Signing secret: ${dock.signingSecret} (verifies the callback events)`,
    `  Hook URL:     ${dock.hookToken === null ? "- (dock-notify docks hook-token makes one)" : `${config.publicUrl.replace(/\/$/, "")}/hook/${dock.hookToken}`}`,
    `  Subscribers:  ${dock.activeSubscribers} active`,
    `  Created:      ${new Date(dock.createdAt).toISOString()}`,
    "",
    "  Send a message:",
    `    curl -d '{"dock_id":"${dock.id}","secret_key":"${dock.secretKey}","msg":"Hello"}' ${config.publicUrl}/ping`,
  ];
  io.stdout.write(`${lines.join("\n")}\n`);
}

/** A Dock's co-owners and audit log, as the operator's commands reach them. */
interface DockTeam {
  coOwners: CoOwnerRepository;
  audit: DockAudit;
  /** Who may subscribe, invite links, join requests, bans: done and audited in one place. */
  audience: Audience;
}

/** Who the audit log says made a change from the command line: the operator (no actor, `via: cli`). */
const OPERATOR: AuditBy = { actor: null };

async function withDocks<T>(
  io: CliIo,
  fn: (docks: DockRepository, config: Config, owners: OwnerRepository, team: DockTeam) => Promise<T>,
): Promise<T> {
  const config = withServedUrl(loadConfig(io.env), io.env);
  const { explained, loadCheckedEncryptionKey, openMigratedDb } = await import("./main.ts");
  const { DockRepository } = await import("./store/docks.ts");
  const { OwnerRepository } = await import("./store/owners.ts");
  const { CoOwnerRepository } = await import("./store/co-owners.ts");
  const { DockAudit } = await import("./store/audit.ts");
  const { Audience } = await import("./store/audience.ts");
  const { InviteLinkRepository } = await import("./store/invite-links.ts");
  const { JoinRequestRepository } = await import("./store/join-requests.ts");
  const { NoticeQueue } = await import("./store/notices.ts");
  const { DockBanRepository } = await import("./store/dock-bans.ts");
  const { ownerPolicy } = await import("./domain/owners.ts");
  const db = await openMigratedDb(config);
  try {
    const { key } = await loadCheckedEncryptionKey(config, db).catch((error: unknown) => {
      throw explained(error, config);
    });
    const owners = new OwnerRepository(db, ownerPolicy(config.owners, config.telegramBotToken === null));
    const docks = new DockRepository(db, key, Date.now, { sandbox: config.telegramBotToken === null });
    const coOwners = new CoOwnerRepository(db);
    const audit = new DockAudit(db);
    // The operator's actions are recorded with no actor (via cli).
    const audience = new Audience({
      db,
      docks,
      invites: new InviteLinkRepository(db, key),
      requests: new JoinRequestRepository(db, { ttlMs: config.joinRequestTtlMs }),
      bans: new DockBanRepository(db),
      // The service that runs sends what the CLI queued (its sweep finds it).
      notices: new NoticeQueue(db),
      team: coOwners,
    });
    return await fn(docks, config, owners, { coOwners, audit, audience });
  } finally {
    await db.close();
  }
}

/**
 * The bot's username, for a link into it: known at once in the sandbox, asked of Telegram
 * (`getMe`) otherwise; null when Telegram cannot be reached (the command to send the bot is
 * printed instead).
 */
async function botUsername(config: Config): Promise<string | null> {
  const { telegramTarget } = await import("./telegram-target.ts");
  const target = telegramTarget(config);
  if (target.botUsername !== null) return target.botUsername;
  const { Api } = await import("grammy");
  try {
    const me = await new Api(target.token, { apiRoot: target.apiRoot, timeoutSeconds: 10 }).getMe();
    return me.username;
  } catch {
    return null;
  }
}

/** A Telegram user id or a role given on the command line. */
function parseRole(value: string): DockRole {
  if ((DOCK_ROLES as readonly string[]).includes(value)) return value as DockRole;
  throw new UsageError(`role must be one of ${DOCK_ROLES.join(", ")}, got "${value}"`);
}

/** How an audit entry's actor is written on the command line. */
function actorText(line: AuditLine): string {
  if (line.actor === null) return line.detail.via === "cli" ? "command line" : "Dock Notify";
  const { id, firstName, username } = line.actor;
  return firstName || username
    ? `${personName({ first_name: firstName, username }, id)} (${id})`
    : String(id);
}

function parseOwner(value: string, option = "--owner"): number {
  const id = telegramUserId(value);
  if (id === null) {
    throw new UsageError(`${option} must be a Telegram user id (a positive whole number), got "${value}"`);
  }
  return id;
}

function ownerJson(owner: Owner) {
  return {
    id: owner.id,
    first_name: owner.firstName,
    username: owner.username,
    role: owner.role,
    source: owner.source,
    added_at: owner.addedAt === null ? null : new Date(owner.addedAt).toISOString(),
    docks: owner.docks,
  };
}

async function requireDock(docks: DockRepository, id: string): Promise<DockWithSecret> {
  const dock = await docks.get(id);
  if (!dock) throw new UsageError(`no Dock with ID "${id}"`, "not_found");
  return dock;
}

/**
 * The commands, writing to `io`. `jsonErrors`: a script asked for `--json`; commander's own usage
 * errors are then not printed as text (runCli prints every error as one JSON line instead).
 */
function buildCli(io: CliIo, options: { jsonErrors?: boolean } = {}): Command {
  const out = (text: string) => io.stdout.write(`${text}\n`);
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
      const { serve } = await import("./main.ts");
      await serve(config, io.logs, { ownsProcess: io === PROCESS_IO });
    });

  program
    .command("sandbox")
    .description(
      "run only the Telegram sandbox (Bot API emulator and chat page) on PORT, for several instances to share",
    )
    .action(async () => {
      const config = loadConfig(io.env);
      const { runSandbox } = await import("./sandbox/standalone.ts");
      await runSandbox(config, io.logs);
    });

  program
    .command("migrate")
    .description("bring the database schema up to date, then exit")
    .addOption(new Option("--json", "print JSON instead of text"))
    .action(async (opts: { json?: boolean }) => {
      const config = loadConfig(io.env);
      const { explained } = await import("./main.ts");
      const { migrate, openDb } = await import("./store/open.ts");
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
      const { backupSqliteFile } = await import("./store/open.ts");
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

  const docks = program.command("docks").description("manage Docks as an operator (owners use the console)");
  const json = new Option("--json", "print JSON instead of text");

  docks
    .command("create")
    .description("create a Dock and print its ID and secret key")
    .requiredOption("--owner <telegram_user_id>", "Telegram user id of the owner")
    .requiredOption("--name <name>", "name shown to subscribers (1-64 characters)")
    .option("--link <url>", "http(s) link of the application")
    .option("--description <text>", "what the Dock sends (up to 512 characters)")
    .option("--callback-url <url>", "where the Dock's events are posted, signed with its secret key")
    .addOption(visibilityOption().default("open"))
    .addOption(json)
    .action(
      async (opts: {
        owner: string;
        name: string;
        link?: string;
        description?: string;
        callbackUrl?: string;
        visibility: Visibility;
        json?: boolean;
      }) => {
        const owner = parseOwner(opts.owner);
        const fields = validateDockFields(
          { ...opts, callback_url: opts.callbackUrl },
          new CallbackTargets(loadConfig(io.env).callbackAllowedNetworks),
        );
        if (!fields.ok)
          throw new UsageError(fields.errors.map((e) => `--${e.message.replace("_", "-")}`).join("; "));
        await withDocks(io, async (repo, config) => {
          const dock = await repo.create(owner, fields.value, OPERATOR, opts.visibility);
          if (opts.json) out(JSON.stringify(dockJson(dock, true), null, 2));
          else printDock(dock, config, io);
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
      await withDocks(io, async (repo) => {
        const list = await repo.list(owner);
        if (opts.json) {
          out(
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
          out(
            `${owner === undefined ? "no Docks yet" : `owner ${owner} has no Docks`}; create one with: ${create}`,
          );
          return;
        }
        out(["ID".padEnd(22), "SUBSCRIBERS", "OWNER".padEnd(12), "NAME"].join("  "));
        for (const d of list) {
          out(
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
      await withDocks(io, async (repo, config) => {
        const dock = await requireDock(repo, id);
        if (opts.json) out(JSON.stringify(dockJson(dock, true), null, 2));
        else printDock(dock, config, io);
      });
    });

  docks
    .command("update <id>")
    .description(
      'change a Dock\'s name, link, description, callback URL ("" clears an optional one), who may subscribe, or owner',
    )
    .option("--name <name>", "name shown to subscribers (1-64 characters)")
    .option("--link <url>", "http(s) link of the application")
    .option("--description <text>", "what the Dock sends (up to 512 characters)")
    .option("--callback-url <url>", "where the Dock's events are posted, signed with its secret key")
    .addOption(visibilityOption())
    .option("--owner <telegram_user_id>", "give the Dock to another owner (who may then sign in to see it)")
    .addOption(json)
    .action(
      async (
        id: string,
        opts: {
          name?: string;
          link?: string;
          description?: string;
          callbackUrl?: string;
          visibility?: Visibility;
          owner?: string;
          json?: boolean;
        },
      ) => {
        const owner = opts.owner === undefined ? undefined : parseOwner(opts.owner);
        await withDocks(io, async (repo, config, _owners, { audience }) => {
          const dock = await requireDock(repo, id);
          const fields = validateDockFields(
            {
              name: opts.name ?? dock.name,
              link: opts.link ?? dock.link,
              description: opts.description ?? dock.description,
              callback_url: opts.callbackUrl ?? dock.callback_url,
            },
            new CallbackTargets(config.callbackAllowedNetworks),
            dock.callback_url,
          );
          if (!fields.ok)
            throw new UsageError(fields.errors.map((e) => `--${e.message.replace("_", "-")}`).join("; "));
          await repo.update(id, fields.value, OPERATOR);
          if (opts.visibility !== undefined) await audience.setVisibility(id, opts.visibility, null);
          if (owner !== undefined) await repo.transfer(id, owner, OPERATOR);
          const updated = await requireDock(repo, id);
          if (opts.json) out(JSON.stringify(dockJson(updated, true), null, 2));
          else printDock(updated, config, io);
        });
      },
    );

  docks
    .command("transfer [id]")
    .description(
      "hand a Dock (or, --all, every Dock of --from) over to another owner; subscribers, credentials and history stay",
    )
    .option("--all", "every Dock that --from owns")
    .requiredOption("--from <telegram_user_id>", "the Telegram user id of the Docks' owner now")
    .requiredOption(
      "--to <telegram_user_id>",
      "the Telegram user id of their new owner (who may then sign in)",
    )
    .addOption(json)
    .action(
      async (id: string | undefined, opts: { all?: boolean; from: string; to: string; json?: boolean }) => {
        if (id === undefined && !opts.all)
          throw new UsageError("name a Dock ID, or give --all for every Dock of --from");
        if (id !== undefined && opts.all) throw new UsageError("a Dock ID and --all contradict each other");
        const from = parseOwner(opts.from, "--from");
        const to = parseOwner(opts.to, "--to");
        if (from === to) throw new UsageError(`--from and --to are both ${from}: nothing to hand over`);
        await withDocks(io, async (repo) => {
          if (id !== undefined) {
            const dock = await requireDock(repo, id);
            if (dock.ownerId !== from)
              throw new UsageError(`Dock ${id} is owned by ${dock.ownerId}, not ${from} (--from)`);
          }
          const moved = await repo.handOver(from, to, id === undefined ? null : [id], OPERATOR);
          if (moved.length === 0)
            throw new UsageError(
              id === undefined ? `owner ${from} has no Docks` : `Dock ${id} is no longer owned by ${from}`,
              "not_found",
            );
          const docks = await Promise.all(moved.map((movedId) => requireDock(repo, movedId)));
          if (opts.json) {
            out(
              JSON.stringify(
                {
                  from,
                  to,
                  docks: docks.map((d) => ({
                    id: d.id,
                    name: d.name,
                    active_subscribers: d.activeSubscribers,
                  })),
                },
                null,
                2,
              ),
            );
            return;
          }
          out(`Gave ${plural(docks.length, "Dock")} of ${from} to ${to}:`);
          for (const d of docks) out(`  ${d.id}  ${d.name} (${plural(d.activeSubscribers, "subscriber")})`);
          out(
            `Their subscribers, credentials and history stay. ${to} may sign in to the console to see them.`,
          );
        });
      },
    );

  docks
    .command("rotate-secret <id>")
    .description("replace the secret key; the old one stops working at once")
    .addOption(json)
    .action(async (id: string, opts: { json?: boolean }) => {
      await withDocks(io, async (repo) => {
        const secretKey = await repo.rotateSecret(id, OPERATOR);
        if (secretKey === undefined) throw new UsageError(`no Dock with ID "${id}"`, "not_found");
        if (opts.json) out(JSON.stringify({ id, secret_key: secretKey }, null, 2));
        else out(`New secret key for ${id}: ${secretKey}\nThe old key no longer works.`);
      });
    });

  docks
    .command("rotate-signing-secret <id>")
    .description("replace the signing secret of the callback events; the secret key stays as it is")
    .addOption(json)
    .action(async (id: string, opts: { json?: boolean }) => {
      await withDocks(io, async (repo) => {
        const signingSecret = await repo.rotateSigningSecret(id, OPERATOR);
        if (signingSecret === undefined) throw new UsageError(`no Dock with ID "${id}"`, "not_found");
        if (opts.json) out(JSON.stringify({ id, signing_secret: signingSecret }, null, 2));
        else out(`New signing secret for ${id}: ${signingSecret}\nEvents are signed with it from now on.`);
      });
    });

  docks
    .command("hook-token <id>")
    .description(
      "make a new hook URL (POST /hook/<token>) for tools that can only be given a URL; the old one stops working",
    )
    .option("--revoke", "remove the hook token: the Dock's hook URLs stop working")
    .addOption(json)
    .action(async (id: string, opts: { revoke?: boolean; json?: boolean }) => {
      await withDocks(io, async (repo, config) => {
        if (opts.revoke) {
          if (!(await repo.revokeHookToken(id, OPERATOR)))
            throw new UsageError(`no Dock with ID "${id}"`, "not_found");
          if (opts.json) out(JSON.stringify({ id, hook_token: null }, null, 2));
          else out(`The hook URL of ${id} no longer works.`);
          return;
        }
        const token = await repo.rotateHookToken(id, OPERATOR);
        if (token === undefined) throw new UsageError(`no Dock with ID "${id}"`, "not_found");
        const url = `${config.publicUrl.replace(/\/$/, "")}/hook/${token}`;
        if (opts.json) out(JSON.stringify({ id, hook_token: token, hook_url: url }, null, 2));
        else
          out(`Hook URL for ${id} (treat it as a secret):\n  ${url}\nAny earlier hook URL no longer works.`);
      });
    });

  docks
    .command("delete <id>")
    .description("delete a Dock, its subscriptions and its undelivered messages")
    .addOption(json)
    .action(async (id: string, opts: { json?: boolean }) => {
      await withDocks(io, async (repo) => {
        if (!(await repo.delete(id))) throw new UsageError(`no Dock with ID "${id}"`, "not_found");
        if (opts.json) out(JSON.stringify({ id, deleted: true }));
        else out(`Deleted Dock ${id}.`);
      });
    });

  /** An invite link as `docks invite --json` and `docks invites --json` print it. */
  const inviteJson = (link: InviteLink, url: string) => ({
    id: link.id,
    name: link.name,
    link: url,
    creator_id: link.creator?.id ?? null,
    created_at: new Date(link.createdAt).toISOString(),
    expires_at: link.expiresAt === null ? null : new Date(link.expiresAt).toISOString(),
    usage_limit: link.usageLimit,
    uses: link.uses,
    approval: link.approval,
    revoked_at: link.revokedAt === null ? null : new Date(link.revokedAt).toISOString(),
    state: link.state,
  });
  const linkOf = async (link: InviteLink, config: Config) => {
    const { telegramLink } = await import("./domain/telegram-link.ts");
    const username = await botUsername(config);
    if (username === null)
      throw new Error(
        "could not ask Telegram for the bot's username (getMe) to build the link; check TELEGRAM_BOT_TOKEN and the network",
      );
    return telegramLink(
      config.publicUrl,
      username,
      `${JOIN_PAYLOAD_PREFIX}${link.token}`,
      config.telegramBotToken === null,
    );
  };

  docks
    .command("invite <id>")
    .description("make an invite link: whoever opens it in Telegram may subscribe (or, --approval, ask to)")
    .option("--name <name>", `what the link is for, as the console lists it (up to 32 characters)`)
    .option("--uses <n>", "how many chats may join through it (1-99999); no limit when left out")
    .option("--expires <duration>", "how long it works: 30m, 12h, 7d, 2w; for ever when left out")
    .option("--approval", "whoever opens it asks to join; the owner approves in Telegram or the console")
    .addOption(json)
    .action(
      async (
        id: string,
        opts: { name?: string; uses?: string; expires?: string; approval?: boolean; json?: boolean },
      ) => {
        const now = Date.now();
        const uses =
          opts.uses === undefined ? null : /^\d{1,9}$/.test(opts.uses) ? Number(opts.uses) : Number.NaN;
        const duration = opts.expires === undefined ? null : parseDuration(opts.expires);
        if (opts.expires !== undefined && duration === null)
          throw new UsageError(
            `--expires must be a duration such as 30m, 12h, 7d or 2w, got "${opts.expires}"`,
          );
        const rules = validateInviteRules(
          {
            name: opts.name,
            usage_limit: uses,
            expires_at: duration === null ? null : now + duration,
            approval: opts.approval === true,
          },
          now,
        );
        if (!rules.ok)
          throw new UsageError(
            rules.errors
              .map((e) => {
                const option = {
                  name: "--name",
                  usage_limit: "--uses",
                  expires_at: "--expires",
                  approval: "--approval",
                }[e.field];
                return `${option}: ${e.message.replace(/^\S+ /, "")}`;
              })
              .join("; "),
          );
        await withDocks(io, async (repo, config, _owners, { audience }) => {
          const dock = await requireDock(repo, id);
          const link = await audience.createInvite(dock.id, rules.value, null);
          const url = await linkOf(link, config);
          if (opts.json) {
            out(JSON.stringify(inviteJson(link, url), null, 2));
            return;
          }
          const limits = [
            link.usageLimit === null ? null : `${link.usageLimit} ${link.usageLimit === 1 ? "use" : "uses"}`,
            link.expiresAt === null ? null : `until ${new Date(link.expiresAt).toISOString()}`,
            link.approval ? "each join approved by the owner" : null,
          ].filter(Boolean);
          out(
            `Invite link ${link.id}${link.name === null ? "" : ` "${link.name}"`} for "${dock.name}"${limits.length > 0 ? ` (${limits.join(", ")})` : ""}:\n  ${url}\nWhoever has it may ${link.approval ? "ask to join" : "subscribe"}; revoke it with: dock-notify docks revoke-invite ${dock.id} ${link.id}`,
          );
        });
      },
    );

  docks
    .command("invites <id>")
    .description("list a Dock's invite links with their uses, revoked ones included")
    .addOption(json)
    .action(async (id: string, opts: { json?: boolean }) => {
      await withDocks(io, async (repo, config, _owners, { audience }) => {
        const dock = await requireDock(repo, id);
        const links = await audience.invites.list(dock.id);
        const urls = await Promise.all(links.map((link) => linkOf(link, config)));
        if (opts.json) {
          out(
            JSON.stringify(
              links.map((link, i) => inviteJson(link, urls[i] as string)),
              null,
              2,
            ),
          );
          return;
        }
        if (links.length === 0) {
          out(`Dock ${dock.id} has no invite links; make one with: dock-notify docks invite ${dock.id}`);
          return;
        }
        out(["ID".padEnd(16), "STATE".padEnd(8), "USES".padStart(11), "NAME"].join("  "));
        links.forEach((link, i) => {
          const uses = `${link.uses}${link.usageLimit === null ? "" : `/${link.usageLimit}`}`;
          out([link.id.padEnd(16), link.state.padEnd(8), uses.padStart(11), link.name ?? "-"].join("  "));
          out(`  ${urls[i]}`);
        });
      });
    });

  docks
    .command("revoke-invite <id> <invite_id>")
    .description("revoke an invite link: nobody joins through it any more (who did stays subscribed)")
    .addOption(json)
    .action(async (id: string, inviteId: string, opts: { json?: boolean }) => {
      await withDocks(io, async (repo, _config, _owners, { audience }) => {
        await requireDock(repo, id);
        const revoked = await audience.revokeInvite(id, inviteId, null);
        if (revoked === undefined)
          throw new UsageError(`Dock "${id}" has no invite link "${inviteId}" that still works`, "not_found");
        if (opts.json) out(JSON.stringify({ id: inviteId, revoked: true }));
        else out(`Revoked ${inviteId}: nobody joins through it any more.`);
      });
    });

  const credentials = docks
    .command("credentials")
    .description(
      "a Dock's named credentials: send or manage, presented where the secret key is; github, a GitHub webhook's Secret",
    );

  const credentialJson = (c: DockCredential) => ({
    id: c.id,
    name: c.name,
    scope: c.scope,
    prefix: c.prefix,
    created_at: new Date(c.createdAt).toISOString(),
    last_used_at: c.lastUsedAt === null ? null : new Date(c.lastUsedAt).toISOString(),
  });

  credentials
    .command("list <dock_id>")
    .description("list the Dock's credentials (never their secrets)")
    .addOption(json)
    .action(async (dockId: string, opts: { json?: boolean }) => {
      await withDocks(io, async (repo) => {
        await requireDock(repo, dockId);
        const list = await repo.credentials.list(dockId);
        if (opts.json) {
          out(JSON.stringify(list.map(credentialJson), null, 2));
          return;
        }
        if (list.length === 0) {
          out(`Dock ${dockId} has no credentials besides its secret key.`);
          return;
        }
        out(["ID".padEnd(20), "SCOPE ", "PREFIX".padEnd(10), "LAST USED".padEnd(24), "NAME"].join("  "));
        for (const c of list) {
          const used = c.lastUsedAt === null ? "never" : new Date(c.lastUsedAt).toISOString();
          out([c.id.padEnd(20), c.scope.padEnd(6), c.prefix.padEnd(10), used.padEnd(24), c.name].join("  "));
        }
      });
    });

  credentials
    .command("create <dock_id>")
    .description("make a credential; its secret is printed this once")
    .requiredOption("--name <name>", "what it is for (1-64 characters)")
    .addOption(
      new Option(
        "--scope <scope>",
        `send: send only; manage: also edit, delete, status; github: a GitHub webhook's Secret (sends only; at most ${MAX_GITHUB_CREDENTIALS} a Dock)`,
      )
        .choices(SCOPES)
        .default("send"),
    )
    .addOption(json)
    .action(async (dockId: string, opts: { name: string; scope: Scope; json?: boolean }) => {
      await withDocks(io, async (repo, config) => {
        await requireDock(repo, dockId);
        const name = opts.name.trim();
        if (name.length === 0 || [...name].length > 64)
          throw new UsageError("--name is required, at most 64 characters");
        const made = await repo.credentials.create(dockId, name, opts.scope, OPERATOR);
        if (opts.json)
          out(JSON.stringify({ ...credentialJson(made.credential), secret: made.secret }, null, 2));
        else
          out(
            `Credential "${name}" (${opts.scope}) for ${dockId}: ${made.secret}\nIt is not shown again: ${
              opts.scope === "github"
                ? `paste it now as the Secret of the GitHub webhook whose Payload URL is ${config.publicUrl.replace(/\/$/, "")}/webhook/github/${dockId}`
                : "give it to the application now. Use it where the secret key goes."
            }`,
          );
      });
    });

  credentials
    .command("revoke <dock_id> <credential_id>")
    .description("revoke a credential: its next request is refused")
    .addOption(json)
    .action(async (dockId: string, id: string, opts: { json?: boolean }) => {
      await withDocks(io, async (repo) => {
        if (!(await repo.credentials.revoke(dockId, id, OPERATOR)))
          throw new UsageError(`Dock "${dockId}" has no credential "${id}"`, "not_found");
        if (opts.json) out(JSON.stringify({ id, revoked: true }));
        else out(`Revoked ${id}: it no longer works.`);
      });
    });

  const coOwners = docks
    .command("co-owners")
    .description(
      "people given a role on a Dock beside its owner: owner, editor, approver or viewer (they join through a link into the bot)",
    );

  coOwners
    .command("list <dock_id>")
    .description("the Dock's owner and co-owners with their roles, and the invitations still open")
    .addOption(json)
    .action(async (dockId: string, opts: { json?: boolean }) => {
      await withDocks(io, async (repo, _config, owners, team) => {
        await requireDock(repo, dockId);
        const [members, invites] = await Promise.all([
          team.coOwners.team(dockId),
          owners.pendingCoOwnerInvites(dockId),
        ]);
        if (opts.json) {
          out(
            JSON.stringify(
              {
                co_owners: members.map((m) => ({
                  id: m.id,
                  first_name: m.firstName,
                  username: m.username,
                  role: m.role,
                  owns_dock: m.ownsDock,
                  added_at: m.addedAt === null ? null : new Date(m.addedAt).toISOString(),
                })),
                invites: invites.map((i) => ({
                  id: i.id,
                  role: i.role,
                  created_by: i.createdBy,
                  created_at: new Date(i.createdAt).toISOString(),
                  expires_at: new Date(i.expiresAt).toISOString(),
                })),
              },
              null,
              2,
            ),
          );
          return;
        }
        out(["TELEGRAM ID".padEnd(16), "ROLE".padEnd(8), "NAME"].join("  "));
        for (const m of members) {
          const name =
            m.firstName || m.username
              ? personName({ first_name: m.firstName, username: m.username }, m.id)
              : "-";
          out(
            [
              String(m.id).padEnd(16),
              m.role.padEnd(8),
              `${name}${m.ownsDock ? " (owns the Dock)" : ""}`,
            ].join("  "),
          );
        }
        for (const i of invites) {
          out(`open invitation ${i.id} as ${i.role}, until ${new Date(i.expiresAt).toISOString()}`);
        }
      });
    });

  coOwners
    .command("invite <dock_id>")
    .description("make a single-use link into the bot that gives its opener a role on the Dock (7 days)")
    .addOption(new Option("--role <role>", "the role it gives").choices(DOCK_ROLES).makeOptionMandatory())
    .addOption(json)
    .action(async (dockId: string, opts: { role: DockRole; json?: boolean }) => {
      await withDocks(io, async (repo, config, owners) => {
        await requireDock(repo, dockId);
        const made = await owners.createCoOwnerInvite(dockId, opts.role, null);
        const { CO_OWNER_PAYLOAD_PREFIX } = await import("./domain/owners.ts");
        const { telegramLink } = await import("./domain/telegram-link.ts");
        const payload = `${CO_OWNER_PAYLOAD_PREFIX}${made.token}`;
        const username = await botUsername(config);
        const link =
          username === null
            ? null
            : telegramLink(config.publicUrl, username, payload, config.telegramBotToken === null);
        if (opts.json) {
          out(
            JSON.stringify(
              { id: made.invite.id, role: opts.role, link, command: `/start ${payload}` },
              null,
              2,
            ),
          );
          return;
        }
        out(
          link === null
            ? `Telegram cannot be reached to name the bot: the person sends it /start ${payload}`
            : `Invitation to co-own ${dockId} as ${opts.role} (works once, for 7 days; shown this once):\n  ${link}`,
        );
      });
    });

  coOwners
    .command("withdraw <dock_id> <invite_id>")
    .description("withdraw a co-owner invitation that was not used yet")
    .addOption(json)
    .action(async (dockId: string, inviteId: string, opts: { json?: boolean }) => {
      await withDocks(io, async (_repo, _config, owners) => {
        if (!(await owners.withdrawCoOwnerInvite(dockId, inviteId, null)))
          throw new UsageError(`Dock "${dockId}" has no open invitation "${inviteId}"`, "not_found");
        if (opts.json) out(JSON.stringify({ id: inviteId, withdrawn: true }));
        else out(`Withdrew ${inviteId}: its link no longer works.`);
      });
    });

  coOwners
    .command("role <dock_id> <telegram_user_id> <role>")
    .description(`give a co-owner another role (${DOCK_ROLES.join(", ")})`)
    .addOption(json)
    .action(async (dockId: string, raw: string, rawRole: string, opts: { json?: boolean }) => {
      const userId = parseOwner(raw, "telegram_user_id");
      const role = parseRole(rawRole);
      await withDocks(io, async (repo, _config, _owners, team) => {
        await requireDock(repo, dockId);
        const outcome = await team.coOwners.setRole(dockId, userId, role, null);
        coOwnerRefusal(outcome, userId, dockId);
        if (opts.json) out(JSON.stringify({ id: userId, role }));
        else out(`${userId} is ${role === "viewer" ? "a" : "an"} ${role} of ${dockId}.`);
      });
    });

  coOwners
    .command("remove <dock_id> <telegram_user_id>")
    .description("take a co-owner's role on the Dock away (with the invitations they made for it)")
    .addOption(json)
    .action(async (dockId: string, raw: string, opts: { json?: boolean }) => {
      const userId = parseOwner(raw, "telegram_user_id");
      await withDocks(io, async (repo, _config, _owners, team) => {
        await requireDock(repo, dockId);
        coOwnerRefusal(await team.coOwners.remove(dockId, userId, null), userId, dockId);
        if (opts.json) out(JSON.stringify({ id: userId, removed: true }));
        else out(`${userId} no longer co-owns ${dockId}.`);
      });
    });

  docks
    .command("audit <id>")
    .description("who did what to the Dock, and when: its audit log, newest first")
    .option("--limit <n>", "entries to print (1-200)", "50")
    .option("--before <entry_id>", "only entries older than this one (the previous page's last)")
    .addOption(json)
    .action(async (id: string, opts: { limit: string; before?: string; json?: boolean }) => {
      const limit = /^\d{1,3}$/.test(opts.limit) ? Number(opts.limit) : 0;
      if (limit < 1 || limit > 200) throw new UsageError("--limit must be a whole number from 1 to 200");
      if (opts.before !== undefined && !/^[1-9]\d{0,15}$/.test(opts.before))
        throw new UsageError("--before must be an entry's id");
      await withDocks(io, async (repo, _config, _owners, team) => {
        await requireDock(repo, id);
        const page = await team.audit.page(id, {
          limit,
          before: opts.before === undefined ? undefined : Number(opts.before),
        });
        if (opts.json) {
          out(
            JSON.stringify(
              {
                entries: page.entries.map((e) => ({
                  id: e.id,
                  at: new Date(e.at).toISOString(),
                  actor: e.actor && {
                    id: e.actor.id,
                    first_name: e.actor.firstName,
                    username: e.actor.username,
                  },
                  action: e.action,
                  detail: e.detail,
                })),
                next_before: page.nextBefore,
              },
              null,
              2,
            ),
          );
          return;
        }
        if (page.entries.length === 0) {
          out(
            `Dock ${id} has nothing in its audit log${opts.before === undefined ? "" : " before that entry"}.`,
          );
          return;
        }
        out(["ID".padEnd(8), "WHEN".padEnd(24), "WHO".padEnd(28), "WHAT"].join("  "));
        for (const e of page.entries) {
          const detail = Object.entries(e.detail)
            .filter(([name]) => name !== "via")
            .map(([name, value]) => `${name}=${value}`)
            .join(" ");
          out(
            [
              String(e.id).padEnd(8),
              new Date(e.at).toISOString().padEnd(24),
              actorText(e).padEnd(28),
              detail === "" ? e.action : `${e.action} ${detail}`,
            ].join("  "),
          );
        }
        if (page.nextBefore !== null)
          out(`older entries: dock-notify docks audit ${id} --before ${page.nextBefore}`);
      });
    });

  const owners = program
    .command("owners")
    .description("who may sign in to the console and own Docks (beside OWNERS)");

  owners
    .command("list")
    .description("list the owners and administrators")
    .addOption(json)
    .action(async (opts: { json?: boolean }) => {
      await withDocks(io, async (_docks, config, repo) => {
        const list = await repo.list();
        if (opts.json) {
          out(
            JSON.stringify(
              {
                anyone: repo.policy.open,
                awaits_claim: await repo.awaitsClaim(),
                lacks_administrator: await repo.lacksAdministrator(),
                owners: list.map(ownerJson),
              },
              null,
              2,
            ),
          );
          return;
        }
        if (repo.policy.open) {
          out(
            config.owners === "anyone"
              ? "Anyone who signs in with Telegram may own Docks here (OWNERS=*)."
              : "Anyone who signs in with Telegram may own Docks in the sandbox — the settings of this shell (no TELEGRAM_BOT_TOKEN). If the service runs with a bot token, run this with its settings to see its owners.",
          );
        } else if (await repo.awaitsClaim()) {
          out(
            "Nobody has claimed this Dock Notify yet: open the claim link `serve` printed, or name an administrator with: dock-notify owners add <telegram_user_id> --admin",
          );
        }
        if (list.length === 0) return;
        out(["TELEGRAM ID".padEnd(16), "ROLE".padEnd(8), "DOCKS", "SOURCE".padEnd(7), "NAME"].join("  "));
        for (const owner of list) {
          out(
            [
              String(owner.id).padEnd(16),
              owner.role.padEnd(8),
              String(owner.docks).padStart(5),
              (owner.source === "config"
                ? "OWNERS"
                : owner.source === "co_owner"
                  ? "shared"
                  : "added"
              ).padEnd(7),
              owner.firstName || owner.username
                ? personName({ first_name: owner.firstName, username: owner.username }, owner.id)
                : "-",
            ].join("  "),
          );
        }
      });
    });

  owners
    .command("add <telegram_user_id>")
    .description(
      "let a person sign in and own Docks; --admin makes them an administrator (claims the instance), --role owner takes that back",
    )
    .option("--admin", "make them an administrator (same as --role admin)")
    .addOption(new Option("--role <role>", "their role").choices(["admin", "owner"]))
    .addOption(json)
    .action(async (raw: string, opts: { admin?: boolean; role?: "admin" | "owner"; json?: boolean }) => {
      const id = parseOwner(raw, "telegram_user_id");
      if (opts.admin && opts.role === "owner")
        throw new UsageError("--admin and --role owner contradict each other");
      await withDocks(io, async (_docks, _config, repo) => {
        // Without a role, someone who is an administrator already stays one.
        const role = opts.admin
          ? "admin"
          : (opts.role ?? ((await repo.roleOf(id)) === "admin" ? "admin" : "owner"));
        if ((await repo.add(id, role)) === "last_admin") {
          throw new UsageError(lastAdministrator(id));
        }
        if (opts.json) out(JSON.stringify({ id, role }));
        else
          out(
            `${id} is ${role === "admin" ? "an administrator" : "an owner"}: they can sign in to the console.`,
          );
      });
    });

  owners
    .command("remove <telegram_user_id>")
    .description("take away a person's access to the console (their sessions end; their Docks stay)")
    .addOption(json)
    .action(async (raw: string, opts: { json?: boolean }) => {
      const id = parseOwner(raw, "telegram_user_id");
      await withDocks(io, async (_docks, _config, repo) => {
        const outcome = await repo.remove(id);
        if (outcome === "not_found") throw new UsageError(`${id} is not an owner`, "not_found");
        if (outcome === "configured") {
          throw new UsageError(`${id} is named by OWNERS: remove them from that setting instead`);
        }
        if (outcome === "open") {
          throw new UsageError(
            "anyone may sign in here (OWNERS=* or the sandbox): removing an owner would change nothing",
          );
        }
        if (outcome === "last_admin") {
          throw new UsageError(lastAdministrator(id));
        }
        if (opts.json) out(JSON.stringify({ id, removed: true }));
        else
          out(
            `${id} can no longer sign in; their sessions ended and their open invitations were withdrawn. Their Docks stay (dock-notify docks transfer --all --from ${id} --to <another> gives them away).`,
          );
      });
    });

  return program;
}

/** A count with its noun, singular for exactly one: "1 Dock", "2 Docks". */
function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/** A co-owner change that did nothing, as the operator's error. */
function coOwnerRefusal(
  outcome: "changed" | "unchanged" | "not_found" | "dock_owner",
  userId: number,
  dockId: string,
) {
  if (outcome === "not_found") throw new UsageError(`${userId} is not a co-owner of ${dockId}`, "not_found");
  if (outcome === "dock_owner")
    throw new UsageError(
      `${userId} owns ${dockId} and keeps the role owner: dock-notify docks update ${dockId} --owner <another> gives the Dock away`,
    );
}

/** Why the last administrator keeps their role, and how to go on. */
function lastAdministrator(id: number): string {
  return `${id} is the last administrator: make someone else one first (dock-notify owners add <id> --admin)`;
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

if (import.meta.main) process.exitCode = await runCli(process.argv.slice(2));
