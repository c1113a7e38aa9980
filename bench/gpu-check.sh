#!/usr/bin/env bash
# The CUDA reference backend on a machine with a GPU, in one run (issue 13):
# `init --device cuda` -> build (warnings as errors) -> the MLP and
# transformer-block training tests in strict fallback mode (no operator may
# fall back to CPU; a skip, which means a kernel is missing, counts as a
# failure) -> the project's other device tests -> the conformance runner on
# every operator the project registers (backends/ref/cuda-ops.txt) -> the
# kernel benchmarks (bench/kernels.py: the device against eager CPU in the
# same process). Every report lands in one folder. The whole run is held
# under 10 minutes (an H200 with 16 cores was the target): every step after
# the build gets at most its share of what is left of a 570 s budget, and a
# step cut short is reported as such.
#
#   bench/gpu-check.sh [--out DIR] [--dry-run] [--jobs N] [--workers N]
#
# Needs only this working tree and a Python with torch 2.13 ($OPGEN_PYTHON,
# else python3), with nvcc (CUDA_HOME or /usr/local/cuda) and ninja; no
# network. The opgen-backend CLI runs from dist/ when node is there (init,
# gen, build, test); without node, --project DIR takes a project prepared
# elsewhere with `bench/gpu-check.sh --prepare DIR` (init + gen), builds it
# with pip and runs the conformance runner directly (a text summary; the
# HTML and Markdown reports need the CLI).
#
# --dry-run checks the tools and prints the steps without running them. On a
# machine without a usable GPU the script stops before building, writes the
# reason to DIR/SKIPPED and exits 0: CI never depends on a GPU.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/gpu-check-report"
DRY=0
PREPARE=""
PROJECT=""
JOBS="$(nproc 2>/dev/null || echo 4)"
WORKERS=""
NAME="gpuchk"
PY="${OPGEN_PYTHON:-python3}"
CLI="$ROOT/bin/opgen-backend.js"

while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --dry-run) DRY=1; shift ;;
    --prepare) PREPARE="$2"; shift 2 ;;
    --project) PROJECT="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --workers) WORKERS="$2"; shift 2 ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
WORKERS="${WORKERS:-$(( JOBS / 2 > 0 ? JOBS / 2 : 1 ))}"
case "$PY" in  # absolute: later steps run in other directories
  /*) ;;
  */*) PY="$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")" ;;
  *) PY="$(command -v "$PY" || echo "$PY")" ;;
esac

have_node() { command -v node >/dev/null 2>&1 && [ -f "$ROOT/dist/cli/main.js" ]; }
cli() { OPGEN_PYTHON="$PY" NO_COLOR=1 CI=1 node "$CLI" "$@"; }

if [ -n "$PREPARE" ]; then
  have_node || { echo "gpu-check: --prepare needs node and a built dist/ (npm run build)" >&2; exit 2; }
  cli init "$PREPARE" --name "$NAME" --device cuda --kernels all && cli gen "$PREPARE/backend.yaml" -o "$PREPARE/csrc/generated"
  exit $?
fi

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
note() { echo "gpu-check: $*" | tee -a "$SUMMARY"; }
START=$(date +%s)
BUDGET=570
# Seconds a step may take: its cap, or less when the budget's end is nearer
# (keeping `reserve` seconds for the steps after it); at least 20.
allow() {
  local cap=$1 reserve=$2 left
  left=$(( START + BUDGET - $(date +%s) - reserve ))
  [ "$left" -lt "$cap" ] && cap=$left
  [ "$cap" -lt 20 ] && cap=20
  echo "$cap"
}
# A step's exit status in words (timeout's 124 is a step cut short).
status() { [ "$1" -eq 124 ] && echo "cut short by the time budget (exit 124)" || echo "exit $1"; }

# ---- tools ------------------------------------------------------------------
{
  echo "date: $(date -u +%FT%TZ)"
  echo "python: $PY ($("$PY" -c 'import sys; print(sys.version.split()[0])' 2>&1))"
  echo "torch: $("$PY" -c 'import torch; print(torch.__version__, "cuda" if torch.cuda.is_available() else "no torch.cuda")' 2>&1)"
  NVCC="${CUDA_HOME:-/usr/local/cuda}/bin/nvcc"
  [ -x "$NVCC" ] || NVCC="$(command -v nvcc || true)"
  echo "nvcc: ${NVCC:-none} $([ -n "$NVCC" ] && "$NVCC" --version | tail -1)"
  echo "ninja: $(command -v ninja || echo none)  ccache: $(command -v ccache || echo none)  node: $(command -v node || echo none)"
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
"$PY" -c 'import torch' 2>/dev/null || { note "FAILED: $PY cannot import torch; set OPGEN_PYTHON"; exit 2; }

# ---- is there a GPU? (the driver API, before anything is built) ---------------
GPU_REASON="$("$PY" - <<'EOF'
import ctypes
try:
    cuda = ctypes.CDLL("libcuda.so.1")
except OSError:
    print("no NVIDIA driver: libcuda.so.1 cannot be loaded (no GPU on this machine?)")
    raise SystemExit(0)
rc = cuda.cuInit(0)
if rc != 0:
    print(f"the NVIDIA driver finds no usable GPU (cuInit returned CUDA error {rc})")
    raise SystemExit(0)
n = ctypes.c_int(0)
cuda.cuDeviceGetCount(ctypes.byref(n))
if n.value == 0:
    print("the NVIDIA driver reports 0 GPUs (CUDA_VISIBLE_DEVICES?)")
EOF
)"

