import { Liquid } from "liquidjs";
import { describe, expect, it, vi } from "vitest";
import { prepareContent } from "../../../src/domain/message-options.ts";
import { CPU_CLOCK, threadClock } from "../../../src/domain/thread-clock.ts";
import { PayloadError } from "../../../src/integrations/inbound.ts";
import {
  type DockTemplate,
  RenderTimeLimit,
  renderTemplate,
  TEMPLATE_LIMITS,
  TemplateError,
  type TemplateProblem,
  validateTemplate,
} from "../../../src/integrations/template.ts";

/** The notification a template makes of a payload. */
async function render(template: DockTemplate, payload: unknown) {
  const conversion = await renderTemplate(template, payload);
  if (conversion.kind !== "notify") throw new Error("expected a notification");
  return conversion.notification;
}

/** The text a one-field template renders. */
const text = async (source: string, payload: unknown) => (await render({ text: source }, payload)).msg;

/** The problems a failing render reports. */
async function renderProblems(template: DockTemplate, payload: unknown): Promise<TemplateProblem[]> {
  try {
    await renderTemplate(template, payload);
  } catch (error) {
    if (error instanceof TemplateError) return error.problems;
    throw error;
  }
  throw new Error("expected the template to fail");
}

/** The problems validateTemplate reports. */
async function invalid(input: unknown): Promise<TemplateProblem[]> {
  const checked = await validateTemplate(input);
  if (checked.ok) throw new Error("expected the template to be refused");
  return checked.errors;
}

const grafana = {
  receiver: "telegram",
  status: "firing",
  groupKey: '{}:{alertname="DiskFull"}',
  externalURL: "https://grafana.example.com/",
  commonLabels: { alertname: "DiskFull", severity: "critical" },
  alerts: [
    {
      status: "firing",
      labels: { alertname: "DiskFull", instance: "db-1" },
      annotations: { summary: "Disk 95% full on db-1" },
      startsAt: "2024-05-01T12:34:56Z",
      generatorURL: "https://grafana.example.com/alerting/grafana/abc/view",
      dashboardURL: "https://grafana.example.com/d/xyz",
    },
    {
      status: "firing",
      labels: { alertname: "DiskFull", instance: "db-2" },
      annotations: { summary: "Disk 91% full on db-2" },
      startsAt: "2024-05-01T12:35:00Z",
      generatorURL: "https://grafana.example.com/alerting/grafana/def/view",
      dashboardURL: "",
    },
  ],
};

const grafanaTemplate: DockTemplate = {
  title: "[{{ status | upcase }}] {{ commonLabels.alertname }}",
  text: [
    "{% for alert in alerts %}",
    "- {{ alert.annotations.summary }} (since {{ alert.startsAt | date: '%H:%M' }})",
    "{% endfor %}",
  ].join("\n"),
  key: "{{ groupKey }}",
  final: '{% if status == "resolved" %}true{% endif %}',
  tags: "{{ commonLabels.severity }}, grafana",
  priority: '{% if commonLabels.severity == "critical" %}urgent{% else %}default{% endif %}',
  click: "{{ externalURL }}",
  buttons: [
    "{% for alert in alerts %}",
    "{{ alert.labels.instance }} | {{ alert.generatorURL }}",
    "{% if alert.dashboardURL != blank %}Dashboard | {{ alert.dashboardURL }}{% endif %}",
    "{% endfor %}",
  ].join("\n"),
};

