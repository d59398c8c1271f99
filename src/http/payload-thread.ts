import { Worker } from "node:worker_threads";
import {
  type FormatReader,
  type MessageOptions,
  OptionsError,
  type ParsedFormat,
  readFormat,
} from "../domain/message-options.ts";
import { EntityParseError, type FormattedText } from "../domain/telegram-format.ts";
import { threadModule } from "../files.ts";
import { type Conversion, type Inbound, PayloadError, TooComplexError } from "../integrations/inbound.ts";
import { TEMPLATE_LIMITS, TemplateError, type TemplateProblem } from "../integrations/template.ts";
import { ApiError, type ErrorCode } from "./errors.ts";

/*
 * What untrusted input can make expensive runs in a thread of its own (payload-worker.ts), never on
 * the event loop that answers requests: Docks' templates, messages' long formatted texts, and large
 * JSON bodies at the integration doors. LiquidJS checks its time limit only between template nodes:
 * one filter over a long list (`where_exp` over 250,000 numbers) ran for seconds past it;
 * markdown-it cannot be stopped at all, and 16,384 characters of `**_` held the loop 55–200 ms;
 * JSON.parse neither, and a megabyte held it 10–50 ms. Meanwhile every request of the service,
 * /healthz included, waited. Here a job has a hard deadline: past it, the thread is ended
 * (Worker.terminate stops JavaScript wherever it is) and a new one takes the next job. The thread's
 * heap is capped too, so a job cannot fill the service's memory.
 *
 * A deadline is the thread's own CPU time (Worker.cpuUsage, Node 24.6 on), not the wall
 * clock: on a machine whose cores are taken by other work, a job that needs 30 ms of CPU may wait
 * seconds for it, and a wall-clock deadline refused legitimate payloads there (a megabyte of alerts,
 * 422) while a quiet machine took them. The work a job may do is bounded, not how busy the machine
 * is. The wall clock still ends a job at WALL_FACTOR times its deadline, so that a request never
 * waits without bound on a starved machine. Where Node cannot tell a thread's CPU time, the
 * deadline is wall time, as before.
 *
 * One thread, one job at a time, in arrival order: a machine of two cores gains nothing from
 * more, and the per-Dock template time (inbound.ts) keeps one Dock from holding it. The thread
 * starts on the first job (most installations send short plain messages only) and ends after a
 * minute without one, giving its memory back.
 */

/** A payload as its text and how the thread reads it again (see payloadOf in payload-worker.ts). */
export interface TemplatePayload {
  /** The text, or a body the event loop has not read: its UTF-8 bytes (checked in the thread). */
  text: string | Uint8Array;
  /** JSON, form fields (application/x-www-form-urlencoded), or the text itself (XML, plain text). */
  as: "json" | "form" | "text";
}

/** A request body the event loop has not read (see unreadBody in inbound.ts). */
export interface UnreadBody {
  bytes: Buffer;
  mediaType: string;
  headers: Inbound["headers"];
}

/** What the main thread sends the thread: a Dock's template (checked there) and a payload, a text to parse, or a body to read. */
export type ThreadJob =
  | { kind: "template"; template: unknown; payload: TemplatePayload }
  | { kind: "format"; format: ParsedFormat; source: string }
  | {
      kind: "body";
      bytes: Uint8Array;
      mediaType: string;
      headers: Inbound["headers"];
      /** The format to read it as; null: the one detected. */
      format: string | null;
      /** Whether a JSON object with `msg` is a message of ours (/webhook's rule) rather than a payload. */
      message: boolean;
    };

/** An ApiError raised in the thread (a body that is not UTF-8, not JSON), as the client is answered. */
type Refused = { ok: false; refused: { code: ErrorCode; message: string } };

/** The thread's answer to a template job. */
export type TemplateReply =
  | { ok: true; conversion: Conversion }
  | { ok: false; problems: TemplateProblem[] }
  | { ok: false; payload: string }
  | Refused;

