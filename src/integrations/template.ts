import type { Context, Emitter, Liquid, LiquidOptions, Template } from "liquidjs";
import { escapeMarkdown } from "../domain/markdown.ts";
import {
  type Button,
  LABEL_RULE,
  MAX_BUTTON_ROWS,
  MAX_BUTTONS_PER_ROW,
  MAX_TAG,
  MAX_TAGS,
  MAX_TITLE,
  OptionsError,
  readOptions,
  URL_RULE,
} from "../domain/message-options.ts";
import { hasControlCharacter } from "../domain/telegram-format.ts";
import { threadClock } from "../domain/thread-clock.ts";
import {
  buttonRows,
  type Conversion,
  clip,
  isRecord,
  linkButton,
  type Notification,
  PayloadError,
  textOf,
} from "./inbound.ts";
import { gatherOptions } from "./ntfy-dialect.ts";

/*
 * A Dock's own template: a few small Liquid templates (LiquidJS), one per notification field, that
 * turn any JSON body into a notification. The Dock's owner writes the template; the payload comes
 * from anyone who holds the hook's URL. So the template sees the payload and nothing else, cannot
 * read files, and its render is bounded in time, in what it allocates and in what it writes.
 *
 * Sandbox, rule by rule:
 * - Only the payload is visible. The scope is `{ ...topLevelFields, payload }` built from a copy of
 *   the payload as plain data (own enumerable data properties only: no getters, functions or
 *   prototypes); `ownPropertyOnly` makes LiquidJS read own properties only, so `constructor`,
 *   `__proto__` and any prototype's fields read as nothing, and there are no globals to read
 *   (`{{ process }}` is empty).
 * - No file system: the `include`, `render` and `layout` tags are unregistered (using one is a
 *   parse error, `tag "include" not found`), and `templates: {}` gives LiquidJS an empty in-memory
 *   file system in case a tag ever reaches for one.
 * - `strictFilters`: an unknown filter is a parse error, not silently skipped.
 * - Bounded: a render of the whole template (all fields together) may take TEMPLATE_LIMITS.renderMs
 *   of the rendering thread's CPU time (RenderTimeLimit) and allocate TEMPLATE_LIMITS.memory units in LiquidJS's accounting (renderLimit,
 *   memoryLimit, shared by all fields through one Context); each field may write
 *   TEMPLATE_LIMITS.renderedChars characters, which LiquidJS does not count itself.
 * - Deterministic where it can be: dates are shown in UTC (`| date: "%H:%M", "Europe/Berlin"` picks
 *   a zone) in en-US, whatever the server's settings. `"now"` and `sample` still read the clock and
 *   a random number: the template's choice.
 */

/** A template field's name, as in DockTemplate. */
type Field = "text" | "title" | "key" | "final" | "tags" | "priority" | "click" | "buttons";

/** The fields that are Liquid templates, in the order they are rendered. */
const FIELDS: readonly Field[] = ["text", "title", "key", "final", "tags", "priority", "click", "buttons"];

/** A template's message formats (what the rendered text is written in). */
const TEMPLATE_FORMATS = ["text", "markdown", "html"] as const;

/**
 * A Dock's template: each field but `format` a Liquid template rendered with the payload. Empty
 * fields (and an empty output) leave that part of the notification out.
 */
export interface DockTemplate {
  /** The message text (required). */
  text: string;
  /**
   * What the rendered text is written in: "text" (default), "markdown" or "html" (Telegram HTML).
   * Not a template. In "html", every `{{ … }}` in `text` is HTML-escaped, in "markdown" its
   * punctuation backslash-escaped, so a payload value cannot inject markup or a link;
   * `{{ value | raw }}` writes it as it is (and `| escape` would escape twice).
   */
  format?: "text" | "markdown" | "html";
  /** The title. */
  title?: string;
  /** The living-notification key (empty output = no key). */
  key?: string;
  /** "true" (or yes, 1, on) makes the message the key's last (see Notification.final). */
  final?: string;
  /** Comma-separated tags: emoji short codes or words. */
  tags?: string;
  /** min, low, default, high, urgent (or max) or 1 to 5; empty is default. */
  priority?: string;
  /** The "Open" button's URL. */
  click?: string;
  /**
   * URL buttons, one per line: `Label | https://url` (split at the first `|`, so a URL may hold
   * more). Empty lines are skipped; at most 9 buttons, laid out in rows of three.
   */
  buttons?: string;
}