describe("rendering a payload with a Dock's template", () => {
  it("makes a Grafana alert's title, text, tags, priority, key and buttons", async () => {
    expect(await render(grafanaTemplate, grafana)).toEqual({
      msg: "- Disk 95% full on db-1 (since 12:34)\n\n- Disk 91% full on db-2 (since 12:35)",
      options: {
        title: "[FIRING] DiskFull",
        tags: ["critical", "grafana"],
        priority: "urgent",
        click: "https://grafana.example.com/",
        buttons: [
          [
            { text: "db-1", url: "https://grafana.example.com/alerting/grafana/abc/view" },
            { text: "Dashboard", url: "https://grafana.example.com/d/xyz" },
            { text: "db-2", url: "https://grafana.example.com/alerting/grafana/def/view" },
          ],
        ],
      },
      key: '{}:{alertname="DiskFull"}',
    });
  });

  it("marks the resolved alert as its key's last message", async () => {
    const resolved = await render(grafanaTemplate, { ...grafana, status: "resolved" });
    expect(resolved.final).toBe(true);
    expect(resolved.key).toBe('{}:{alertname="DiskFull"}');
  });

  it("reads a generic payload's fields at the top level and under payload", async () => {
    const payload = { event: "deploy", service: { name: "api" }, ok: true };
    const notification = await render(
      {
        text: "{{ event }} of {{ service.name }} {% if ok %}succeeded{% endif %} ({{ payload.service.name }})",
        format: "markdown",
        priority: "4",
        tags: "rocket,,  ",
      },
      payload,
    );
    expect(notification).toEqual({
      msg: "deploy of api succeeded (api)",
      options: { format: "markdown", priority: "high", tags: ["rocket"] },
    });
  });

  it("leaves out the fields that render empty", async () => {
    expect(
      await render(
        {
          text: "hi",
          title: "{{ missing }}",
          key: " ",
          final: "",
          tags: "",
          priority: "",
          click: "",
          buttons: "\n",
        },
        {},
      ),
    ).toEqual({ msg: "hi", options: {} });
  });

  it("lets payload name the whole payload even when it has a field called payload", async () => {
    expect(await text("{{ payload.payload }} {{ payload.n }}", { payload: "inner", n: 1 })).toBe("inner 1");
  });

  it("renders an array payload by index", async () => {
    expect(
      await text("{{ payload[0].name }} and {{ payload.size }}", [{ name: "first" }, { name: "x" }]),
    ).toBe("first and 2");
  });

  it("renders a text or number payload through payload", async () => {
    expect(await text("got {{ payload | upcase }}", "disk full")).toBe("got DISK FULL");
    expect(await text("{{ payload | plus: 1 }}", 41)).toBe("42");
  });

  it("has Liquid's filters", async () => {
    const payload = { name: "db-1", at: "2024-05-01T12:34:56Z", tags: ["a", "b"], long: "abcdefghijklmnop" };
    expect(await text("{{ name | upcase }}", payload)).toBe("DB-1");
    expect(await text("{{ at | date: '%Y-%m-%d %H:%M' }}", payload)).toBe("2024-05-01 12:34");
    expect(await text("{{ at | date: '%H:%M', 'Europe/Berlin' }}", payload)).toBe("14:34");
    expect(await text("{{ tags | json }}", payload)).toBe('["a","b"]');
    expect(await text("{{ nothing | default: 'none' }}", payload)).toBe("none");
    expect(await text("{{ tags | size }} {{ name | size }}", payload)).toBe("2 4");
    expect(await text("{{ tags | join: ' + ' }}", payload)).toBe("a + b");
    expect(await text("{{ long | truncate: 8 }}", payload)).toBe("abcde...");
  });

  it("parses a template once, however often it renders", async () => {
    const parse = vi.spyOn(Liquid.prototype, "parse");
    try {
      const template = { text: `parsed once ${Math.random()}: {{ n }}` };
      for (let n = 0; n < 3; n++) await render(template, { n });
      await validateTemplate(template);
      expect(parse).toHaveBeenCalledTimes(1);
    } finally {
      parse.mockRestore();
    }
  });

  it("cuts lone surrogates and NUL characters out of what it renders", async () => {
    expect(await text("{{ t }}", { t: "a\u0000b\ud800c" })).toBe("ab\ufffdc");
  });
});

