import { Worker } from "node:worker_threads";
import { threadModule } from "../files.ts";
import { type Conversion, PayloadError } from "../integrations/inbound.ts";
import { TEMPLATE_LIMITS, TemplateError, type TemplateProblem } from "../integrations/template.ts";
import { ApiError } from "./errors.ts";

/*
 * Docks' templates are rendered in a thread of their own (template-thread.ts), never on the event
 * loop that answers requests. LiquidJS checks its time limit only between template nodes: one
 * filter over a long list (`where_exp` over 250,000 numbers) ran for seconds past it, and every
 * request of the service, /healthz included, waited. Here the render has a hard deadline: past it,
 * the thread is ended (Worker.terminate stops JavaScript wherever it is) and a new one takes the
 * next render. The thread's heap is capped too, so a render cannot fill the service's memory.
 *
 * One thread, one render at a time, in arrival order: a machine of two cores gains nothing from
 * more, and the per-Dock template time (inbound.ts) keeps one Dock from holding it. The thread
 * starts on the first render (most installations never use templates) and ends after a minute
 * without one, giving its memory back.
 */

/** A payload as its text and how the thread reads it again (see payloadOf in template-thread.ts). */
export interface TemplatePayload {
  text: string;
  /** JSON, form fields (application/x-www-form-urlencoded), or the text itself (XML, plain text). */
  as: "json" | "form" | "text";
}

/** What the main thread sends the template thread: a Dock's template (checked there) and a payload. */
export interface TemplateJob {
  template: unknown;
  payload: TemplatePayload;
}

/** The thread's answer to a job. */
export type TemplateReply =
  | { ok: true; conversion: Conversion }
  | { ok: false; problems: TemplateProblem[] }
  | { ok: false; payload: string }
  | { ok: false; failed: string };

/** A render's outcome, and how long it held the thread (what the Dock's template time is charged). */
export interface Rendered {
  threadMs: number;
  result: Conversion | TemplateError | PayloadError;
}

/**
 * A render that runs longer than this is stopped, its thread ended: the payload is read again in
 * the thread (a 1 MiB JSON body, ~30 ms) and every field rendered within LiquidJS's own
 * TEMPLATE_LIMITS.renderMs, which stops ordinary loops between nodes with a precise message.
 */
export const RENDER_DEADLINE_MS = 250;

/** The thread's heap: a 1 MiB payload, its plain copy and LiquidJS's TEMPLATE_LIMITS.memory fit well within. */
const THREAD_HEAP_MB = 64;

/** Renders waiting beyond this are refused (503, Retry-After): each holds its payload in memory. */
const MAX_WAITING = 32;

/** An idle thread is ended after this long, its heap returned. */
const IDLE_MS = 60_000;

interface Job extends TemplateJob {
  resolve: (rendered: Rendered) => void;
  reject: (error: Error) => void;
  startedAt?: number;
  deadline?: NodeJS.Timeout;
}

interface Thread {
  worker: Worker;
  ready: boolean;
}

/** A render the renderer stopped: which field was rendering is not known, so it names the template. */
const stopped = (message: string) => new TemplateError([{ field: "template", message }]);

/** Runs Docks' templates in a thread with a hard deadline and a capped heap (see the file's comment). */
export class TemplateRenderer {
  readonly #waiting: Job[] = [];
  #running: Job | null = null;
  #thread: Thread | null = null;
  #idle: NodeJS.Timeout | undefined;
  #closed = false;