/**
 * The thread's answer to a body job: a message's own fields (`msg`, `key` and the options, nothing
 * else), or the format read (undefined: none detected; "template": the event loop renders it) and
 * what it made of the payload.
 */
export type BodyReply =
  | { ok: true; message: Record<string, unknown> }
  | { ok: true; format: string | undefined; conversion?: Conversion }
  | { ok: false; format: string; payload: string }
  | { ok: false; format: string; tooComplex: string }
  | Refused;

/** A body read in the thread: a message's fields, or a payload's format and what it made of it. */
export type BodyRead =
  | { kind: "message"; fields: Record<string, unknown> }
  | { kind: "payload"; format: string | undefined; result?: Conversion | PayloadError | TooComplexError };

/** The thread's answer to a format job: the text and entities, or why the text does not parse. */
export type FormatReply = { ok: true; formatted: FormattedText } | { ok: false; unparsed: string };

/** Any answer of the thread; `failed` is a fault of ours (the request is answered 500). */
export type ThreadReply = TemplateReply | FormatReply | BodyReply | { ok: false; failed: string };

/** What the thread posts for each job: its answer, and how long the job took there (ms). */
export interface ThreadAnswer {
  reply: ThreadReply;
  ms: number;
}

/** A render's outcome, and how long it held the thread (what the Dock's template time is charged). */
export interface Rendered {
  threadMs: number;
  result: Conversion | TemplateError | PayloadError;
}

/**
 * A render that runs longer than this is stopped, its thread ended: its payload is read again in
 * the thread (a 1 MiB JSON body, ~30 ms) and every field rendered within LiquidJS's own
 * TEMPLATE_LIMITS.renderMs, which stops ordinary loops between nodes with a precise message.
 */
export const JOB_DEADLINE_MS = 250;

/**
 * A text's deadline. The slowest text we know (16,384 characters of `**_` as Markdown) reads in
 * 10–75 ms; when deadlines were wall time, a machine loaded five times over made one such text take
 * more than 250 ms (bench:hostile answered it 400 once in five). A text is bounded by
 * MAX_MESSAGE_LENGTH already, so this only stops what we did not foresee.
 */
export const TEXT_DEADLINE_MS = 1000;

/**
 * A body job's deadline: JSON.parse and a format's conversion are linear in the body (formats read
 * lists only as far as a message shows), a megabyte in 5–50 ms; this only stops what we did not
 * foresee, with room for INBOUND_MAX_BODY_BYTES's ceiling (16 MiB) on a loaded machine.
 */
export const READ_DEADLINE_MS = 2000;

/**
 * Formatted texts shorter than this (UTF-16 units) are parsed on the event loop: even the slowest
 * Markdown we know costs it about a millisecond at this length (prose 0.7 ms), and most messages
 * are far shorter. From here (4,096 units: 2–15 ms) they go to the thread, whose round trip costs
 * the loop 0.1–0.5 ms (docs/benchmarks.md, bench:hostile). HTML and MarkdownV2 read 16,384 units
 * in 0.4–1.8 ms, but go there from this length all the same: one rule, no parser trusted to stay fast.
 */
export const THREAD_TEXT_FROM = 2048;

/**
 * Whether a message's text is read in the thread (formatted, and THREAD_TEXT_FROM units or more):
 * /ping checks such a message's key before its text is read.
 */
export function readsInThread(msg: string, options: MessageOptions | null): boolean {
  return options?.format !== undefined && options.format !== "text" && msg.length >= THREAD_TEXT_FROM;
}

/** The thread's heap: a 1 MiB payload, its plain copy and LiquidJS's TEMPLATE_LIMITS.memory fit well within. */
const THREAD_HEAP_MB = 64;

/**
 * Renders waiting beyond this are refused (503, Retry-After): each holds its payload in memory and
 * may take the thread for the whole deadline.
 */
const MAX_WAITING_RENDERS = 32;

