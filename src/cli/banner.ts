import type { App, ClaimLink } from "../app.ts";
import { bannerBotLine } from "../bot/bot-health.ts";
import type { Config } from "../runtime/config.ts";

/**
 * Where the data lives, for a person: the SQLite file, or the PostgreSQL database and server.
 * Built from the URL's parts, never printed whole: a postgres:// URL carries the password (and its
 * query may carry more credentials).
 */
export function databaseLocation(databaseUrl: string): string {
  if (databaseUrl.startsWith("sqlite:")) return `SQLite file ${databaseUrl.slice("sqlite:".length)}`;
  try {
    const url = new URL(databaseUrl);
    // `postgres:///db?host=/run/postgresql` names a Unix socket directory instead of a host.
    const host = url.hostname || url.searchParams.get("host") || "localhost";
    const server = url.port ? `${host}:${url.port}` : host;
    const name = decodeURIComponent(url.pathname.slice(1));
    return `PostgreSQL database ${name || "(the user's default)"} on ${server}`;
  } catch {
    return "PostgreSQL (DATABASE_URL)";
  }
}

/**
 * What `serve` prints on a terminal once it answers (readable-log.ts decides when): where to open
 * the console, the sandbox and the API reference, where the data is, how to stop. For people only;
 * machines read the "Dock Notify is ready" log line, which says the same.
 */
export function banner(
  config: Config,
  url: string,
  version: string,
  claim: ClaimLink | null = null,
  bot: ReturnType<App["botHealth"]> | null = null,
): string {
  const rows: [string, string][] = [["Console", `${url}/console/`]];
  if (config.telegramBotToken === null) {
    rows.push(["Sandbox", `${url}/sandbox   (plays Telegram: no TELEGRAM_BOT_TOKEN is set)`]);
    rows.push(["Real bot", 'docs/telegram.md, "Connect your bot": BotFather, token, PUBLIC_URL']);
  }
  if (bot !== null) {
    const [first = "", ...more] = bannerBotLine(bot.status.state, bot.status.reason, {
      apiRoot: bot.apiRoot,
      mode: bot.status.mode,
      username: bot.username,
    });
    rows.push(["Bot", first], ...more.map((line): [string, string] => ["", line]));
  }
  rows.push(["API docs", `${url}/docs`], ["Data", databaseLocation(config.databaseUrl)]);
  if (config.owners === "anyone") {
    rows.push(["Owners", "anyone with Telegram may sign in and create Docks (OWNERS=*)"]);
  }
  if (claim !== null) {
    rows.push(
      ["Claim", claim.link ?? `send ${claim.command} to your bot in Telegram`],
      ["", "Nobody administers this Dock Notify yet: open the claim link in Telegram and"],
      ["", "answer Yes to become its administrator (works once, for 24 hours)."],
    );
  }
  const lines = [
    "",
    `  Dock Notify ${version} is running`,
    "",
    ...rows.map(([label, value]) => `  ${label.padEnd(10)}${value}`),
    "",
    "  Press Ctrl+C to stop.",
    "",
    "",
  ];
  return lines.join("\n");
}
