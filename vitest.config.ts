import { defineConfig } from "vitest/config";

// Tiers: test/unit (fast, pure TS), test/integration (runs torchgen and g++),
// test/e2e (init -> build -> run a backend). All run under `npm test`.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 900_000,
    pool: "forks",
    fileParallelism: true,
    maxWorkers: 2,
  },
});
