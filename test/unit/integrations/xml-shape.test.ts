import { describe, expect, it } from "vitest";
import { apprise } from "../../../src/integrations/apprise.ts";
import { TooComplexError } from "../../../src/integrations/inbound.ts";
import { checkXmlShape, type XmlLimits } from "../../../src/integrations/xml-shape.ts";
import { notified, received } from "./harness.ts";

const LIMITS: XmlLimits = { elements: 10, attributes: 4, depth: 3, references: 5 };

/** What checkXmlShape says of `xml` under LIMITS: "ok", or its TooComplexError's message. */
function shape(xml: string): string {
  try {
    checkXmlShape(xml, LIMITS);
    return "ok";
  } catch (error) {
    expect(error).toBeInstanceOf(TooComplexError);
    return (error as Error).message;
  }
}

describe("an XML body's shape, counted before it is parsed", () => {
  it("names the limit a body is over", () => {
    expect(shape(`<a>${"<b/>".repeat(9)}</a>`)).toBe("ok");
    expect(shape(`<a>${"<b/>".repeat(10)}</a>`)).toBe("the XML has more than 10 elements");
    expect(shape('<a x="1" y="2"><b z="3" w="4"/></a>')).toBe("ok");
    expect(shape('<a x="1" y="2"><b z="3" w="4" v="5"/></a>')).toBe("the XML has more than 4 attributes");
    expect(shape("<a><b><c/></b></a>")).toBe("ok");
    expect(shape("<a><b><c><d/></c></b></a>")).toBe("the XML has more than 3 levels of nested elements");
    expect(shape(`<a t="&amp;&lt;">${"&#65;".repeat(3)}</a>`)).toBe("ok");
    expect(shape(`<a t="&amp;&lt;">${"&#65;".repeat(4)}</a>`)).toBe(
      "the XML has more than 5 entity or character references",
    );
  });

  it("counts what the parser reads: not comments, CDATA, declarations, nor = and > inside quoted values", () => {
    const inert = `<?xml version="1.0"?><!-- <x a="1"> --><a title="x=y > z"><![CDATA[<b c="d">&amp;&amp;&amp;&amp;&amp;&amp;]]>text = 1</a>`;
    expect(shape(inert)).toBe("ok");
    // Closed elements make room for the next level.
    expect(shape("<a><b><c/></b><b><c/></b></a>")).toBe("ok");
  });

  it("Apprise's envelope with attachments is well within Apprise's limits, and 78,000 attributes are not", async () => {
    const attachments = Array.from(
      { length: 20 },
      (_, i) => `<Attachment filename="f${i}.txt" mimetype="text/plain">aGVsbG8=</Attachment>`,
    ).join("");
    const envelope = `<?xml version='1.0' encoding='utf-8'?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body><Notification xmlns:xsi="http://nuxref.com/apprise/NotifyXML-1.1.xsd"><Version>1.1</Version><Subject>Backup</Subject><MessageType>success</MessageType><Message>Done &amp; dusted</Message><Attachments format="base64">${attachments}</Attachments></Notification></soapenv:Body></soapenv:Envelope>`;
    const notification = await notified(apprise, received(envelope, "application/xml"));
    expect(notification.msg).toBe(
      "Done & dusted\n\n📎 Not shown: f0.txt, f1.txt, f2.txt, f3.txt, f4.txt, 15 more attachments",
    );
    const attributes = Array.from({ length: 78_000 }, (_, i) => `a${i}="x"`).join(" ");
    const refused = await Promise.resolve(
      apprise.convert(
        received(`<Notification ${attributes}><Message>hi</Message></Notification>`, "application/xml"),
      ),
    ).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TooComplexError);
    expect((refused as Error).message).toBe("the XML has more than 1,000 attributes");
  });
});
