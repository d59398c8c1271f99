import Fastify from "fastify";
import type { Config } from "../config.ts";
import { loggerOptions } from "../log.ts";
import { SANDBOX_BOT_USERNAME } from "./identity.ts";
import { sandbox } from "./plugin.ts";

/**
 * `dock-notify sandbox`: only the Telegram sandbox, in its own process, so several service
 * instances (each with TELEGRAM_API_ROOT pointing here) can share one simulated Telegram.
 * Stops on SIGTERM/SIGINT.
 */
export async function runSandbox(config: Config): Promise<void> {
  const server = Fastify({ logger: loggerOptions(config.logLevel), trustProxy: config.trustProxy });
  await server.register(sandbox, {
    prefix: "/sandbox",
    rateLimits: config.sandboxRateLimits,
    historyLimit: config.sandboxHistoryLimit,
  });
  const stop = async (signal: string) => {
    server.log.info({ signal }, "shutting down");
    await server.close();
    process.exit(0);
  };
  process.once("SIGTERM", () => void stop("SIGTERM"));
  process.once("SIGINT", () => void stop("SIGINT"));

  await server.listen({ port: config.port, host: config.host });
  const address = server.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  server.log.info(
    { bot: SANDBOX_BOT_USERNAME, rateLimits: config.sandboxRateLimits, port },
    `Telegram sandbox is ready: chat page ${config.publicUrl}/sandbox · Bot API root ${config.publicUrl}/sandbox`,
  );
}