/**
 * Texts and bodies waiting are refused past this much input (503, Retry-After): a text takes the
 * thread for milliseconds, and a Dock may send a burst of 60 long texts at once (DOCK_RATE_BURST),
 * which a count of 32 refused half of; 32 MiB holds 32 bodies of a megabyte, or a thousand texts
 * of 16,384 units.
 */
const MAX_WAITING_BYTES = 32 * 1024 * 1024;

/** An idle thread is ended after this long, its heap returned. */
const IDLE_MS = 60_000;

/** A job is ended after this many times its deadline in wall time, whatever CPU it got meanwhile. */
export const WALL_FACTOR = 8;

/** The soonest the deadline is looked at again, when a job has had less CPU than its deadline. */
const RECHECK_MS = 10;

/** A thread's CPU time so far (user and system), in ms; null where Node cannot tell (before 24.6/22.19). */
async function cpuMsOf(worker: Worker): Promise<number | null> {
  const usage = (worker as { cpuUsage?: () => Promise<{ user: number; system: number }> }).cpuUsage;
  if (typeof usage !== "function") return null;
  try {
    const { user, system } = await usage.call(worker);
    return (user + system) / 1000;
  } catch {
    // The thread is gone (ERR_WORKER_NOT_RUNNING): its exit settles the job.
    return null;
  }
}

/** How a job ended: the thread's answer, or stopped at its deadline or its heap. */
type Ran<R> = { threadMs: number; reply: R } | { threadMs: number; stopped: "time" | "memory" };

interface Job {
  message: ThreadJob;
  /** The input it holds while it waits, in bytes (a text's UTF-16 units count two). */
  size: number;
  /** Bytes handed to the thread rather than copied (see handedOver). */
  transfer: ArrayBuffer[];
  resolve: (ran: Ran<ThreadReply>) => void;
  reject: (error: Error) => void;
  startedAt?: number;
  /** The thread's CPU time when the job started (cpuMsOf). */
  cpuAtStart?: Promise<number | null>;
  deadline?: NodeJS.Timeout;
}

interface Thread {
  worker: Worker;
  ready: boolean;
}

/** The formats' names as a message about a text in one of them says them. */
const FORMAT_NAMES: Record<ParsedFormat, string> = {
  markdown: "Markdown",
  html: "Telegram HTML",
  telegram_markdownv2: "Telegram MarkdownV2",
};

/**
 * The bytes in an ArrayBuffer of their own, to be handed to the thread without a copy: cloning a
 * megabyte costs the event loop 2–3 ms, this copy 0.05 ms, and the request keeps its own.
 */
function handedOver(bytes: Uint8Array): Uint8Array {
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return copy;
}

/** Runs untrusted input's expensive work in a thread with a hard deadline and a capped heap (see the file's comment). */
export class PayloadThread {
  readonly #deadlineMs: number;
  readonly #textDeadlineMs: number;
  readonly #readDeadlineMs: number;
  readonly #waiting: Job[] = [];
  /** Renders waiting, and the input that texts and bodies waiting hold (see MAX_WAITING_BYTES). */
  #waitingRenders = 0;
  #waitingBytes = 0;
  #running: Job | null = null;
  #thread: Thread | null = null;
  #idle: NodeJS.Timeout | undefined;
  #closed = false;

  /**
   * `deadlineMs`: every job's (else JOB_DEADLINE_MS, TEXT_DEADLINE_MS, READ_DEADLINE_MS), for a
   * test that needs every job stopped, or none.
   */
  constructor(options: { deadlineMs?: number } = {}) {
    this.#deadlineMs = options.deadlineMs ?? JOB_DEADLINE_MS;
    this.#textDeadlineMs = options.deadlineMs ?? TEXT_DEADLINE_MS;
    this.#readDeadlineMs = options.deadlineMs ?? READ_DEADLINE_MS;
  }