describe("checking a template", () => {
  it("takes a complete template and leaves out empty fields", async () => {
    expect(await validateTemplate({ ...grafanaTemplate, format: "html", click: null, key: "" })).toEqual({
      ok: true,
      value: { ...grafanaTemplate, format: "html", click: undefined, key: undefined },
    });
    expect(await validateTemplate({ text: "hi", format: "text" })).toEqual({
      ok: true,
      value: { text: "hi" },
    });
  });

  it("says the line and column of a Liquid error", async () => {
    expect(await invalid({ text: "Alerts:\n  {% for a in alerts %}{{ a }}" })).toEqual([
      {
        field: "text",
        message: "line 2, column 3: tag {% for a in alerts %} not closed.",
        line: 2,
        column: 3,
      },
    ]);
    expect(await invalid({ text: "ok", title: "x\n {% endfor %}" })).toEqual([
      { field: "title", message: 'line 2, column 2: tag "endfor" not found.', line: 2, column: 2 },
    ]);
    const [problem] = await invalid({ text: "{{ name" });
    expect(problem).toMatchObject({ field: "text", line: 1, column: 1 });
    expect(problem?.message).toMatch(/^line 1, column 1: output .* not closed\.$/);
  });

  it("refuses an unknown filter when the template is saved", async () => {
    expect(await invalid({ text: "ok", tags: "{{ severity | shout }}" })).toEqual([
      { field: "tags", message: "line 1, column 1: undefined filter: shout.", line: 1, column: 1 },
    ]);
  });

  it("refuses include, render and layout: there are no files to read", async () => {
    for (const tag of ["include", "render", "layout"]) {
      expect(await invalid({ text: `{% ${tag} '/etc/passwd' %}` })).toEqual([
        { field: "text", message: `line 1, column 1: tag "${tag}" not found.`, line: 1, column: 1 },
      ]);
    }
  });

  it("names every field of the wrong type or size", async () => {
    expect(await invalid("{{ text }}")).toEqual([
      { field: "template", message: "must be an object with at least text." },
    ]);
    expect(await invalid({ title: "x" })).toEqual([{ field: "text", message: "is required." }]);
    expect(await invalid({ text: "  \n" })).toEqual([{ field: "text", message: "is required." }]);
    expect(
      await invalid({
        text: "x".repeat(TEMPLATE_LIMITS.source.text + 1),
        title: "x".repeat(TEMPLATE_LIMITS.source.other + 1),
        tags: ["a"],
        format: "telegram_markdownv2",
        body: "{{ msg }}",
      }),
    ).toEqual([
      {
        field: "body",
        message:
          "is not a template field; the fields are format, text, title, key, final, tags, priority, click, buttons.",
      },
      { field: "format", message: "must be one of text, markdown, html." },
      { field: "text", message: "is 8001 characters long; at most 8000 are allowed." },
      { field: "title", message: "is 1001 characters long; at most 1000 are allowed." },
      { field: "tags", message: "must be a string (a Liquid template)." },
    ]);
  });

  it("fails a render with a template that does not parse, naming where", async () => {
    expect(await renderProblems({ text: "{% if x %}" }, {})).toEqual([
      { field: "text", message: "line 1, column 1: tag {% if x %} not closed.", line: 1, column: 1 },
    ]);
  });

  it("says where a render error happened", async () => {
    expect(
      await renderProblems({ text: "ok\n{{ items | where_exp: 'i', 'i | shout' }}" }, { items: [1] }),
    ).toEqual([{ field: "text", message: "line 2, column 1: undefined filter: shout.", line: 2, column: 1 }]);
  });
});

describe("the sandbox: a template sees the payload and nothing else", () => {
  it("reads nothing through constructors, prototypes or globals", async () => {
    const payload = JSON.parse('{"name": "x", "list": [1], "__proto__": {"polluted": true}}') as unknown;
    const probes = [
      "{{ payload.constructor }}",
      "{{ payload.constructor.name }}",
      "{{ constructor.name }}",
      "{{ name.constructor }}",
      "{{ name.toUpperCase }}",
      "{{ list.constructor }}",
      "{{ list.push }}",
      "{{ payload.__proto__.__proto__ }}",
      "{{ polluted }}",
      "{{ process }}",
      "{{ process.env }}",
      "{{ global }}",
      "{{ globalThis }}",
      "{{ require }}",
      "{{ this }}",
    ];
    expect(await text(`[${probes.join("|")}]`, payload)).toBe(`[${"|".repeat(probes.length - 1)}]`);
    // A field named __proto__ is the sender's data like any other.
    expect(await text("{{ payload.__proto__.polluted }}", payload)).toBe("true");
  });

  it("sees own fields only, never what a payload object inherits or computes", async () => {
    const inherited = Object.create({ secret: "from the prototype" }) as Record<string, unknown>;
    inherited.name = "own";
    Object.defineProperty(inherited, "computed", { enumerable: true, get: () => "from a getter" });
    inherited.method = () => "from a function";
    expect(await text("{{ payload | json }}", inherited)).toBe('{"name":"own"}');
    expect(await text("[{{ secret }}{{ computed }}{{ method }}{{ payload.secret }}]", inherited)).toBe("[]");
  });

  it("refuses a payload nested deeper than the limit", async () => {
    let deep: unknown = "bottom";
    for (let i = 0; i < TEMPLATE_LIMITS.payloadDepth + 1; i++) deep = [deep];
    await expect(renderTemplate({ text: "x" }, deep)).rejects.toThrow(PayloadError);
  });

  it("keeps one field's assign out of the next", async () => {
    expect(await render({ text: "{% assign t = 'set' %}{{ t }}", title: "[{{ t }}]" }, {})).toMatchObject({
      msg: "set",
      options: { title: "[]" },
    });
  });
});

