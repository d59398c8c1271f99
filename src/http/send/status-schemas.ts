import { Type } from "typebox";
import { EXAMPLE } from "../api-examples.ts";
import { errorAnswer } from "../errors.ts";
import { changeCountsSchema, messageOptionFields, storedOptionsSchema } from "../message-schemas.ts";
import {
  databaseDown,
  dateTime,
  MAX_MESSAGE_KEY,
  noSuchMessage,
  sendErrors,
  throttled,
  unauthorized,
} from "./schemas.ts";

/*
 * The messages' routes' schemas (http/send/messages.ts): a message's status, its edit and its
 * deletion, as http/send/schemas.ts describes the sends.
 */

/** A message's ID in a path. */
export const messageIdParams = Type.Object({
  message_id: Type.String({
    description: "The `message_id` its send answered.",
    examples: [EXAMPLE.messageId],
  }),
});

/** GET /messages/… answers. */
const sendOnly = errorAnswer(
  "A send credential: editing, deleting and reading messages takes the secret key or a manage credential.",
  "insufficient_scope",
);

export const statusErrors = {
  401: unauthorized,
  403: sendOnly,
  404: noSuchMessage,
  429: throttled,
  503: databaseDown,
};

/** PATCH /messages/<id> answers. */
export const editErrors = {
  400: sendErrors[400],
  401: unauthorized,
  403: errorAnswer(
    "A send credential (editing takes the secret key or a manage credential), or the escalation names a Dock whose owner or editor this Dock's owner is not.",
    "insufficient_scope",
    "escalation_forbidden",
  ),
  404: noSuchMessage,
  409: errorAnswer("The message was deleted: it can no longer be changed.", "message_deleted"),
  413: sendErrors[413],
  415: sendErrors[415],
  429: throttled,
  503: databaseDown,
};

/** DELETE /messages/<id> answers. */
export const deleteErrors = statusErrors;

const deliveryState = Type.Union(
  [Type.Literal("queued"), Type.Literal("sent"), Type.Literal("failed"), Type.Literal("gone")],
  {
    description:
      "queued (or being sent), sent, failed (Telegram refused it, or it kept failing until MAX_DELIVERY_AGE), gone (the chat left or blocked the bot).",
    examples: ["sent"],
  },
);

const lastError = (description: string) =>
  Type.Union([Type.String(), Type.Null()], { description, examples: [null] });

const copyChange = Type.Union([
  Type.Null(),
  Type.Object({
    state: Type.Union(
      [Type.Literal("queued"), Type.Literal("done"), Type.Literal("failed"), Type.Literal("gone")],
      {
        description:
          "queued (or under way), done, failed (Telegram refused), gone (the chat left, or it was cancelled).",
        examples: ["done"],
      },
    ),
    outcome: Type.Union([Type.String(), Type.Null()], {
      description:
        "Once done — an edit: edited, unchanged (Telegram already showed it), resent (the copy could no longer be edited, e.g. the person deleted it, so it was sent anew); a delete: deleted, already_deleted (the person had), not_deleted (Telegram refused, see last_error: bots may delete only messages under 48 hours old).",
      examples: ["edited"],
    }),
    last_error: lastError("Telegram's answer when it refused."),
    updated_at: dateTime(),
  }),
]);

const count = (description: string, example: number) => Type.Integer({ description, examples: [example] });