  /**
   * The notification a Dock's template (as stored; checked in the thread) makes of a payload, or
   * the TemplateError or PayloadError it fails with, and the time it held the thread. Throws
   * ApiError `busy` when too many jobs wait.
   */
  async render(template: unknown, payload: TemplatePayload): Promise<Rendered> {
    const { text } = payload;
    const bytes = typeof text === "string" ? null : handedOver(text);
    const ran = await this.#run<TemplateReply>(
      { kind: "template", template, payload: bytes === null ? payload : { ...payload, text: bytes } },
      bytes === null ? [] : [bytes.buffer as ArrayBuffer],
    );
    if ("stopped" in ran) {
      const message =
        ran.stopped === "time"
          ? `took too long: stopped after ${this.#deadlineMs} ms; a template may render for at most ${TEMPLATE_LIMITS.renderMs} ms, all fields together.`
          : `used too much memory: the render was stopped at its ${THREAD_HEAP_MB} MB heap.`;
      // Which field was rendering is not known: the error names the template.
      return { threadMs: ran.threadMs, result: new TemplateError([{ field: "template", message }]) };
    }
    const { reply } = ran;
    if (!reply.ok && "refused" in reply) throw new ApiError(reply.refused.code, reply.refused.message);
    return {
      threadMs: ran.threadMs,
      result: reply.ok
        ? reply.conversion
        : "problems" in reply
          ? new TemplateError(reply.problems)
          : new PayloadError(reply.payload),
    };
  }

  /**
   * A message's text read in its format (a FormatReader): on the event loop when it is shorter than
   * THREAD_TEXT_FROM, else in the thread, where one that takes longer than the deadline is
   * refused with an OptionsError naming `msg`. Throws ApiError `busy` when too many jobs wait.
   */
  readonly read: FormatReader = async (format, source) => {
    if (source.length < THREAD_TEXT_FROM) return readFormat(format, source);
    const ran = await this.#run<FormatReply>({ kind: "format", format, source });
    if ("stopped" in ran) {
      const why =
        ran.stopped === "time"
          ? `took too long to read as ${FORMAT_NAMES[format]}: stopped after ${this.#textDeadlineMs.toLocaleString("en-US")} ms.`
          : `needed too much memory to read as ${FORMAT_NAMES[format]}.`;
      throw new OptionsError([{ field: "msg", message: `${why} Send a shorter text, or it as plain text.` }]);
    }
    if (ran.reply.ok) return ran.reply.formatted;
    throw new EntityParseError(ran.reply.unparsed);
  };

  /**
   * A body the event loop has not read, read in the thread as `format` (null: the one detected),
   * or — with `message` — as /webhook reads a JSON body: a message of ours when it has `msg`.
   * Throws the ApiError a body that is not UTF-8 or not JSON is answered with, `busy` when too many
   * jobs wait, and `payload_too_complex` when reading it took longer than its deadline or more
   * than the thread's heap.
   */
  async readBody(body: UnreadBody, format: string | null, message: boolean): Promise<BodyRead> {
    const bytes = handedOver(body.bytes);
    const ran = await this.#run<BodyReply>(
      { kind: "body", bytes, mediaType: body.mediaType, headers: body.headers, format, message },
      [bytes.buffer as ArrayBuffer],
    );
    if ("stopped" in ran) {
      throw new ApiError(
        "payload_too_complex",
        ran.stopped === "time"
          ? `This body took longer than ${this.#readDeadlineMs.toLocaleString("en-US")} ms to read (see docs/integrations.md).`
          : `This body needed more than the ${THREAD_HEAP_MB} MB it may use to be read (see docs/integrations.md).`,
      );
    }
    const { reply } = ran;
    if (reply.ok) {
      if ("message" in reply) return { kind: "message", fields: reply.message };
      return {
        kind: "payload",
        format: reply.format,
        ...(reply.conversion === undefined ? {} : { result: reply.conversion }),
      };
    }
    if ("refused" in reply) throw new ApiError(reply.refused.code, reply.refused.message);
    return {
      kind: "payload",
      format: reply.format,
      result: "payload" in reply ? new PayloadError(reply.payload) : new TooComplexError(reply.tooComplex),
    };
  }

  /** Whether a job runs in the thread right now (the event loop answers other requests meanwhile). */
  get working(): boolean {
    return this.#running !== null;
  }

  /** Ends the thread; jobs not finished fail. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#idle);
    const error = new Error("the payload thread is closed");
    for (const job of this.#taken(this.#waiting.length)) job.reject(error);
    if (this.#running !== null) {
      clearTimeout(this.#running.deadline);
      this.#running.reject(error);
      this.#running = null;
    }
    const thread = this.#thread;
    this.#thread = null;
    await thread?.worker.terminate();
  }

  /** Queues a job; its reply is R (the thread answers each kind of job with its kind of reply). */
  #run<R extends ThreadReply>(message: ThreadJob, transfer: ArrayBuffer[] = []): Promise<Ran<R>> {
    if (this.#closed) return Promise.reject(new Error("the payload thread is closed"));
    const render = message.kind === "template";
    const size = render
      ? 0
      : message.kind === "format"
        ? 2 * message.source.length
        : message.bytes.byteLength;
    if (render ? this.#waitingRenders >= MAX_WAITING_RENDERS : this.#waitingBytes + size > MAX_WAITING_BYTES)
      return Promise.reject(ApiError.retryAfter("busy", 1));
    if (render) this.#waitingRenders++;
    this.#waitingBytes += size;
    return new Promise((resolve, reject) => {
      const settle = resolve as (ran: Ran<ThreadReply>) => void;
      this.#waiting.push({ message, size, transfer, resolve: settle, reject });
      this.#next();
    });
  }

  /** The first `count` jobs waiting, taken out of the queue. */
  #taken(count: number): Job[] {
    const jobs = this.#waiting.splice(0, count);
    for (const job of jobs) {
      if (job.message.kind === "template") this.#waitingRenders--;
      this.#waitingBytes -= job.size;
    }
    return jobs;
  }

  #next(): void {
    if (this.#running !== null || this.#closed) return;
    const job = this.#waiting[0];
    if (job === undefined) {
      clearTimeout(this.#idle);
      if (this.#thread !== null) this.#idle = setTimeout(() => this.#end(), IDLE_MS).unref();
      return;
    }
    const thread = this.#thread ?? this.#start();
    // The thread's start (loading LiquidJS and markdown-it) is not the job's time: it begins once the thread is ready.
    if (!thread.ready) return;
    this.#taken(1);
    clearTimeout(this.#idle);
    this.#running = job;
    job.startedAt = performance.now();
    job.cpuAtStart = cpuMsOf(thread.worker);
    job.deadline = setTimeout(() => void this.#check(job, thread), this.#deadlineOf(job));
    thread.worker.postMessage(job.message, job.transfer);
  }

  #start(): Thread {
    const worker = new Worker(threadModule("http/payload-worker"), {
      resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB },
    });
    // An idle thread keeps nobody alive; a request waiting for its job does.
    worker.unref();
    const thread: Thread = { worker, ready: false };
    this.#thread = thread;
    worker.on("message", (message: ThreadAnswer | "ready") => {
      if (thread !== this.#thread) return;
      if (message === "ready") {
        thread.ready = true;
        this.#next();
      } else this.#finish(message);
    });
    worker.on("error", (error) => this.#lost(thread, error));
    worker.on("exit", (code) =>
      this.#lost(thread, new Error(`the payload thread stopped (exit code ${code})`)),
    );
    return thread;
  }

  /** The running job's answer. */
  #finish({ reply, ms }: ThreadAnswer): void {
    const job = this.#running;
    if (job === null) return;
    // A job that took the thread past its deadline is stopped, whichever the event loop takes
    // first when both are due, its answer or its timer (a held-up loop may take either); an answer
    // the thread gave in time counts, however late the loop reads it. `ms` is the job's CPU time in
    // the thread (its wall time where Node cannot tell).
    if (ms >= this.#deadlineOf(job)) {
      this.#settle(job, { threadMs: this.#deadlineOf(job), stopped: "time" });
      return;
    }
    if (!reply.ok && "failed" in reply) {
      this.#settle(job, new Error(`the payload thread failed: ${reply.failed}`));
      return;
    }
    // The Dock's template time is charged how long the job held the thread (the one thread all
    // Docks share), not its CPU time: while it ran, nobody else's job could.
    this.#settle(job, { threadMs: this.#heldFor(job), reply });
  }

  /**
   * The running job's deadline came in wall time: it is stopped if it had its deadline's CPU time
   * (or WALL_FACTOR times the deadline passed, or the CPU time is not known), else looked at again
   * once it could have had the rest.
   */
  async #check(job: Job, thread: Thread): Promise<void> {
    if (job !== this.#running) return;
    const deadline = this.#deadlineOf(job);
    const ceiling = deadline * WALL_FACTOR;
    const wallSoFar = () => performance.now() - (job.startedAt ?? 0);
    if (wallSoFar() >= ceiling) {
      this.#overran(job);
      return;
    }
    // The thread tells its CPU time itself (Node interrupts it to ask), which a starved machine
    // may delay: never past the ceiling, which then counts as the deadline's CPU.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<[null, null]>((resolve) => {
      timer = setTimeout(() => resolve([null, null]), ceiling - wallSoFar());
    });
    const [start, now] = await Promise.race([Promise.all([job.cpuAtStart, cpuMsOf(thread.worker)]), late]);
    clearTimeout(timer);
    if (job !== this.#running) return;
    const wall = wallSoFar();
    const cpu = start === null || start === undefined || now === null ? wall : now - start;
    if (cpu >= deadline || wall >= ceiling) {
      this.#overran(job);
      return;
    }
    const left = Math.min(deadline - cpu, ceiling - wall);
    job.deadline = setTimeout(() => void this.#check(job, thread), Math.max(RECHECK_MS, left));
  }

  /** The running job passed its deadline: the thread is ended wherever its JavaScript is. */
  #overran(job: Job): void {
    if (job !== this.#running) return;
    this.#end();
    this.#settle(job, { threadMs: this.#deadlineOf(job), stopped: "time" });
  }

  #deadlineOf(job: Job): number {
    const { kind } = job.message;
    return kind === "body"
      ? this.#readDeadlineMs
      : kind === "format"
        ? this.#textDeadlineMs
        : this.#deadlineMs;
  }

  /** The thread ended on its own: out of memory (the running job's fault), or a failure. */
  #lost(thread: Thread, error: Error): void {
    if (thread !== this.#thread) return;
    this.#thread = null;
    if (!thread.ready) {
      // It could not start: every job waiting would fail the same way.
      for (const job of this.#taken(this.#waiting.length)) job.reject(error);
      return;
    }
    const job = this.#running;
    if (job === null) return;
    const outOfMemory = (error as NodeJS.ErrnoException).code === "ERR_WORKER_OUT_OF_MEMORY";
    this.#settle(job, outOfMemory ? { threadMs: this.#heldFor(job), stopped: "memory" } : error);
  }

  #heldFor(job: Job): number {
    return Math.min(this.#deadlineOf(job), performance.now() - (job.startedAt ?? 0));
  }

  /** The running job is done: its outcome (or the failure that ended it) goes back, the next one starts. */
  #settle(job: Job, outcome: Ran<ThreadReply> | Error): void {
    clearTimeout(job.deadline);
    this.#running = null;
    if (outcome instanceof Error) job.reject(outcome);
    else job.resolve(outcome);
    this.#next();
  }

  /** Ends the thread (idle, or stopping a job); the next job starts another. */
  #end(): void {
    const thread = this.#thread;
    this.#thread = null;
    thread?.worker.terminate().catch(() => {});
  }
}
