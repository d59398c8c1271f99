// What the command line's commands share: its input and output, its usage errors, and the
// repositories an operator's command works on (opened for the command, closed after it).
import { Option } from "commander";
import type { DestinationStream } from "pino";
import { telegramUserId } from "../domain/telegram-identity.ts";
import { type Config, loadConfig } from "../runtime/config.ts";
import { withServedUrl } from "../runtime/service-url.ts";
import type { Audience } from "../store/audience.ts";
import type { AuditBy, DockAudit } from "../store/audit.ts";
import type { CoOwnerRepository } from "../store/co-owners.ts";
import type { DockRepository, DockWithSecret } from "../store/docks.ts";
import type { OwnerRepository } from "../store/owners.ts";
import { sandboxChats } from "../telegram/sandbox-bot.ts";
import { CLI_ERRORS } from "./errors.ts";

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

export const PROCESS_IO: CliIo = { env: process.env, stdout: process.stdout, stderr: process.stderr };

/** A failure the operator caused: printed as one line, exit code 2 (1 for "not found"). */
export class UsageError extends Error {
  readonly code: "invalid_input" | "not_found";
  constructor(message: string, code: "invalid_input" | "not_found" = "invalid_input") {
    super(message);
    this.code = code;
  }

  get exitCode(): number {
    return CLI_ERRORS[this.code].exitCode;
  }
}

/** Writes one line of a command's result to standard output. */
export const lineWriter = (io: CliIo) => (text: string) => io.stdout.write(`${text}\n`);

/** `--json`, as every command that prints a result takes it. */
export const jsonOption = () => new Option("--json", "print JSON instead of text");

/** A Dock's co-owners and audit log, as the operator's commands reach them. */
export interface DockTeam {
  coOwners: CoOwnerRepository;
  audit: DockAudit;
  /** Who may subscribe, invite links, join requests, bans: done and audited in one place. */
  audience: Audience;
}

/** Who the audit log says made a change from the command line: the operator (no actor, `via: cli`). */
export const OPERATOR: AuditBy = { actor: null };

export async function withDocks<T>(
  io: CliIo,
  fn: (docks: DockRepository, config: Config, owners: OwnerRepository, team: DockTeam) => Promise<T>,
): Promise<T> {
  const config = withServedUrl(loadConfig(io.env), io.env);
  const { explained, loadCheckedEncryptionKey, openMigratedDb } = await import("../main.ts");
  const { DockRepository } = await import("../store/docks.ts");
  const { OwnerRepository } = await import("../store/owners.ts");
  const { CoOwnerRepository } = await import("../store/co-owners.ts");
  const { DockAudit } = await import("../store/audit.ts");
  const { Audience } = await import("../store/audience.ts");
  const { InviteLinkRepository } = await import("../store/invite-links.ts");
  const { JoinRequestRepository } = await import("../store/join-requests.ts");
  const { NoticeQueue } = await import("../store/notices.ts");
  const { DockBanRepository } = await import("../store/dock-bans.ts");
  const { ownerPolicy } = await import("../domain/owners.ts");
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
      requests: new JoinRequestRepository(db, {
        ttlMs: config.joinRequestTtlMs,
        sandbox: sandboxChats(config.telegramBotToken),
      }),
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
export async function botUsername(config: Config): Promise<string | null> {
  const { askBotUsername, telegramTarget } = await import("../telegram/target.ts");
  return askBotUsername(telegramTarget(config));
}

export function parseOwner(value: string, option = "--owner"): number {
  const id = telegramUserId(value);
  if (id === null) {
    throw new UsageError(`${option} must be a Telegram user id (a positive whole number), got "${value}"`);
  }
  return id;
}

export async function requireDock(docks: DockRepository, id: string): Promise<DockWithSecret> {
  const dock = await docks.get(id);
  if (!dock) throw new UsageError(`no Dock with ID "${id}"`, "not_found");
  return dock;
}

/** A count with its noun, singular for exactly one: "1 Dock", "2 Docks". */
export function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}