/** What is wrong with a template (or what it rendered): the field, and where in it when known. */
export interface TemplateProblem {
  field: string;
  /** Human, saying where: `line 2, column 5: tag "endfor" not found.` */
  message: string;
  line?: number;
  column?: number;
}

/** A template that failed on a payload (or could not be read): every problem found. */
export class TemplateError extends Error {
  override name = "TemplateError";
  readonly problems: TemplateProblem[];

  constructor(problems: TemplateProblem[]) {
    super(problems.map((p) => `${p.field}: ${p.message}`).join(" "));
    this.problems = problems;
  }
}

/** A template as stored, checked: the normalised template, or every problem found. */
export type TemplateCheck = { ok: true; value: DockTemplate } | { ok: false; errors: TemplateProblem[] };

/**
 * The limits on a template, its render and its output: named here so the console and the docs can
 * say them. LiquidJS's memory units are characters and list items its filters and ranges allocate
 * (not bytes): a range of 1,000,000 numbers is about 8 MB of heap, so the cap keeps a hostile
 * payload or template from pushing the service's heap past its peak budget.
 */
export const TEMPLATE_LIMITS = {
  /** Source length (UTF-16 units) of `text`, and of every other field. */
  source: { text: 8_000, other: 1_000 },
  /** Time for rendering all the fields of one notification, in milliseconds of the payload thread's CPU (payload-worker.ts). */
  renderMs: 100,
  /** LiquidJS's allocation accounting for one notification, all fields together. */
  memory: 1_000_000,
  /** What one field may write before it is stopped (the output limits apply after trimming). */
  renderedChars: 65_536,
  /** The rendered text's length (the service's default MAX_MESSAGE_LENGTH). */
  text: 16_384,
  title: MAX_TITLE,
  key: 128,
  tags: MAX_TAGS,
  tag: MAX_TAG,
  buttons: MAX_BUTTON_ROWS * MAX_BUTTONS_PER_ROW,
  /** How deep a payload may nest (objects in arrays in objects …). */
  payloadDepth: 64,
  /** Parsed templates kept, by source, so a busy hook does not parse again. */
  cachedTemplates: 200,
} as const;

/** A payload value as literal Markdown text (see escapeMarkdown): `[x](https://…)` and `===` stay text. */
const markdownText = (value: unknown): string => escapeMarkdown(String(value ?? ""));

/** LiquidJS, loaded on first use: most installations never use templates. */
interface Engine {
  /** For every field but an html text: writes what it is given. */
  plain: Liquid;
  /** For the text of an html template: escapes every output unless it ends in `| raw`. */
  html: Liquid;
  /** For the text of a markdown template: backslash-escapes Markdown's punctuation unless `| raw`. */
  markdown: Liquid;
  liquidjs: typeof import("liquidjs");
}

/**
 * LiquidJS's render limit (TEMPLATE_LIMITS.renderMs, all fields together) in this thread's CPU time
 * (domain/thread-clock.ts), so that a machine busy with other work delays a render rather than
 * failing it. LiquidJS checks its limit between nodes and hands it the time of its global clock
 * (`performance.now()`, the wall clock), which this ignores; its error has LiquidJS's wording, which
 * renderProblem recognises.
 */
export class RenderTimeLimit {
  // LiquidJS's Limiter's fields, read only by its own check() and use(), which these replace.
  readonly message = "template render limit exceeded";
  base = 0;
  limit = Number.POSITIVE_INFINITY;
  readonly #deadline: number;

  constructor(ms: number) {
    this.#deadline = threadClock() + ms;
  }

