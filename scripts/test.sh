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
npx vitest run "$@"
