import { createContext, type ReactNode, useCallback, useContext, useEffect, useRef, useState } from "react";
import { api, type DockEvent, type DockPart, ServiceError } from "./api.ts";

/** Events that come together are read as one: a busy Dock says something every second. */
const GATHER_MS = 250;
/** The first wait before opening the stream again after the service refused it; doubled up to the last. */
const REOPEN_MS = [5000, 10_000, 20_000, 40_000, 60_000];
const ALL_PARTS: readonly DockPart[] = [
  "settings",
  "subscribers",
  "messages",
  "audit",
  "audience",
  "refused",
];

/** Per part of a Dock, how often it changed. */
type PartVersions = Readonly<Record<DockPart, number>>;
/**
 * The parts read by default: all but the refused requests, which only their own section shows (a
 * Dock refusing a flood of requests would otherwise make every page read again each second).
 */
const SHOWN_PARTS: readonly DockPart[] = ALL_PARTS.filter((part) => part !== "refused");

const UNCHANGED: PartVersions = {
  settings: 0,
  subscribers: 0,
  messages: 0,
  audit: 0,
  audience: 0,
  refused: 0,
};

interface Versions {
  /** Goes up each time the stream opens again: everything may have changed while it was closed. */
  epoch: number;
  /** Goes up whenever the set of the person's Docks may have changed. */
  list: number;
  /** Goes up whenever who may sign in may have changed (told to administrators only). */
  owners: number;
  /** Per Dock and part of it: goes up whenever that part may have changed. */
  docks: ReadonlyMap<string, PartVersions>;
  /** The stream broke and is not open again yet: what the pages show may be old. */
  paused: boolean;
}

const START: Versions = { epoch: 0, list: 0, owners: 0, docks: new Map(), paused: false };
const LiveContext = createContext<Versions>(START);

/**
 * The console's one live stream (`GET api/stream`, Server-Sent Events): the service says which
 * Dock changed, and the parts showing that Dock read it again. Nothing polls. A `hello` after a
 * break counts as a change of everything, so what happened while it was closed is read too. A
 * stream the service refuses (the session ended, too many tabs) is not retried blindly: a session
 * that ended sends the person to sign in; otherwise it is tried again later and later.
 */
export function LiveProvider({ children, onSignedOut }: { children: ReactNode; onSignedOut: () => void }) {
  const [versions, setVersions] = useState<Versions>(START);

  useEffect(() => {
    let source: EventSource | null = null;
    let reopen: number | undefined;
    let gather: number | undefined;
    let stopped = false;
    let refusals = 0;
    let pendingList = false;
    let pendingOwners = false;
    const pendingDocks = new Map<string, Set<DockPart>>();

    const flush = () => {
      gather = undefined;
      const list = pendingList;
      const owners = pendingOwners;
      const changed = [...pendingDocks];
      pendingList = false;
      pendingOwners = false;
      pendingDocks.clear();
      setVersions((v) => {
        const docks = new Map(v.docks);
        for (const [id, parts] of changed) {
          const next = { ...(docks.get(id) ?? UNCHANGED) };
          for (const part of parts) next[part] += 1;
          docks.set(id, next);
        }
        return { ...v, list: v.list + (list ? 1 : 0), owners: v.owners + (owners ? 1 : 0), docks };
      });
    };
    const later = () => {
      if (gather === undefined) gather = window.setTimeout(flush, GATHER_MS);
    };

    const open = () => {
      source = new EventSource("api/stream");
      source.addEventListener("hello", () => {
        refusals = 0;
        // Everything is read again: after a break or an outage anything may have changed, and on
        // the first, the pages read before the stream began to watch (a change between the two
        // would never be told).
        setVersions((v) => ({ ...v, epoch: v.epoch + 1, paused: false }));
      });
      source.addEventListener("docks", () => {
        pendingList = true;
        later();
      });
      source.addEventListener("owners", () => {
        pendingOwners = true;
        later();
      });
      source.addEventListener("dock", (event) => {
        const { id, changed } = JSON.parse((event as MessageEvent<string>).data) as Partial<DockEvent>;
        if (typeof id !== "string") return;
        // Without the parts (a service from before they were told), all of it may have changed.
        const parts = Array.isArray(changed) ? changed.filter((p) => ALL_PARTS.includes(p)) : ALL_PARTS;
        const pending = pendingDocks.get(id) ?? new Set();
        for (const part of parts) pending.add(part);
        pendingDocks.set(id, pending);
        later();
      });
      source.addEventListener("signed_out", () => {
        stopped = true;
        source?.close();
        onSignedOut();
      });
      source.onerror = () => {
        setVersions((v) => (v.paused ? v : { ...v, paused: true }));
        // The browser reopens a dropped stream by itself; a refused one (an error answer) stays
        // closed: the session may have ended, or this person has too many tabs open.
        if (source?.readyState !== EventSource.CLOSED || stopped) return;
        // Tried again later and later: too many tabs, or the service away (restarting, its
        // database down).
        const retryLater = () => {
          const wait = REOPEN_MS[Math.min(refusals, REOPEN_MS.length - 1)];
          refusals += 1;
          if (!stopped) reopen = window.setTimeout(open, wait);
        };
        api("GET", "/session").then(retryLater, (e: unknown) => {
          if (e instanceof ServiceError && e.code === "not_signed_in") {
            stopped = true;
            onSignedOut();
          } else retryLater();
        });
      };
    };
    open();
    return () => {
      stopped = true;
      window.clearTimeout(reopen);
      window.clearTimeout(gather);
      source?.close();
    };
  }, [onSignedOut]);

  return <LiveContext.Provider value={versions}>{children}</LiveContext.Provider>;
}

