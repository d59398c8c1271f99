import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { EVENT_POSTS_AT_ONCE } from "../../src/delivery/event-sender.ts";
import type { DockWithSecret } from "../../src/store/docks.ts";
import { basic, dialects, startService } from "../helpers/harness.ts";
import { waitFor } from "../helpers/wait.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the service answered.
type Json = any;

const DIALECTS = await dialects();

/** A receiver that never answers: each request stays open until the sender gives up on it. */
async function hangingReceiver() {
  const open = new Map<string, number>();
  const state = { open: 0, mostOpenPerPath: 0 };
  const server: Server = createServer((request) => {
    const path = request.url ?? "";
    const now = (open.get(path) ?? 0) + 1;
    open.set(path, now);
    state.open++;
    state.mostOpenPerPath = Math.max(state.mostOpenPerPath, now);
    request.resume();
    request.socket.on("close", () => {
      open.set(path, (open.get(path) ?? 1) - 1);
      state.open--;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: (path: string) => `http://127.0.0.1:${(server.address() as AddressInfo).port}/${path}`,
    state,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe.each(DIALECTS)("fair callback events on %s", (dialect) => {
  it("with more Docks whose receivers hang than posts in flight, another Dock's event is taken while they hang", async () => {
    const hanging = await hangingReceiver();
    const prompt: string[] = [];
    const promptServer = createServer((request, response) => {
      request.resume();
      request.on("end", () => {
        prompt.push(request.url ?? "");
        response.end();
      });
    });
    await new Promise<void>((resolve) => promptServer.listen(0, "127.0.0.1", resolve));
    const service = await startService(dialect, {
      AUTH_FAILURES_PER_MINUTE: "0",
      DOCK_RATE_BURST: "0",
      CALLBACK_ALLOWED_NETWORKS: "127.0.0.1/32",
    });
    const send = async (dock: DockWithSecret, msg: string): Promise<string> => {
      const response = await fetch(`${service.url}/webhook`, {
        method: "POST",
        headers: { Authorization: basic(dock.id, dock.secretKey), "Content-Type": "text/plain" },
        body: msg,
      });
      expect(response.status).toBe(202);
      return ((await response.json()) as Json).message_id;
    };
    try {
      // More hanging Docks than posts in flight, each with a backlog of its own (messages
      // nobody is subscribed to: each queues an event at once).
      const stuck: DockWithSecret[] = [];
      for (let i = 0; i < EVENT_POSTS_AT_ONCE + 4; i++) {
        const dock = await service.app.docks.create(1, {
          name: `Hanging ${i}`,
          link: null,
          description: null,
          callback_url: hanging.url(`dock-${i}`),
        });
        stuck.push(dock);
        for (let m = 0; m < 3; m++) await send(dock, `into the void ${m}`);
      }
      await waitFor("every post in flight hanging", () =>
        hanging.state.open >= EVENT_POSTS_AT_ONCE ? true : undefined,
      );

      const dock = await service.app.docks.create(2, {
        name: "Another owner's",
        link: null,
        description: null,
        callback_url: `http://127.0.0.1:${(promptServer.address() as AddressInfo).port}/mine`,
      });
      const id = await send(dock, "for a receiver that answers");
      await waitFor(
        "the other Dock's event taken",
        async () => {
          const event = await service.db.kysely
            .selectFrom("events")
            .select("state")
            .where("message_id", "=", id)
            .executeTakeFirst();
          return event?.state === "sent" ? true : undefined;
        },
        90_000,
      );
      // …while the hanging receivers still hang, and none of their events was taken.
      expect(hanging.state.open).toBeGreaterThan(0);
      const taken = await service.db.kysely
        .selectFrom("events")
        .select("id")
        .where(
          "dock_id",
          "in",
          stuck.map((d) => d.id),
        )
        .where("state", "=", "sent")
        .execute();
      expect(taken).toEqual([]);
      expect(prompt).toEqual(["/mine"]);
      // One post in flight per Dock, however long its backlog.
      expect(hanging.state.mostOpenPerPath).toBe(1);
    } finally {
      await service.close();
      await hanging.close();
      await new Promise<void>((resolve) => {
        promptServer.closeAllConnections();
        promptServer.close(() => resolve());
      });
    }
  }, 180_000);
});
