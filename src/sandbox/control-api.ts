import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyReply } from "fastify";
import { Type } from "typebox";
import { ApiError, type ErrorCode } from "../http/errors.ts";
import { SANDBOX_BOT_TOKEN } from "../telegram/sandbox-bot.ts";
import { type BotStatus, type Emulator, historyView, type SandboxEvent } from "./emulator.ts";
import { FaultSpecError } from "./faults.ts";
import { SEND_LIMITS } from "./limits.ts";
import {
  ActionError,
  deleteMessage,
  type MemberStatus,
  openStartLink,
  pressInlineButton,
  pressKeyboardButton,
  renameGroup,
  sendText,
  setBlocked,
  setBotStatus,
  setMemberStatus,
  upgradeGroup,
} from "./people.ts";

export interface ControlApiOptions {
  emulator: Emulator;
  /** Aborted when the server closes: event streams end. */
  closing: AbortSignal;
}

/** The catalogue's codes (src/http/errors.ts) for the statuses the control API answers with. */
const CODES: Record<number, ErrorCode> = {
  400: "invalid_request",
  403: "sandbox_not_allowed",
  404: "not_found",
  409: "sandbox_conflict",
  413: "payload_too_large",
  415: "unsupported_media_type",
};

/** A control API error body: the same shape as the service's own errors. */
function errorBody(status: number, message: string) {
  return { ok: false, error: { code: CODES[status] ?? "internal_error", message } };
}

const Id = Type.String({ pattern: "^-?[0-9]{1,16}$" });
const IdParams = Type.Object({ id: Id });
const MessageParams = Type.Object({ id: Id, messageId: Type.String({ pattern: "^[0-9]{1,10}$" }) });
const MemberParams = Type.Object({ id: Id, userId: Type.String({ pattern: "^[0-9]{1,16}$" }) });
const UserId = Type.Integer({ minimum: 1, maximum: 2 ** 52 });

const NewUser = Type.Object({
  id: Type.Optional(UserId),
  first_name: Type.String({ minLength: 1, maxLength: 64 }),
  last_name: Type.Optional(Type.String({ maxLength: 64 })),
  username: Type.Optional(Type.String({ pattern: "^[A-Za-z][A-Za-z0-9_]{4,31}$" })),
  language_code: Type.Optional(Type.String({ pattern: "^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$" })),
});

const NewCrowd = Type.Object({
  count: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
  first_name: Type.Optional(Type.String({ minLength: 1, maxLength: 50 })),
});

const NewGroup = Type.Object({
  id: Type.Optional(Type.Integer({ maximum: -1, minimum: -(2 ** 52) })),
  title: Type.String({ minLength: 1, maxLength: 128 }),
  type: Type.Optional(Type.Union([Type.Literal("group"), Type.Literal("supergroup")])),
  members: Type.Array(UserId, { minItems: 1, maxItems: 1000 }),
  admins: Type.Optional(Type.Array(UserId, { maxItems: 1000 })),
  creator_id: Type.Optional(UserId),
});

const From = Type.Optional(UserId);

/** The most a message may be backdated at once: ten years, far beyond any window Telegram has. */
const MAX_BACKDATE_SECONDS = 10 * 366 * 24 * 60 * 60;

/** Turns an id path parameter into a number (path parameters always arrive as strings). */
const num = (raw: string) => Number(raw);

/**
 * The sandbox's own JSON API under `/sandbox/api/`: create people and groups, act as them, read
 * chats, watch events, arm faults and switch limits. Tests and the chat page use it; every route
 * is documented in docs/sandbox.md.
 */
