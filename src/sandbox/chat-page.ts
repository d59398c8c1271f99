import { readFileSync } from "node:fs";
import type { FastifyInstance } from "fastify";

const PAGE_DIR = new URL("./page/", import.meta.url);

/**
 * The page as one document: chat.html with chat.css and chat.js put inline, so it works under any
 * path prefix (a reverse proxy, PUBLIC_URL with a path) and needs no build step.
 */
function buildPage(): string {
  const read = (name: string) => readFileSync(new URL(name, PAGE_DIR), "utf8");
  return read("chat.html")
    .replace("/* chat.css */", () => read("chat.css"))
    .replace("/* chat.js */", () => read("chat.js"));
}

/**
 * The chat page at `/sandbox`: plays the Telegram app for simulated people, talking to the
 * control API. `/sandbox?start=<payload>` opens the bot with a deep link, like `t.me/<bot>?start=`.
 */
export async function chatPage(app: FastifyInstance): Promise<void> {
  const page = buildPage();
  app.get("/", async (_request, reply) =>
    reply
      .type("text/html; charset=utf-8")
      .header("cache-control", "no-cache")
      .header("x-content-type-options", "nosniff")
      .send(page),
  );
}
