import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { decryptSecret, encryptSecret, newSecretKey } from "../../src/domain/secrets.ts";
import { DockRepository } from "../../src/store/docks.ts";
import { EventOutbox } from "../../src/store/events.ts";
import { migrate } from "../../src/store/open.ts";
import { databaseAt, dialects, OLD_DOCK } from "../helpers/harness.ts";

const DIALECTS = await dialects();

describe.each(DIALECTS)("the signing secret across the upgrade on %s", (dialect) => {
  it("an upgraded Dock signs with its secret key of the time, until either is rotated; a new Dock has its own", async () => {
    const old = await databaseAt(dialect, "0013-owners");
    try {
      const key = randomBytes(32);
      const secretKey = newSecretKey();
      await sql`update docks set secret_sealed = ${encryptSecret(secretKey, key)}, callback_url = 'https://example.com/in'`.execute(
        old.db.kysely,
      );
      await migrate(old.db);
      const docks = new DockRepository(old.db, key);
      // Receivers that verify with the secret key keep verifying after the upgrade.
      expect((await docks.get(OLD_DOCK))?.signingSecret).toBe(secretKey);

      // A new secret key leaves the signing secret as it was: receivers are not broken by it.
      const newKey = await docks.rotateSecret(OLD_DOCK);
      const afterKey = await docks.get(OLD_DOCK);
      expect(afterKey?.secretKey).toBe(newKey);
      expect(afterKey?.signingSecret).toBe(secretKey);

      const signing = await docks.rotateSigningSecret(OLD_DOCK);
      expect(signing).toMatch(/^dnss_[A-Za-z0-9]{33}$/);
      expect((await docks.get(OLD_DOCK))?.signingSecret).toBe(signing);
      expect(await docks.rotateSigningSecret("NoSuchDock")).toBeUndefined();

      // What the event sender is handed to sign with.
      await sql`insert into events (dock_id, message_id, type, payload, state, attempts, next_attempt_at, created_at, updated_at)
        values (${OLD_DOCK}, 'm', 'message.delivered', '{}', 'queued', 0, ${old.now}, ${old.now}, ${old.now})`.execute(
        old.db.kysely,
      );
      const queued = await old.db.kysely.selectFrom("events").select("id").executeTakeFirstOrThrow();
      const claimed = await new EventOutbox(old.db).claim(Number(queued.id), Date.now() + 60_000);
      expect(decryptSecret(claimed?.signingSealed ?? "", key)).toBe(signing);

      const fresh = await docks.create(1, { name: "New", link: null, description: null });
      expect(fresh.signingSecret).toMatch(/^dnss_/);
      expect(fresh.signingSecret).not.toBe(fresh.secretKey);
    } finally {
      await old.close();
    }
  });
});