  check(): void {
    if (threadClock() > this.#deadline) throw new Error(this.message);
  }

  use(): void {}
}

let loading: Promise<Engine> | undefined;

function engine(): Promise<Engine> {
  loading ??= import("liquidjs").then((liquidjs) => {
    const options: LiquidOptions = {
      ownPropertyOnly: true,
      strictFilters: true,
      strictVariables: false,
      // Liquid's truthiness (only nil and false are false), as the Liquid documentation describes.
      jsTruthy: false,
      templates: {},
      parseLimit: TEMPLATE_LIMITS.source.text,
      renderLimit: TEMPLATE_LIMITS.renderMs,
      memoryLimit: TEMPLATE_LIMITS.memory,
      timezoneOffset: 0,
      locale: "en-US",
    };
    const make = (extra: LiquidOptions) => {
      const liquid = new liquidjs.Liquid({ ...options, ...extra });
      for (const tag of ["include", "render", "layout"]) delete liquid.tags[tag];
      return liquid;
    };
    return {
      plain: make({}),
      html: make({ outputEscape: "escape" }),
      markdown: make({ outputEscape: markdownText }),
      liquidjs,
    };
  });
  return loading;
}

/** A parse problem, before it is given its field. */
type Located = Omit<TemplateProblem, "field">;

/** Parsed templates (or the problem that stopped the parse), least recently used first. */
const parsedCache = new Map<string, Template[] | Located>();

/** A field's source parsed, from the cache when it was parsed before. */
/** Which engine renders a field: the text of an html or markdown template escapes its outputs. */
type Mode = "plain" | "html" | "markdown";

const modeOf = (field: Field, format: DockTemplate["format"]): Mode =>
  field === "text" && (format === "html" || format === "markdown") ? format : "plain";

function parse(engine: Engine, source: string, mode: Mode): Template[] | Located {
  const key = `${mode}\u0000${source}`;
  let parsed = parsedCache.get(key);
  if (parsed !== undefined) parsedCache.delete(key);
  else {
    try {
      parsed = engine[mode].parse(source);
    } catch (error) {
      parsed = located(engine, error);
    }
    if (parsedCache.size >= TEMPLATE_LIMITS.cachedTemplates) {
      parsedCache.delete(parsedCache.keys().next().value as string);
    }
  }
  parsedCache.set(key, parsed);
  return parsed;
}

const LIQUID_POSITION = /, line:\d+, col:\d+$/;

/** A LiquidJS error as a problem: its message without LiquidJS's suffix, its position as ours. */
function located(engine: Engine, error: unknown): Located {
  if (!(error instanceof Error)) return { message: sentence(String(error)) };
  const cause = causeOf(engine, error);
  const message =
    cause instanceof RangeError && /call stack/.test(cause.message)
      ? "nested too deeply."
      : sentence(error.message.replace(LIQUID_POSITION, ""));
  if (!engine.liquidjs.LiquidError.is(error)) return { message };
  const [line, column] = error.token.getPosition();
  return { message: `line ${line}, column ${column}: ${message}`, line, column };
}

/** What LiquidJS wrapped in its error (a filter's TypeError, a limit's AssertionError, ours). */
function causeOf(engine: Engine, error: Error): Error {
  return engine.liquidjs.LiquidError.is(error) ? (error.originalError ?? error) : error;
}

const sentence = (text: string) => (/[.!?]$/.test(text) ? text : `${text}.`);

/**
 * Checks a template as a Dock's owner gives it (types, sizes, and that every field parses), when
 * it is saved and before it is used. Problems name the field and, for Liquid errors, the line and
 * column.
 */
export async function validateTemplate(input: unknown): Promise<TemplateCheck> {
  if (!isRecord(input)) {
    return { ok: false, errors: [{ field: "template", message: "must be an object with at least text." }] };
  }
  const errors: TemplateProblem[] = [];
  for (const name of Object.keys(input)) {
    if (name !== "format" && !(FIELDS as readonly string[]).includes(name)) {
      errors.push({
        field: name,
        message: `is not a template field; the fields are format, ${FIELDS.join(", ")}.`,
      });
    }
  }
  const value: Partial<DockTemplate> = {};
  const format = input.format;
  if (format !== undefined && format !== null) {
    if (typeof format !== "string" || !(TEMPLATE_FORMATS as readonly string[]).includes(format)) {
      errors.push({ field: "format", message: `must be one of ${TEMPLATE_FORMATS.join(", ")}.` });
    } else if (format !== "text") value.format = format as DockTemplate["format"];
  }
  const sources: Field[] = [];
  for (const field of FIELDS) {
    const source = input[field];
    if (source === undefined || source === null || source === "") {
      if (field === "text") errors.push({ field, message: "is required." });
      continue;
    }
    const limit = field === "text" ? TEMPLATE_LIMITS.source.text : TEMPLATE_LIMITS.source.other;
    if (typeof source !== "string") errors.push({ field, message: "must be a string (a Liquid template)." });
    else if (source.length > limit) {
      errors.push({ field, message: `is ${source.length} characters long; at most ${limit} are allowed.` });
    } else if (field === "text" && source.trim() === "") errors.push({ field, message: "is required." });
    else {
      value[field] = source;
      sources.push(field);
    }
  }
  if (sources.length > 0) {
    const liquid = await engine();
    for (const field of sources) {
      const parsed = parse(liquid, value[field] as string, modeOf(field, value.format));
      if (!Array.isArray(parsed)) errors.push({ field, ...parsed });
    }
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value: value as DockTemplate };
}

/**
 * The notification a Dock's template makes of a payload (any JSON value, or a body's text). Throws
 * TemplateError when the template fails on it (a render error, a limit, an output the message model
 * does not take), PayloadError for a payload nested too deeply.
 */
export async function renderTemplate(template: DockTemplate, payload: unknown): Promise<Conversion> {
  const liquid = await engine();
  const data = plainData(payload, 0);
  const scope: Record<string, unknown> = isRecord(data) ? { ...data, payload: data } : { payload: data };
  const problems: TemplateProblem[] = [];
  const rendered: Partial<Record<Field, string>> = {};
  let base: Context | undefined;
  for (const field of FIELDS) {
    const source = template[field];
    if (source === undefined || source === "") continue;
    const parsed = parse(liquid, source, modeOf(field, template.format));
    if (!Array.isArray(parsed)) {
      problems.push({ field, ...parsed });
      continue;
    }
    // One Context's limits for all fields (time runs from here); a fresh scope for each, so an
    // assign or increment in one field does not show in the next.
    base ??= new liquid.liquidjs.Context(
      {},
      liquid.plain.options,
      { sync: true },
      {
        liquid: liquid.plain,
        // LiquidJS's Limiter keeps its fields private; this one has the same shape.
        renderLimit: new RenderTimeLimit(TEMPLATE_LIMITS.renderMs) as unknown as Context["renderLimit"],
      },
    );
    const output = new CappedOutput(liquid.liquidjs.toValue);
    try {
      liquid.liquidjs.toValueSync(
        liquid.plain.renderer.renderTemplates(parsed, base.spawn({ ...scope }), output),
      );
      rendered[field] = textOf(output.buffer);
    } catch (error) {
      const problem = renderProblem(liquid, error);
      problems.push({ field, ...problem.located });
      // Time and memory are spent for every field: the ones after would only fail the same way.
      if (problem.exhausted) break;
    }
  }
  if (problems.length > 0) throw new TemplateError(problems);
  return { kind: "notify", notification: notification(template, rendered) };
}

/** Thrown by CappedOutput: a field wrote more than TEMPLATE_LIMITS.renderedChars. */
class OutputTooLong extends Error {}

/**
 * LiquidJS's output buffer, stopped at TEMPLATE_LIMITS.renderedChars: LiquidJS counts what filters
 * allocate, not what a loop writes, and a loop writing a long payload value can otherwise build a
 * string of hundreds of megabytes within its time limit.
 */
class CappedOutput implements Emitter {
  buffer = "";
  readonly #toValue: (value: unknown) => unknown;

