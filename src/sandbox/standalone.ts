import Fastify, { type FastifyInstance } from "fastify";
import type { DestinationStream } from "pino";
import { ApiError } from "../http/errors.ts";
import { requestGuard } from "../http/request-guard.ts";
import { type Config, trustProxyOption } from "../runtime/config.ts";
import { decorateRequestLog, flushLogs, loggerOptions, RequestLog, standardOutput } from "../runtime/log.ts";
import { forPeople, readableLogs } from "../runtime/readable-log.ts";
import { servedUrl } from "../runtime/service-url.ts";
import { SANDBOX_BOT_USERNAME } from "../telegram/sandbox-bot.ts";
import { sandbox } from "./plugin.ts";

/**
 * The standalone sandbox's server, not yet listening: the sandbox under `/sandbox`, and for any
 * other path the Bot API's own 404 (a client whose API root lacks `/sandbox` asks for
 * `/bot<token>/…`: the answer does not repeat the path, and the log masks the token).
 */
export async function sandboxServer(config: Config, logStream?: DestinationStream): Promise<FastifyInstance> {
  const server = Fastify({
    logger: loggerOptions(config.logLevel, logStream),
    logController: new RequestLog(),
    trustProxy: trustProxyOption(config.trustProxy),
  });
  decorateRequestLog(server);
  await server.register(requestGuard, {
    publicUrl: config.publicUrl,
    allowedHosts: config.allowedHosts,
    listenHost: config.host,
    sandboxLocalOnly: !config.sandboxAllowRemote,
  });
  // The request guard's refusals (a foreign Host, a cross-site request) in the service's error format.
  server.setErrorHandler((error, _request, reply) => {
    if (error instanceof ApiError) return reply.code(error.status).headers(error.headers).send(error.body);
    return reply.send(error);
  });
  server.setNotFoundHandler((_request, reply) =>
    reply.code(404).send({ ok: false, error_code: 404, description: "Not Found" }),
  );
  await server.register(sandbox, {
    prefix: "/sandbox",
    rateLimits: config.sandboxRateLimits,
    historyLimit: config.sandboxHistoryLimit,
    maxPeople: config.sandboxMaxPeople,
    latencyMs: config.sandboxLatencyMs,
    // A rehearsal of going live: the sandbox answers to the token the service will be given, and
    // refuses the public one (401), as Telegram would.
    ...(config.telegramBotToken === null ? {} : { token: config.telegramBotToken }),
  });
  return server;
}

/**
 * `dock-notify sandbox`: only the Telegram sandbox, in its own process, so several service
 * instances (each with TELEGRAM_API_ROOT pointing here) can share one simulated Telegram.
 * Stops on SIGTERM/SIGINT. Its logs are readable lines on a terminal, as the service's are.
 */
export async function runSandbox(config: Config, logStream?: DestinationStream): Promise<void> {
  const human = logStream === undefined && forPeople(config.logFormat);
  const server = await sandboxServer(config, human ? readableLogs(standardOutput()) : logStream);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    server.log.info({ signal }, "shutting down");
    await server.close();
    await flushLogs();
    process.exit(0);
  };
  // Repeats (Ctrl-C under npm signals twice) must not kill it mid-stop: see serve.
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));

  await server.listen({ port: config.port, host: config.host });
  const address = server.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  const url = servedUrl(config, port);
  server.log.info(
    {
      bot: SANDBOX_BOT_USERNAME,
      answersTo: config.telegramBotToken === null ? "the sandbox's public token" : "TELEGRAM_BOT_TOKEN",
      rateLimits: config.sandboxRateLimits,
      port,
    },
    `Telegram sandbox is ready: chat page ${url}/sandbox · Bot API root ${url}/sandbox`,
  );
}
