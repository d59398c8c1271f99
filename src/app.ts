import Fastify, { type FastifyInstance } from "fastify";
import type { DestinationStream } from "pino";
import pkg from "../package.json" with { type: "json" };
import { type BotStatus, BotWorker } from "./bot/bot.ts";
import type { BotProblem } from "./bot/bot-health.ts";
import { NoticeSender } from "./bot/notices.ts";
import type { HostResolver } from "./delivery/callback-post.ts";
import { Dispatcher } from "./delivery/dispatcher.ts";
import { EVENT_POSTS_AT_ONCE, EventSender } from "./delivery/event-sender.ts";
import { ReminderSender } from "./delivery/reminder-sender.ts";
import { Retention } from "./delivery/retention.ts";
import { CallbackTargets } from "./domain/callback-target.ts";
import { CLAIM_PAYLOAD_PREFIX, ownerPolicy } from "./domain/owners.ts";
import { telegramLink } from "./domain/telegram-link.ts";
import { BodyBudget } from "./http/body-budget.ts";
import { LiveHub } from "./http/console/live.ts";
import { consoleApi } from "./http/console-api.ts";
import { consolePage } from "./http/console-page.ts";
import { docs } from "./http/docs.ts";
import { clientErrorHandler, errorBoundary, frameworkErrors } from "./http/error-boundary.ts";
import { ApiError, ERRORS } from "./http/errors.ts";
import { health } from "./http/health.ts";
import { Intake } from "./http/intake.ts";
import { PayloadThread } from "./http/payload-thread.ts";
import { utf8Parsers } from "./http/request-body.ts";
import { requestGuard } from "./http/request-guard.ts";
import { apiHeaders, securityHeaders } from "./http/security-headers.ts";
import { sendApi } from "./http/send/index.ts";
import { telegramWebhook } from "./http/telegram-webhook.ts";
import { type Config, trustProxyOption } from "./runtime/config.ts";
import { decorateRequestLog, loggerOptions, RequestLog } from "./runtime/log.ts";
import {
  createMetrics,
  type Metrics,
  registerBacklogGauges,
  registerHeldBodiesGauge,
  registerStateGauges,
} from "./runtime/metrics.ts";
import type { BackgroundWorker } from "./runtime/worker.ts";
import { ActivityRepository } from "./store/activity.ts";
import { Audience } from "./store/audience.ts";
import { DockAudit } from "./store/audit.ts";
import { BotStateRepository } from "./store/bot-states.ts";
import { CoOwnerRepository } from "./store/co-owners.ts";
import type { Db } from "./store/db.ts";
import { DockBanRepository } from "./store/dock-bans.ts";
import { DockStamps } from "./store/dock-stamps.ts";
import { DockRepository } from "./store/docks.ts";
import { Escalations } from "./store/escalations.ts";
import { EventOutbox } from "./store/events.ts";
import { InviteLinkRepository } from "./store/invite-links.ts";
import { JoinRequestRepository } from "./store/join-requests.ts";
import { LoginTokenRepository } from "./store/login-tokens.ts";
import { MessageChanges } from "./store/message-changes.ts";
import { MessageRepository } from "./store/messages.ts";
import { NoticeQueue } from "./store/notices.ts";
import { Outbox } from "./store/outbox.ts";
import { OutboxViews } from "./store/outbox-views.ts";
import { OwnerRepository } from "./store/owners.ts";
import { DatabaseProbe } from "./store/readiness.ts";
import { RefusedRequests } from "./store/refused-requests.ts";
import { ReminderStore } from "./store/reminders.ts";
import { SandboxChats } from "./store/sandbox-chats.ts";
import { SandboxDocks } from "./store/sandbox-docks.ts";
import { SessionRepository } from "./store/sessions.ts";
import { SubscriptionRepository } from "./store/subscriptions.ts";
import { grammyCopySender } from "./telegram/copies.ts";
import { Pacer, type PacerLimits, TELEGRAM_LIMITS } from "./telegram/pacer.ts";
import { sandboxChats } from "./telegram/sandbox-bot.ts";
import { type TelegramTarget, telegramTarget, webhookSecret } from "./telegram/target.ts";

