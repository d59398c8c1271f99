import type { MessageLocks } from "../db.ts";

/** MessageLocks on SQLite: its write transactions run one at a time, so there is nothing to order. */
export const SERIAL_MESSAGE_LOCKS: MessageLocks = {
  shared: async () => {},
  exclusive: async () => {},
};
