import { describe, expect, it } from "vitest";
import { databaseLocation } from "../../src/cli/banner.ts";
import { forPeople, readableLine } from "../../src/runtime/readable-log.ts";

describe("readable log lines", () => {
  const at = new Date(2026, 0, 2, 14, 2, 3).getTime();

  it("time, level, message, then the fields; what a person does not need is left out", () => {
    const line = JSON.stringify({
      level: 40,
      time: at,
      pid: 7,
      hostname: "vm",
      reqId: "req-1",
      worker: "bot",
      reason: "getUpdates: 502 Bad Gateway",
      retryInSeconds: 2,
      msg: "bot stopped; relaunching",
    });
    expect(readableLine(line)).toBe(
      '14:02:03 WARN  bot stopped; relaunching worker=bot reason="getUpdates: 502 Bad Gateway" retryInSeconds=2',
    );
  });

  it("a request reads as the request; a failed one says so", () => {
    const request = {
      level: 30,
      time: at,
      method: "POST",
      url: "/ping",
      status: 202,
      ms: 3.1,
      ip: "127.0.0.1",
    };
    expect(readableLine(JSON.stringify({ ...request, msg: "request", message_id: "m1" }))).toBe(
      "14:02:03 INFO  POST /ping → 202 3.1 ms ip=127.0.0.1 message_id=m1",
    );
    const failed = readableLine(
      JSON.stringify({
        ...request,
        level: 50,
        status: 500,
        msg: "request failed",
        err: { type: "Error", message: "boom", stack: "Error: boom\n    at here (x.ts:1:1)" },
      }),
    );
    expect(failed).toBe(
      [
        '14:02:03 ERROR request failed: POST /ping → 500 3.1 ms ip=127.0.0.1 err={"type":"Error","message":"boom"}',
        "    Error: boom",
        "        at here (x.ts:1:1)",
      ].join("\n"),
    );
  });

  it("control characters from what was logged cannot drive the terminal: they are shown escaped", () => {
    const line = JSON.stringify({
      level: 30,
      time: at,
      msg: "request",
      method: "GET",
      url: "/x\u001b]0;owned\u0007",
      status: 404,
      ms: 1,
      name: "Eve\u001b[2J",
      err: { message: "m", stack: "Error: m\u001b[31m\n    at x" },
    });
    const shown = readableLine(line);
    const controls = [...shown].filter((c) => c !== "\n" && (c < " " || (c >= "\u007f" && c <= "\u009f")));
    expect(controls).toEqual([]);
    expect(shown).toContain("GET /x\\u001b]0;owned\\u0007 → 404 1 ms");
    expect(shown).toContain("name=Eve\\u001b[2J");
    expect(shown.split("\n")).toEqual([expect.any(String), "    Error: m\\u001b[31m", "        at x"]);
  });

  it("what redaction hid stays hidden, and a line that is not JSON is passed on as it is", () => {
    const redacted = JSON.stringify({ level: 30, time: at, msg: "x", body: { secret_key: "[redacted]" } });
    expect(readableLine(redacted)).toBe('14:02:03 INFO  x body={"secret_key":"[redacted]"}');
    expect(readableLine("not json")).toBe("not json");
    expect(readableLine("42")).toBe("42");
  });

  it("is for people on a terminal, or when asked; JSON otherwise", () => {
    expect(forPeople("auto", { isTTY: true })).toBe(true);
    expect(forPeople("auto", { isTTY: false })).toBe(false);
    expect(forPeople("auto", {})).toBe(false);
    expect(forPeople("json", { isTTY: true })).toBe(false);
    expect(forPeople("pretty", { isTTY: false })).toBe(true);
  });
});

describe("where the data lives, as the banner says it", () => {
  it.each([
    ["sqlite:/srv/dock/data/dock-notify.db", "SQLite file /srv/dock/data/dock-notify.db"],
    [
      "postgres://dock:s3cret@db.internal:5433/notify?sslmode=require",
      "PostgreSQL database notify on db.internal:5433",
    ],
    ["postgresql://dock:s3cret@db.internal/notify", "PostgreSQL database notify on db.internal"],
    [
      "postgres:///notify?host=/run/postgresql&password=s3cret",
      "PostgreSQL database notify on /run/postgresql",
    ],
    [
      "postgres://dock:s3cret@db.internal:5432",
      "PostgreSQL database (the user's default) on db.internal:5432",
    ],
  ])("%s → %s, never the password", (url, shown) => {
    expect(databaseLocation(url)).toBe(shown);
    expect(databaseLocation(url)).not.toContain("s3cret");
  });
});
