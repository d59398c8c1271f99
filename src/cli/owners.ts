// `dock-notify owners`: who may sign in to the console and own Docks, beside OWNERS.
import { type Command, Option } from "commander";
import { personName } from "../domain/telegram-identity.ts";
import type { Owner } from "../store/owners.ts";
import { type CliIo, jsonOption, lineWriter, parseOwner, UsageError, withDocks } from "./common.ts";

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

/** Why the last administrator keeps their role, and how to go on. */
function lastAdministrator(id: number): string {
  return `${id} is the last administrator: make someone else one first (dock-notify owners add <id> --admin)`;
}

/** `dock-notify owners` and its commands. */
export function addOwnerCommands(program: Command, io: CliIo): void {
  const out = lineWriter(io);
  const json = jsonOption();
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
}