  constructor(toValue: (value: unknown) => unknown) {
    this.#toValue = toValue;
  }

  write(html: unknown): void {
    this.buffer += this.#text(html, TEMPLATE_LIMITS.renderedChars - this.buffer.length);
  }

  /** A value as LiquidJS writes it (nil as nothing, a list joined), refused past `room`. */
  #text(html: unknown, room: number): string {
    const value = this.#toValue(html);
    let text: string;
    if (value === null || value === undefined) text = "";
    else if (Array.isArray(value)) {
      text = "";
      for (const item of value) text += this.#text(item, room - text.length);
    } else text = String(value);
    if (text.length > room) throw new OutputTooLong();
    return text;
  }
}

/** A render failure as a problem; `exhausted` when the whole template's time or memory is spent. */
function renderProblem(engine: Engine, error: unknown): { located: Located; exhausted: boolean } {
  const where = located(engine, error);
  const cause = error instanceof Error ? causeOf(engine, error) : undefined;
  const reason = cause?.message ?? "";
  let limit: string;
  let exhausted = true;
  if (cause instanceof OutputTooLong) {
    limit = `rendered more than ${TEMPLATE_LIMITS.renderedChars} characters.`;
    exhausted = false;
  } else if (reason.startsWith("template render limit exceeded")) {
    limit = `took too long: a template may render for at most ${TEMPLATE_LIMITS.renderMs} ms, all fields together.`;
  } else if (
    reason.startsWith("memory alloc limit exceeded") ||
    /^Invalid (string|array) length/.test(reason)
  ) {
    limit = `used too much memory: ranges, lists and text made by filters may hold at most ${TEMPLATE_LIMITS.memory} items or characters, all fields together.`;
  } else return { located: where, exhausted: false };
  const at = where.line === undefined ? "" : `line ${where.line}, column ${where.column}: `;
  return { located: { ...where, message: `${at}${limit}` }, exhausted };
}

