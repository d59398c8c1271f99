import { mkdir, open, readFile, rename } from "node:fs/promises";
import { dirname } from "node:path";
import { Type } from "typebox";
import Value from "typebox/value";
import type { EmulatorState } from "./emulator.ts";

/**
 * The built-in sandbox's state file: the emulator's snapshot (people, chats and their history,
 * pending updates, the bot's commands) as JSON, so a restart of the service finds the people its
 * database has subscriptions for. The emulator knows nothing of files; the plugin wires the two.
 */

/** The file format this code writes and reads; a file of another version is set aside. */
export const STATE_VERSION = 1;

/** Shortest time from a change to its write: a burst of changes is one write. */
const MIN_INTERVAL_MS = 250;
/** The interval grows with the time serialising takes, so a huge state costs at most ~5 % CPU. */
const SERIALISE_SHARE = 20;
/** After a failed write (disk full, folder gone) the next attempt waits this long. */
const RETRY_MS = 5_000;

const Id = Type.Integer();
const AnyObject = Type.Object({});
const User = Type.Object({
  id: Id,
  is_bot: Type.Literal(false),
  first_name: Type.String(),
  last_name: Type.Optional(Type.String()),
  username: Type.Optional(Type.String()),
  language_code: Type.Optional(Type.String()),
});
const StoredMessage = Type.Object({
  message: Type.Object({ message_id: Id, from: Type.Object({ id: Id }), chat: AnyObject, date: Id }),
  markup: Type.Optional(AnyObject),
  disableNotification: Type.Optional(Type.Boolean()),
});
const BotStatus = Type.Union(["member", "administrator", "left", "kicked"].map((s) => Type.Literal(s)));
const Chat = Type.Object({
  id: Id,
  type: Type.Union(["private", "group", "supergroup"].map((s) => Type.Literal(s))),
  title: Type.Optional(Type.String()),
  userId: Type.Optional(Id),
  creatorId: Type.Optional(Id),
  members: Type.Array(Id),
  admins: Type.Array(Id),
  botStatus: BotStatus,
  instance: Type.String(),
  nextMessageId: Type.Integer({ minimum: 1 }),
  messages: Type.Array(StoredMessage),
  keyboard: Type.Union([AnyObject, Type.Null()]),
  migratedTo: Type.Optional(Id),
});
/** The file's shape; checked whole before anything is restored, so a bad file changes nothing. */
const StateFileSchema = Type.Object({
  version: Type.Literal(STATE_VERSION),
  users: Type.Array(User),
  chats: Type.Array(Chat),
  nextIds: Type.Object({ user: Id, group: Id, supergroup: Id, message: Type.Optional(Id) }),
  updates: Type.Object({
    nextUpdateId: Id,
    pending: Type.Array(Type.Object({ update_id: Id })),
    allowedUpdates: Type.Union([Type.Array(Type.String()), Type.Null()]),
  }),
  commands: Type.Array(
    Type.Tuple([
      Type.String(),
      Type.Array(Type.Object({ command: Type.String(), description: Type.String() })),
    ]),
  ),
});

/** The text of a state file for a snapshot. */
export function serializeState(state: EmulatorState): string {
  return JSON.stringify({ version: STATE_VERSION, ...state });
}

/** Reads a state file's text; throws an Error saying what is wrong with it. */
export function parseState(text: string): EmulatorState {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`not JSON: ${(error as Error).message}`);
  }
  const version = (value as { version?: unknown } | null)?.version;
  if (version !== STATE_VERSION) {
    throw new Error(
      `version ${JSON.stringify(version)}, but this Dock Notify reads version ${STATE_VERSION}`,
    );
  }
  if (!Value.Check(StateFileSchema, value)) {
    const [issue] = Value.Errors(StateFileSchema, value);
    throw new Error(`${issue?.instancePath || "the file"} ${issue?.message ?? "is not valid"}`);
  }
  const { version: _version, ...state } = value;
  return state as unknown as EmulatorState;
}