export async function controlApi(app: FastifyInstance, options: ControlApiOptions): Promise<void> {
  const { emulator, closing } = options;
  const server = app.withTypeProvider<TypeBoxTypeProvider>();

  app.setErrorHandler((error: Error & { statusCode?: number; validation?: unknown }, request, reply) => {
    // The service's request guard (a foreign Host, a cross-site request): its answer, in its format.
    if (error instanceof ApiError) return reply.code(error.status).headers(error.headers).send(error.body);
    if (error instanceof ActionError)
      return reply.code(error.status).send(errorBody(error.status, error.message));
    if (error instanceof FaultSpecError) return reply.code(400).send(errorBody(400, error.message));
    if (error.validation) return reply.code(400).send(errorBody(400, error.message));
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) return reply.code(status).send(errorBody(status, error.message));
    request.log.error({ err: error }, "sandbox control API failed");
    return reply.code(500).send(errorBody(500, "the sandbox failed; see the service log"));
  });
  app.setNotFoundHandler((_request, reply) =>
    reply.code(404).send(errorBody(404, "no such sandbox API route; see docs/sandbox.md")),
  );

  /** Refuses to add `count` people beyond SANDBOX_MAX_PEOPLE (or chats beyond twice that). */
  const roomFor = (count: number) => {
    if (emulator.users.size + count > emulator.maxPeople)
      throw new ActionError(
        409,
        `the sandbox holds at most ${emulator.maxPeople} people (SANDBOX_MAX_PEOPLE)`,
      );
    if (emulator.chats.size + count > 2 * emulator.maxPeople)
      throw new ActionError(
        409,
        `the sandbox holds at most ${2 * emulator.maxPeople} chats (SANDBOX_MAX_PEOPLE × 2)`,
      );
  };
  const user = (id: number) => {
    const found = emulator.users.get(id);
    if (found === undefined) throw new ActionError(404, `no person with id ${id}`);
    return found;
  };
  const chat = (id: number) => {
    const found = emulator.chats.get(id);
    if (found === undefined) throw new ActionError(404, `no chat with id ${id}`);
    return found;
  };

  server.get("/bot", async () => ({
    ...emulator.bot,
    token: SANDBOX_BOT_TOKEN,
  }));

  server.get("/users", async () => [...emulator.users.values()]);

  server.post("/users", { schema: { body: NewUser } }, async (request, reply) => {
    const body = request.body;
    if (body.id !== undefined && emulator.users.has(body.id))
      throw new ActionError(409, `person ${body.id} exists`);
    if (body.id !== undefined && emulator.chats.has(body.id))
      throw new ActionError(409, `id ${body.id} is taken`);
    roomFor(1);
    return reply.code(201).send(emulator.addUser(body));
  });

  // Many people at once for a load test (Emulator.addCrowd): the answer is their ids, in order.
  server.post("/users/crowd", { schema: { body: NewCrowd } }, async (request, reply) => {
    const { count, first_name } = request.body;
    roomFor(count);
    return reply.code(201).send({ ids: emulator.addCrowd(count, first_name ?? "Reader") });
  });

  server.get("/users/:id", { schema: { params: IdParams } }, async (request) => user(num(request.params.id)));

  server.post("/users/:id/start", { schema: { params: IdParams } }, async (request, reply) => {
    // The body is optional here (a plain start has no payload), so it is checked by hand.
    const payload = (request.body as { payload?: unknown } | undefined)?.payload;
    if (payload !== undefined && typeof payload !== "string")
      throw new ActionError(400, "payload must be a string");
    return reply.code(201).send(openStartLink(emulator, num(request.params.id), payload));
  });

  for (const [action, blocked] of [
    ["block", true],
    ["unblock", false],
  ] as const) {
    server.post(`/users/:id/${action}`, { schema: { params: IdParams } }, async (request) =>
      emulator.chatView(setBlocked(emulator, num(request.params.id), blocked)),
    );
  }

  server.get("/chats", async () => [...emulator.chats.values()].map((c) => emulator.chatView(c)));

  server.post("/groups", { schema: { body: NewGroup } }, async (request, reply) => {
    const body = request.body;
    const members = [...new Set(body.members)];
    for (const id of members) user(id);
    const admins = [...new Set(body.admins ?? [])];
    const creatorId = body.creator_id ?? admins[0] ?? (members[0] as number);
    if (!admins.every((id) => members.includes(id)) || !members.includes(creatorId)) {
      throw new ActionError(400, "admins and creator_id must be members");
    }
    if (body.id !== undefined && emulator.chats.has(body.id))
      throw new ActionError(409, `chat ${body.id} exists`);
    if (emulator.chats.size >= 2 * emulator.maxPeople)
      throw new ActionError(
        409,
        `the sandbox holds at most ${2 * emulator.maxPeople} chats (SANDBOX_MAX_PEOPLE × 2)`,
      );
    const group = emulator.addGroup({
      title: body.title,
      type: body.type ?? "group",
      members,
      admins,
      creatorId,
      ...(body.id !== undefined ? { id: body.id } : {}),
    });
    return reply.code(201).send(emulator.chatView(group));
  });

  server.get("/chats/:id", { schema: { params: IdParams } }, async (request) =>
    emulator.chatView(chat(num(request.params.id))),
  );

  server.get(
    "/chats/:id/messages",
    {
      schema: {
        params: IdParams,
        querystring: Type.Object({ limit: Type.Optional(Type.String({ pattern: "^[0-9]{1,6}$" })) }),
      },
    },
    async (request) => {
      const messages = chat(num(request.params.id)).messages.map(historyView);
      const limit = request.query.limit === undefined ? messages.length : Number(request.query.limit);
      return messages.slice(Math.max(0, messages.length - limit));
    },
  );

  server.post(
    "/chats/:id/messages",
    {
      schema: {
        params: IdParams,
        body: Type.Object({
          from: From,
          text: Type.String(),
          reply_to_message_id: Type.Optional(Type.Integer()),
        }),
      },
    },
    async (request, reply) => {
      const { from, text, reply_to_message_id } = request.body;
      const message = sendText(emulator, num(request.params.id), {
        text,
        ...(from !== undefined ? { from } : {}),
        ...(reply_to_message_id !== undefined ? { replyTo: reply_to_message_id } : {}),
      });
      return reply.code(201).send(message);
    },
  );

  server.post(
    "/chats/:id/messages/:messageId/press",
    {
      schema: {
        params: MessageParams,
        body: Type.Object({
          from: From,
          callback_data: Type.Optional(Type.String()),
          row: Type.Optional(Type.Integer({ minimum: 0 })),
          column: Type.Optional(Type.Integer({ minimum: 0 })),
        }),
      },
    },
    async (request) => {
      const { from, callback_data, row, column } = request.body;
      if (callback_data === undefined && (row === undefined || column === undefined)) {
        throw new ActionError(400, "give callback_data, or row and column, of the button to press");
      }
      return pressInlineButton(emulator, num(request.params.id), num(request.params.messageId), {
        ...(from !== undefined ? { from } : {}),
        ...(callback_data !== undefined ? { callbackData: callback_data } : { row, column }),
      });
    },
  );

  server.delete(
    "/chats/:id/messages/:messageId",
    { schema: { params: MessageParams } },
    async (request, reply) => {
      // The body is optional (a private chat's person needs no `from`), so it is checked by hand.
      const from = (request.body as { from?: unknown } | undefined)?.from;
      if (from !== undefined && (!Number.isSafeInteger(from) || (from as number) < 1)) {
        throw new ActionError(400, "from must be a person's id");
      }
      deleteMessage(
        emulator,
        num(request.params.id),
        num(request.params.messageId),
        from as number | undefined,
      );
      return reply.code(204).send();
    },
  );

  // A testing aid: the message is dated `seconds` earlier, as if sent then, so a test can reach
  // Telegram's time windows (deleteMessage's 48 hours) without waiting for them.
  server.post(
    "/chats/:id/messages/:messageId/backdate",
    {
      schema: {
        params: MessageParams,
        body: Type.Object({ seconds: Type.Integer({ minimum: 1, maximum: MAX_BACKDATE_SECONDS }) }),
      },
    },
    async (request) => {
      const found = chat(num(request.params.id));
      const messageId = num(request.params.messageId);
      const stored = emulator.findMessage(found, messageId);
      if (stored === undefined) throw new ActionError(404, `no message ${messageId} in chat ${found.id}`);
      const date = stored.message.date - request.body.seconds;
      if (date < 0) throw new ActionError(400, "the message would be dated before 1970");
      stored.message.date = date;
      emulator.changed();
      return historyView(stored);
    },
  );

  server.post(
    "/chats/:id/keyboard",
    { schema: { params: IdParams, body: Type.Object({ from: From, text: Type.String() }) } },
    async (request, reply) => {
      const { from, text } = request.body;
      const message = pressKeyboardButton(emulator, num(request.params.id), {
        text,
        ...(from !== undefined ? { from } : {}),
      });
      return reply.code(201).send(message);
    },
  );

  server.post(
    "/chats/:id/bot",
    {
      schema: {
        params: IdParams,
        body: Type.Object({
          from: From,
          status: Type.Union(["member", "administrator", "left", "kicked"].map((s) => Type.Literal(s))),
        }),
      },
    },
    async (request) =>
      emulator.chatView(
        setBotStatus(emulator, num(request.params.id), request.body.status as BotStatus, request.body.from),
      ),
  );

  // The group's creator promotes, demotes, adds or removes a person (see setMemberStatus).
  server.put(
    "/chats/:id/members/:userId",
    {
      schema: {
        params: MemberParams,
        body: Type.Object({
          status: Type.Union(["member", "administrator", "left"].map((s) => Type.Literal(s))),
        }),
      },
    },
    async (request) =>
      emulator.chatView(
        setMemberStatus(
          emulator,
          num(request.params.id),
          num(request.params.userId),
          request.body.status as MemberStatus,
        ),
      ),
  );

  server.post(
    "/chats/:id/title",
    {
      schema: {
        params: IdParams,
        body: Type.Object({ from: From, title: Type.String({ minLength: 1, maxLength: 128 }) }),
      },
    },
    async (request, reply) => {
      const { from, title } = request.body;
      return reply.code(201).send(renameGroup(emulator, num(request.params.id), title, from));
    },
  );

  server.post(
    "/chats/:id/upgrade",
    { schema: { params: IdParams, body: Type.Object({ from: From }) } },
    async (request, reply) =>
      reply
        .code(201)
        .send(emulator.chatView(upgradeGroup(emulator, num(request.params.id), request.body.from))),
  );

  server.get(
    "/callback-queries/:id",
    { schema: { params: Type.Object({ id: Type.String() }) } },
    async (request) => {
      const record = emulator.callbackQueries.get(request.params.id);
      if (record === undefined) throw new ActionError(404, "no such callback query");
      return {
        id: record.id,
        chat_id: record.chatId,
        data: record.data,
        answered: record.answer !== undefined,
        answer: record.answer ?? null,
      };
    },
  );

  server.get("/events", async (request, reply) => {
    reply.hijack();
    reply.raw.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    });
    reply.raw.write(": connected\n\n");
    const onEvent = (event: SandboxEvent) => {
      reply.raw.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    };
    // A comment every 15 s keeps proxies from closing an idle stream.
    const heartbeat = setInterval(() => reply.raw.write(": ping\n\n"), 15_000);
    const end = () => {
      clearInterval(heartbeat);
      emulator.events.off("event", onEvent);
      closing.removeEventListener("abort", end);
      reply.raw.end();
    };
    emulator.events.on("event", onEvent);
    closing.addEventListener("abort", end);
    request.raw.once("close", end);
  });

  server.get("/stats", async () => emulator.stats);
  server.delete("/stats", async () => {
    return emulator.resetStats();
  });

  server.get("/faults", async () => emulator.faults.list());
  server.post("/faults", async (request, reply) => reply.code(201).send(emulator.faults.add(request.body)));
  server.delete("/faults", async () => {
    emulator.faults.clear();
    return [];
  });

  const limits = () => ({
    rate_limits: emulator.limiter.enabled,
    latency_ms: emulator.latencyMs,
    ...SEND_LIMITS,
  });
  server.get("/limits", async () => limits());
  server.put(
    "/limits",
    {
      schema: {
        body: Type.Object({
          rate_limits: Type.Optional(Type.Boolean()),
          latency_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000 })),
        }),
      },
    },
    async (request) => {
      const { rate_limits, latency_ms } = request.body;
      if (rate_limits !== undefined) emulator.limiter.enabled = rate_limits;
      if (latency_ms !== undefined) emulator.latencyMs = latency_ms;
      return limits();
    },
  );

  server.post("/reset", async (_request, reply: FastifyReply) => {
    emulator.reset();
    return reply.code(204).send();
  });
}