/**
 * The payload as plain data: own enumerable data properties of objects and arrays, strings,
 * numbers, booleans and null (getters, functions and prototypes left behind), so the template can
 * reach nothing but what was sent.
 */
function plainData(value: unknown, depth: number): unknown {
  if (typeof value !== "object" || value === null) {
    return typeof value === "string" ||
      typeof value === "number" ||
      typeof value === "boolean" ||
      value === null
      ? value
      : undefined;
  }
  if (depth >= TEMPLATE_LIMITS.payloadDepth) {
    throw new PayloadError(`it is nested deeper than ${TEMPLATE_LIMITS.payloadDepth} levels.`);
  }
  if (Array.isArray(value)) return Array.from(value, (item) => plainData(item, depth + 1) ?? null);
  const fields: [string, unknown][] = [];
  for (const name of Object.keys(value)) {
    const property = Object.getOwnPropertyDescriptor(value, name);
    const data = property && "value" in property ? plainData(property.value, depth + 1) : undefined;
    if (data !== undefined) fields.push([name, data]);
  }
  // fromEntries defines each field, so a field named __proto__ stays a field.
  return Object.fromEntries(fields);
}

const TRUE = new Set(["true", "yes", "1", "on"]);
const FALSE = new Set(["", "false", "no", "0", "off"]);

