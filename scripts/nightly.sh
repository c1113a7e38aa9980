#!/usr/bin/env bash
# The scheduled tier (.github/workflows/nightly.yml; issue 16): the reference
# backend, every kernel (`init --kernels all`), built with AddressSanitizer and
# UndefinedBehaviorSanitizer and run through the whole conformance suite on
# that build. Too slow for every CI run (the sanitized build of all kernels is
# the long part), so it runs on a schedule and on demand.
#
# Fails when any check fails, crashes or times out (`test` exits non-zero),
# and when the sanitizer reports directory holds any report at all, including
# one the runner could not pin on a sample. Assumes scripts/setup.sh has run.
#
#   NIGHTLY_JOBS   compile jobs and conformance workers (default: nproc)
#   NIGHTLY_DIR    scratch directory, recreated (default: out/nightly)
#   NIGHTLY_TIMEOUT  seconds one sample may take (default 180: sanitized kernels are slower)
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${NIGHTLY_JOBS:-$(nproc)}
WORK=${NIGHTLY_DIR:-out/nightly}
TIMEOUT=${NIGHTLY_TIMEOUT:-180}
export OPGEN_PYTHON=${OPGEN_PYTHON:-$PWD/.venv/bin/python}
cli() { node bin/opgen-backend.js "$@"; }
say() { printf '[nightly] %s\n' "$*"; }

rm -rf "$WORK"
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
PROJECT="$WORK/ref"

say "init $PROJECT (all reference kernels)"
cli init "$PROJECT" --name refsan --kernels all

say "build --sanitize address,undefined -j $JOBS"
start=$SECONDS
cli build "$PROJECT" -j "$JOBS" --werror --sanitize address,undefined
say "sanitized build: $((SECONDS - start)) s"

say "test --sanitize -j $JOBS"
start=$SECONDS
rc=0
cli test "$PROJECT" -j "$JOBS" --sanitize --timeout "$TIMEOUT" \
  --json "$WORK/sanitizers.json" --junit "$WORK/sanitizers.xml" || rc=$?
say "sanitized conformance run: $((SECONDS - start)) s, exit $rc"

# Every report the sanitizers wrote, attributed to a sample or not.
logs="$PROJECT/.opgen/conformance/results.jsonl.sanitizer"
reports=$(find "$logs" -maxdepth 1 -type f \( -name 'asan.*' -o -name 'ubsan.*' \) 2>/dev/null | sort)
if [ -n "$reports" ]; then
  say "sanitizer reports in $logs:"
  for f in $reports; do
    say "--- $f"
    head -n 30 "$f"
  done
  rc=1
fi
# The planted sanitizer e2e (test/e2e/ship.test.ts, nightly only): a kernel
# that reads one byte past its input passes a normal run and is reported, with
# its frame, as a crash under ASan.
say "planted out-of-bounds read under ASan (test/e2e/ship.test.ts)"
OPGEN_NIGHTLY=1 npx vitest run test/e2e/ship.test.ts -t "build --sanitize, test --sanitize" || rc=1

[ "$rc" = 0 ] && say "clean: no failure, crash, timeout or sanitizer report" || say "FAILED (see above)"
exit "$rc"