PLAN=(
  "init: opgen-backend init <out>/work/$NAME --name $NAME --device cuda --kernels all"
  "build: opgen-backend build --werror -j $JOBS --target <out>/work/site (log: build.log)"
  "training: the project's MLP (SGD momentum, foreach) and transformer-block (AdamW) tests in strict mode (training.log, training.xml)"
  "device tests: python -m pytest <project>/tests, the rest (log: device-tests.log, junit: device-tests.xml)"
  "conformance: opgen-backend test -j $WORKERS on every registered operator, i.e. cuda-ops.txt (conformance.{json,html,md}, log)"
  "models: opgen-backend test --model zoo, the transformers zoo on the device vs eager CPU, judged against float64 (models.{json,html,md}, log)"
  "benchmarks: bench/kernels.py --device $NAME against eager CPU (kernels.txt)"
)
if [ "$DRY" = 1 ]; then
  note "dry run; the steps:"
  for s in "${PLAN[@]}"; do note "  $s"; done
  if [ -n "$GPU_REASON" ]; then note "on this machine they would be skipped: $GPU_REASON"; else note "a GPU is present"; fi
  exit 0
fi
if [ -n "$GPU_REASON" ]; then
  echo "$GPU_REASON" > "$OUT/SKIPPED"
  note "SKIPPED: $GPU_REASON; nothing was built (reports in $OUT)"
  exit 0
fi

# ---- init + build -------------------------------------------------------------
WORK="$OUT/work"
SITE="$WORK/site"
mkdir -p "$WORK"
export MAX_JOBS="$JOBS"
GPUCHK_ARCHS="${GPUCHK_CUDA_ARCHS:-90}"
export GPUCHK_CUDA_ARCHS="$GPUCHK_ARCHS"
if [ -z "$PROJECT" ]; then
  have_node || { note "FAILED: no node/dist here; prepare a project elsewhere (--prepare DIR) and pass --project DIR"; exit 2; }
  PROJECT="$WORK/$NAME"
  rm -rf "$PROJECT" "$SITE"
  cli init "$PROJECT" --name "$NAME" --device cuda --kernels all > "$OUT/init.log" 2>&1 || { note "FAILED: init (init.log)"; exit 1; }
fi
t0=$(date +%s)
if have_node; then
  cli build "$PROJECT" --target "$SITE" -j "$JOBS" --werror > "$OUT/build.log" 2>&1
else
  GPUCHK_WERROR=1 "$PY" -m pip install --no-build-isolation --no-deps --disable-pip-version-check \
    --target "$SITE" --upgrade "$PROJECT" > "$OUT/build.log" 2>&1
fi
rc=$?
note "build: exit $rc in $(( $(date +%s) - t0 )) s (archs $GPUCHK_ARCHS; build.log)"
[ $rc -eq 0 ] || { tail -30 "$OUT/build.log"; exit 1; }
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
FAILED=0

# ---- training in strict mode: the MLP and the transformer block -------------
# The project's tests/test_training.py: 20 steps on the device and on CPU from
# one seed, the same loss curve and parameters, no CPU fallback anywhere (the
# forward, the backward, the foreach optimizer step). A test that skips names
# a missing kernel; here that is a failure.
TRAINING_TESTS="test_mlp_sgd_momentum_matches_cpu or test_transformer_block_adamw_matches_cpu"
t0=$(date +%s)
if "$PY" -c 'import pytest' 2>/dev/null; then
  (cd "$PROJECT" && timeout "$(allow 120 330)" "$PY" -m pytest -q -rs tests/test_training.py -k "$TRAINING_TESTS" \
    --junitxml="$OUT/training.xml") > "$OUT/training.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ] && ! grep -qE '(^| )2 passed' "$OUT/training.log"; then rc=1; fi
  note "training (strict): $(status $rc) in $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/training.log")"
  grep -E '^SKIPPED|Error|assert' "$OUT/training.log" | head -5 | sed 's/^/  /' | tee -a "$SUMMARY"
  [ $rc -eq 0 ] || FAILED=1
else
  note "training: FAILED, pytest is not installed for $PY"
  FAILED=1
fi

# ---- the project's other device tests ------------------------------------------
t0=$(date +%s)
if "$PY" -c 'import pytest' 2>/dev/null; then
  (cd "$PROJECT" && timeout "$(allow 120 270)" "$PY" -m pytest -q tests -k "not ($TRAINING_TESTS)" \
    --junitxml="$OUT/device-tests.xml") > "$OUT/device-tests.log" 2>&1
  rc=$?
  note "device tests: $(status $rc) in $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/device-tests.log")"
  [ $rc -eq 0 ] || FAILED=1
else
  note "device tests: skipped (pytest is not installed for $PY)"
