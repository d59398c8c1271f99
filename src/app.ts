import Fastify, { type FastifyError, type FastifyInstance } from "fastify";
import { sql } from "kysely";
import type { DestinationStream } from "pino";
import pkg from "../package.json" with { type: "json" };
import { BotWorker } from "./bot/bot.ts";
import { telegramWebhook, webhookSecret } from "./bot/webhook.ts";
import { type Config, trustProxyOption } from "./config.ts";
import { Dispatcher } from "./delivery/dispatcher.ts";
import { Pacer, TELEGRAM_LIMITS } from "./delivery/pacer.ts";
import { Retention } from "./delivery/retention.ts";
import { consoleApi } from "./http/console-api.ts";
import { consolePage } from "./http/console-page.ts";
import { docs } from "./http/docs.ts";
import { clientErrorHandler, frameworkErrors } from "./http/early-errors.ts";
import { ApiError, type ErrorCode } from "./http/errors.ts";
import { health } from "./http/health.ts";
import { requestGuard } from "./http/request-guard.ts";
import { apiHeaders, securityHeaders } from "./http/security-headers.ts";
import { sendApi } from "./http/send-api.ts";
import { Intake } from "./intake.ts";
import { decorateRequestLog, loggerOptions, RequestLog } from "./log.ts";
import { createMetrics, type Metrics, registerBacklogGauges, registerStateGauges } from "./metrics.ts";
import { sandbox } from "./sandbox/plugin.ts";
import { BotStateRepository } from "./store/bot-states.ts";
import type { Db } from "./store/db.ts";
import { DeliveryRepository } from "./store/deliveries.ts";
import { DeliveryReport } from "./store/delivery-report.ts";
import { DockRepository } from "./store/docks.ts";
import { isDatabaseUnavailable, storageFault } from "./store/faults.ts";
import { LoginTokenRepository } from "./store/login-tokens.ts";
import { MessageRepository } from "./store/messages.ts";
import { ACCEPTED_CHANNEL, PgLeadership } from "./store/pg-leadership.ts";
import { DatabaseProbe } from "./store/readiness.ts";
import { SessionRepository } from "./store/sessions.ts";
import { SubscriptionRepository } from "./store/subscriptions.ts";
import { type TelegramTarget, telegramTarget } from "./telegram-target.ts";

export interface AppDeps {
  config: Config;
  db: Db;
  encryptionKey: Buffer;
  /** Where log lines go; stdout when omitted. */
  logStream?: DestinationStream;
  now?: () => number;
}

export interface App {
  server: FastifyInstance;
  docks: DockRepository;
  messages: MessageRepository;
  metrics: Metrics;
  /** Where the bot's grammY client must point: Telegram, or the sandbox mounted at /sandbox. */
  telegram: TelegramTarget;
  subscriptions: SubscriptionRepository;
  loginTokens: LoginTokenRepository;
  deliveries: DeliveryRepository;
  /** Telegram's flood limits on our side; whatever sends to Telegram paces itself through it. */
  pacer: Pacer;
  botStates: BotStateRepository;
  /**
   * Who the bot is on Telegram, for "Open in Telegram" links (`telegramLink()`): known at once in
   * the sandbox, from `getMe` once the bot started otherwise; null until then.
   */
  botInfo(): { username: string } | null;
  /** Console sessions (sign-in through the bot or the Login Widget). */
  sessions: SessionRepository;
  /**
   * Starts the background workers (bot, delivery). Call once the server listens: in sandbox mode
   * they reach the sandbox through the server's own address.
   */
  start(): Promise<void>;
  /** Stops the background workers, letting in-flight work finish. Call before closing the server. */
  stop(): Promise<void>;
}

/**
 * A part of the service that runs in the background (the bot, the delivery dispatcher). It gets
 * the Telegram target resolved to an address it can reach.
 */
export interface BackgroundWorker {
  readonly name: string;
  start(telegram: TelegramTarget): Promise<void>;
  stop(): Promise<void>;
}

interface ValidationIssue {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
}

