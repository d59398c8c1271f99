import type { DockWithSecret } from "../../src/store/docks.ts";
import type { RunningService } from "./harness.ts";
import { waitFor } from "./wait.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the sandbox answered.
type Json = any;

/**
 * Telegram calls the service saw answered later than `seconds` (or given up on then: a call that
 * timed out is observed too), from its latency histogram in `/metrics`.
 */
export function lateAnswers(metrics: string, seconds: number): number {
  const value = (pattern: RegExp) => Number(pattern.exec(metrics)?.[1] ?? Number.NaN);
  const all = value(/^dock_notify_telegram_send_seconds_count (\d+)$/m);
  const inTime = value(
    new RegExp(`^dock_notify_telegram_send_seconds_bucket\\{le="${seconds}"\\} (\\d+)$`, "m"),
  );
  if (Number.isNaN(all) || Number.isNaN(inTime))
    throw new Error("no dock_notify_telegram_send_seconds in /metrics");
  return all - inTime;
}
/** Drives the sandbox mounted in a running service through its control API, as a person would. */
export function sandboxOf(service: RunningService) {
  const control = async (method: string, path: string, body?: unknown): Promise<Json> => {
    const response = await fetch(`${service.url}/sandbox/api${path}`, {
      method,
      ...(body === undefined
        ? {}
        : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (response.status >= 400) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return text === "" ? null : JSON.parse(text);
  };
  const fromBot = async (chatId: number): Promise<Json[]> => {
    const messages: Json[] = await control("GET", `/chats/${chatId}/messages?limit=100000`);
    return messages.filter((m) => m.from?.is_bot);
  };
  /** Per chat, how many bot messages came before any notification (the bot's welcome). */
  const before = new Map<number, number>();
  const botMessages = async (chatId: number) => (await fromBot(chatId)).slice(before.get(chatId) ?? 0);
  return {
    control,
    /** A person who has opened the bot (so the bot may write to them) and got its welcome. */
    async person(name: string): Promise<number> {
      const user = await control("POST", "/users", { first_name: name });
      await control("POST", `/users/${user.id}/start`);
      const welcome = await waitFor(
        `the bot's welcome to ${name}`,
        async () => (await fromBot(user.id)).length || undefined,
      );
      before.set(user.id, welcome);
      return user.id as number;
    },
    /** Messages the bot sent to a chat after its welcome (the notifications), oldest first. */
    botMessages,
    async botTexts(chatId: number): Promise<string[]> {
      return (await botMessages(chatId)).map((m) => m.text as string);
    },
    stats: (): Promise<{
      send_message: number;
      too_many_requests: number;
      errors: number;
      peak_per_second: number;
    }> => control("GET", "/stats"),
  };
}

export async function ping(url: string, dock: DockWithSecret, msg: string): Promise<string> {
  const response = await fetch(`${url}/ping`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secretKey, msg }),
  });
  const body = (await response.json()) as { message_id: string };
  if (response.status !== 202) throw new Error(`ping answered ${response.status}: ${JSON.stringify(body)}`);
  return body.message_id;
}

export async function deliveryStates(service: RunningService): Promise<Record<string, number>> {
  const rows = await service.db.kysely
    .selectFrom("deliveries")
    .select(["state", (eb) => eb.fn.countAll<number>().as("n")])
    .groupBy("state")
    .execute();
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
}
