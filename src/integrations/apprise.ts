import type { Priority } from "../domain/message-options.ts";
import {
  type Conversion,
  clip,
  type Inbound,
  type InboundFormat,
  isRecord,
  PayloadError,
  TEXT_BUDGET,
  textOf,
} from "./inbound.ts";
import { appriseUrl, jsonSample, shellQuote } from "./settings.ts";
import { checkXmlShape, type XmlLimits } from "./xml-shape.ts";

/*
 * Apprise's generic notifications (Apprise 1.x): json:// posts `{version, title, message, type,
 * attachments}`, form:// the same fields form-encoded, xml:// a SOAP envelope holding
 * `<Notification>` with Version, Subject, MessageType and Message. Apprise does not say whether the
 * message is Markdown, so it is shown as text; attachments come inline (base64) and cannot be
 * shown, so they are named. The type becomes an emoji and a priority: warning and failure are both
 * high — Apprise has no level above failure, and a failed job is not an outage that must page
 * someone (urgent stays for senders that ask for it).
 */

const TYPES: Record<string, { tags?: string[]; priority?: Priority }> = {
  info: {},
  success: { tags: ["white_check_mark"] },
  warning: { tags: ["warning"], priority: "high" },
  failure: { tags: ["x"], priority: "high" },
};

/** The fields of one notification, wherever they came from. */
interface Fields {
  title: string;
  message: string;
  type: string;
  /** File names of the first attachments ("" for one without a name): the line names five at most. */
  attachments: string[];
  /** How many attachments there are in all. */
  attachmentCount: number;
}

/** Attachments whose names are read (the rest are counted): a megabyte of them read whole took 40 ms. */
const NAMES_READ = 100;

function fromObject(body: Record<string, unknown>): Fields {
  if (body.message !== undefined && typeof body.message !== "string")
    throw new PayloadError("message must be a string");
  const list: unknown[] = Array.isArray(body.attachments) ? body.attachments : [];
  return {
    title: textOf(body.title),
    message: textOf(body.message),
    type: textOf(body.type),
    attachments: namesOf(list, "filename"),
    attachmentCount: list.length,
  };
}

/** The file names (the field `name`) of the first NAMES_READ attachments. */
function namesOf(list: unknown[], name: string): string[] {
  return list
    .slice(0, NAMES_READ)
    .map((attachment) => (isRecord(attachment) ? textOf(attachment[name]) : ""));
}