  /**
   * The notification a Dock's template (as stored; checked in the thread) makes of a payload, or
   * the TemplateError or PayloadError it fails with, and the time it held the thread. Throws
   * ApiError `busy` when too many renders wait.
   */
  render(template: unknown, payload: TemplatePayload): Promise<Rendered> {
    if (this.#closed) return Promise.reject(new Error("the template renderer is closed"));
    if (this.#waiting.length >= MAX_WAITING) return Promise.reject(ApiError.retryAfter("busy", 1));
    return new Promise((resolve, reject) => {
      this.#waiting.push({ template, payload, resolve, reject });
      this.#next();
    });
  }

  /** Whether a render runs in the thread right now (the event loop answers other requests meanwhile). */
  get rendering(): boolean {
    return this.#running !== null;
  }

  /** Ends the thread; renders not finished fail. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#idle);
    const error = new Error("the template renderer is closed");
    for (const job of this.#waiting.splice(0)) job.reject(error);
    if (this.#running !== null) {
      clearTimeout(this.#running.deadline);
      this.#running.reject(error);
      this.#running = null;
    }
    const thread = this.#thread;
    this.#thread = null;
    await thread?.worker.terminate();
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
    // The thread's start (loading LiquidJS) is not the render's time: it begins once the thread is ready.
    if (!thread.ready) return;
    this.#waiting.shift();
    clearTimeout(this.#idle);
    this.#running = job;
    job.startedAt = performance.now();
    job.deadline = setTimeout(() => this.#overran(job), RENDER_DEADLINE_MS);
    thread.worker.postMessage({ template: job.template, payload: job.payload } satisfies TemplateJob);
  }

  #start(): Thread {
    const worker = new Worker(threadModule("http/template-thread"), {
      resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB },
    });
    // An idle renderer keeps nobody alive; a request waiting for its render does.
    worker.unref();
    const thread: Thread = { worker, ready: false };
    this.#thread = thread;
    worker.on("message", (message: TemplateReply | "ready") => {
      if (thread !== this.#thread) return;
      if (message === "ready") {
        thread.ready = true;
        this.#next();
      } else this.#finish(message);
    });
    worker.on("error", (error) => this.#lost(thread, error));
    worker.on("exit", (code) =>
      this.#lost(thread, new Error(`the template thread stopped (exit code ${code})`)),
    );
    return thread;
  }

  /** The running job's answer. */
  #finish(reply: TemplateReply): void {
    const job = this.#running;
    if (job === null) return;
    if (!reply.ok && "failed" in reply) {
      this.#settle(job, new Error(`the template thread failed: ${reply.failed}`));
      return;
    }
    this.#settle(job, { threadMs: this.#heldFor(job), result: resultOf(reply) });
  }

  /** The running job passed its deadline: the thread is ended wherever its JavaScript is. */
  #overran(job: Job): void {
    if (job !== this.#running) return;
    this.#end();
    this.#settle(job, {
      threadMs: RENDER_DEADLINE_MS,
      result: stopped(
        `took too long: stopped after ${RENDER_DEADLINE_MS} ms; a template may render for at most ${TEMPLATE_LIMITS.renderMs} ms, all fields together.`,
      ),
    });
  }

  /** The thread ended on its own: out of memory (the running render's fault), or a failure. */
  #lost(thread: Thread, error: Error): void {
    if (thread !== this.#thread) return;
    this.#thread = null;
    if (!thread.ready) {
      // It could not start: every render waiting would fail the same way.
      for (const job of this.#waiting.splice(0)) job.reject(error);
      return;
    }
    const job = this.#running;
    if (job === null) return;
    const outOfMemory = (error as NodeJS.ErrnoException).code === "ERR_WORKER_OUT_OF_MEMORY";
    this.#settle(
      job,
      outOfMemory
        ? {
            threadMs: this.#heldFor(job),
            result: stopped(`used too much memory: the render was stopped at its ${THREAD_HEAP_MB} MB heap.`),
          }
        : error,
    );
  }

  #heldFor(job: Job): number {
    return Math.min(RENDER_DEADLINE_MS, performance.now() - (job.startedAt ?? 0));
  }

  /** The running job is done: its outcome (or the failure that ended it) goes back, the next one starts. */
  #settle(job: Job, outcome: Rendered | Error): void {
    clearTimeout(job.deadline);
    this.#running = null;
    if (outcome instanceof Error) job.reject(outcome);
    else job.resolve(outcome);
    this.#next();
  }

  /** Ends the thread (idle, or stopping a render); the next render starts another. */
  #end(): void {
    const thread = this.#thread;
    this.#thread = null;
    thread?.worker.terminate().catch(() => {});
  }
}

function resultOf(reply: Exclude<TemplateReply, { failed: string }>): Rendered["result"] {
  if (reply.ok) return reply.conversion;
  return "problems" in reply ? new TemplateError(reply.problems) : new PayloadError(reply.payload);
}
