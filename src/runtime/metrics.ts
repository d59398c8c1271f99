import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/** The service's Prometheus metrics, one registry per app so several apps can share a process. */
export function createMetrics() {
  const registry = new Registry();
  // prom-client's names (process_cpu_seconds_total, nodejs_eventloop_lag_seconds …) under ours.
  collectDefaultMetrics({ register: registry, prefix: "dock_notify_" });
  return {
    registry,
    messagesAccepted: new Counter({
      name: "dock_notify_messages_accepted_total",
      help: "Messages accepted (202) by the send API, by endpoint.",
      labelNames: ["endpoint"] as const,
      registers: [registry],
    }),
    deliveriesQueued: new Counter({
      name: "dock_notify_deliveries_queued_total",
      help: "Deliveries queued for subscribers by accepted messages.",
      registers: [registry],
    }),
    delivery: {
      outcomes: new Counter({
        name: "dock_notify_deliveries_total",
        help: "Delivery attempts by outcome (sent, retried, failed, gone; edited, deleted for changes to copies) and reason.",
        labelNames: ["outcome", "reason"] as const,
        registers: [registry],
      }),
      telegramLatency: new Histogram({
        name: "dock_notify_telegram_send_seconds",
        help: "Latency of Telegram calls that send, edit or delete a copy.",
        buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 2.5, 5, 10],
        registers: [registry],
      }),
      acceptToSend: new Histogram({
        name: "dock_notify_accept_to_send_seconds",
        help: "Time from a message's 202 to its delivery to one subscriber.",
        buckets: [0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 60, 300, 3600],
        registers: [registry],
      }),
      tooManyRequests: new Counter({
        name: "dock_notify_telegram_429_total",
        help: "429 Too Many Requests answers received from Telegram.",
        registers: [registry],
      }),
    },
    requestsRejected: new Counter({
      name: "dock_notify_requests_rejected_total",
      help: "Requests answered with an error, by error code.",
      labelNames: ["code"] as const,
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

export type DeliveryMetrics = Metrics["delivery"];

/** Queue depth and the age of the oldest queued delivery, read from the database at scrape time. */
export function registerBacklogGauges(
  metrics: Metrics,
  backlog: () => Promise<{ queued: number; oldestCreatedAt: number | null }>,
  now: () => number = Date.now,
): void {
  let last: Promise<{ queued: number; oldestCreatedAt: number | null }> | null = null;
  // One query serves both gauges of a scrape.
  const read = () => {
    last ??= backlog().finally(() => setImmediate(() => (last = null)));
    return last;
  };
  type Backlog = { queued: number; oldestCreatedAt: number | null };
  // Read from the database: while it cannot be reached these two read NaN (unknown; not a stale or
  // a zero value, nor a failed scrape), and dock_notify_database_up says why.
  const backlogGauge = (name: string, help: string, value: (backlog: Backlog) => number) =>
    new Gauge({
      name,
      help,
      registers: [metrics.registry],
      async collect() {
        this.set(await read().then(value, () => Number.NaN));
      },
    });
  backlogGauge(
    "dock_notify_queue_depth",
    "Deliveries queued or in flight; a message not yet fanned out counts once per subscriber it was accepted for.",
    (backlog) => backlog.queued,
  );
  backlogGauge(
    "dock_notify_queue_oldest_seconds",
    "Age of the oldest delivery still queued or in flight (0 when none).",
    ({ oldestCreatedAt }) => (oldestCreatedAt === null ? 0 : (now() - oldestCreatedAt) / 1000),
  );
  new Gauge({
    name: "dock_notify_database_up",
    help: "1 when this scrape could read the queue from the database, 0 when it could not.",
    registers: [metrics.registry],
    async collect() {
      this.set(
        await read().then(
          () => 1,
          () => 0,
        ),
      );
    },
  });
}

/**
 * 1/0 gauges of the parts that recover by themselves, read at scrape time: whether the bot is
 * running (polling, or its webhook registered), whether Telegram answers the dispatcher, whether
 * the database takes writes (a full disk or a read-only database reads 0 while `database_up` reads 1).
 */
/** The bytes of not-yet-authenticated bodies held now (see http/body-budget.ts), read at each scrape. */
export function registerHeldBodiesGauge(metrics: Metrics, held: () => number): void {
  new Gauge({
    name: "dock_notify_unauthenticated_body_bytes",
    help: "Bytes of request bodies held before their sender is authenticated (GitHub's signed deliveries); at UNAUTHENTICATED_BODIES_MAX_BYTES more are answered 503.",
    registers: [metrics.registry],
    collect() {
      this.set(held());
    },
  });
}

export function registerStateGauges(
  metrics: Metrics,
  states: { botUp: () => boolean; telegramUp: () => boolean; databaseWritable: () => Promise<boolean> },
): void {
  const gauge = (name: string, help: string, read: () => boolean | Promise<boolean>) =>
    new Gauge({
      name,
      help,
      registers: [metrics.registry],
      async collect() {
        this.set((await read()) ? 1 : 0);
      },
    });
  gauge(
    "dock_notify_bot_up",
    "1 while the bot runs (polling, or its webhook registered and checked); 0 while it starts or reconnects.",
    states.botUp,
  );
  gauge(
    "dock_notify_telegram_up",
    "1 while Telegram answers the dispatcher's sends; 0 while it fails them (deliveries wait, a probe retries).",
    states.telegramUp,
  );
  gauge(
    "dock_notify_database_writable",
    "1 when this scrape could write to the database; 0 when it refused (a full disk, read-only) or could not be reached.",
    states.databaseWritable,
  );
}
