#!/usr/bin/env bash
# The main job end to end on a fresh machine: setup, then
# init -> gen -> build -> conformance on the reference CPU backend, ending in
# reports under out/demo/report/ (HTML, JSON, JUnit, Markdown).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export OPGEN_PYTHON="$PWD/.venv/bin/python"
export PATH="$PWD/.venv/bin:$PATH"
cli() { node bin/opgen-backend.js "$@"; }
proj=out/demo/mychip
rep=out/demo/report
rm -rf out/demo
mkdir -p "$rep"
cli init "$proj" --name mychip
cli gen "$proj/backend.yaml" -o "$proj/csrc/generated"
cli build "$proj"
cli test "$proj" --core --json "$rep/conformance.json" --junit "$rep/junit.xml" \
  --html "$rep/report.html" --markdown "$rep/summary.md" || true
echo
echo "reports: $rep/report.html $rep/conformance.json $rep/junit.xml $rep/summary.md"
