/** The console API's answers, as the service sends them (see src/http/console-api.ts). */
export interface Info {
  bot_username: string;
  bot_link: string;
  docs_url: string;
  api_base_url: string;
  sandbox: boolean;
  login_widget: { bot_username: string; auth_url: string } | null;
}

export interface SessionInfo {
  user: { id: number; first_name: string | null; username: string | null };
  expires_at: number;
  csrf_token: string;
}

export interface Dock {
  id: string;
  name: string;
  link: string | null;
  description: string | null;
  secret_key: string;
  subscribers: number;
  created_at: number;
  updated_at: number;
  open_in_telegram: string;
  examples: { ping: string; webhook: string };
}

export type DeliveryState = "queued" | "sending" | "sent" | "failed" | "gone";

export interface MessageReport {
  id: string;
  text: string;
  created_at: number;
  subscribers: number;
  states: Partial<Record<DeliveryState, number>>;
  deliveries: { chat_id: number; state: DeliveryState; last_error: string | null; updated_at: number }[];
}

export interface Subscriber {
  chat_id: number;
  chat_type: string;
  state: "active" | "blocked" | "removed";
  first_name: string | null;
  username: string | null;
  since: number;
}

export interface FieldProblem {
  field: string;
  message: string;
}

/** An error answer of the service, with its stable code and, for forms, the fields at fault. */
export class ServiceError extends Error {
  readonly code: string;
  readonly status: number;
  readonly fields: FieldProblem[];

  constructor(status: number, code: string, message: string, fields: FieldProblem[] = []) {
    super(message);
    this.status = status;
    this.code = code;
    this.fields = fields;
  }
}

let csrfToken: string | null = null;

/** Remembers the session's CSRF token, sent with every call that changes something. */
export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

/** Calls the console API (relative to the page, so the console works under any path prefix). */
export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers["content-type"] = "application/json";
  if (method !== "GET" && csrfToken) headers["x-csrf-token"] = csrfToken;
  let response: Response;
  try {
    response = await fetch(`api${path}`, {
      method,
      headers,
      body: body === undefined ? null : JSON.stringify(body),
      credentials: "same-origin",
    });
  } catch {
    throw new ServiceError(0, "network", "The service cannot be reached. Check your connection.");
  }
  const data = (await response.json().catch(() => null)) as
    | (T & { ok: true })
    | { ok: false; error: { code: string; message: string; fields?: FieldProblem[] } }
    | null;
  if (data === null) throw new ServiceError(response.status, "invalid_answer", "The service sent no answer.");
  if (data.ok === false) {
    throw new ServiceError(response.status, data.error.code, data.error.message, data.error.fields);
  }
  return data;
}
