import { Type } from "typebox";

/**
 * Schemas of a message's options (title, format, priority, tags, buttons), shared by the send API
 * and the console API. Like console/schemas.ts, this module imports nothing but TypeBox: the
 * console in web/ type-checks against it. The limits repeat domain/message-options.ts's, which
 * checks them (a test keeps the two in step).
 */

const URL_DESCRIPTION = "An http, https or tg URL (at most 2048 characters).";

export const buttonSchema = Type.Object({
  text: Type.String({ minLength: 1, maxLength: 64, description: "The button's label.", examples: ["Logs"] }),
  url: Type.String({
    maxLength: 2048,
    description: URL_DESCRIPTION,
    examples: ["https://ci.example.com/42"],
  }),
});

/** The Acknowledge button among the sender's buttons (one at most; shown first). */
export const ackButtonSchema = Type.Object({
  action: Type.Literal("ack"),
  text: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 64,
      description: 'The label (default "Acknowledge").',
      examples: ["I'm on it"],
    }),
  ),
});

const anyButton = Type.Union([buttonSchema, ackButtonSchema]);

/** A length of time: whole seconds, or a string such as "90s", "5m", "1h30m". */
const duration = Type.Union([Type.Integer({ minimum: 0 }), Type.String({ maxLength: 32 })], {
  examples: [300, "5m"],
});

/** The options as a sender may give them in a JSON (or form) body. */
export const messageOptionFields = {
  title: Type.Optional(
    Type.String({
      maxLength: 250,
      description: "A bold line above the text, under the Dock's name. Line breaks become spaces.",
      examples: ["Build 42 failed"],
    }),
  ),
  format: Type.Optional(
    Type.Union(
      [
        Type.Literal("text"),
        Type.Literal("markdown"),
        Type.Literal("html"),
        Type.Literal("telegram_markdownv2"),
      ],
      {
        description:
          "How msg is written: text (shown as written, the default), markdown (CommonMark with GitHub's strikethrough and autolinks), html (Telegram's HTML subset) or telegram_markdownv2. markdown never fails; html and telegram_markdownv2 are checked on arrival (400 naming msg).",
        examples: ["markdown"],
      },
    ),
  ),
  markdown: Type.Optional(
    Type.Boolean({
      description: "true: format markdown (ntfy's name for it); `format` wins when both are given.",
      examples: [true],
    }),
  ),
  priority: Type.Optional(
    Type.Union(
      [
        Type.Union([
          Type.Literal("min"),
          Type.Literal("low"),
          Type.Literal("default"),
          Type.Literal("high"),
          Type.Literal("urgent"),
        ]),
        Type.Integer({ minimum: 1, maximum: 5 }),
      ],
      {
        description:
          "min (1) and low (2) arrive silently; high (4) is marked ❗ and urgent (5, also max) 🚨 before the Dock's name.",
        examples: ["high"],
      },
    ),
  ),
  silent: Type.Optional(
    Type.Boolean({
      description: "true: no sound on arrival; false: a sound even for min and low. Wins over priority.",
      examples: [true],
    }),
  ),
  tags: Type.Optional(
    Type.Union([Type.Array(Type.String({ maxLength: 64 }), { maxItems: 10 }), Type.String()], {
      description:
        "Emoji short codes (warning → ⚠️, white_check_mark → ✅) shown before the title; other tags shown as #hashtags at the end. An array or a comma-separated string; at most 10 of at most 64 characters.",
      examples: [["warning", "ci"]],
    }),
  ),
  buttons: Type.Optional(
    Type.Union(
      [
        Type.Array(Type.Array(anyButton, { maxItems: 3 }), { maxItems: 3 }),
        Type.Array(anyButton),
        Type.String(),
      ],
      {
        description:
          'URL buttons under the message: up to 3 rows of 3, or a flat list (laid out in rows of 3), or ntfy\'s action syntax as a string (`view, Logs, https://…; ack, I\'m on it`). One `{"action": "ack"}` adds the Acknowledge button (as `ack` does).',
        examples: [[[{ text: "Logs", url: "https://ci.example.com/42" }]]],
      },
    ),
  ),
  click: Type.Optional(
    Type.String({
      description: `Shorthand for one "Open" button. ${URL_DESCRIPTION}`,
      examples: ["https://ci.example.com/42"],
    }),
  ),
  link_preview: Type.Optional(
    Type.Boolean({ description: "Show a preview of the first link (default false).", examples: [true] }),
  ),
  protect_content: Type.Optional(
    Type.Boolean({
      description: "Telegram keeps the message from being forwarded or saved.",
      examples: [true],
    }),
  ),
  ack: Type.Optional(
    Type.Union(
      [
        Type.Boolean(),
        Type.Object(
          { remind_every: Type.Optional(duration), remind_for: Type.Optional(duration) },
          { additionalProperties: false },
        ),
      ],
      {
        description:
          'true: an Acknowledge button. The first person to press it is shown on every copy (✔ Acknowledged by Ann at 14:05 UTC), the button goes, later presses are told who was first, and the Dock\'s callback URL gets message.acknowledged. {"remind_every": "5m", "remind_for": "1h"}: the button, and until someone presses it a reminder with sound in every chat every remind_every (30 s at least), for remind_for (24 h at most; 1 h if not given).',
        examples: [true, { remind_every: "5m", remind_for: "1h" }],
      },
    ),
  ),
  remind_every: Type.Optional(
    Type.Union([duration], { description: "As ack's remind_every (and it implies ack).", examples: ["5m"] }),
  ),
  remind_for: Type.Optional(
    Type.Union([duration], { description: "As ack's remind_for.", examples: ["1h"] }),
  ),
  escalate: Type.Optional(
    Type.Union(
      [
        Type.Array(
          Type.Object(
            {
              after: Type.Union([Type.Integer({ minimum: 0 }), Type.String({ maxLength: 32 })], {
                description: 'Seconds after the message (or a string such as "10m"), 30 s to 24 h.',
                examples: ["10m"],
              }),
              to: Type.String({
                description: "The Dock to deliver to.",
                examples: ["6v0C41amJuTn1Cf8bQIOtQ"],
              }),
            },
            { additionalProperties: false },
          ),
          { maxItems: 5 },
        ),
        Type.String({ maxLength: 400 }),
      ],
      {
        description:
          "While nobody acknowledges it: after each step's time, a copy goes to that Dock's subscribers, saying where it came from, with the same buttons; an acknowledgement anywhere ends it everywhere. The sender's owner must be an owner or editor of each Dock named (403 escalation_forbidden). Adds the Acknowledge button.",
        examples: [[{ after: "10m", to: "6v0C41amJuTn1Cf8bQIOtQ" }]],
      },
    ),
  ),
};

