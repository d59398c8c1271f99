import { useEffect, useRef, useState } from "react";
import {
  api,
  type MessageListAnswer,
  type MessageReport,
  type Subscriber,
  type SubscriberListAnswer,
} from "../api.ts";
import type { Guarded } from "./card-actions.ts";

/** How often a card refreshes its subscribers and delivery states. */
const REFRESH_MS = 2000;

/**
 * A Dock's subscribers and recent messages with their delivery states, read now and every
 * REFRESH_MS while the card is shown (null until the first read). `failed` hears of a read that
 * failed and answers true when the Dock itself is gone, which ends the reading.
 */
export function useDockActivity(dockId: string, guarded: Guarded, failed: (e: unknown) => boolean) {
  const [subscribers, setSubscribers] = useState<Subscriber[] | null>(null);
  const [messages, setMessages] = useState<MessageReport[] | null>(null);
  const base = `/docks/${dockId}`;
  // The refresh timer below outlives renders; it calls the current one.
  const failedNow = useRef(failed);
  failedNow.current = failed;

  useEffect(() => {
    let stopped = false;
    const refresh = async () => {
      try {
        const [subs, msgs] = await Promise.all([
          guarded(() => api<SubscriberListAnswer>("GET", `${base}/subscribers`)),
          guarded(() => api<MessageListAnswer>("GET", `${base}/messages`)),
        ]);
        if (stopped) return;
        setSubscribers(subs.subscribers);
        setMessages(msgs.messages);
      } catch (e) {
        if (stopped) return;
        // Only these reads say 404 for the Dock itself (a subscriber's removal says it for the chat).
        if (failedNow.current(e)) stopped = true;
      }
    };
    void refresh();
    const timer = window.setInterval(refresh, REFRESH_MS);
    return () => {
      stopped = true;
      window.clearInterval(timer);
    };
  }, [base, guarded]);

  /** Takes a removed chat off the list at once, before the next read. */
  const dropSubscriber = (chatId: number) =>
    setSubscribers((current) => current?.filter((x) => x.chat_id !== chatId) ?? null);

  return { subscribers, messages, dropSubscriber };
}
