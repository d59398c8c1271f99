import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** Receivers listen on this machine: a network the operator must allow for callbacks. */
export const RECEIVERS_HERE = { CALLBACK_ALLOWED_NETWORKS: "127.0.0.1/32" };

/** A callback receiver: records each POST (body, headers), answers with `status()` (500 while failing). */
export async function receiver(): Promise<{
  url: string;
  posts: { body: string; headers: Record<string, string | string[] | undefined> }[];
  status: { code: number; open: number; mostOpen: number };
  close(): Promise<void>;
}> {
  const posts: { body: string; headers: Record<string, string | string[] | undefined> }[] = [];
  const status = { code: 200, open: 0, mostOpen: 0 };
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      posts.push({ body: Buffer.concat(chunks).toString("utf8"), headers: request.headers });
      // Code 0: a receiver that hangs (the request stays open until the sender gives up).
      if (status.code === 0) {
        status.mostOpen = Math.max(status.mostOpen, ++status.open);
        response.on("close", () => status.open--);
        return;
      }
      response.writeHead(status.code).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/dock-events`,
    posts,
    status,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