/** The rendered fields as a notification, each checked against what the message model takes. */
function notification(template: DockTemplate, rendered: Partial<Record<Field, string>>): Notification {
  const problems: TemplateProblem[] = [];
  const fail = (field: Field, message: string) => problems.push({ field, message });
  const options: Notification["options"] = {};
  if (template.format !== undefined && template.format !== "text") options.format = template.format;
  const result: Notification = { msg: "", options };

  const text = (rendered.text ?? "").trim();
  if (text === "") fail("text", "rendered empty: there is nothing to send.");
  else if (text.length > TEMPLATE_LIMITS.text) {
    fail("text", `rendered ${text.length} characters; a message holds at most ${TEMPLATE_LIMITS.text}.`);
  }
  result.msg = text;

  const title = (rendered.title ?? "").replace(/\s+/g, " ").trim();
  if (title.length > TEMPLATE_LIMITS.title) {
    fail("title", `rendered ${title.length} characters; a title holds at most ${TEMPLATE_LIMITS.title}.`);
  } else if (title !== "") options.title = title;

  const key = (rendered.key ?? "").trim();
  if (key.length > TEMPLATE_LIMITS.key) {
    fail("key", `rendered ${key.length} characters; a key holds at most ${TEMPLATE_LIMITS.key}.`);
  } else if (key !== "") result.key = key;

  const final = (rendered.final ?? "").trim().toLowerCase();
  if (TRUE.has(final)) result.final = true;
  else if (!FALSE.has(final)) {
    fail("final", `rendered ${quoted(final)}; it must render true, false or nothing.`);
  }

  const tags = (rendered.tags ?? "")
    .split(",")
    .map((tag) => tag.trim())
    .filter((tag) => tag !== "");
  const long = tags.findIndex((tag) => tag.length > TEMPLATE_LIMITS.tag);
  if (tags.length > TEMPLATE_LIMITS.tags) {
    fail("tags", `rendered ${tags.length} tags; at most ${TEMPLATE_LIMITS.tags} are shown.`);
  } else if (long >= 0) {
    fail("tags", `tag ${long + 1} is ${tags[long]?.length} characters long; at most ${TEMPLATE_LIMITS.tag}.`);
  } else if (tags.length > 0) options.tags = tags;

  const priority = (rendered.priority ?? "").trim();
  if (priority !== "") {
    try {
      const read = readOptions(gatherOptions({ priority })).priority;
      if (read !== undefined) options.priority = read;
    } catch (error) {
      if (!(error instanceof OptionsError)) throw error;
      fail(
        "priority",
        `rendered ${quoted(priority)}; it must be min, low, default, high or urgent, 1 to 5, or nothing.`,
      );
    }
  }

  const click = (rendered.click ?? "").trim();
  if (click !== "") {
    if (linkButton("Open", click) === undefined) fail("click", `the rendered URL ${URL_RULE}`);
    else options.click = click;
  }

  const buttons = buttonsOf(rendered.buttons ?? "", (message) => fail("buttons", message));
  if (buttons !== undefined) options.buttons = buttons;

  if (problems.length > 0) throw new TemplateError(problems);
  return result;
}

/**
 * The rendered buttons field: `Label | https://url` a line (empty lines, and lines whose URL came
 * out empty, skipped), in rows of three; each line Telegram would refuse is named.
 */
function buttonsOf(output: string, fail: (message: string) => void): Button[][] | undefined {
  const buttons: Button[] = [];
  for (const [n, line] of output.split("\n").entries()) {
    if (line.trim() === "") continue;
    const where = `rendered line ${n + 1}`;
    const bar = line.indexOf("|");
    if (bar < 0) {
      fail(`${where}: write a button as "Label | https://…".`);
      continue;
    }
    const label = line.slice(0, bar).replace(/\s+/g, " ").trim();
    if (label === "" || hasControlCharacter(label)) {
      fail(`${where}: the label ${LABEL_RULE}`);
      continue;
    }
    // A payload without the field (`Dashboard | {{ dashboard_url }}`): no button, as built-in
    // formats leave out a link a payload lacks.
    if (line.slice(bar + 1).trim() === "") continue;
    const button = linkButton(label, line.slice(bar + 1));
    if (button === undefined) fail(`${where} (${quoted(label)}): the URL ${URL_RULE}`);
    else buttons.push(button);
  }
  if (buttons.length > TEMPLATE_LIMITS.buttons) {
    fail(
      `rendered ${buttons.length} buttons; at most ${TEMPLATE_LIMITS.buttons} are shown (${MAX_BUTTON_ROWS} rows of ${MAX_BUTTONS_PER_ROW}).`,
    );
    return undefined;
  }
  return buttonRows(buttons);
}

/** A short rendered value in quotes, for an error message. */
const quoted = (value: string) => `"${clip(value, 24, true)}"`;
