import path from "node:path";
import { defineConfig } from "vitest/config";

// Tiers: test/unit (fast, pure TS), test/integration (runs torchgen and g++),
// test/e2e (init -> build -> run a backend). All run under `npm test`.
export default defineConfig({
  test: {
    // Tests use the project's venv (scripts/setup.sh) unless told otherwise.
    env: { OPGEN_PYTHON: process.env.OPGEN_PYTHON ?? path.resolve(".venv/bin/python") },
    include: ["test/**/*.test.ts"],
    // dist/ is compiled once here; no test file rebuilds it (they ran in parallel).
    globalSetup: ["test/helpers/build-dist.ts"],
    testTimeout: 60_000,
    hookTimeout: 900_000,
    pool: "forks",
    fileParallelism: true,
    maxWorkers: 2,
  },
});
