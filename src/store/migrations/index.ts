import { type Migration, type MigrationProvider, Migrator } from "kysely";
import type { Db } from "../db.ts";
import { initial } from "./0001-initial.ts";
import { signInAndBot } from "./0002-sign-in-and-bot.ts";
import { deliveryQueueIndex } from "./0003-delivery-queue-index.ts";
import { deferredFanout } from "./0004-deferred-fanout.ts";
import { fanoutSubscribers } from "./0005-fanout-subscribers.ts";
import { dockAllowances } from "./0006-dock-allowances.ts";
import { writeProbes } from "./0007-write-probes.ts";
import { messageContent } from "./0008-message-content.ts";
import { livingNotifications } from "./0009-living-notifications.ts";
import { integrations } from "./0010-integrations.ts";
import { activityRollups } from "./0011-activity-rollups.ts";
import { chatTitles } from "./0012-chat-titles.ts";
import { owners } from "./0013-owners.ts";
import { signingSecrets } from "./0014-signing-secrets.ts";
import { dockCredentials } from "./0015-dock-credentials.ts";
import { githubCredentials } from "./0016-github-credentials.ts";
import { privateDocks } from "./0017-private-docks.ts";
import { coOwnersAudit } from "./0018-co-owners-audit.ts";
import { unknownCopies } from "./0019-unknown-copies.ts";
import { sandboxOwners } from "./0020-sandbox-owners.ts";
import { refusedRequests } from "./0021-refused-requests.ts";
import { sandboxChats } from "./0022-sandbox-chats.ts";
import { urgentLane } from "./0023-urgent-lane.ts";
import { reminders } from "./0024-reminders.ts";

function migrations(db: Db): Record<string, Migration> {
  return {
    "0001-initial": initial(db.spelling),
    "0002-sign-in-and-bot": signInAndBot(),
    "0003-delivery-queue-index": deliveryQueueIndex(),
    "0004-deferred-fanout": deferredFanout(db.spelling),
    "0005-fanout-subscribers": fanoutSubscribers(),
    "0006-dock-allowances": dockAllowances(),
    "0007-write-probes": writeProbes(),
    "0008-message-content": messageContent(),
    "0009-living-notifications": livingNotifications(db.spelling),
    "0010-integrations": integrations(),
    "0011-activity-rollups": activityRollups(db.spelling),
    "0012-chat-titles": chatTitles(),
    "0013-owners": owners(),
    "0014-signing-secrets": signingSecrets(),
    "0015-dock-credentials": dockCredentials(),
    "0016-github-credentials": githubCredentials(),
    "0017-private-docks": privateDocks(db.spelling),
    "0018-co-owners-audit": coOwnersAudit(db.spelling),
    "0019-unknown-copies": unknownCopies(),
    "0020-sandbox-owners": sandboxOwners(),
    "0021-refused-requests": refusedRequests(db.spelling),
    "0022-sandbox-chats": sandboxChats(),
    "0023-urgent-lane": urgentLane(),
    "0024-reminders": reminders(db.spelling),
  };
}

/**
 * Applies every pending migration (or those up to `to`, for tests of a migration); returns the
 * names applied now. Safe to run concurrently.
 */
export async function migrate(db: Db, options: { to?: string } = {}): Promise<string[]> {
  const provider: MigrationProvider = { getMigrations: async () => migrations(db) };
  const migrator = new Migrator({ db: db.kysely, provider });
  const { error, results } =
    options.to === undefined ? await migrator.migrateToLatest() : await migrator.migrateTo(options.to);
  if (error) throw error;
  return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}

/**
 * The migrations this version has that the database has not applied yet, oldest first. Reads only
 * (a database never migrated has none applied): for `dock-notify doctor`.
 */
export async function pendingMigrations(db: Db): Promise<string[]> {
  const provider: MigrationProvider = { getMigrations: async () => migrations(db) };
  const known = await new Migrator({ db: db.kysely, provider }).getMigrations();
  return known.filter((migration) => migration.executedAt === undefined).map((migration) => migration.name);
}