describe("limits: a template fails fast instead of hanging or filling the heap", () => {
  /**
   * The problems of a render that a limit must stop: each test names the limit that did (a render
   * that ran on would hang the test). Not timed here: wall-clock bounds belong to benchmarks, and a
   * machine with every core busy stretches any render.
   */
  const fast = (template: DockTemplate, payload: unknown): Promise<TemplateProblem[]> =>
    renderProblems(template, payload);

  it("refuses a huge range before making it", async () => {
    const [problem] = await fast({ text: "{% for i in (1..100000000) %}x{% endfor %}" }, {});
    expect(problem?.message).toMatch(/^line 1, column 1: used too much memory/);
  });

  it("stops nested loops over the payload when the time is up", async () => {
    const items = Array.from({ length: 1000 }, (_, i) => i);
    const problems = await fast(
      {
        text: "{% for a in items %}{% for b in items %}{% for c in items %}{% endfor %}{% endfor %}{% endfor %}",
        title: "never rendered",
      },
      { items },
    );
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ field: "text" });
    expect(problems[0]?.message).toMatch(/took too long: a template may render for at most 100 ms/);
  });

  it("stops a nested range loop bomb", async () => {
    const [problem] = await fast(
      {
        text: "{% for a in (1..1000) %}{% for b in (1..1000) %}{% for c in (1..1000) %}{% endfor %}{% endfor %}{% endfor %}",
      },
      {},
    );
    expect(problem?.message).toMatch(/took too long|used too much memory/);
  });

  it("stops text that doubles with append", async () => {
    const [problem] = await fast(
      {
        text: "{% assign s = 'x' %}{% for i in (1..64) %}{% assign s = s | append: s %}{% endfor %}{{ s | size }}",
      },
      {},
    );
    expect(problem?.message).toMatch(/used too much memory/);
  });

  it("stops a field that writes too much", async () => {
    // Three writes, the third past what the field may write: stopped at once, long before the
    // render's time limit, which a starved process could otherwise reach first in a long loop.
    const [problem] = await fast({ text: "{{ big }}{{ big }}{{ big }}" }, { big: "y".repeat(30_000) });
    expect(problem).toMatchObject({
      field: "text",
      message: expect.stringMatching(/rendered more than 65536/),
    });
  });
});

describe.skipIf(!CPU_CLOCK)("a render's time is the thread's CPU time", () => {
  it("does not count time the thread spends off the CPU (a machine busy with other work)", () => {
    const limit = new RenderTimeLimit(50);
    // 200 ms of wall time asleep, as a thread waits while other processes have the cores.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    expect(() => limit.check()).not.toThrow();
    // 60 ms of CPU: over the limit.
    const start = threadClock();
    while (threadClock() - start < 60) Math.sqrt(Math.random());
    expect(() => limit.check()).toThrow("template render limit exceeded");
  });
});

