// `dock-notify docks`: an operator's Docks — made, listed, shown, changed, handed over, their
// secrets rotated, deleted, and their audit log read. Who may use a Dock is dock-access.ts's.
import { type Command, Option } from "commander";
import { VISIBILITIES, type Visibility } from "../domain/audience.ts";
import { CallbackTargets } from "../domain/callback-target.ts";
import { validateDockFields } from "../domain/dock.ts";
import { personName } from "../domain/telegram-identity.ts";
import { type Config, loadConfig } from "../runtime/config.ts";
import type { AuditLine } from "../store/audit.ts";
import type { Dock, DockWithSecret } from "../store/docks.ts";
import {
  type CliIo,
  jsonOption,
  lineWriter,
  OPERATOR,
  parseOwner,
  plural,
  requireDock,
  UsageError,
  withDocks,
} from "./common.ts";

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

/** How an audit entry's actor is written on the command line. */
function actorText(line: AuditLine): string {
  if (line.actor === null) return line.detail.via === "cli" ? "command line" : "Dock Notify";
  const { id, firstName, username } = line.actor;
  return firstName || username
    ? `${personName({ first_name: firstName, username }, id)} (${id})`
    : String(id);
}

/** `dock-notify docks` and its commands for the Docks themselves; returns it for the others. */
export function addDockCommands(program: Command, io: CliIo): Command {
  const out = lineWriter(io);
  const json = jsonOption();
  const docks = program.command("docks").description("manage Docks as an operator (owners use the console)");

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
  return docks;
}

/** `dock-notify docks audit`: who did what to a Dock. */
export function addAuditCommand(docks: Command, io: CliIo): void {
  const out = lineWriter(io);
  const json = jsonOption();
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
}