export const messageStatus = Type.Object({
  ok: Type.Literal(true),
  message: Type.Object({
    id: Type.String({
      description: "The message's ID, as its send answered.",
      examples: [EXAMPLE.messageId],
    }),
    key: Type.Union([Type.String(), Type.Null()], {
      description: "The sender's key for the message, if it gave one.",
      examples: [EXAMPLE.key],
    }),
    revision: Type.Integer({
      description: "1 as sent; each edit, replacement by key and acknowledgement adds one.",
      examples: [1],
    }),
    revised_at: Type.Union([Type.String({ format: "date-time" }), Type.Null()], {
      description: "When it was last edited, replaced or acknowledged; null until then.",
      examples: [null],
    }),
    deleted_at: Type.Union([Type.String({ format: "date-time" }), Type.Null()], {
      description: "When the sender deleted it; null while it is not.",
      examples: [null],
    }),
    acknowledged: Type.Union(
      [
        Type.Null(),
        Type.Object({
          by: Type.Object({
            id: Type.Number({ description: "Telegram user id.", examples: [EXAMPLE.chatId] }),
            name: Type.String({ description: "Their name in Telegram.", examples: ["Ann Lee"] }),
          }),
          at: dateTime(),
        }),
      ],
      { description: "Who pressed Acknowledge first, and when; null: nobody (yet)." },
    ),
    options: storedOptionsSchema,
    state: Type.Union(
      [
        Type.Literal("pending"),
        Type.Literal("delivered"),
        Type.Literal("partially_delivered"),
        Type.Literal("undelivered"),
        Type.Literal("no_subscribers"),
      ],
      {
        description:
          "no_subscribers when nobody was subscribed; pending while any delivery is queued; then delivered, partially_delivered or undelivered.",
        examples: ["delivered"],
      },
    ),
    created_at: dateTime("When it was accepted."),
    subscribers: count("Subscribers it was queued for.", 3),
    counts: Type.Object(
      {
        queued: count("Copies not sent yet (or being sent).", 0),
        sent: count("Copies Telegram took.", 2),
        failed: count("Copies Telegram refused, or that kept failing.", 0),
        gone: count("Chats that left or blocked the bot first.", 1),
      },
      { description: "The copies by delivery state." },
    ),
    changes: changeCountsSchema,
    deliveries: Type.Array(
      Type.Object({
        chat_id: Type.Number({ description: "Telegram chat of the subscriber.", examples: [EXAMPLE.chatId] }),
        state: deliveryState,
        attempts: count("Tries so far (a 429's wait is not one).", 1),
        last_error: lastError("Telegram's answer, or the network's error, on the last failed try."),
        telegram_message_ids: Type.Array(Type.Integer(), {
          description: "The copy's messages in the chat (a long text is split into several).",
          examples: [[EXAMPLE.telegramMessageId]],
        }),
        updated_at: dateTime(),
        revision: Type.Union([Type.Integer(), Type.Null()], {
          description: "The revision this copy shows.",
          examples: [1],
        }),
        unknown_attempts: count(
          "Tries whose outcome was never recorded (the service stopped between Telegram's answer and its record): the copy was sent again, and the chat may also show a copy from each of these tries that the service does not know of.",
          0,
        ),
        stray_telegram_message_ids: Type.Array(Type.Integer(), {
          description:
            "Copies from such tries that Telegram has named since (someone pressed their button): the copy's next edit or delete removes them.",
          examples: [[]],
        }),
        edit: copyChange,
        delete: copyChange,
      }),
      { description: "One copy per subscriber." },
    ),
    events: Type.Array(
      Type.Object({
        type: Type.String({ description: "The event.", examples: ["message.delivered"] }),
        state: Type.String({ description: "queued, sending, sent, failed", examples: ["sent"] }),
        attempts: count("Tries so far.", 1),
        last_error: lastError("The callback URL's answer on the last failed try."),
        updated_at: dateTime(),
      }),
      { description: "What the Dock's callback URL was sent (or is being sent) about this message." },
    ),
    reminders: Type.Union(
      [
        Type.Null(),
        Type.Object({
          every: Type.Union([Type.Integer(), Type.Null()], {
            description: "Seconds between rounds, as asked (null once the message no longer asks).",
            examples: [300],
          }),
          for: Type.Union([Type.Integer(), Type.Null()], {
            description: "Seconds after the message (or its replacement) that they stop.",
            examples: [3600],
          }),
          rounds: count("Rounds of reminders so far: each sent one reminder to every copy not snoozed.", 2),
          next_at: Type.Union([Type.String({ format: "date-time" }), Type.Null()], {
            description: "When the next round is due; null once they ended (or only their end is due).",
            examples: ["2026-11-24T14:10:00.120Z"],
          }),
          until: Type.Union([Type.String({ format: "date-time" }), Type.Null()], {
            description: "When they stop if nobody acknowledges.",
            examples: ["2026-11-24T15:00:00.120Z"],
          }),
          ended: Type.Union(
            [
              Type.Null(),
              Type.Literal("acknowledged"),
              Type.Literal("resolved"),
              Type.Literal("deleted"),
              Type.Literal("expired"),
            ],
            {
              description:
                "Why they stopped: acknowledged, resolved (replaced with final, or no longer asking for ack), deleted, or expired (remind_for passed; the sender got message.unacknowledged). null while they go on.",
              examples: [null],
            },
          ),
          reminders: Type.Record(Type.String(), Type.Integer(), {
            description:
              "Reminders by state: sent, queued, failed (Telegram refused), gone (not needed any more).",
            examples: [{ sent: 4 }],
          }),
          snoozes: Type.Array(
            Type.Object({
              chat_id: Type.Number({ description: "The chat silenced.", examples: [EXAMPLE.chatId] }),
              by: Type.Object({
                id: Type.Number({ description: "Telegram user id.", examples: [EXAMPLE.chatId] }),
                name: Type.String({ description: "Their name in Telegram.", examples: ["Ann Lee"] }),
              }),
              until: dateTime(),
              at: dateTime(),
              active: Type.Boolean({
                description: "Still silencing that chat's reminders.",
                examples: [true],
              }),
            }),
            { description: "Who snoozed the reminders, in which chat, until when." },
          ),
        }),
      ],
      { description: "Reminders until acknowledged (ack's remind_every); null when it asked for none." },
    ),
    escalation: Type.Union(
      [
        Type.Null(),
        Type.Object({
          steps: Type.Array(
            Type.Object({
              after: Type.Integer({ description: "Seconds after the message.", examples: [600] }),
              to: Type.String({ description: "The Dock.", examples: [EXAMPLE.dockId] }),
            }),
            { description: "The steps asked for." },
          ),
          step: count("Steps taken so far.", 1),
          next_at: Type.Union([Type.String({ format: "date-time" }), Type.Null()], {
            description: "When the next step is due; null when none is (all taken, or acknowledged).",
            examples: [null],
          }),
          escalated: Type.Array(
            Type.Object({
              step: count("The step (1 for the first).", 1),
              dock_id: Type.String({ description: "The Dock it went to.", examples: [EXAMPLE.dockId] }),
              message_id: Type.String({
                description: "The message it added there.",
                examples: [EXAMPLE.messageId],
              }),
              at: dateTime(),
            }),
            { description: "The messages its steps added, one per step that added one." },
          ),
          from: Type.Union(
            [
              Type.Null(),
              Type.Object({
                message_id: Type.String({
                  description: "The message escalated.",
                  examples: [EXAMPLE.messageId],
                }),
                step: count("Which of its steps added this one.", 1),
              }),
            ],
            { description: "This message was added by another's escalation: which, and at which step." },
          ),
        }),
      ],
      { description: "The escalation (escalate); null when it has none and was added by none." },
    ),
  }),
});

