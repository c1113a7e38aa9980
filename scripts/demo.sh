#!/usr/bin/env bash
# The main job end to end on a fresh machine: setup, then
# init -> gen -> build -> conformance on the reference CPU backend, ending in
# reports under out/demo/report/ (HTML, JSON, JUnit, Markdown).
#
# The wheel is installed with --target into out/demo/site and used through
# PYTHONPATH, so the demo never autoloads a device into .venv's every
# `import torch` (that would rename PrivateUse1 for everything else).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export OPGEN_PYTHON="$PWD/.venv/bin/python"
cli() { node bin/opgen-backend.js "$@"; }
proj=out/demo/mychip
site=out/demo/site
rep=out/demo/report
rm -rf out/demo
mkdir -p "$rep"
cli init "$proj" --name mychip --kernels all
cli gen "$proj/backend.yaml" -o "$proj/csrc/generated"
cli build "$proj" --target "$site"
rc=0
PYTHONPATH="$PWD/$site" cli test "$proj" --json "$rep/conformance.json" --junit "$rep/junit.xml" \
  --html "$rep/report.html" --markdown "$rep/summary.md" || rc=$?
echo
echo "reports: $rep/report.html $rep/conformance.json $rep/junit.xml $rep/summary.md"
# The reference backend is required green: any failure, crash or hang not
# listed in its conformance-expectations.yaml fails the demo.
exit "$rc"
