// `dock-notify docks invite|invites|revoke-invite|credentials|co-owners`: who may subscribe to a
// Dock, send to it, or manage it beside its owner.
import { type Command, Option } from "commander";
import { JOIN_PAYLOAD_PREFIX, parseDuration, validateInviteRules } from "../domain/audience.ts";
import { DOCK_ROLES, type DockRole } from "../domain/dock-roles.ts";
import { MAX_GITHUB_CREDENTIALS, SCOPES, type Scope } from "../domain/principal.ts";
import { personName } from "../domain/telegram-identity.ts";
import type { Config } from "../runtime/config.ts";
import type { DockCredential } from "../store/dock-credentials.ts";
import type { InviteLink } from "../store/invite-links.ts";
import {
  botUsername,
  type CliIo,
  jsonOption,
  lineWriter,
  OPERATOR,
  parseOwner,
  requireDock,
  UsageError,
  withDocks,
} from "./common.ts";

/** A role given on the command line. */
function parseRole(value: string): DockRole {
  if ((DOCK_ROLES as readonly string[]).includes(value)) return value as DockRole;
  throw new UsageError(`role must be one of ${DOCK_ROLES.join(", ")}, got "${value}"`);
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

/** The invite-link, credential and co-owner commands, under `dock-notify docks`. */
export function addDockAccessCommands(docks: Command, io: CliIo): void {
  const out = lineWriter(io);
  const json = jsonOption();
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
    const { telegramLink } = await import("../domain/telegram-link.ts");
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
        const { CO_OWNER_PAYLOAD_PREFIX } = await import("../domain/owners.ts");
        const { telegramLink } = await import("../domain/telegram-link.ts");
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
}
