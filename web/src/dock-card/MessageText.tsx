import { useId, useState } from "react";

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

/** A message's text as sent (newlines kept); a long one (up to MAX_MESSAGE_LENGTH) folded. */
export function MessageText({ text }: { text: string }) {
  const [open, setOpen] = useState(false);
  const id = useId();
  const short = preview(text);
  if (short === null) return <p className="message-text">{text}</p>;
  return (
    <>
      <p className="message-text" id={id}>
        {open ? text : short}
      </p>
      {/* The label says what a press does; it is the state too, so no aria-expanded beside it
          (a screen reader would read "Show less, expanded"). */}
      <button type="button" className="small" aria-controls={id} onClick={() => setOpen(!open)}>
        {open ? "Show less" : "Show all"}
      </button>
    </>
  );
}
