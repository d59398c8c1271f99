import { Counter, collectDefaultMetrics, Registry } from "prom-client";

/** The service's Prometheus metrics, one registry per app so several apps can share a process. */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "dock_notify_process_" });
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
    requestsRejected: new Counter({
      name: "dock_notify_requests_rejected_total",
      help: "Requests answered with an error, by error code.",
      labelNames: ["code"] as const,
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
