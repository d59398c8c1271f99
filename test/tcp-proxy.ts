import { once } from "node:events";
import { createConnection, createServer, type Server, type Socket } from "node:net";

/**
 * A TCP proxy a test controls, between the service and a real server (PostgreSQL): `silence()`
 * makes the server seem to stop answering (bytes are held, nothing is refused or closed, as with a
 * network that drops packets or a frozen host); `cut()` resets every connection (a failover, a
 * proxy restart); `restore()` lets bytes flow again.
 */
export interface TcpProxy {
  /** `127.0.0.1:<port>`: put it where the server's host and port go. */
  port: number;
  silence(): void;
  restore(): void;
  cut(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  let silent = false;
  const held: Socket[] = [];

  const join = (client: Socket) => {
    const upstream = createConnection(target);
    const pair = { client, upstream };
    pairs.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  };

  const server: Server = createServer((client) => {
    // While silent, a new connection is accepted (as a SYN would be by the kernel) and then hears nothing.
    if (silent) {
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
    for (const { client, upstream } of pairs) {
      client.resetAndDestroy();
      upstream.destroy();
    }
    pairs.clear();
    for (const client of held.splice(0)) client.resetAndDestroy();
  };

  return {
    port,
    silence() {
      silent = true;
      for (const { client, upstream } of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    restore() {
      silent = false;
      for (const { client, upstream } of pairs) {
        client.pipe(upstream);
        upstream.pipe(client);
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
