import { Agent, request } from "node:http";

export interface OpenLoopResult {
  sent: number;
  ok: number;
  failed: number;
  p50: number;
  p99: number;
  max: number;
  achievedRate: number;
}

/**
 * A constant-rate ("open loop") load: requests start on a fixed schedule whether or not earlier
 * ones have finished, and each latency is measured from its scheduled start, so a stall shows up
 * in the percentiles instead of silently slowing the load (coordinated omission). autocannon's
 * rate mode sends each second's quota in a burst at the start of the second, which measures the
 * burst, not the steady state we want here.
 */
export async function openLoop(options: {
  url: string;
  body: string;
  /** Sent with every request (content-type JSON unless given). */
  headers?: Record<string, string>;
  rate: number;
  seconds: number;
  connections?: number;
}): Promise<OpenLoopResult> {
  const target = new URL(options.url);
  const agent = new Agent({ keepAlive: true, maxSockets: options.connections ?? 64 });
  const total = Math.round(options.rate * options.seconds);
  const latencies: number[] = [];
  let ok = 0;
  let failed = 0;
  const start = performance.now();
  const inflight: Promise<void>[] = [];

  const send = (due: number) =>
    new Promise<void>((resolve) => {
      // A timer may fire a little early; never count time before the request was really sent.
      const scheduled = Math.min(due, performance.now());
      const req = request(
        {
          agent,
          host: target.hostname,
          port: target.port,
          path: target.pathname + target.search,
          method: "POST",
          headers: {
            "content-type": "application/json",
            ...options.headers,
            "content-length": Buffer.byteLength(options.body),
          },
        },
        (res) => {
          res.resume();
          res.on("end", () => {
            latencies.push(performance.now() - scheduled);
            if (res.statusCode && res.statusCode < 300) ok++;
            else failed++;
            resolve();
          });
        },
      );
      req.on("error", () => {
        failed++;
        resolve();
      });
      req.end(options.body);
    });

  for (let i = 0; i < total; i++) {
    const scheduled = start + (i * 1000) / options.rate;
    const wait = scheduled - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    inflight.push(send(scheduled));
  }
  await Promise.all(inflight);
  const elapsed = (performance.now() - start) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    Math.round((latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0) * 10) / 10;
  return {
    sent: total,
    ok,
    failed,
    p50: at(0.5),
    p99: at(0.99),
    max: at(1),
    achievedRate: Math.round(total / elapsed),
  };
}
