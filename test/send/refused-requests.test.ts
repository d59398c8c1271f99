import { mkdirSync } from "node:fs";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newDockId } from "../../src/domain/ids.ts";
import { REFUSED_PER_DOCK } from "../../src/store/refused-requests.ts";
import {
  accessibilityProblems,
  chromiumPath,
  freePort,
  launchChromium,
  pageProblems,
} from "../helpers/browser.ts";
import { type ConsoleClient, signIn, withSession } from "../helpers/console-client.ts";
import { basic, dialects, type RunningService, startService } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the service answered.
type Json = any;

const DIALECTS = await dialects();

interface TestDock {
  id: string;
  secret_key: string;
}

/** A POST to a send door, as an integration makes it: the status and the error code answered. */
async function post(
  url: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; code: string | undefined }> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  const answer = (await response.json()) as Json;
  return { status: response.status, code: answer?.error?.code };
}

/**
 * "Why didn't it arrive?" (issue 38): every 4xx a send door answers is logged with its error code,
 * and the Dock it names keeps it in a bounded list its console shows — real refusals over HTTP,
 * read back through the console's API, and the service's real log searched for the secrets sent.
 */
describe.each(DIALECTS)("refused requests on %s", (dialect) => {
  let service: RunningService;
  let alice: ConsoleClient;
  let bob: ConsoleClient;

  beforeAll(async () => {
    // No allowance of failed authentications: the tests send many wrong keys from one address.
    service = await startService(dialect, { AUTH_FAILURES_PER_MINUTE: "0", MAX_MESSAGE_LENGTH: "50" });
    alice = await signIn(service, { id: 3801, first_name: "Alice" });
    bob = await signIn(service, { id: 3802, first_name: "Bob" });
  });
  afterAll(async () => service?.close());

  const createDock = async (client: ConsoleClient, name: string): Promise<TestDock> => {
    const created = await client.call("POST", "/docks", { name });
    expect(created.status).toBe(201);
    return created.body.dock as TestDock;
  };
  const refusedOf = async (client: ConsoleClient, dockId: string): Promise<Json[]> => {
    const answer = await client.call("GET", `/docks/${dockId}/refused`);
    expect(answer.status).toBe(200);
    expect(answer.body.limit).toBe(REFUSED_PER_DOCK);
    return answer.body.refused;
  };
  /** The Dock's list once it holds `count` rows (the refusals are written within a second). */
  const refusedBecome = (client: ConsoleClient, dockId: string, count: number) =>
    waitFor(`${count} refused requests of ${dockId}`, async () => {
      const rows = await refusedOf(client, dockId);
      if (rows.length < count) throw new Error(JSON.stringify(rows));
      return rows;
    });
  /** The request log lines of refusals with this code. */
  const logLinesOf = (code: string): Json[] =>
    service.logs.lines
      .map((line) => JSON.parse(line) as Json)
      .filter((line) => line.msg === "request" && line.code === code);

  it("each kind of refusal is listed for the Dock it names, with door, format, code and message, and logged with its code and no secret", {
    timeout: 120_000,
  }, async () => {
    const dock = await createDock(alice, "Refusals");
    const hook = (await service.app.docks.rotateHookToken(dock.id)) as string;
    const wrongKey = `dnsk_${"W".repeat(33)}`;
    const right = { authorization: basic(dock.id, dock.secret_key) };

    // Bad JSON (its credentials right), a wrong secret key (/ping and /webhook), a format the
    // service does not read, a text over MAX_MESSAGE_LENGTH, a payload a format cannot read.
    expect(await post(`${service.url}/webhook`, `{"msg": "half`, right)).toEqual({
      status: 400,
      code: "invalid_json",
    });
    expect(
      await post(
        `${service.url}/ping`,
        JSON.stringify({ dock_id: dock.id, secret_key: wrongKey, msg: "hi" }),
      ),
    ).toEqual({ status: 401, code: "unauthorized" });
    expect(
      await post(`${service.url}/webhook`, JSON.stringify({ msg: "hi" }), {
        authorization: basic(dock.id, wrongKey),
      }),
    ).toEqual({ status: 401, code: "unauthorized" });
    expect(await post(`${service.url}/webhook/nosuchtool`, "{}", right)).toEqual({
      status: 400,
      code: "unknown_format",
    });
    expect(await post(`${service.url}/webhook`, JSON.stringify({ msg: "x".repeat(51) }), right)).toEqual({
      status: 413,
      code: "message_too_long",
    });
    expect(
      await post(`${service.url}/hook/${hook}/alertmanager`, JSON.stringify({ alerts: "none" })),
    ).toEqual({
      status: 400,
      code: "invalid_payload",
    });

    // On /ping a text too long is refused before the key is looked at: not proof of the Dock's.
    expect(
      await post(
        `${service.url}/ping`,
        JSON.stringify({ dock_id: dock.id, secret_key: dock.secret_key, msg: "z".repeat(60) }),
      ),
    ).toEqual({ status: 413, code: "message_too_long" });

    const rows = await refusedBecome(alice, dock.id, 7);
    const seen = rows.map((row) => [row.door, row.format, row.status, row.code, row.credentials]);
    expect(seen).toEqual(
      expect.arrayContaining([
        ["/webhook", null, 400, "invalid_json", "right"],
        ["/ping", null, 401, "unauthorized", "wrong"],
        ["/webhook", null, 401, "unauthorized", "wrong"],
        ["/webhook/{format}", null, 400, "unknown_format", "right"],
        ["/webhook", null, 413, "message_too_long", "right"],
        ["/hook/{token}/{format}", "alertmanager", 400, "invalid_payload", "right"],
        ["/ping", null, 413, "message_too_long", "unverified"],
      ]),
    );
    expect(rows).toHaveLength(7);
    const tooLong = rows.find((row) => row.code === "message_too_long" && row.door === "/webhook");
    expect(tooLong.message).toBe("msg is 51 UTF-16 code units long; the limit is 50.");
    for (const row of rows) {
      expect(row.count).toBe(1);
      expect(row.first_at).toBeLessThanOrEqual(row.last_at);
    }

    // Each refusal's one log line names its code, door and Dock; no secret anywhere in the log.
    const ping = logLinesOf("unauthorized").find((line) => line.url === "/ping");
    expect(ping).toMatchObject({ status: 401, door: "/ping", dockId: dock.id, credentials: "wrong" });
    const payload = logLinesOf("invalid_payload").find((line) => line.door === "/hook/{token}/{format}");
    expect(payload).toMatchObject({
      status: 400,
      dockId: dock.id,
      format: "alertmanager",
      url: "/hook/<redacted>/alertmanager",
    });
    for (const code of ["invalid_json", "unknown_format", "message_too_long"]) {
      expect(
        logLinesOf(code).some((line) => line.dockId === dock.id && line.door?.startsWith("/webhook")),
      ).toBe(true);
    }
    const log = service.logs.text;
    for (const secret of [dock.secret_key, wrongKey, hook, "W".repeat(33)]) expect(log).not.toContain(secret);
    expect(JSON.stringify(rows)).not.toContain(hook);
  });

  it("repeats of a refusal are one row with a count, and a Dock keeps only its newest refusals", {
    timeout: 120_000,
  }, async () => {
    const dock = await createDock(alice, "Flood");
    const right = { authorization: basic(dock.id, dock.secret_key) };
    for (let i = 0; i < 5; i += 1) {
      expect((await post(`${service.url}/webhook`, "not json", right)).status).toBe(400);
    }
    const repeated = await waitFor("the repeats counted", async () => {
      const rows = await refusedOf(alice, dock.id);
      return rows.length === 1 && rows[0].count === 5 ? rows : undefined;
    });
    expect(repeated[0]).toMatchObject({ code: "invalid_json", door: "/webhook" });

    // Refusals that differ (their messages name the length): more than a Dock keeps, written a
    // batch at a time.
    const lengths: number[] = [];
    for (let batch = 0; batch < 6; batch += 1) {
      await Promise.all(
        Array.from({ length: 20 }, (_, i) => {
          const length = 51 + batch * 20 + i;
          lengths.push(length);
          return post(`${service.url}/webhook`, JSON.stringify({ msg: "y".repeat(length) }), right);
        }),
      );
      await service.app.refused.flush();
    }
    const rows = await refusedOf(alice, dock.id);
    expect(rows).toHaveLength(REFUSED_PER_DOCK);
    // The newest are kept: every one of the last batch, and none of the invalid JSON from before.
    const kept = new Set(rows.map((row) => row.message));
    for (const length of lengths.slice(-20)) {
      expect(kept.has(`msg is ${length} UTF-16 code units long; the limit is 50.`)).toBe(true);
    }
    expect(rows.some((row) => row.code === "invalid_json")).toBe(false);
    const stored = await service.db.kysely
      .selectFrom("dock_refusals")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("dock_id", "=", dock.id)
      .executeTakeFirstOrThrow();
    expect(Number(stored.n)).toBe(REFUSED_PER_DOCK);
  });

  it("a refusal naming an unknown Dock is kept nowhere, and another owner sees nothing of Alice's", {
    timeout: 120_000,
  }, async () => {
    const dock = await createDock(alice, "Private refusals");
    const bobs = await createDock(bob, "Bob's");
    const unknown = newDockId();
    const wrongKey = `dnsk_${"Z".repeat(33)}`;
    expect(
      await post(
        `${service.url}/ping`,
        JSON.stringify({ dock_id: unknown, secret_key: wrongKey, msg: "hi" }),
      ),
    ).toEqual({ status: 401, code: "unauthorized" });
    // Bob probes Alice's Dock with his own key.
    expect(
      await post(
        `${service.url}/ping`,
        JSON.stringify({ dock_id: dock.id, secret_key: bobs.secret_key, msg: "hi" }),
      ),
    ).toEqual({ status: 401, code: "unauthorized" });
    await refusedBecome(alice, dock.id, 1);
    await service.app.refused.flush();

    const unknownRows = await service.db.kysely
      .selectFrom("dock_refusals")
      .select("id")
      .where("dock_id", "=", unknown)
      .execute();
    expect(unknownRows).toEqual([]);
    expect(await refusedOf(bob, bobs.id)).toEqual([]);
    expect((await bob.call("GET", `/docks/${dock.id}/refused`)).status).toBe(404);
    expect((await bob.call("GET", `/docks/${unknown}/refused`)).status).toBe(404);
    expect(JSON.stringify(await refusedOf(alice, dock.id))).not.toContain(bobs.secret_key);
    expect(service.logs.text).not.toContain(bobs.secret_key);

    // Deleted with the Dock; a refusal still naming it is kept nowhere.
    expect((await alice.call("DELETE", `/docks/${dock.id}`)).status).toBe(200);
    expect(
      await post(
        `${service.url}/ping`,
        JSON.stringify({ dock_id: dock.id, secret_key: wrongKey, msg: "hi" }),
      ),
    ).toEqual({ status: 401, code: "unauthorized" });
    await service.app.refused.flush();
    const left = await service.db.kysely
      .selectFrom("dock_refusals")
      .select("id")
      .where("dock_id", "in", [dock.id, unknown])
      .execute();
    expect(left).toEqual([]);
  });
});

