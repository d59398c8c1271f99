import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { FastifyInstance } from "fastify";
import { ownFile } from "../files.ts";

const PAGE_DIR = ownFile("sandbox/page/");

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

/** SHA-256 CSP source for the contents of every `<tag>…</tag>` in the page. */
function hashesOf(page: string, tag: "script" | "style"): string[] {
  const pattern = new RegExp(`<${tag}[^>]*>([\\s\\S]*?)</${tag}>`, "g");
  return [...page.matchAll(pattern)].map(
    (match) =>
      `'sha256-${createHash("sha256")
        .update(match[1] ?? "", "utf8")
        .digest("base64")}'`,
  );
}

/**
 * The page's own Content-Security-Policy: its one inline script and style are allowed by hash, so
 * the policy stays strict (nothing else inline, nothing from elsewhere) without a build step.
 */
function contentSecurityPolicy(page: string): string {
  return [
    "default-src 'self'",
    `script-src ${hashesOf(page, "script").join(" ")}`,
    `style-src ${hashesOf(page, "style").join(" ")}`,
    "img-src 'self' data:",
    "connect-src 'self'",
    "frame-ancestors 'none'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
  ].join("; ");
}

/**
 * The chat page at `/sandbox`: plays the Telegram app for simulated people, talking to the
 * control API. `/sandbox?start=<payload>` opens the bot with a deep link, like `t.me/<bot>?start=`.
 */
export async function chatPage(app: FastifyInstance): Promise<void> {
  const page = buildPage();
  const policy = contentSecurityPolicy(page);
  app.get("/", async (_request, reply) =>
    reply
      .type("text/html; charset=utf-8")
      .header("cache-control", "no-cache")
      .header("x-content-type-options", "nosniff")
      .header("content-security-policy", policy)
      .send(page),
  );
}
