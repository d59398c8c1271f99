import { markdownParser, markdownToEntities } from "../domain/markdown.ts";
import { type Button, MAX_URL, type Priority, priorityNamed } from "../domain/message-options.ts";
import { isButtonUrl } from "../domain/telegram-format.ts";
import {
  buttonRows,
  type Conversion,
  clip,
  ENTITY_BUDGET,
  type InboundFormat,
  isRecord,
  linkButton,
  PayloadError,
  TEXT_BUDGET,
  textOf,
} from "./inbound.ts";
import { jsonSample, shellQuote } from "./settings.ts";

/*
 * ntfy's "publish as JSON" body (`POST /` with `{topic, message, title, …}`), so a script or tool
 * written for ntfy works by changing its URL. The topic is ntfy's address; here the Dock is, so it
 * is not shown. What has no counterpart in a Telegram message is ignored: icon, delay (messages go
 * out at once), email and call; actions other than "view" (http, broadcast, copy) cannot run from a
 * Telegram button and are left out.
 */

function priorityOf(value: unknown): Priority | undefined {
  if (value === undefined || value === null) return undefined;
  // ntfy's numbers (its JSON) and words (its headers), `max` among them.
  const priority = typeof value === "number" || typeof value === "string" ? priorityNamed(value) : undefined;
  if (priority === undefined)
    throw new PayloadError("priority must be 1 to 5 (or min, low, default, high, urgent)");
  return priority === "default" ? undefined : priority;
}

function optionalString(body: Record<string, unknown>, name: string): string {
  const value = body[name];
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") throw new PayloadError(`${name} must be a string`);
  return textOf(value);
}

/** Tags as ntfy takes them: an array of strings (or one comma-separated string); at most 10 kept. */
function tagsOf(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  const list = typeof value === "string" ? value.split(",") : value;
  if (!Array.isArray(list) || !list.every((tag) => typeof tag === "string"))
    throw new PayloadError("tags must be an array of strings");
  // Only as far as the ten kept: clipping a megabyte of tags held the event loop 100 ms.
  const tags: string[] = [];
  for (const tag of list) {
    const kept = clip(textOf(tag), 64, true);
    if (kept !== "") tags.push(kept);
    if (tags.length === 10) break;
  }
  return tags;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it removes.
const CONTROL = /[\u0000-\u001f\u007f]/g;

/** The `view` actions as URL buttons; the others cannot run from Telegram and are left out. */
function viewButtons(value: unknown): (Button | undefined)[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new PayloadError("actions must be an array");
  const invalid = value.findIndex((action) => !isRecord(action));
  if (invalid >= 0) throw new PayloadError(`actions[${invalid}] must be an object`);
  // Only as far as the buttons a message can hold (buttonRows keeps nine).
  const buttons: (Button | undefined)[] = [];
  for (const action of value as Record<string, unknown>[]) {
    if (typeof action.action !== "string" || action.action.trim().toLowerCase() !== "view") continue;
    const label = typeof action.label === "string" ? textOf(action.label).replace(CONTROL, " ").trim() : "";
    const button = linkButton(label === "" ? "Open" : label, action.url);
    if (button !== undefined) buttons.push(button);
    if (buttons.length === 9) break;
  }
  return buttons;
}

/**
 * Markdown cut until Telegram takes it in one message: at most TEXT_BUDGET units, and its
 * entities within ENTITY_BUDGET (whole lines are dropped from the end until they are).
 */
async function fittedMarkdown(source: string): Promise<string> {
  let lines = clip(source, TEXT_BUDGET).split("\n");
  const md = await markdownParser();
  while (lines.length > 1 && markdownToEntities(md, lines.join("\n")).entities.length > ENTITY_BUDGET)
    lines = lines.slice(0, Math.min(lines.length - 1, Math.ceil(lines.length * 0.8)));
  const fitted = lines.join("\n").trim();
  return markdownToEntities(md, fitted).entities.length > ENTITY_BUDGET ? "" : fitted;
}

/** ntfy's JSON publishing body. */
export const ntfy: InboundFormat = {
  name: "ntfy",
  label: "ntfy (JSON publishing)",
  detect({ body }) {
    return isRecord(body) && typeof body.topic === "string" && typeof body.message === "string";
  },
  async convert({ body }): Promise<Conversion> {
    if (!isRecord(body)) throw new PayloadError("the body must be a JSON object");
    const title = clip(optionalString(body, "title"), 250, true);
    const attach = optionalString(body, "attach").trim();
    const filename = clip(optionalString(body, "filename"), 40, true).replace(CONTROL, "");
    let message = optionalString(body, "message");
    // As ntfy does: a message without text says what it is.
    if (message.trim() === "")
      message = attach === "" ? "triggered" : `You received a file: ${filename || "attachment"}`;
    if (body.markdown !== undefined && body.markdown !== null && typeof body.markdown !== "boolean")
      throw new PayloadError("markdown must be true or false");
    const markdown = body.markdown === true;
    let msg = markdown ? await fittedMarkdown(message) : clip(message, TEXT_BUDGET);
    const format = markdown && msg !== "" ? "markdown" : undefined;
    if (msg === "") msg = clip(message, TEXT_BUDGET);
    const priority = priorityOf(body.priority);
    const tags = tagsOf(body.tags);
    const click = optionalString(body, "click").trim();
    const buttons = buttonRows([
      ...viewButtons(body.actions),
      linkButton(filename === "" ? "Attachment" : `Attachment: ${filename}`, attach),
    ]);
    return {
      kind: "notify",
      notification: {
        msg: textOf(msg),
        options: {
          ...(format === undefined ? {} : { format }),
          ...(title === "" ? {} : { title: textOf(title) }),
          ...(priority === undefined ? {} : { priority }),
          ...(tags.length === 0 ? {} : { tags }),
          ...(click.length <= MAX_URL && isButtonUrl(click) ? { click } : {}),
          ...(buttons === undefined ? {} : { buttons }),
        },
      },
    };
  },
  authentication: "hook-url",
  settings: ({ hook }) => ({
    tool: "ntfy clients and scripts",
    where: "Where a script publishes to an ntfy topic URL: the hook URL takes the same body and headers",
    text: [
      `curl -H 'Title: Backup' -H 'Tags: white_check_mark' -d 'Backup finished' ${shellQuote(hook)}`,
      "",
      "# ntfy's JSON publishing:",
      `curl -d ${shellQuote(JSON.stringify({ topic: "backups", message: "Backup finished", priority: 4 }))} ${shellQuote(`${hook}/ntfy`)}`,
    ].join("\n"),
    usesHookUrl: true,
  }),
  // Trimmed from test/fixtures/integrations/ntfy/publish.json.
  sample: jsonSample({
    topic: "mytopic",
    message: "Disk space is low at 5.1 GB",
    title: "Low disk space alert",
    tags: ["warning", "cd"],
    priority: 4,
    click: "https://homecamera.lan/xasds1h2xsSsa/",
    actions: [{ action: "view", label: "Admin panel", url: "https://filesrv.lan/admin" }],
  }),
};
