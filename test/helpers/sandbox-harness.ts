import Fastify from "fastify";
import { Api } from "grammy";
import { type SandboxOptions, sandbox } from "../../src/sandbox/plugin.ts";
import { SANDBOX_BOT_TOKEN } from "../../src/telegram/sandbox-bot.ts";

/** A sandbox listening on a real port, with a grammY Api and a control API client pointed at it. */
export interface RunningSandbox {
  /** `http://127.0.0.1:<port>/sandbox`: the apiRoot for grammY, and the chat page. */
  root: string;
  api: Api;
  /** Calls the control API; answers the status and the parsed body. */
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the API answered.
  control: <T = any>(method: string, path: string, body?: unknown) => Promise<{ status: number; body: T }>;
  /** Raw Bot API call (any HTTP form), answering Telegram's envelope as parsed JSON. */
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the API answered.
  raw: (method: string, init?: RequestInit & { query?: string }) => Promise<{ status: number; body: any }>;
  /** Creates a person and returns their id. */
  person: (firstName?: string) => Promise<number>;
  /** Creates a person who has opened the bot (so the bot may write to them); returns their id. */
  startedPerson: (firstName?: string) => Promise<number>;
  close: () => Promise<void>;
}

/**
 * A fault point of a test: called with each Bot API answer (its method, lower case, and its body)
 * once the sandbox has done what was asked and before the answer leaves; the answer waits for it.
 * Killing the service here is a crash between "Telegram acted" and "the service recorded it".
 */
export type BeforeAnswer = (method: string, body: unknown) => void | Promise<void>;

/** A sandbox on its own port (`port`: a chosen one, e.g. for a service started before it). */
export async function startSandbox(
  options: Partial<SandboxOptions> & { port?: number; beforeAnswer?: BeforeAnswer } = {},
): Promise<RunningSandbox> {
  const { port: listenPort = 0, beforeAnswer, ...sandboxOptions } = options;
  const token = sandboxOptions.token ?? SANDBOX_BOT_TOKEN;
  const server = Fastify();
  if (beforeAnswer) {
    server.addHook("onSend", async (request, _reply, payload) => {
      const method = /\/bot[^/]+\/([A-Za-z]+)/.exec(request.url)?.[1];
      if (method !== undefined && typeof payload === "string") {
        await beforeAnswer(method.toLowerCase(), JSON.parse(payload));
      }
      return payload;
    });
  }
  await server.register(sandbox, {
    prefix: "/sandbox",
    rateLimits: false,
    historyLimit: 1000,
    ...sandboxOptions,
  });
  await server.listen({ port: listenPort, host: "127.0.0.1" });
  const address = server.server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const root = `http://127.0.0.1:${port}/sandbox`;

  const control: RunningSandbox["control"] = async (method, path, body) => {
    const response = await fetch(`${root}/api${path}`, {
      method,
      ...(body === undefined
        ? {}
        : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text === "" ? null : JSON.parse(text) };
  };
  const raw: RunningSandbox["raw"] = async (method, init = {}) => {
    const { query, ...rest } = init;
    const response = await fetch(`${root}/bot${token}/${method}${query ? `?${query}` : ""}`, rest);
    return { status: response.status, body: await response.json() };
  };
  let people = 0;
  const person = async (firstName = `Person ${++people}`) => {
    const { status, body } = await control("POST", "/users", { first_name: firstName });
    if (status !== 201) throw new Error(`creating a person failed: ${JSON.stringify(body)}`);
    return body.id as number;
  };
  const startedPerson = async (firstName?: string) => {
    const id = await person(firstName);
    await control("POST", `/users/${id}/start`);
    return id;
  };

  return {
    root,
    api: new Api(token, { apiRoot: root }),
    control,
    raw,
    person,
    startedPerson,
    close: () => server.close(),
  };
}
