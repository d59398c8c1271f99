import { TooComplexError } from "./inbound.ts";

/*
 * An XML body's shape, counted before any parser reads it: fast-xml-parser's work grows with the
 * elements, attributes and references it meets (78,000 attributes in 847 KB held the event loop
 * for 1.2 s, a megabyte of empty elements for 0.8 s), while this count is one pass over the text
 * (a few milliseconds for a megabyte). A body over a limit is refused before it is parsed.
 */

/** How much of each an XML body may hold. */
export interface XmlLimits {
  /** Start tags, self-closing ones included. */
  elements: number;
  /** Attributes of all elements together. */
  attributes: number;
  /** Elements open inside each other. */
  depth: number;
  /** Entity and character references (`&amp;`, `&#65;`) in text and attribute values. */
  references: number;
}

/** `count` occurrences of `char` in `text` from `from` to `to`. */
function countOf(text: string, char: string, from: number, to: number): number {
  let count = 0;
  for (let at = text.indexOf(char, from); at >= 0 && at < to; at = text.indexOf(char, at + 1)) count++;
  return count;
}

/**
 * Throws TooComplexError when the XML holds more than `limits` allow, naming the limit. Comments,
 * CDATA sections, processing instructions and declarations are skipped as the parser skips them;
 * whether the XML is well-formed is the parser's to say.
 */
export function checkXmlShape(xml: string, limits: XmlLimits): void {
  let elements = 0;
  let attributes = 0;
  let depth = 0;
  let references = 0;
  const over = (what: string, limit: number) =>
    new TooComplexError(`the XML has more than ${limit.toLocaleString("en-US")} ${what}`);
  let at = 0;
  while (at < xml.length) {
    const open = xml.indexOf("<", at);
    const textEnd = open < 0 ? xml.length : open;
    references += countOf(xml, "&", at, textEnd);
    if (references > limits.references) throw over("entity or character references", limits.references);
    if (open < 0) break;
    const skipTo = (end: string) => {
      const found = xml.indexOf(end, open);
      return found < 0 ? xml.length : found + end.length;
    };
    if (xml.startsWith("<!--", open)) at = skipTo("-->");
    else if (xml.startsWith("<![CDATA[", open)) at = skipTo("]]>");
    else if (xml.startsWith("<?", open)) at = skipTo("?>");
    else if (xml.startsWith("<!", open)) at = skipTo(">");
    else if (xml.startsWith("</", open)) {
      depth--;
      at = skipTo(">");
    } else {
      // A start tag: its attributes are the `=` outside quoted values, its references inside them.
      elements++;
      if (elements > limits.elements) throw over("elements", limits.elements);
      let quote = "";
      let end = open + 1;
      for (; end < xml.length; end++) {
        const char = xml[end];
        if (quote !== "") {
          if (char === quote) quote = "";
          else if (char === "&") references++;
        } else if (char === '"' || char === "'") quote = char;
        else if (char === "=" && ++attributes > limits.attributes)
          throw over("attributes", limits.attributes);
        else if (char === ">") break;
      }
      if (references > limits.references) throw over("entity or character references", limits.references);
      if (depth + 1 > limits.depth) throw over("levels of nested elements", limits.depth);
      if (xml[end - 1] !== "/") depth++;
      at = end + 1;
    }
  }
}
