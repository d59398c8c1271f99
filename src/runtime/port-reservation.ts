import { createServer, type Server } from "node:http";

/** A port held for the service until its own server takes it over. */
export interface PortReservation {
  /** The port held (the one the system chose, for PORT=0). */
  port: number;
  /** Lets the port go, for the service's server to listen on it at once. */
  release(): Promise<void>;
}

/** What a request gets while the service starts (its database opens, its migrations run). */
const STARTING = JSON.stringify({
  ok: false,
  error: { code: "not_ready", message: "Dock Notify is starting; try again in a moment." },
});

/**
 * Listens on HOST:PORT first thing in `serve`, before the database, the encryption key or anything
 * else is written to DATA_DIR: a start that cannot listen (the port taken, an address not on this
 * machine) fails having changed nothing, and a new DATA_DIR is not even created. While the service
 * starts, requests are answered 503 `not_ready` (a load balancer waits; a person is told why)
 * instead of being refused. Rejects with the listen error.
 */
export async function reservePort(host: string, port: number): Promise<PortReservation> {
  const server: Server = createServer((_request, response) => {
    response.writeHead(503, {
      "content-type": "application/json; charset=utf-8",
      "retry-after": "1",
      connection: "close",
    });
    response.end(STARTING);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port, host, exclusive: true }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  return {
    port: typeof address === "object" && address !== null ? address.port : port,
    release: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // A client that kept its connection open after a 503 must not hold the handover up.
        server.closeAllConnections();
      }),
  };
}
