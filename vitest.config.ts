import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineConfig } from "vitest/config";

// Many tests start the CLI or the service as a child process, and each start compiles the whole
// service again (about 0.9 s of CPU). V8's code cache on disk spares 40 % of that; Node keys it by
// each file's contents, so a changed file is simply compiled again. Workers and children inherit it.
process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), "dock-notify-test-compile-cache");

export default defineConfig({
  test: {
    // A test's budget on a starved machine (the suite must pass beside `stress-ng --cpu 4` on two
    // slow cores, where a child process or a service's start takes ten times as long as here):
    // budgets wait for states, none measures speed (benchmarks do, `npm run bench:*`).
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Three files at a time on two cores: most of the suite waits (on Telegram's pace, on a
    // restart, on a browser), and the whole run uses about 100 s of CPU in 120 s of wall time with
    // three workers, against 167 s with two (docs/benchmarks.md, "The test suite").
    fileParallelism: true,
    maxWorkers: 3,
    // A worker imports the service's modules once, not once per test file (about a second each).
    // The tests share no module state: each starts its own services, databases and sandboxes.
    isolate: false,
    projects: [
      {
        // Pure functions: no server, no database, no child process (`npm run test:unit`, seconds).
        extends: true,
        test: { name: "unit", include: ["test/unit/**/*.test.ts", "src/**/*.test.ts"] },
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["test/**/*.test.ts"],
          // The container image has its own run (`npm run test:image`, vitest.image.config.ts).
          exclude: ["test/unit/**", "test/image/**"],
          globalSetup: ["test/helpers/build.ts", "test/helpers/database-templates.ts"],
        },
      },
    ],
  },
});