/** A schema validation failure, said in terms of the field the client got wrong. */
function describeValidation(issue: ValidationIssue | undefined, context: string | undefined): string {
  if (!issue) return "The request is not valid.";
  const where = issue.instancePath.replace(/^\//, "").replaceAll("/", ".");
  if (issue.keyword === "required") return `${String(issue.params.missingProperty)} is required.`;
  if (issue.keyword === "type") {
    return where === ""
      ? `The ${context ?? "body"} must be a JSON object.`
      : `${where} must be a ${String(issue.params.type)}.`;
  }
  return `${where || context || "request"} ${issue.message ?? "is not valid"}.`;
}

const STATUS_CODES: Record<number, ErrorCode> = {
  404: "not_found",
  405: "method_not_allowed",
  413: "payload_too_large",
  415: "unsupported_media_type",
};

/** Maps anything thrown while handling a request to the catalogue's error format. */
function toApiError(
  error: FastifyError & { validation?: ValidationIssue[] },
  maxBodyBytes: number,
): ApiError {
  if (error instanceof ApiError) return error;
  if (storageFault(error) !== null) return ApiError.retryAfter("storage_unavailable", 10);
  if (isDatabaseUnavailable(error)) return ApiError.retryAfter("database_unavailable", 5);
  if (error.validation) {
    return new ApiError("invalid_request", describeValidation(error.validation[0], error.validationContext));
  }
  switch (error.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new ApiError("payload_too_large", `The request body is larger than ${maxBodyBytes} bytes.`);
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new ApiError("unsupported_media_type");
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
    case "FST_ERR_CTP_INVALID_JSON_BODY":
      return new ApiError("invalid_json");
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) return new ApiError(STATUS_CODES[status] ?? "invalid_request");
  return new ApiError("internal_error");
}

/** Builds the service from its parts; the caller owns the database and decides when to listen. */
export async function createApp(deps: AppDeps): Promise<App> {
  const { config, db } = deps;
  const now = deps.now ?? Date.now;
  const metrics = createMetrics();
  const docks = new DockRepository(db, deps.encryptionKey, now);
  const messages = new MessageRepository(db, now, {
    dockRate: { burst: config.dockRateBurst, perSecond: config.dockRatePerSecond },
  });
  const subscriptions = new SubscriptionRepository(db, now);
  const loginTokens = new LoginTokenRepository(db, now);
  const deliveries = new DeliveryRepository(db, now);
  registerBacklogGauges(metrics, () => deliveries.backlog(), now);
  // One pacer for every message the bot sends: deliveries and the bot's own replies.
  const pacer = new Pacer(
    {
      ...TELEGRAM_LIMITS,
      globalPerSecond: config.telegramRateLimit,
      // Instances sharing a PostgreSQL database share the bot: the others' replies are not counted here.
      othersSend: db.dialect === "postgres",
    },
    now,
  );
  // A restart: Telegram still counts what the previous process sent just before it stopped.
  pacer.coldStart();
  const botStates = new BotStateRepository(db, now);
  const sessions = new SessionRepository(db, now);
  const telegram = telegramTarget(config);

  const jsonHeaders = apiHeaders({
    https: config.publicUrl.startsWith("https:"),
    loginWidget: config.telegramLoginDomain !== null,
  });
  const server = Fastify({
    logger: loggerOptions(config.logLevel, deps.logStream),
    bodyLimit: config.maxBodyBytes,
    trustProxy: trustProxyOption(config.trustProxy),
    logController: new RequestLog(),
    // A request must arrive whole within REQUEST_TIMEOUT_SECONDS (its headers within 10 s): a client
    // trickling a body byte by byte holds a connection that long, not for ever. Node checks every
    // second (its default, 30 s, would let a timed-out request linger half a minute).
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    http: {
      connectionsCheckingInterval: 1000,
      headersTimeout: Math.min(10_000, config.requestTimeoutMs),
      // Node answers a request without Host with a bare 400 of its own; the request guard answers
      // it instead (machine routes need no Host, the others get 421 in the error format).
      requireHostHeader: false,
    },
    clientErrorHandler: clientErrorHandler(jsonHeaders, (code) => metrics.requestsRejected.inc({ code })),
    frameworkErrors: frameworkErrors(jsonHeaders),
    // Strict types: a number is not a message, and "1" is not a number.
    ajv: { customOptions: { coerceTypes: false, allErrors: false } },
  });

  decorateRequestLog(server);
  server.server.maxConnections = config.maxConnections;
  // At the cap, kept-alive connections that sit idle make room (a client holding many open
  // without a request would otherwise lock everyone else out); their clients simply reconnect.
  server.server.on("drop", () => server.server.closeIdleConnections());
  // The database's own warnings (a connection dropped while idle) are log lines like any other.
  const stopWarnings = db.onWarning((message) => server.log.warn(message));
  server.addHook("onClose", async () => stopWarnings());
  server.setErrorHandler((error: FastifyError, request, reply) => {
    const apiError = toApiError(error, config.maxBodyBytes);
    // A 5xx we meant (an outage, the console not built, Telegram unreachable) is a warn line
    // without a stack: there is no bug to trace. Any other 5xx is one, logged with its stack.
    if (apiError.code === "storage_unavailable") {
      request.log.warn({ cause: storageFault(error), reason: error.message }, apiError.code);
    } else if (apiError.status >= 500 && (apiError === error || apiError.code === "database_unavailable")) {
      request.log.warn({ reason: error.message }, apiError.code);
    } else if (apiError.status >= 500) request.log.error({ err: error }, "request failed");
    metrics.requestsRejected.inc({ code: apiError.code });
    return reply.code(apiError.status).headers(apiError.headers).send(apiError.body);
  });
  server.setNotFoundHandler(async (request, reply) => {
    // Methods Fastify has no route for at all (PROPFIND, LOCK …) still get the send API's 405.
    const path = request.url.split("?")[0];
    if (path === "/ping" || path === "/webhook") {
      const error = new ApiError("method_not_allowed", "Use POST.", { Allow: "POST" });
      return reply.code(error.status).headers(error.headers).send(error.body);
    }
    const error = new ApiError("not_found", "No such endpoint; the API reference is at /docs.");
    return reply.code(error.status).send(error.body);
  });

  await server.register(requestGuard, {
    publicUrl: config.publicUrl,
    allowedHosts: config.allowedHosts,
    listenHost: config.host,
    sandboxLocalOnly: telegram.sandbox && !config.sandboxAllowRemote,
  });
  await server.register(securityHeaders, {
    https: config.publicUrl.startsWith("https:"),
    loginWidget: config.telegramLoginDomain !== null,
  });
  await server.register(docs, { publicUrl: config.publicUrl, version: pkg.version });
  const probe = new DatabaseProbe(db, now);
  await server.register(health, {
    probe,
    metrics,
    metricsToken: config.metricsToken,
    // Read at request time: the bot and the dispatcher are created below.
    checks: () => ({
      bot: statusView(bot.status()),
      telegram: statusView(dispatcher.telegramStatus()),
    }),
  });
  registerStateGauges(metrics, {
    botUp: () => bot.status().state === "running",
    telegramUp: () => dispatcher.telegramStatus().state === "up",
    databaseWritable: async () => (await probe.check()).state === "ok",
  });
  const intake = new Intake({ messages, metrics });
  await server.register(sendApi, {
    docks,
    intake,
    deliveries,
    maxBodyBytes: config.maxBodyBytes,
    maxMessageLength: config.maxMessageLength,
    authFailuresPerMinute: config.authFailuresPerMinute,
  });

  await server.register(consoleApi, {
    prefix: "/console/api",
    docks,
    intake,
    subscriptions,
    loginTokens,
    sessions,
    report: new DeliveryReport(db),
    publicUrl: config.publicUrl,
    sandbox: telegram.sandbox,
    // The bot learns its username from getMe when it starts (known at once in the sandbox).
    botUsername: async () => {
      const username = bot.botUsername() ?? telegram.botUsername;
      if (username === null) throw new ApiError("telegram_unavailable");
      return username;
    },
    botToken: telegram.token,
    loginWidgetDomain: config.telegramLoginDomain,
    sessionTtlMs: config.sessionTtlMs,
    signInAttemptsPerMinute: config.signInAttemptsPerMinute,
    now,
  });
  await server.register(consolePage, {});

  if (telegram.sandbox) {
    await server.register(sandbox, {
      prefix: "/sandbox",
      rateLimits: config.sandboxRateLimits,
      historyLimit: config.sandboxHistoryLimit,
      // Simulated people outlive a restart as their subscriptions do; not beside an in-memory database.
      ...(config.databaseUrl === "sqlite::memory:" ? {} : { stateFile: `${config.dataDir}/sandbox.json` }),
    });
  }

  const dispatcher = new Dispatcher({
    deliveries,
    subscriptions,
    pacer,
    log: server.log.child({ worker: "delivery" }),
    metrics: metrics.delivery,
    maxAgeMs: config.deliveryMaxAgeMs,
    leaseMs: config.deliveryLeaseMs,
    concurrency: config.deliveryConcurrency,
    windowPerDock: 500,
    sweepMs: 2000,
    paidBroadcast: config.telegramPaidBroadcast,
    telegramTimeoutSeconds: config.telegramTimeoutSeconds,
    ...(db.dialect === "postgres"
      ? {
          leadership: new PgLeadership(
            config.databaseUrl,
            `dispatcher:${telegram.token.split(":")[0]}`,
            config.databaseTimeoutMs,
          ),
        }
      : {}),
    now,
  });
  messages.onAccepted((dockIds) => {
    dispatcher.wake(dockIds);
    // The active dispatcher may be another instance: tell it through the database.
    if (db.dialect === "postgres") {
      sql`select pg_notify(${ACCEPTED_CHANNEL}, ${dockIds.join(",")})`
        .execute(db.kysely)
        .catch((error: unknown) => {
          server.log.warn(
            { err: error },
            "could not notify the active dispatcher; its sweep will find the message",
          );
        });
    }
  });
  const retention = new Retention({
    deliveries,
    loginTokens,
    retentionMs: config.retentionMs,
    log: server.log.child({ worker: "retention" }),
    now,
  });
  const bot = new BotWorker({
    docks,
    subscriptions,
    loginTokens,
    states: botStates,
    log: server.log.child({ worker: "bot" }),
    webhookUrl: config.telegramWebhookUrl,
    webhookCheckMs: config.telegramWebhookCheckMs,
    pacer,
    replyTimeoutMs: config.telegramTimeoutSeconds * 1000,
    now,
  });
  if (config.telegramWebhookUrl !== null) {
    await server.register(telegramWebhook, {
      secret: webhookSecret(telegram.token),
      handle: (update) => bot.handleUpdate(update),
    });
  }

  const workers: BackgroundWorker[] = [dispatcher, bot, retention];
  let started: BackgroundWorker[] = [];

  return {
    server,
    docks,
    messages,
    metrics,
    telegram,
    subscriptions,
    loginTokens,
    deliveries,
    pacer,
    botStates,
    botInfo() {
      const username = bot.botUsername() ?? telegram.botUsername;
      return username === null ? null : { username };
    },
    sessions,
    async start() {
      const reachable = telegram.sandbox
        ? { ...telegram, apiRoot: `${ownAddress(server)}/sandbox` }
        : telegram;
      for (const worker of workers) {
        await worker.start(reachable);
        started.push(worker);
        server.log.debug({ worker: worker.name }, "worker started");
      }
    },
    async stop() {
      const running = started;
      started = [];
      // Independent of each other: stopping together keeps shutdown as short as the slowest.
      await Promise.all(running.map((worker) => worker.stop()));
    },
  };
}

/** A background part's state for `/readyz`: its time as an ISO date. */
function statusView<T extends { since: number }>(status: T): Omit<T, "since"> & { since: string } {
  return { ...status, since: new Date(status.since).toISOString() };
}

/** The server's own loopback URL once it listens (what in-process clients of the sandbox use). */
function ownAddress(server: FastifyInstance): string {
  const address = server.server.address();
  if (typeof address !== "object" || address === null) throw new Error("the server is not listening yet");
  const host =
    address.family === "IPv6"
      ? `[${address.address === "::" ? "::1" : address.address}]`
      : address.address === "0.0.0.0"
        ? "127.0.0.1"
        : address.address;
  return `http://${host}:${address.port}`;
}
