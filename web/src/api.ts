import type { OkAnswer } from "../../src/http/console/schemas.ts";
import type { ErrorBody, FieldProblem } from "../../src/http/errors.ts";

/*
 * The console API's answers, typed by the service's own schemas (src/http/console/schemas.ts)
 * and error catalogue (src/http/errors.ts). Type-only imports: nothing of the server, and no
 * TypeBox, ends up in the browser's bundle.
 */
export type {
  ActivityAnswer,
  AuditAnswer,
  AuditEntryView,
  BanListAnswer,
  BanView,
  ConsoleRole,
  CoOwnerInviteAnswer,
  CoOwnerInviteView,
  CoOwnersAnswer,
  CoOwnerView,
  CopyChange,
  Credential,
  CredentialAnswer,
  CredentialListAnswer,
  DeliveryLine,
  DeliveryState,
  Dock,
  DockAction,
  DockAnswer,
  DockEvent,
  DockListAnswer,
  DockPart,
  DockRole,
  DockSummary,
  InfoAnswer,
  InviteAnswer,
  InviteLinkAnswer,
  InviteLinkListAnswer,
  InviteLinkView,
  JoinRequestAnswer,
  JoinRequestListAnswer,
  JoinRequestView,
  MessageDeletedAnswer,
  MessageDetailAnswer,
  MessageEditedAnswer,
  MessageListAnswer,
  MessageReport,
  OkAnswer,
  OwnersAnswer,
  OwnerView,
  RefusedAnswer,
  RefusedRequestView,
  SandboxDocksAnswer,
  SandboxDockView,
  SessionAnswer,
  SignInCancelAnswer,
  SignInCheckAnswer,
  SignInFinishAnswer,
  SignInStartAnswer,
  SignInState,
  Subscriber,
  SubscriberListAnswer,
  TelegramAccount,
  TestMessageAnswer,
  Visibility,
} from "../../src/http/console/schemas.ts";
export type { FieldProblem };

/** An error answer of the service, with its stable code and, for forms, the fields at fault. */
export class ServiceError extends Error {
  readonly code: string;
  readonly status: number;
  readonly fields: FieldProblem[];
  /** What the error body carries beside `error` (e.g. `bot` with `bot_token_refused`). */
  readonly context: Record<string, unknown>;

  constructor(
    status: number,
    code: string,
    message: string,
    fields: FieldProblem[] = [],
    context: Record<string, unknown> = {},
  ) {
    super(message);
    this.status = status;
    this.code = code;
    this.fields = fields;
    this.context = context;
  }
}

let csrfToken: string | null = null;

/** Remembers the session's CSRF token, sent with every call that changes something. */
export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

/**
 * Calls the console API (relative to the page, so the console works under any path prefix). `T`:
 * the route's answer, from the service's schemas.
 */
export async function api<T extends OkAnswer = OkAnswer>(
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
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
  const data = (await response.json().catch(() => null)) as T | ErrorBody | null;
  if (data === null) throw new ServiceError(response.status, "invalid_answer", "The service sent no answer.");
  if (data.ok === false) {
    const { ok: _ok, error, ...context } = data;
    throw new ServiceError(response.status, error.code, error.message, error.fields, context);
  }
  return data;
}