export interface AppDeps {
  config: Config;
  db: Db;
  encryptionKey: Buffer;
  /** Where log lines go; stdout when omitted. */
  logStream?: DestinationStream;
  now?: () => number;
  /** How often a bot that is down warns again (a minute when omitted); tests that watch the repeats set less. */
  botDownWarningEveryMs?: number;
  /**
   * Overrides Telegram's flood limits in the pacer. For tests whose subject is not the pace (a
   * conversation with the bot, the console) against a sandbox with its limits off; never set by
   * the service itself.
   */
  pace?: Partial<PacerLimits>;
  /** How often the activity counts' rows are folded (Retention's default when omitted); tests that watch the rows set their own. */
  foldIntervalMs?: number;
  /**
   * Resolves the host names of callback URLs; the system's resolver when omitted. Tests give
   * names that resolve where they choose (a public-looking name to 127.0.0.1, say).
   */
  resolveHost?: HostResolver;
  /** The payload thread's deadline (JOB_DEADLINE_MS when omitted); tests that need a job stopped set a tiny one. */
  threadDeadlineMs?: number;
}

/** A claim link into the bot, or — while the bot's username is unknown — the command to send it. */
export interface ClaimLink {
  link: string | null;
  command: string;
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
  /** Every change of a delivery's state (see store/outbox.ts). */
  outbox: Outbox;
  /** Read views of the outbox: a message's status, the backlog, a Dock's recent messages. */
  outboxViews: OutboxViews;
  /** Telegram's flood limits on our side; whatever sends to Telegram paces itself through it. */
  pacer: Pacer;
  botStates: BotStateRepository;
  /**
   * Who the bot is on Telegram, for "Open in Telegram" links (`telegramLink()`): known at once in
   * the sandbox, from `getMe` once the bot started otherwise; null until then.
   */
  botInfo(): { username: string } | null;
  /**
   * The bot's state, and while it is not running what is wrong and the fix (bot/bot-health.ts):
   * for the banner, which prints it once the start settled.
   */
  botHealth(): { status: BotStatus; problem: BotProblem | null; username: string | null; apiRoot: string };
  /** Console sessions (sign-in through the bot or the Login Widget). */
  sessions: SessionRepository;
  /** Who may own Docks (OWNERS, the claim, invitations). */
  owners: OwnerRepository;
  /** A Dock's audience: who may subscribe, invite links, join requests, removals (audited). */
  audience: Audience;
  /** Each Dock's daily activity counts: its chart, the list's headline numbers. */
  activity: ActivityRepository;
  /** Who has which role on each Dock beside its owner. */
  coOwners: CoOwnerRepository;
  /** Each Dock's audit log: who did what to it, and when. */
  audit: DockAudit;
  /** The console's live streams and their shared ticker. */
  live: LiveHub;
  /** The send doors' refusals, kept for the Docks' consoles (flush writes what waits). */
  refused: RefusedRequests;
  /** Where Docks' templates are rendered and long texts parsed: a thread of its own, with a hard deadline. */
  payloadThread: PayloadThread;
  /**
   * While the instance awaits its first administrator (OWNERS unset with a real bot, nobody has
   * claimed it): a new single-use claim link into the bot, or — while the bot's username is not
   * known yet (Telegram unreachable at start) — the command to send the bot. Null otherwise.
   */
  claimLink(): Promise<ClaimLink | null>;
  /**
   * Starts the background workers (bot, delivery). Call once the server listens: in sandbox mode
   * they reach the sandbox through the server's own address.
   */
  start(): Promise<void>;
  /** Stops the background workers, letting in-flight work finish. Call before closing the server. */
  stop(): Promise<void>;
}