describe("output limits: a template cannot make what a sender could not send", () => {
  it("refuses an empty text", async () => {
    expect(await renderProblems({ text: "{{ missing }}  \n" }, {})).toEqual([
      { field: "text", message: "rendered empty: there is nothing to send." },
    ]);
  });

  it("refuses text, title and key over their lengths", async () => {
    expect(
      await renderProblems(
        // Long values from the payload, written a few times: a render this cheap stays far inside
        // the time limit on a busy machine, so the lengths are what it is refused for.
        {
          text: "{% for i in (1..20) %}{{ thousand }}{% endfor %}",
          title: "{{ title }}",
          key: "{{ key }}",
        },
        { thousand: "0123456789".repeat(100), title: "t".repeat(260), key: "k".repeat(130) },
      ),
    ).toEqual([
      { field: "text", message: "rendered 20000 characters; a message holds at most 16384." },
      { field: "title", message: "rendered 260 characters; a title holds at most 250." },
      { field: "key", message: "rendered 130 characters; a key holds at most 128." },
    ]);
  });

  it("refuses too many tags, a bad priority and a final that is not true or false", async () => {
    expect(
      await renderProblems(
        { text: "x", tags: "{{ labels | join: ',' }}", priority: "{{ level }}", final: "{{ level }}" },
        { labels: "abcdefghijk".split(""), level: "critical" },
      ),
    ).toEqual([
      { field: "final", message: 'rendered "critical"; it must render true, false or nothing.' },
      { field: "tags", message: "rendered 11 tags; at most 10 are shown." },
      {
        field: "priority",
        message: 'rendered "critical"; it must be min, low, default, high or urgent, 1 to 5, or nothing.',
      },
    ]);
  });

  it("names the button line whose URL Telegram would refuse", async () => {
    const problems = await renderProblems(
      {
        text: "x",
        buttons:
          "Runbook | https://wiki.example.com/runbook\nLocal | {{ url }}\nno bar here\n | https://a.example",
        click: "{{ url }}",
      },
      { url: "http://localhost:3000/alert" },
    );
    expect(problems.map((p) => `${p.field}: ${p.message}`)).toEqual([
      expect.stringMatching(/^click: the rendered URL must be a URL Telegram can open/),
      expect.stringMatching(/^buttons: rendered line 2 \("Local"\): the URL must be a URL Telegram can open/),
      'buttons: rendered line 3: write a button as "Label | https://…".',
      expect.stringMatching(/^buttons: rendered line 4: the label must be 1 to 64 characters/),
    ]);
  });

  it("in a markdown template a payload value is text, never a link or markup; | raw opts out", async () => {
    const payload = { detail: "[re-login](https://evil.example/phish) **now** `x` <b>y</b> 1. z" };
    const escaped = await render({ text: "Alert: {{ detail }}", format: "markdown" }, payload);
    const content = await prepareContent(escaped.msg, { format: "markdown" });
    expect(content?.body?.text).toBe(`Alert: ${payload.detail}`);
    expect(content?.body?.entities).toEqual([]);
    const raw = await render({ text: "Alert: {{ detail | raw }}", format: "markdown" }, payload);
    const linked = await prepareContent(raw.msg, { format: "markdown" });
    expect(linked?.body?.entities.map((e) => e.type)).toContain("text_link");
  });

  it("in a markdown template no payload value makes a block: setext underlines, lists, code, quotes", async () => {
    for (const detail of [
      "===",
      "---",
      "- a\n+ b\n1. c",
      "    indented",
      "> quoted",
      "# no",
      "a\n\n\n  b  \n===",
      "x: www.evil.example",
    ]) {
      const rendered = await render({ text: "**Alert**\n{{ detail }}\nEnd", format: "markdown" }, { detail });
      const content = await prepareContent(rendered.msg, { format: "markdown" });
      expect(content?.body?.text, JSON.stringify(detail)).toBe(`Alert\n${detail}\nEnd`);
      expect(content?.body?.entities, JSON.stringify(detail)).toEqual([
        { type: "bold", offset: 0, length: 5 },
      ]);
    }
  });

  it("leaves out a button whose URL the payload does not have, as built-in formats do", async () => {
    const notification = await render(
      { text: "x", buttons: "Dashboard | {{ dashboard_url }}\nRunbook | https://wiki.example.com/runbook" },
      { status: "down" },
    );
    expect(notification.options.buttons).toEqual([
      [{ text: "Runbook", url: "https://wiki.example.com/runbook" }],
    ]);
  });

  it("refuses more buttons than fit", async () => {
    expect(
      await renderProblems(
        { text: "x", buttons: "{% for i in (1..10) %}B{{ i }} | https://example.com/{{ i }}\n{% endfor %}" },
        {},
      ),
    ).toEqual([{ field: "buttons", message: "rendered 10 buttons; at most 9 are shown (3 rows of 3)." }]);
  });

  it("keeps a URL's own bars and lays buttons out in rows of three", async () => {
    const notification = await render(
      {
        text: "x",
        buttons: "{% for i in (1..4) %}B{{ i }} | https://example.com/?q=a|b{{ i }}\n{% endfor %}",
      },
      {},
    );
    expect(notification.options.buttons?.map((row) => row.map((b) => `${b.text} ${b.url}`))).toEqual([
      ["B1 https://example.com/?q=a|b1", "B2 https://example.com/?q=a|b2", "B3 https://example.com/?q=a|b3"],
      ["B4 https://example.com/?q=a|b4"],
    ]);
  });
});

describe("html templates escape payload values", () => {
  const payload = { name: '<a href="https://evil.example">x</a> & co' };

  it("escapes every output of the text by default", async () => {
    expect(await render({ text: "<b>{{ name }}</b>", format: "html" }, payload)).toEqual({
      msg: "<b>&lt;a href=&#34;https://evil.example&#34;&gt;x&lt;/a&gt; &amp; co</b>",
      options: { format: "html" },
    });
  });

  it("writes a value as it is with raw", async () => {
    expect((await render({ text: "{{ name | raw }}", format: "html" }, payload)).msg).toBe(payload.name);
  });

  it("leaves text and the other fields of an html template unescaped (markdown's text is escaped, above)", async () => {
    expect(await text("{{ name }}", payload)).toBe(payload.name);
    expect((await render({ text: "{{ name | raw }}", format: "markdown" }, payload)).msg).toBe(payload.name);
    expect((await render({ text: "x", title: "{{ name }}", format: "html" }, payload)).options.title).toBe(
      payload.name,
    );
  });
});
