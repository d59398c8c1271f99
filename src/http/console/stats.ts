import { notificationBody } from "../../domain/render.ts";
import type { Headline } from "../../store/activity.ts";
import type { DockStats } from "./schemas.ts";

/** Characters of a message's preview on the list of Docks. */
const PREVIEW_LENGTH = 100;

/**
 * The first PREVIEW_LENGTH characters (code points: an emoji is never cut in half) of what the
 * message shows in the chat — its title, text and tags — on one line, without formatting.
 */
export function previewOf(shown: string): string {
  return Array.from(shown.replace(/\s+/g, " ").trim()).slice(0, PREVIEW_LENGTH).join("");
}

/** A Dock's headline numbers as the console API names them. */
export function dockStats(subscribers: number, headline: Headline | undefined): DockStats {
  const last = headline?.lastMessage ?? null;
  return {
    subscribers,
    accepted_7d: headline?.accepted7d ?? 0,
    failed_7d: headline?.failed7d ?? 0,
    last_message:
      last === null
        ? null
        : {
            id: last.id,
            created_at: last.createdAt,
            preview: previewOf(notificationBody(last.text, last.content).text),
            states: last.states,
          },
  };
}