/**
 * A value that changes whenever these parts of the Dock may have changed (its own event, or the
 * list's: a Dock deleted elsewhere is a change of the list): put it in an effect's dependencies.
 * A part that shows only the Dock's settings need not read again at every message.
 */
export function useDockVersion(id: string, parts: readonly DockPart[] = SHOWN_PARTS): string {
  const { docks, epoch, list } = useContext(LiveContext);
  const versions = docks.get(id) ?? UNCHANGED;
  return `${epoch}.${list}.${parts.map((part) => versions[part]).join(".")}`;
}

/** A value that changes whenever the list of Docks (or anything on it) may have changed. */
export function useListVersion(): string {
  const { docks, list, epoch } = useContext(LiveContext);
  let events = 0;
  for (const versions of docks.values()) for (const part of SHOWN_PARTS) events += versions[part];
  return `${epoch}.${list}.${events}`;
}

/** A value that changes whenever who may sign in (owners, invitations, their Docks) may have changed. */
export function useOwnersVersion(): string {
  const { owners, epoch } = useContext(LiveContext);
  return `${epoch}.${owners}`;
}

/** Whether the live stream is broken for now (the pages say what they show may be old). */
export function useLivePaused(): boolean {
  return useContext(LiveContext).paused;
}

/**
 * Reads something now, and again whenever `key` changes (what is read, and the live stream's
 * version of it). An answer to a read overtaken by a newer one, or by a change made here with
 * `set`, is dropped, so a slow read never puts back what a rotation or a removal just changed.
 * `error`: the latest read's failure (null once one succeeds), apart from any action's error.
 */
export function useLiveRead<T>(read: () => Promise<T>, key: string) {
  const [value, setValue] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  const sequence = useRef(0);
  const reader = useRef(read);
  reader.current = read;

  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` names what is read and its version: a new one is a new read.
  useEffect(() => {
    const mine = ++sequence.current;
    reader.current().then(
      (answer) => {
        if (mine !== sequence.current) return;
        setValue(answer);
        setError(null);
      },
      (e: unknown) => {
        if (mine === sequence.current) setError(e);
      },
    );
  }, [key]);

  /** A change made here, shown at once; reads already under way are dropped. */
  const set = useCallback((next: T | null | ((current: T | null) => T | null)) => {
    sequence.current += 1;
    setValue(next as T | null);
  }, []);

  return { value, error, set };
}
