#!/usr/bin/env bash
# The whole test suite on a fresh machine: setup, lint, typecheck, then every
# tier (unit, integration: torchgen side by side + g++ compile, e2e: init ->
# build -> run). Extra args go to vitest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export OPGEN_PYTHON="$PWD/.venv/bin/python"
export PATH="$PWD/.venv/bin:$PATH"
npx biome check .
npx tsc -p tsconfig.json --noEmit
mkdir -p out
rc=0
npx vitest run --reporter=default --reporter=json --outputFile.json=out/vitest-results.json "$@" || rc=$?
# One plain closing line for CI log readers: 'tests: N passed, N failed, N skipped'.
node -e '
const r = JSON.parse(require("fs").readFileSync("out/vitest-results.json", "utf8"));
const skipped = r.numPendingTests + r.numTodoTests;
console.log(`tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${skipped} skipped`);
' || true
exit "$rc"
