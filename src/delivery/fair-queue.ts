/** What the fair queue needs to know of a delivery. */
export interface Queued {
  /** Increasing in the order deliveries were queued: each chat's deliveries leave in this order. */
  id: number;
  dockId: string;
  chatId: number;
}

/** One Dock's deliveries in memory: a FIFO per chat, its chats visited round-robin. */
interface DockQueues<D> {
  chats: Map<number, D[]>;
  order: number[];
  cursor: number;
  /** Deliveries of this Dock held. */
  held: number;
  /** The last read filled this Dock's share: the database may hold more. */
  more: boolean;
}

/**
 * The deliveries the dispatcher holds in memory, and which goes next. Pure: no clock, no database,
 * no Telegram — the caller says when a chat's head may go (`readyAt`) and which chats are busy.
 *
 * Fairness: Docks are served round-robin, and each Dock's chats round-robin, so a Dock with 10,000
 * subscribers or a flood of messages does not hold back another Dock's single message. Order: a
 * chat's deliveries of one Dock leave in id order (only a chat's head may go, and a busy chat's
 * head waits).
 */
export class FairQueue<D extends Queued> {
  readonly #docks = new Map<string, DockQueues<D>>();
  #dockOrder: string[] = [];
  #dockCursor = 0;
  readonly #known = new Set<number>();
  /** A Dock below this many held deliveries, with more in the database, asks to be refilled. */
  readonly #lowWater: number;

  /** `windowPerDock`: how many deliveries of one Dock are held at most (refilled at half). */
  constructor(windowPerDock: number) {
    this.#lowWater = windowPerDock / 2;
  }

  /** Whether the delivery is held. */
  has(id: number): boolean {
    return this.#known.has(id);
  }

  /** Whether nothing at all is held. */
  get empty(): boolean {
    return this.#docks.size === 0;
  }

