import { type ReactNode, useId, useState } from "react";
import type { MessageReport } from "../api.ts";

type Entity = MessageReport["shown"]["entities"][number];

/** A message longer than this (in lines or characters) shows its beginning until asked for more. */
const PREVIEW_LINES = 6;
const PREVIEW_CHARS = 300;
/** …unless what the fold would hide is this little: a click for a few words is not worth it. */
const WORTH_FOLDING = 80;

/** User-perceived characters: a flag, a family emoji or an accented letter stays whole. */
function graphemes(text: string): string[] {
  if (typeof Intl.Segmenter !== "function") return [...text];
  return Array.from(
    new Intl.Segmenter(undefined, { granularity: "grapheme" }).segment(text),
    (s) => s.segment,
  );
}

/** The message's beginning to show folded, or null when it is short enough to show whole. */
function preview(text: string): string | null {
  const lines = text.split("\n");
  if (lines.length <= PREVIEW_LINES && text.length <= PREVIEW_CHARS) return null;
  const shown = graphemes(lines.slice(0, PREVIEW_LINES).join("\n"))
    .slice(0, PREVIEW_CHARS)
    .join("")
    .trimEnd();
  const hidden = text.slice(shown.length).trim();
  if (hidden.length < WORTH_FOLDING && hidden.split("\n").length <= 2) return null;
  return `${shown}…`;
}

/** The element Telegram's app shows for an entity (links only to the schemes we send). */
function wrap(entity: Entity, children: ReactNode[], key: number): ReactNode {
  switch (entity.type) {
    case "bold":
      return <strong key={key}>{children}</strong>;
    case "italic":
      return <em key={key}>{children}</em>;
    case "underline":
      return <u key={key}>{children}</u>;
    case "strikethrough":
      return <s key={key}>{children}</s>;
    case "code":
      return <code key={key}>{children}</code>;
    case "pre":
      return (
        <pre key={key}>
          <code>{children}</code>
        </pre>
      );
    case "blockquote":
    case "expandable_blockquote":
      return <blockquote key={key}>{children}</blockquote>;
    case "text_link":
      return /^(https?|tg):/i.test(entity.url ?? "") ? (
        <a key={key} href={entity.url} target="_blank" rel="noopener noreferrer">
          {children}
        </a>
      ) : (
        <span key={key}>{children}</span>
      );
    case "hashtag":
      return (
        <span key={key} className="hashtag">
          {children}
        </span>
      );
    default:
      return <span key={key}>{children}</span>;
  }
}

/** `text[start, end)` with the entities inside it, nested as they nest (outermost first, sorted). */
function formatted(text: string, entities: Entity[], start = 0, end = text.length): ReactNode[] {
  const nodes: ReactNode[] = [];
  let position = start;
  for (let i = 0; i < entities.length; i++) {
    const entity = entities[i] as Entity;
    if (entity.offset < position || entity.offset >= end) continue;
    const entityEnd = Math.min(end, entity.offset + entity.length);
    if (entity.offset > position) nodes.push(text.slice(position, entity.offset));
    const inner = entities.slice(i + 1).filter((e) => e.offset < entityEnd);
    nodes.push(wrap(entity, formatted(text, inner, entity.offset, entityEnd), entity.offset));
    position = entityEnd;
  }
  if (position < end) nodes.push(text.slice(position, end));
  return nodes;
}

/**
 * A message as Telegram shows it (title, formatting, tags; newlines kept); a long one (up to
 * MAX_MESSAGE_LENGTH) folded.
 */
export function MessageText({ text, entities = [] }: { text: string; entities?: Entity[] }) {
  const [open, setOpen] = useState(false);
  const id = useId();
  const short = preview(text);
  if (short === null) return <div className="message-text">{formatted(text, entities)}</div>;
  // The fold shows the beginning with its formatting, then an ellipsis.
  const shown = open ? formatted(text, entities) : [...formatted(text, entities, 0, short.length - 1), "…"];
  return (
    <>
      <div className="message-text" id={id}>
        {shown}
      </div>
      {/* The label says what a press does; it is the state too, so no aria-expanded beside it
          (a screen reader would read "Show less, expanded"). */}
      <button type="button" className="small" aria-controls={id} onClick={() => setOpen(!open)}>
        {open ? "Show less" : "Show all"}
      </button>
    </>
  );
}