fi

# ---- conformance --------------------------------------------------------------
t0=$(date +%s)
if have_node; then
  timeout "$(allow 300 140)" env OPGEN_PYTHON="$PY" NO_COLOR=1 CI=1 node "$CLI" test "$PROJECT" --python "$PY" -j "$WORKERS" \
    --cache-dir "$WORK/cache" --json "$OUT/conformance.json" --html "$OUT/conformance.html" \
    --markdown "$OUT/conformance.md" > "$OUT/conformance.log" 2>&1
  rc=$?
  note "conformance: $(status $rc) in $(( $(date +%s) - t0 )) s: $(grep -E 'results:|operators pass' "$OUT/conformance.log" | tr '\n' ' ')"
  [ $rc -eq 0 ] || FAILED=1
else
  # No node: the runner itself, on a config made from the project's op
  # manifest (what `opgen-backend test` writes), summarised here; the
  # HTML/Markdown reports need the CLI.
  timeout "$(allow 300 140)" env PYTHONPATH="$ROOT/python:$PYTHONPATH" "$PY" - "$PROJECT" "$OUT" "$WORKERS" "$WORK/cache" \
    > "$OUT/conformance.log" 2>&1 <<'EOF'
import collections, json, os, subprocess, sys
project, out, workers, cache = sys.argv[1:5]
m = json.load(open(os.path.join(project, "csrc", "generated", "op_manifest.json")))
ops = [{"name": o["name"], "kind": o["kind"], "view": o["view"], "core": o["core"], "dtypes": m["dtypes"]}
       for o in m["operators"]]
results = os.path.join(out, "conformance.jsonl")
# Every key (Note [Run config contract], src/conformance/runconfig.ts).
config = {"version": 2, "device": m["device"], "package": m["python_package"], "faults": None, "seed": 0,
          "max_samples": 6, "grad_samples": 3, "timeout_s": 60, "startup_timeout_s": 300, "gen_timeout_s": 180,
          "max_incidents": 2, "workers": int(workers), "worker_memory_bytes": None,
          "resume": False, "results": results, "cache_dir": cache, "tolerances": [], "ops": ops,
          "models": []}
with open(results + ".config.json", "w") as f:
    json.dump(config, f)
rc = subprocess.run([sys.executable, "-m", "opgen_conformance", "run", "--config", results + ".config.json"],
                    stdout=subprocess.DEVNULL).returncode
rank = {"pass": 0, "skip": 0, "warn": 1, "fail": 2, "timeout": 3, "crash": 3}
worst = {}
for line in open(results):
    r = json.loads(line)
    if r.get("kind") == "sample":
        for check, (status, msg) in r["checks"].items():
            k = (r["op"], r["dtype"], check)
            if k not in worst or rank.get(status, 2) > rank.get(worst[k][0], 2):
                worst[k] = (status, msg)
    elif r.get("kind") == "task" and r.get("stopped"):
        worst.setdefault((r["op"], r["dtype"], "values"), ("skip", r["stopped"]))
counts = collections.Counter(s for s, _ in worst.values())
bad = sorted(f"{o} {d} {c}: {s} {m[:200]}" for (o, d, c), (s, m) in worst.items() if s in ("fail", "crash", "timeout"))
print("\n".join(bad))
print(f"results: {len(worst)} ({dict(counts)}); runner exit {rc}")
sys.exit(1 if bad or rc else 0)
EOF
  rc=$?
  note "conformance (runner without the CLI): $(status $rc) in $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/conformance.log")"
  [ $rc -eq 0 ] || FAILED=1
fi

# ---- the model zoo (python/opgen_conformance/zoo.py) ---------------------------
t0=$(date +%s)
if have_node && "$PY" -c 'import transformers' 2>/dev/null; then
  timeout "$(allow 120 40)" env OPGEN_PYTHON="$PY" NO_COLOR=1 CI=1 node "$CLI" test "$PROJECT" --python "$PY" -j "$WORKERS" \
    --model zoo --results "$OUT/models.jsonl" --json "$OUT/models.json" --html "$OUT/models.html" \
    --markdown "$OUT/models.md" > "$OUT/models.log" 2>&1
  rc=$?
  note "models: $(status $rc) in $(( $(date +%s) - t0 )) s: $(grep -E '^models:' "$OUT/models.log" | tr '\n' ' ')"
  [ $rc -eq 0 ] || FAILED=1
else
  note "models: skipped (needs node and transformers==5.24.0 for $PY)"
fi

# ---- benchmarks ---------------------------------------------------------------
t0=$(date +%s)
timeout "$(allow 90 0)" "$PY" "$ROOT/bench/kernels.py" --device "$NAME" --threads "$JOBS" --runs 7 --allow-fallback \
  > "$OUT/kernels.txt" 2>&1
rc=$?
note "benchmarks: $(status $rc) in $(( $(date +%s) - t0 )) s (kernels.txt: device vs eager CPU at $JOBS threads)"
[ $rc -eq 0 ] || FAILED=1

note "done in $(( $(date +%s) - START )) s; reports in $OUT"
exit $FAILED