/** PATCH /messages/<id>'s answer. */
export const edited = Type.Object(
  {
    ok: Type.Literal(true),
    message_id: Type.String({ description: "The message edited.", examples: [EXAMPLE.messageId] }),
    revision: Type.Integer({ description: "The message's revision now.", examples: [2] }),
    edits: Type.Integer({ description: "Copies sent (or being sent) that will be edited.", examples: [2] }),
    queued: Type.Integer({ description: "Copies not sent yet: they go out in the new form.", examples: [1] }),
  },
  { description: "The edit is stored; the copies are being edited." },
);

/** DELETE /messages/<id>'s answer. */
export const deleted = Type.Object(
  {
    ok: Type.Literal(true),
    message_id: Type.String({ description: "The message deleted.", examples: [EXAMPLE.messageId] }),
    deleting: Type.Integer({
      description: "Copies sent that will be deleted (those in flight follow).",
      examples: [2],
    }),
    cancelled: Type.Integer({ description: "Copies and edits still queued: not sent.", examples: [1] }),
    already_deleted: Type.Boolean({
      description: "true: it was deleted before; nothing more was done.",
      examples: [false],
    }),
  },
  { description: "The deletion is stored; the copies are being deleted." },
);

/** GET /messages?key=…'s query. */
export const keyQuery = Type.Object({
  key: Type.String({
    minLength: 1,
    maxLength: MAX_MESSAGE_KEY,
    description: "The key the message was sent (or last replaced) with.",
    examples: [EXAMPLE.key],
  }),
});

export const patchBody = Type.Object(
  {
    msg: Type.Optional(
      Type.String({
        description: "The new text (kept when left out). With Content-Type text/plain the raw body is it.",
        examples: ["Deploy of api finished ✅"],
      }),
    ),
    ...Object.fromEntries(
      Object.entries(messageOptionFields).map(([name, schema]) => [
        name,
        Type.Optional(
          Type.Union([schema, Type.Null()], {
            description: `${(schema as { description?: string }).description ?? ""} null: back to the default.`,
          }),
        ),
      ]),
    ),
  },
  { examples: [{ msg: "Deploy of api finished ✅", priority: null }] },
);

/** What the validator checks of a PATCH (the options were taken out, as for the sends). */
export const checkedPatchBody = Type.Object({ msg: Type.Optional(Type.String()) });
