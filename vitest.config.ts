import path from "node:path";
import { defineConfig } from "vitest/config";

// Tiers: test/unit (fast, pure TS), test/integration (runs torchgen and g++),
// test/e2e (init -> build -> run a backend). All run under `npm test`.
export default defineConfig({
  test: {
    // Tests use the project's venv (scripts/setup.sh) unless told otherwise.
    // Projects the tests build compile the kernel library's hot loops for the
    // baseline CPU only (Note [Vector width] in backends/ref's cpu/Common.h):
    // the AVX2/AVX-512 clones add half again to the heaviest files' compile,
    // and every e2e file builds projects. test/e2e/reference.test.ts builds
    // the shipped configuration (OPGEN_SHIPPED_CXXFLAGS) and runs it in full.
    env: {
      OPGEN_PYTHON: process.env.OPGEN_PYTHON ?? path.resolve(".venv/bin/python"),
      OPGEN_CXXFLAGS: [process.env.OPGEN_CXXFLAGS, "-DREFK_BASELINE_ONLY"].filter(Boolean).join(" "),
      OPGEN_SHIPPED_CXXFLAGS: process.env.OPGEN_CXXFLAGS ?? "",
    },
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
