import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const root = join(import.meta.dirname, "..", "..");

/**
 * deploy/dock-notify.service, checked by systemd's own tools (this kind of machine has them, though
 * systemd does not run here): every key known, the command there, and the sandboxing it promises.
 */
describe("the example systemd unit", () => {
  const work = mkdtempSync(join(tmpdir(), "dock-notify-unit-"));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it("is a valid unit with a low exposure level", async () => {
    const unit = readFileSync(join(root, "deploy", "dock-notify.service"), "utf8");
    expect(unit).toContain("ExecStart=/usr/local/bin/dock-notify serve");
    // Where an installed package puts the command, here the checkout's own; the file names as given.
    const envFile = join(work, "env");
    writeFileSync(envFile, "TELEGRAM_BOT_TOKEN=123456:ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij\n");
    const local = join(work, "dock-notify.service");
    writeFileSync(
      local,
      unit
        .replace("ExecStart=/usr/local/bin/dock-notify", `ExecStart=${join(root, "bin", "dock-notify.js")}`)
        .replace("EnvironmentFile=/etc/dock-notify/env", `EnvironmentFile=${envFile}`),
    );
    const verified = await run("systemd-analyze", ["verify", local]);
    // systemd-analyze exits 0 on unknown keys and bad values; what it says is the verdict.
    expect(verified.stderr).toBe("");
    // The threshold is in tenths: 20 is an exposure level of 2.0 ("OK" below 3.0 or so).
    const security = await run("systemd-analyze", ["security", "--offline=yes", "--threshold=20", local]);
    const exposure = Number(
      /Overall exposure level for dock-notify\.service: (\d+\.\d+)/.exec(security.stdout)?.[1],
    );
    expect(exposure).toBeLessThan(2);
  });
});
