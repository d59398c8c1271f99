/** What the built-in formats' tests share: their fixtures, bodies as the HTTP edge reads them, and the checks of what is sent. */
import { readFileSync } from "node:fs";
import { expect } from "vitest";
import { prepareContent, readOptions } from "../../../src/domain/message-options.ts";
import { renderNotification } from "../../../src/domain/render.ts";
import { entityProblems, parseHtml } from "../../../src/domain/telegram-format.ts";
import {
  type Conversion,
  ENTITY_BUDGET,
  type Inbound,
  type InboundFormat,
  type Notification,
  PayloadError,
  TEXT_BUDGET,
} from "../../../src/integrations/inbound.ts";
import { gatherOptions } from "../../../src/integrations/ntfy-dialect.ts";

// biome-ignore lint/suspicious/noExplicitAny: fixtures are edited freely to make each case.
export type Json = any;

/** test/fixtures/integrations/: a folder a format, named as URLs name it, of its tool's sample payloads. */
export const FIXTURES = new URL("../../fixtures/integrations/", import.meta.url);

/** A fixture's text: `file` in `format`'s folder. */
export const fixtureText = (format: string, file: string): string =>
  readFileSync(new URL(`${format}/${file}`, FIXTURES), "utf8");

/** A JSON body as the HTTP edge reads it. */
export const json = (body: unknown, headers: Record<string, string> = {}): Inbound => ({
  body,
  text: JSON.stringify(body),
  mediaType: "application/json",
  headers,
});

/** A body as the HTTP edge reads it: JSON parsed, a form's fields, anything else (XML) as text alone. */
export function received(text: string, mediaType: string, headers: Record<string, string> = {}): Inbound {
  const body =
    mediaType === "application/json"
      ? JSON.parse(text)
      : mediaType === "application/x-www-form-urlencoded"
        ? Object.fromEntries(new URLSearchParams(text))
        : undefined;
  return { body, text, mediaType, headers };
}

/** What `format` makes of `input`: a throw, even one not in a promise, is a rejection. */
async function conversionOf(format: InboundFormat, input: Inbound): Promise<Conversion> {
  return format.convert(input);
}

/** The notification `format` makes of `input`; a skip fails the test. */
export async function notified(format: InboundFormat, input: Inbound): Promise<Notification> {
  const result = await conversionOf(format, input);
  if (result.kind !== "notify") throw new Error(`skipped: ${result.reason}`);
  return result.notification;
}

/** Why `format` refuses `input`: it must throw a PayloadError. */
export async function refused(format: InboundFormat, input: Inbound): Promise<string> {
  const error = await conversionOf(format, input).catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(PayloadError);
  return (error as PayloadError).message;
}

/**
 * One format's helpers: its fixtures (JSON), and JSON bodies with, for GitHub and GitLab, the header
 * that names the event (`eventHeader`) when an event is given.
 */
export function formatHarness(format: InboundFormat, eventHeader?: string) {
  const inbound = (body: unknown, event?: string): Inbound =>
    json(body, eventHeader === undefined || event === undefined ? {} : { [eventHeader]: event });
  return {
    fixture: (file: string): Json => JSON.parse(fixtureText(format.name, file)),
    inbound,
    conversion: (body: unknown, event?: string): Promise<Conversion> =>
      conversionOf(format, inbound(body, event)),
    convert: (body: unknown, event?: string): Promise<Notification> => notified(format, inbound(body, event)),
    refusal: (body: unknown, event?: string): Promise<string> => refused(format, inbound(body, event)),
  };
}

/**
 * The notification as the service stores and sends it: options read as a sender's, one Telegram
 * message, its text and entities within the budgets. `label` names the case in a failure.
 */
export async function sent(notification: Notification, label?: string) {
  const { msg } = notification;
  expect(msg.length, label).toBeLessThanOrEqual(TEXT_BUDGET);
  expect(msg.isWellFormed() && !msg.includes("\u0000") && msg.trim() !== "", label).toBe(true);
  if (notification.options.format === "html")
    expect(parseHtml(msg).entities.length, label).toBeLessThanOrEqual(ENTITY_BUDGET);
  const options = readOptions(gatherOptions(notification.options as Record<string, unknown>));
  const content = await prepareContent(msg, options);
  expect(content?.body?.entities.length ?? 0, label).toBeLessThanOrEqual(ENTITY_BUDGET);
  const parts = renderNotification({ name: "Ops", link: null }, msg, content);
  expect(parts, label).toHaveLength(1);
  const [part] = parts;
  expect(entityProblems(part?.text ?? "", part?.entities ?? []), label).toEqual([]);
  return part;
}