/** The first `Notification` element, however deep in the envelope (namespace prefixes removed). */
function findNotification(node: unknown, depth = 0): Record<string, unknown> | undefined {
  if (!isRecord(node) || depth > 8) return undefined;
  if (isRecord(node.Notification)) return node.Notification;
  for (const child of Object.values(node)) {
    const found = findNotification(child, depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * What an xml:// body may hold: Apprise's envelope is about ten elements, four attributes and five
 * levels, and two elements and two attributes more per attachment. Within these the parser's work
 * is a few milliseconds; the text (a message, an attachment's base64) may take the whole body.
 */
export const APPRISE_XML_LIMITS: XmlLimits = {
  elements: 1000,
  attributes: 1000,
  depth: 32,
  references: 10_000,
};

async function fromXml(xml: string): Promise<Fields> {
  // Apprise never sends a DOCTYPE; refusing one keeps entity definitions out altogether.
  if (/<!DOCTYPE/i.test(xml)) throw new PayloadError("XML with a DOCTYPE is not accepted");
  checkXmlShape(xml, APPRISE_XML_LIMITS);
  const { XMLParser, XMLValidator } = await import("fast-xml-parser");
  if (XMLValidator.validate(xml) !== true) throw new PayloadError("the body is not well-formed XML");
  let document: unknown;
  try {
    document = new XMLParser({
      removeNSPrefix: true,
      ignoreAttributes: false,
      attributeNamePrefix: "@",
      parseTagValue: false,
      parseAttributeValue: false,
    }).parse(xml);
  } catch {
    throw new PayloadError("the body is not well-formed XML");
  }
  const notification = findNotification(document);
  if (notification === undefined) throw new PayloadError("the XML has no Notification element");
  const attachments = isRecord(notification.Attachments) ? notification.Attachments.Attachment : undefined;
  const list = attachments === undefined ? [] : Array.isArray(attachments) ? attachments : [attachments];
  return {
    title: textOf(notification.Subject),
    message: textOf(notification.Message),
    type: textOf(notification.MessageType),
    attachments: namesOf(list, "@filename"),
    attachmentCount: list.length,
  };
}

function isXml(inbound: Inbound): boolean {
  return inbound.body === undefined && /<(?:[\w-]+:)?Notification[\s>]/.test(inbound.text);
}

/** "📎 Not shown: report.pdf, 1 more attachment": the first five names, and how many more. */
function attachmentLine(names: string[], count: number): string {
  const named = names.filter((name) => name.trim() !== "").map((name) => clip(name, 60, true));
  const parts = [...named.slice(0, 5)];
  const rest = count - parts.length;
  if (rest > 0) parts.push(`${rest} ${parts.length > 0 ? "more " : ""}attachment${rest === 1 ? "" : "s"}`);
  return `📎 Not shown: ${parts.join(", ")}`;
}

/** Apprise's json://, form:// and xml:// notifications. */
export const apprise: InboundFormat = {
  name: "apprise",
  label: "Apprise",
  detect(inbound) {
    const { body } = inbound;
    if (isRecord(body))
      return (
        typeof body.version === "string" &&
        typeof body.message === "string" &&
        typeof body.type === "string" &&
        Object.hasOwn(TYPES, body.type)
      );
    return isXml(inbound);
  },
  async convert(inbound): Promise<Conversion> {
    let fields: Fields;
    if (isRecord(inbound.body)) fields = fromObject(inbound.body);
    else if (inbound.body === undefined && inbound.text.trimStart().startsWith("<"))
      fields = await fromXml(inbound.text);
    else throw new PayloadError("the body must be a JSON object, form fields or Apprise's XML");
    const type = fields.type.trim().toLowerCase();
    const kind = Object.hasOwn(TYPES, type) ? (TYPES[type] ?? {}) : {};
    let title = clip(fields.title, 250, true);
    let message = fields.message.trim();
    // Apprise sends a title alone as the message of services without titles; so may its users.
    if (message === "" && title !== "") [message, title] = [title, ""];
    const note = fields.attachmentCount > 0 ? attachmentLine(fields.attachments, fields.attachmentCount) : "";
    if (message === "" && note === "") throw new PayloadError("message must not be empty");
    const room = TEXT_BUDGET - (note === "" ? 0 : note.length + 2);
    const msg = [clip(message, room), note].filter((part) => part !== "").join("\n\n");
    return {
      kind: "notify",
      notification: {
        msg: textOf(msg),
        options: {
          ...(title === "" ? {} : { title: textOf(title) }),
          ...(kind.priority === undefined ? {} : { priority: kind.priority }),
          ...(kind.tags === undefined ? {} : { tags: kind.tags }),
        },
      },
    };
  },
  authentication: "basic",
  settings: ({ base, dockId, secretKey }) => ({
    tool: "Apprise",
    where: "An Apprise URL (apprise CLI, Apprise API, or any tool built on Apprise)",
    text: [
      appriseUrl("json", base, dockId, secretKey),
      "",
      "# or as a form or XML:",
      appriseUrl("form", base, dockId, secretKey),
      appriseUrl("xml", base, dockId, secretKey),
      "",
      `apprise -t 'Backup' -b 'Backup finished' ${shellQuote(appriseUrl("json", base, dockId, secretKey))}`,
    ].join("\n"),
    usesHookUrl: false,
  }),
  // test/fixtures/integrations/apprise/failure.json.
  sample: jsonSample({
    version: "1.0",
    title: "Backup failed",
    message: "The nightly backup of db-1 failed:\nrsync exited with code 23 (partial transfer).",
    attachments: [],
    type: "failure",
  }),
};