/** Builds the service from its parts; the caller owns the database and decides when to listen. */
export async function createApp(deps: AppDeps): Promise<App> {
  const { config, db } = deps;
  const now = deps.now ?? Date.now;
  // Before the server takes any request (store/sandbox-chats.ts: what this process made is its own).
  const bootedAt = now();
  const metrics = createMetrics();
  const docks = new DockRepository(db, deps.encryptionKey, now, {
    sandbox: config.telegramBotToken === null,
  });
  const messages = new MessageRepository(db, now, {
    dockRate: { burst: config.dockRateBurst, perSecond: config.dockRatePerSecond },
    timeoutMs: config.databaseTimeoutMs,
  });
  // Chats subscribing while the sandbox plays Telegram are its (store/sandbox-chats.ts).
  const chatsOfSandbox = sandboxChats(config.telegramBotToken);
  const subscriptions = new SubscriptionRepository(db, now, { sandbox: chatsOfSandbox });
  const loginTokens = new LoginTokenRepository(db, now);
  const outbox = new Outbox(db, now);
  const outboxViews = new OutboxViews(db, now);
  const messageChanges = new MessageChanges(db, now);
  registerBacklogGauges(metrics, () => outboxViews.backlog(), now);
  // One pacer for every message the bot sends: deliveries and the bot's own replies.
  const pacer = new Pacer(
    {
      ...TELEGRAM_LIMITS,
      globalPerSecond: config.telegramRateLimit,
      // Instances sharing a PostgreSQL database share the bot: the others' replies are not counted here.
      othersSend: db.shared,
      ...deps.pace,
    },
    now,
  );
  // A restart: Telegram still counts what the previous process sent just before it stopped.
  pacer.coldStart();
  const botStates = new BotStateRepository(db, now);
  const telegram = telegramTarget(config);
  const owners = new OwnerRepository(db, ownerPolicy(config.owners, telegram.sandbox), now);
  const sessions = new SessionRepository(db, owners.policy, now);
  const sandboxDocks = new SandboxDocks(db, owners.policy, now);
  const activity = new ActivityRepository(db, now);
  const coOwners = new CoOwnerRepository(db, now);
  const audit = new DockAudit(db, now);
  const callbackTargets = new CallbackTargets(config.callbackAllowedNetworks);
  const invites = new InviteLinkRepository(db, deps.encryptionKey, now);
  const joinRequests = new JoinRequestRepository(db, {
    ttlMs: config.joinRequestTtlMs,
    now,
    sandbox: chatsOfSandbox,
  });
  const notices = new NoticeQueue(db, now);
  const audience = new Audience({
    db,
    docks,
    invites,
    requests: joinRequests,
    bans: new DockBanRepository(db, now),
    notices,
    team: coOwners,
    now,
  });

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
  // Before any route: every plugin without parsers of its own reads JSON and text through these.
  utf8Parsers(server);
  server.server.maxConnections = config.maxConnections;
  // At the cap, kept-alive connections that sit idle make room (a client holding many open
  // without a request would otherwise lock everyone else out); their clients simply reconnect.
  server.server.on("drop", () => server.server.closeIdleConnections());
  // The database's own warnings (a connection dropped while idle) are log lines like any other.
  const stopWarnings = db.onWarning((message) => server.log.warn(message));
  server.addHook("onClose", async () => stopWarnings());
  await server.register(errorBoundary, {
    maxBodyBytes: config.maxBodyBytes,
    onRefused: (code) => metrics.requestsRejected.inc({ code }),
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
    version: pkg.version,
    // Read at request time: the bot and the dispatcher are created below.
    checks: () => {
      const problem = bot.problem();
      return {
        bot: { ...statusView(bot.status()), ...(problem ? { fix: problem.fix } : {}) },
        telegram: statusView(dispatcher.telegramStatus()),
      };
    },
    // A refused token is this instance's configuration, and nothing will be sent until it is
    // replaced: unready, so that a deploy with a wrong token stops at its first instance. Telegram
    // unreachable is Telegram's outage, the same for every instance: still ready (messages are
    // taken and sent once it is back), or a load balancer would pull them all at once.
    unready: () => {
      if (bot.status().state !== "unauthorized") return null;
      const problem = bot.problem();
      return problem && `${problem.what}: ${problem.fix}.`;
    },
  });
  registerStateGauges(metrics, {
    botUp: () => bot.status().state === "running",
    telegramUp: () => dispatcher.telegramStatus().state === "up",
    databaseWritable: async () => (await probe.check()).state === "ok",
  });
  const intake = new Intake({ messages, metrics });
  const payloadThread = new PayloadThread(
    deps.threadDeadlineMs === undefined ? {} : { deadlineMs: deps.threadDeadlineMs },
  );
  server.addHook("onClose", async () => payloadThread.close());
  const maxInboundBodyBytes = Math.max(config.maxBodyBytes, config.maxInboundBodyBytes);
  const unauthenticatedBodies = new BodyBudget({
    totalBytes: config.unauthenticatedBodiesMaxBytes,
    perAddressBytes: Math.max(maxInboundBodyBytes, Math.floor(config.unauthenticatedBodiesMaxBytes / 4)),
  });
  registerHeldBodiesGauge(metrics, () => unauthenticatedBodies.held);
  const refused = new RefusedRequests(db, {
    now,
    onError: (error) =>
      server.log.warn({ err: error }, "could not write the refused requests of the last second"),
  });
  // What waits is written as the server closes, before the database does.
  server.addHook("onClose", async () => refused.close());
  await server.register(sendApi, {
    docks,
    intake,
    views: outboxViews,
    changes: messageChanges,
    maxBodyBytes: config.maxBodyBytes,
    maxInboundBodyBytes,
    maxMessageLength: config.maxMessageLength,
    authFailuresPerMinute: config.authFailuresPerMinute,
    databaseTimeoutMs: config.databaseTimeoutMs,
    payloadThread,
    unauthenticatedBodies,
    refused,
  });

  const live = new LiveHub({
    stamps: new DockStamps(db, now),
    owners,
    sessions,
    log: server.log.child({ worker: "live" }),
    now,
  });
  await server.register(consoleApi, {
    prefix: "/console/api",
    docks,
    coOwners,
    audit,
    audience,
    intake,
    subscriptions,
    loginTokens,
    sessions,
    owners,
    sandboxDocks,
    maxDocksPerOwner: config.maxDocksPerOwner,
    report: outboxViews,
    activity,
    live,
    refused,
    publicUrl: config.publicUrl,
    sandbox: telegram.sandbox,
    // The bot learns its username from getMe when it starts (known at once in the sandbox).
    botUsername: async () => {
      const username = bot.botUsername() ?? telegram.botUsername;
      if (username !== null) return username;
      // Not known yet: say why, and what to do, rather than "try again" for a token that never works.
      const { state } = bot.status();
      const problem = bot.problem();
      // The console's error page shows what is wrong and the fix apart (`bot` beside `error`).
      const context = { bot: { state, ...(problem ?? {}) } };
      if (state === "unauthorized" && problem) {
        throw new ApiError("bot_token_refused", `${problem.what}: ${problem.fix}.`, {}, undefined, {
          context,
        });
      }
      throw new ApiError(
        "telegram_unavailable",
        problem
          ? `${ERRORS.telegram_unavailable.message} ${capitalised(problem.what)}: ${problem.fix}.`
          : undefined,
        {},
        undefined,
        { context },
      );
    },
    botToken: telegram.token,
    loginWidgetDomain: config.telegramLoginDomain,
    sessionTtlMs: config.sessionTtlMs,
    signInAttemptsPerMinute: config.signInAttemptsPerMinute,
    callbackTargets,
    payloadThread,
    changes: messageChanges,
    maxMessageLength: config.maxMessageLength,
    now,
  });
  await server.register(consolePage, {});

  if (telegram.sandbox) {
    // Loaded only when it plays Telegram: a service with a real bot never loads the emulator.
    const { sandbox } = await import("./sandbox/plugin.ts");
    await server.register(sandbox, {
      prefix: "/sandbox",
      rateLimits: config.sandboxRateLimits,
      historyLimit: config.sandboxHistoryLimit,
      maxPeople: config.sandboxMaxPeople,
      latencyMs: config.sandboxLatencyMs,
      builtIn: true,
      // Simulated people outlive a restart as their subscriptions do; not beside an in-memory database.
      ...(config.databaseUrl === "sqlite::memory:" ? {} : { stateFile: `${config.dataDir}/sandbox.json` }),
    });
  }

  const eventOutbox = new EventOutbox(db, now);
  const events = new EventSender({
    events: eventOutbox,
    encryptionKey: deps.encryptionKey,
    log: server.log.child({ worker: "events" }),
    maxAgeMs: config.deliveryMaxAgeMs,
    timeoutMs: 10_000,
    concurrency: EVENT_POSTS_AT_ONCE,
    targets: callbackTargets,
    ...(deps.resolveHost ? { resolve: deps.resolveHost } : {}),
    sweepMs: 5000,
    userAgent: `dock-notify/${pkg.version}`,
    now,
  });
  const dispatching = db.leadership(`dispatcher:${telegram.token.split(":")[0]}`);
  const dispatcher = new Dispatcher({
    outbox,
    subscriptions,
    pacer,
    log: server.log.child({ worker: "delivery" }),
    metrics: metrics.delivery,
    maxAgeMs: config.deliveryMaxAgeMs,
    leaseMs: config.deliveryLeaseMs,
    concurrency: config.deliveryConcurrency,
    rate: config.telegramRateLimit,
    windowPerDock: 500,
    sweepMs: 2000,
    copies: (telegram) =>
      grammyCopySender(telegram, {
        timeoutSeconds: config.telegramTimeoutSeconds,
        paidBroadcast: config.telegramPaidBroadcast,
      }),
    // One dispatcher per bot among the instances sharing the database.
    leadership: dispatching,
    // A copy settled for good: its message may have settled, which the sender's callback hears of.
    onSettled: () => events.wake(),
    now,
  });
  const work = (dockIds: string[]) => {
    dispatcher.wake(dockIds);
    // The active dispatcher may be another instance: tell it through the database (a statement
    // per batch saved while this instance leads; one that has just lost the lead is found by the
    // new leader's sweep).
    if (dispatching.isLeader) return;
    db.announce(dockIds).catch((error: unknown) => {
      server.log.warn(
        { err: error },
        "could not notify the active dispatcher; its sweep will find the message",
      );
    });
  };
  messages.onAccepted(work);
  // Edits, deletes and acknowledgements queue work on copies already sent.
  messageChanges.onChanged((dockIds) => {
    work(dockIds);
    // An acknowledgement queued an event, and its reminders are to be deleted from the chats.
    events.wake();
    reminders.wake();
  });
  const retention = new Retention({
    outbox,
    events: eventOutbox,
    loginTokens,
    owners,
    activity,
    audit,
    notices,
    requests: joinRequests,
    retentionMs: config.retentionMs,
    log: server.log.child({ worker: "retention" }),
    now,
    foldIntervalMs: deps.foldIntervalMs,
  });
  const bot = new BotWorker({
    docks,
    subscriptions,
    invites,
    audience,
    loginTokens,
    states: botStates,
    messages: messageChanges,
    owners,
    publicUrl: config.publicUrl,
    log: server.log.child({ worker: "bot" }),
    webhookUrl: config.telegramWebhookUrl,
    webhookCheckMs: config.telegramWebhookCheckMs,
    pacer,
    replyTimeoutMs: config.telegramTimeoutSeconds * 1000,
    ...(deps.botDownWarningEveryMs === undefined ? {} : { downWarningEveryMs: deps.botDownWarningEveryMs }),
    now,
  });
  if (config.telegramWebhookUrl !== null) {
    await server.register(telegramWebhook, {
      secret: webhookSecret(telegram.token),
      handle: (update) => bot.handleUpdate(update),
    });
  }

  const noticeSender = new NoticeSender({
    notices,
    requests: joinRequests,
    pacer,
    log: server.log.child({ worker: "notices" }),
    telegramTimeoutSeconds: config.telegramTimeoutSeconds,
    leaseMs: config.deliveryLeaseMs,
    maxAgeMs: config.deliveryMaxAgeMs,
    sweepMs: 1000,
    now,
  });

  const reminders = new ReminderSender({
    reminders: new ReminderStore(db, now),
    escalations: new Escalations(db, now),
    // A step's message is a send to its Dock like any other (paced, counted, its rate applied),
    // under an idempotency key of its own: taken again after a crash, it is a replay.
    escalate: async (step) => {
      // A control character no HTTP header carries (nor NUL, which PostgreSQL text refuses): no
      // sender's Idempotency-Key can take this one first.
      const key = `\u0001escalation:${step.messageId}:${step.run}:${step.step}`;
      const result = await messages.accept({
        dockId: step.to,
        text: step.text,
        content: step.content,
        idempotencyKey: key,
        requestHash: key,
        watched: step.watched,
      });
      if (result.kind === "accepted" || result.kind === "replayed")
        return { kind: "added", messageId: result.messageId, subscribers: result.subscribers };
      if (result.kind === "refused")
        return { kind: "later", retryAfterSeconds: Math.max(1, result.retryAfterSeconds) };
      return { kind: "failed", reason: `the Dock ${step.to} did not take it (${result.kind})` };
    },
    recordStep: (step, escalatedId, subscribers, note) =>
      messageChanges.recordStep(step, escalatedId, subscribers, note),
    pacer,
    copies: (telegram) =>
      grammyCopySender(telegram, {
        timeoutSeconds: config.telegramTimeoutSeconds,
        paidBroadcast: config.telegramPaidBroadcast,
      }),
    log: server.log.child({ worker: "reminders" }),
    leaseMs: config.deliveryLeaseMs,
    maxAgeMs: config.deliveryMaxAgeMs,
    // Due times are waited for exactly; the sweep finds what other instances queued (a new
    // message's first round is 30 s away at the soonest; a change that rings waits this long).
    sweepMs: 2000,
    // A round, a step or the reminders' end queued an event.
    onEvent: () => events.wake(),
    now,
  });

  const workers: BackgroundWorker[] = [dispatcher, bot, retention, events, noticeSender, reminders];
  let started: BackgroundWorker[] = [];

  return {
    server,
    docks,
    messages,
    metrics,
    telegram,
    subscriptions,
    loginTokens,
    outbox,
    outboxViews,
    pacer,
    botStates,
    botInfo() {
      const username = bot.botUsername() ?? telegram.botUsername;
      return username === null ? null : { username };
    },
    botHealth() {
      return {
        status: bot.status(),
        problem: bot.problem(),
        username: bot.botUsername() ?? telegram.botUsername,
        apiRoot: bot.apiRoot() || telegram.apiRoot,
      };
    },
    sessions,
    owners,
    audience,
    activity,
    coOwners,
    audit,
    live,
    refused,
    async claimLink() {
      if (!(await owners.awaitsClaim())) return null;
      const { token } = await owners.createClaim();
      const payload = `${CLAIM_PAYLOAD_PREFIX}${token}`;
      const username = bot.botUsername() ?? telegram.botUsername;
      return {
        link: username === null ? null : telegramLink(config.publicUrl, username, payload, telegram.sandbox),
        command: `/start ${payload}`,
      };
    },
    payloadThread,
    async start() {
      // Going live: nothing meant for the sandbox's chats reaches a real chat of the same id
      // (store/sandbox-chats.ts), before any worker runs.
      const left = await new SandboxChats(db, { sandbox: chatsOfSandbox, bootedAt, now }).atStart();
      if (left.wentLive || left.subscriptions > 0)
        server.log.info(left, "going live: what was meant for the sandbox's chats will not be sent");
      // The sandbox's people keep no role on its Docks (store/sandbox-docks.ts).
      const retired = await sandboxDocks.retireSandboxRoles();
      if (retired > 0)
        server.log.info({ roles: retired }, "co-owners from the sandbox removed from its Docks");
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

/** A sentence's first letter in capitals. */
function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
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
