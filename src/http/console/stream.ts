import { PassThrough } from "node:stream";
import type { FastifyInstance } from "fastify";
import { sha256Hex } from "../../domain/secrets.ts";
import { quietly } from "../../runtime/log.ts";
import type { SessionRepository } from "../../store/sessions.ts";
import { requireSession } from "../session.ts";
import type { LiveHub } from "./live.ts";

export interface StreamOptions {
  hub: LiveHub;
  sessions: SessionRepository;
}

/**
 * `GET /console/api/stream`: the console's live updates as Server-Sent Events (see LiveHub for
 * what is said and when). Signed in by the session cookie like every console route (a GET: no CSRF
 * token). Its request line is logged at debug, as is a browser closing it: an open console is not
 * a log line a minute.
 */
export async function stream(app: FastifyInstance, options: StreamOptions): Promise<void> {
  // The service is stopping: the streams end now, or closing the server would wait for them.
  app.addHook("preClose", async () => options.hub.close());

  app.get("/stream", { exposeHeadRoute: false, onRequest: quietly }, async (request, reply) => {
    let gone = false;
    let open: { close(): void } | null = null;
    // The browser closed the tab (or the connection broke): everything of the stream is let go.
    // Listened for before the first await: a browser that leaves while the session is looked up
    // must not leave a stream open that nothing would ever close (it would count against the
    // session's limit until the session ends).
    reply.raw.on("close", () => {
      gone = true;
      open?.close();
    });
    const signedIn = await requireSession(request, options.sessions);
    if (gone || request.raw.destroyed) return reply.code(204).send();
    const body = new PassThrough();
    open = await options.hub.open(signedIn.user.id, sha256Hex(signedIn.token), {
      write: (chunk) => body.write(chunk),
      end: () => body.end(),
      unread: () => body.writableLength + reply.raw.writableLength,
      // Its browser does not read (the connection open, the window frozen): ending politely would
      // wait for it as well.
      abort: () => reply.raw.destroy(),
    });
    if (gone) open.close();
    return (
      reply
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-store")
        // nginx and the like would hold the events back in their buffers.
        .header("x-accel-buffering", "no")
        .send(body)
    );
  });
}