/** A formatting span of Telegram's (offsets and lengths in UTF-16 code units). */
export const entitySchema = Type.Object({
  type: Type.String(),
  offset: Type.Integer(),
  length: Type.Integer(),
  url: Type.Optional(Type.String()),
  language: Type.Optional(Type.String()),
});

/** The options as stored and answered: normalised (priority a word, buttons rows, defaults left out). */
export const storedOptionsSchema = Type.Object(
  {
    format: Type.Optional(Type.String({ examples: ["markdown"] })),
    title: Type.Optional(Type.String({ examples: ["Build 42 failed"] })),
    priority: Type.Optional(Type.String({ examples: ["high"] })),
    silent: Type.Optional(Type.Boolean({ examples: [true] })),
    tags: Type.Optional(Type.Array(Type.String(), { examples: [["warning", "ci"]] })),
    buttons: Type.Optional(Type.Array(Type.Array(buttonSchema))),
    click: Type.Optional(Type.String({ examples: ["https://ci.example.com/42"] })),
    link_preview: Type.Optional(Type.Boolean({ examples: [true] })),
    protect_content: Type.Optional(Type.Boolean({ examples: [true] })),
    ack: Type.Optional(Type.Boolean({ examples: [true] })),
    ack_label: Type.Optional(
      Type.String({ description: "The Acknowledge button's label.", examples: ["I'm on it"] }),
    ),
    remind_every: Type.Optional(
      Type.Integer({ description: "Seconds between reminders while unacknowledged.", examples: [300] }),
    ),
    remind_for: Type.Optional(
      Type.Integer({ description: "Seconds after the message that reminders stop.", examples: [3600] }),
    ),
    escalate: Type.Optional(
      Type.Array(
        Type.Object({
          after: Type.Integer({ description: "Seconds after the message.", examples: [600] }),
          to: Type.String({ description: "The Dock escalated to.", examples: ["6v0C41amJuTn1Cf8bQIOtQ"] }),
        }),
        { description: "The escalation's steps." },
      ),
    ),
  },
  { description: "The message's options as accepted; those left at their defaults are omitted." },
);

/** A message's copies counted by where their latest edit and their deletion stand (send API and console). */
export const changeCountsSchema = Type.Object(
  {
    edits: Type.Object({
      pending: Type.Integer({ description: "Edits not made yet.", examples: [0] }),
      edited: Type.Integer({ description: "Copies Telegram edited.", examples: [2] }),
      unchanged: Type.Integer({ description: "Copies that already showed the new version.", examples: [0] }),
      resent: Type.Integer({
        description: "Copies that could not be edited, so were sent anew.",
        examples: [0],
      }),
      failed: Type.Integer({ description: "Edits Telegram refused.", examples: [0] }),
      gone: Type.Integer({
        description: "The chat left (or blocked the bot) before its copy was edited.",
        examples: [0],
      }),
    }),
    deletes: Type.Object({
      pending: Type.Integer({ description: "Deletions not made yet.", examples: [0] }),
      deleted: Type.Integer({ description: "Copies deleted.", examples: [0] }),
      already_deleted: Type.Integer({ description: "Copies the person had deleted.", examples: [0] }),
      not_deleted: Type.Integer({
        description: "Copies Telegram would not delete (bots may delete only messages under 48 hours old).",
        examples: [0],
      }),
      gone: Type.Integer({
        description: "The chat blocked the bot before its copy was deleted.",
        examples: [0],
      }),
    }),
  },
  { description: "The copies counted by where their latest edit and their deletion stand." },
);