/** Where the state file reports what went wrong (the service's logger). */
export interface StateFileLog {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

/**
 * Keeps one snapshot source written to one file. Writes are coalesced (`changed()` at any rate
 * means at most one write per ~250 ms) and atomic (a temp file beside it, fsync, rename), so the
 * file is always a whole snapshot: a crash loses at most the changes of the last interval.
 */
export class StateFile {
  readonly path: string;
  readonly #log: StateFileLog;
  readonly #snapshot: () => EmulatorState;
  #dirty = false;
  #timer: NodeJS.Timeout | undefined;
  #writing: Promise<void> | undefined;
  #interval = MIN_INTERVAL_MS;
  #failing = false;
  #closed = false;
  /** Set when a bad file could not be moved aside: writing would destroy it. */
  #disabled = false;

  /** `snapshot` is asked for the state to write, only after `changed()`. */
  constructor(path: string, log: StateFileLog, snapshot: () => EmulatorState) {
    this.path = path;
    this.#log = log;
    this.#snapshot = snapshot;
  }

  /**
   * The state of the last run, or undefined for a fresh sandbox: no file yet, or a file that
   * cannot be used, which is moved aside to `<file>.corrupt-<time>` with a warning (a sandbox
   * that starts empty is better than a service that does not start).
   */
  async load(): Promise<EmulatorState | undefined> {
    let text: string;
    try {
      text = await readFile(this.path, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      return this.#setAside(`cannot be read: ${(error as Error).message}`);
    }
    try {
      return parseState(text);
    } catch (error) {
      return this.#setAside((error as Error).message);
    }
  }

  async #setAside(reason: string): Promise<undefined> {
    const aside = `${this.path}.corrupt-${new Date().toISOString().replace(/[:.]/g, "-")}`;
    try {
      await rename(this.path, aside);
    } catch (error) {
      this.#disabled = true;
      this.#log.warn(
        { file: this.path, reason, err: error },
        `the sandbox state file ${this.path} cannot be used (${reason}) nor moved aside: the sandbox starts empty and keeps its state in memory only until it stops`,
      );
      return undefined;
    }
    this.#log.warn(
      { file: this.path, movedTo: aside, reason },
      `the sandbox state file ${this.path} cannot be used (${reason}): moved it to ${aside}; the sandbox starts empty`,
    );
    return undefined;
  }

  /** Something changed: write a snapshot soon, together with whatever else changes meanwhile. */
  changed(): void {
    this.#dirty = true;
    this.#arm();
  }

  /** Writes what is still unwritten and stops; call when the server closes. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#writing;
    if (this.#dirty) await this.#flush();
  }

  #arm(): void {
    if (this.#timer || this.#writing || this.#closed || this.#disabled) return;
    this.#timer = setTimeout(() => void this.#flush(), this.#interval);
  }

  #flush(): Promise<void> {
    this.#timer = undefined;
    if (this.#disabled) return Promise.resolve();
    this.#dirty = false;
    const started = performance.now();
    // Serialised at once, in one go: the file is the state of one instant.
    const text = serializeState(this.#snapshot());
    const serialising = performance.now() - started;
    const writing = this.#write(text).then((written) => {
      this.#writing = undefined;
      if (!written) this.#dirty = true;
      this.#interval = written ? Math.max(MIN_INTERVAL_MS, serialising * SERIALISE_SHARE) : RETRY_MS;
      if (this.#dirty) this.#arm();
    });
    this.#writing = writing;
    return writing;
  }

  /** Replaces the file atomically: readers see the old snapshot or the new one, never half. */
  async #write(text: string): Promise<boolean> {
    const temp = `${this.path}.tmp`;
    try {
      await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
      const file = await open(temp, "w", 0o600);
      try {
        await file.writeFile(text);
        await file.datasync();
      } finally {
        await file.close();
      }
      await rename(temp, this.path);
    } catch (error) {
      if (!this.#failing) {
        this.#log.warn(
          { file: this.path, err: error },
          `could not write the sandbox state file ${this.path}; trying again every ${RETRY_MS / 1000} s`,
        );
      }
      this.#failing = true;
      return false;
    }
    if (this.#failing) this.#log.info({ file: this.path }, "the sandbox state file is written again");
    this.#failing = false;
    return true;
  }
}
