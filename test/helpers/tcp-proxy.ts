import { once } from "node:events";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { Transform } from "node:stream";

/**
 * A TCP proxy a test controls, between the service and a real server (PostgreSQL), to play a
 * server that stops answering without refusing or closing anything.
 */
export interface TcpProxy {
  /** `127.0.0.1:<port>`: put it where the server's host and port go. */
  port: number;
  /**
   * Frozen: connections stay open and nothing comes back; bytes sent either way are held, and new
   * connections are accepted (as a SYN would be by the kernel) and hear nothing. `restore()`
   * delivers what was held, as TCP does when a partition heals or a frozen host (a VM paused, a
   * stalled disk) wakes: a statement the service gave up on may still reach the server then.
   */
  silence(): void;
  /**
   * Black-holed: the same while it lasts, but what went into the hole is lost: `restore()` resets
   * every connection that lived through it instead of delivering its bytes (a host gone without a
   * word and back after a reboot, an address moved to another server by a failover).
   */
  blackHole(): void;
  /**
   * Freezes as silence() does the moment the client sends a chunk `at` picks (given the chunk and
   * its connection's number), once: `before` the chunk reaches the server (it is held with the
   * rest), or `after` it does (its answer is held). Resolves when it froze.
   */
  silenceAt(at: (chunk: Buffer, connection: number) => "before" | "after" | undefined): Promise<void>;
  /** Bytes flow again (see silence and blackHole for the connections that lived through it). */
  restore(): void;
  /** Resets every connection (a failover, a proxy restart); new ones go through. */
  cut(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  type Pair = { client: Socket; gate: Transform; upstream: Socket };
  const pairs = new Set<Pair>();
  /** Connections one side closed while frozen. */
  const closing = new Set<Pair>();
  let state: "open" | "frozen" | "hole" = "open";
  const held: Socket[] = [];
  let connections = 0;
  let trigger: { at: Parameters<TcpProxy["silenceAt"]>[0]; froze: () => void } | null = null;
  /** A chunk stopped by silenceAt's `before`, for its server on restore. */
  const late: { upstream: Socket; chunk: Buffer }[] = [];

  const join = (client: Socket) => {
    const upstream = createConnection(target);
    const number = ++connections;
    // Client to server through a gate that can stop the service's next message. (The client, pg,
    // waits for each answer before it sends more, so nothing is queued in the gate to be overtaken.)
    const gate = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        const at = trigger?.at(chunk, number);
        if (trigger === null || at === undefined) return done(null, chunk);
        const { froze } = trigger;
        trigger = null;
        stop("frozen");
        if (at === "after") upstream.write(chunk);
        else late.push({ upstream, chunk });
        done();
        froze();
      },
    });
    const pair = { client, gate, upstream };
    pairs.add(pair);
    client.pipe(gate).pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      // A frozen network carries no FIN or RST either: the other side hears of it on restore.
      if (state === "frozen") closing.add(pair);
      else finish(pair);
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  };

  const finish = (pair: Pair) => {
    pairs.delete(pair);
    closing.delete(pair);
    pair.client.destroy();
    pair.gate.destroy();
    pair.upstream.destroy();
  };

  const server: Server = createServer((client) => {
    // While frozen or black-holed, a new connection is accepted (as a SYN would be by the kernel) and
    // then hears nothing.
    if (state !== "open") {
      client.pause();
      client.on("error", () => client.destroy());
      held.push(client);
    } else join(client);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;

  const cut = () => {
    for (const { client, gate, upstream } of pairs) {
      client.resetAndDestroy();
      gate.destroy();
      upstream.destroy();
    }
    pairs.clear();
    closing.clear();
    late.splice(0);
    for (const client of held.splice(0)) client.resetAndDestroy();
  };

  function stop(next: "frozen" | "hole") {
    state = next;
    for (const { client, gate, upstream } of pairs) {
      client.unpipe(gate);
      gate.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  }

  return {
    port,
    silence: () => stop("frozen"),
    blackHole: () => stop("hole"),
    silenceAt: (at) => new Promise((froze) => (trigger = { at, froze })),
    restore() {
      trigger = null;
      if (state === "open") return;
      const lost = state === "hole";
      state = "open";
      if (lost) {
        cut();
        return;
      }
      for (const { upstream, chunk } of late.splice(0)) if (!upstream.destroyed) upstream.write(chunk);
      for (const pair of pairs) {
        if (closing.has(pair)) {
          // What was sent before the close arrives, then the close.
          pair.upstream.end(() => finish(pair));
          pair.client.end(() => finish(pair));
          continue;
        }
        pair.client.pipe(pair.gate).pipe(pair.upstream);
        pair.upstream.pipe(pair.client);
      }
      for (const client of held.splice(0)) {
        if (client.destroyed) continue;
        join(client);
        client.resume();
      }
    },
    cut,
    async close() {
      cut();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