describe.skipIf(!chromiumPath)("the Refused section in Chromium", () => {
  let service: RunningService;
  let browser: Browser;

  beforeAll(async () => {
    const port = await freePort();
    service = await startService(
      "sqlite",
      { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, AUTH_FAILURES_PER_MINUTE: "0" },
      { pace: "unpaced" },
    );
    browser = await launchChromium();
    mkdirSync("test-results", { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  it("lists the Dock's refusals, follows new ones live, and is axe-clean", { timeout: 180_000 }, async () => {
    const alice = await signIn(service, { id: 3811, first_name: "Alice" });
    const created = await alice.call("POST", "/docks", { name: "Night builds" });
    const dock = created.body.dock as TestDock;
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await withSession(context, alice);
    const page = await context.newPage();
    const problems = pageProblems(page);
    await page.goto(`${service.url}/console/#/docks/${dock.id}/activity`);
    await page.getByRole("heading", { name: "Refused requests" }).waitFor();
    await page.getByText("Nothing refused").waitFor();
    expect(await accessibilityProblems(page)).toEqual([]);

    // A refusal while the page is open: its row appears without a reload.
    expect(
      await post(`${service.url}/webhook`, "{", { authorization: basic(dock.id, dock.secret_key) }),
    ).toEqual({ status: 400, code: "invalid_json" });
    const table = page.getByTestId("refused");
    await table.getByRole("row").filter({ hasText: "invalid_json" }).waitFor();
    expect(
      await post(
        `${service.url}/ping`,
        JSON.stringify({ dock_id: dock.id, secret_key: `dnsk_${"Q".repeat(33)}`, msg: "hi" }),
      ),
    ).toEqual({ status: 401, code: "unauthorized" });
    const wrong = table.getByRole("row").filter({ hasText: "401 unauthorized" });
    await wrong.waitFor();
    expect(await wrong.textContent()).toContain("/ping");
    expect(await wrong.textContent()).toContain("wrong");
    expect(await accessibilityProblems(page)).toEqual([]);
    expect(await page.content()).not.toContain("Q".repeat(33));
    await page.screenshot({ path: "test-results/refused-requests.png", fullPage: true });
    expect(problems).toEqual([]);
    await context.close();
  });
});
