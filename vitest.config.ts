import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "src/**/*.test.ts"],
    globalSetup: ["test/build-console.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Tests start real servers and child processes; two cores is all the machine has.
    fileParallelism: true,
    maxWorkers: 2,
  },
});