  /** Whether any delivery to the chat is held, of any Dock. */
  holdsChat(chatId: number): boolean {
    for (const dock of this.#docks.values()) if (dock.chats.has(chatId)) return true;
    return false;
  }

  /** How many of the Dock's deliveries are held. */
  held(dockId: string): number {
    return this.#docks.get(dockId)?.held ?? 0;
  }

  /**
   * Notes whether the database holds more of the Dock's deliveries than were read; false when none
   * of the Dock's are held (nothing would ask for the rest: the caller must).
   */
  setMore(dockId: string, more: boolean): boolean {
    const dock = this.#docks.get(dockId);
    if (dock) dock.more = more;
    return dock !== undefined;
  }

  /** Holds a delivery, behind its chat's earlier ones (a row found again may be older than those held). */
  hold(delivery: D): void {
    if (this.#known.has(delivery.id)) return;
    this.#known.add(delivery.id);
    let dock = this.#docks.get(delivery.dockId);
    if (!dock) {
      dock = { chats: new Map(), order: [], cursor: 0, held: 0, more: false };
      this.#docks.set(delivery.dockId, dock);
      this.#dockOrder.push(delivery.dockId);
    }
    let queue = dock.chats.get(delivery.chatId);
    if (!queue) {
      queue = [];
      dock.chats.set(delivery.chatId, queue);
      dock.order.push(delivery.chatId);
    }
    let at = queue.length;
    while (at > 0 && (queue[at - 1] as D).id > delivery.id) at--;
    queue.splice(at, 0, delivery);
    dock.held++;
  }

  /**
   * Lets a delivery go (sent, failed, gone). True when its Dock is now running low and the
   * database holds more of it: the caller reads them.
   */
  remove(delivery: D): boolean {
    this.#known.delete(delivery.id);
    const dock = this.#docks.get(delivery.dockId);
    const queue = dock?.chats.get(delivery.chatId);
    if (!dock || !queue) return false;
    const index = queue.indexOf(delivery);
    if (index >= 0) {
      queue.splice(index, 1);
      dock.held--;
    }
    // In place: a fan-out empties a chat with each copy sent, hundreds held, a thousand a second.
    if (queue.length === 0) {
      dock.chats.delete(delivery.chatId);
      removeFrom(dock.order, delivery.chatId);
    }
    if (dock.chats.size === 0) {
      this.#docks.delete(delivery.dockId);
      removeFrom(this.#dockOrder, delivery.dockId);
    }
    if (dock.more && dock.held < this.#lowWater) {
      dock.more = false;
      return true;
    }
    return false;
  }

  /** Lets every delivery of a chat go (it became unreachable); the Docks that now run low. */
  dropChat(chatId: number): string[] {
    const low: string[] = [];
    for (const dock of [...this.#docks.values()]) {
      // A copy: remove changes the chat's queue while we walk it.
      for (const delivery of [...(dock.chats.get(chatId) ?? [])]) {
        if (this.remove(delivery)) low.push(delivery.dockId);
      }
    }
    return low;
  }

  /**
   * A chat got a new id (a group became a supergroup, `from` → `to`): its deliveries wait under
   * the new id, merged in id order with any the new chat already has, so each Dock's order holds.
   * `change` updates what else the delivery records about its chat.
   */
  moveChat(from: number, to: number, change: (delivery: D) => void = () => {}): void {
    for (const dock of this.#docks.values()) {
      const moving = dock.chats.get(from);
      if (moving === undefined) continue;
      for (const delivery of moving) {
        delivery.chatId = to;
        change(delivery);
      }
      const existing = dock.chats.get(to);
      dock.chats.delete(from);
      dock.chats.set(
        to,
        [...(existing ?? []), ...moving].sort((a, b) => a.id - b.id),
      );
      dock.order =
        existing === undefined
          ? dock.order.map((id) => (id === from ? to : id))
          : dock.order.filter((id) => id !== from);
    }
  }

  /**
   * The next delivery that may go at `now`, round-robin over Docks and their chats, skipping busy
   * chats; or, when none may, the earliest time one will (Infinity: none held). Taking it moves
   * the cursors past it, so the next call starts with the next chat and the next Dock.
   */
  next(
    now: number,
    busy: (chatId: number) => boolean,
    readyAt: (head: D) => number,
  ): { delivery: D } | { delivery: null; at: number } {
    let earliest = Number.POSITIVE_INFINITY;
    for (let d = 0; d < this.#dockOrder.length; d++) {
      const dockIndex = (this.#dockCursor + d) % this.#dockOrder.length;
      const dock = this.#docks.get(this.#dockOrder[dockIndex] as string) as DockQueues<D>;
      for (let c = 0; c < dock.order.length; c++) {
        const chatIndex = (dock.cursor + c) % dock.order.length;
        const chatId = dock.order[chatIndex] as number;
        if (busy(chatId)) continue;
        const head = dock.chats.get(chatId)?.[0];
        if (!head) continue;
        const at = readyAt(head);
        if (at <= now) {
          dock.cursor = chatIndex + 1;
          this.#dockCursor = dockIndex + 1;
          return { delivery: head };
        }
        earliest = Math.min(earliest, at);
      }
    }
    return { delivery: null, at: earliest };
  }

  /** Every delivery held, Dock by Dock and chat by chat. */
  *all(): IterableIterator<D> {
    for (const dock of this.#docks.values()) for (const queue of dock.chats.values()) yield* queue;
  }

  /** Forgets everything (no longer the leader: the next one reads the queue from the database). */
  clear(): void {
    this.#docks.clear();
    this.#dockOrder = [];
    this.#dockCursor = 0;
    this.#known.clear();
  }
}

/** Takes `value` out of `list`, in place (nothing if it is not there). */
function removeFrom<T>(list: T[], value: T): void {
  const at = list.indexOf(value);
  if (at >= 0) list.splice(at, 1);
}
