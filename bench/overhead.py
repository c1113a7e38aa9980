"""Per-op overhead of the device: small ops, where the kernel's own work is
tiny and what shows is the cost of getting to it (the dispatcher, the ATen
glue, the kernel library's descriptors and checks, the driver's allocation
and protection windows). Each case is timed on the device and on eager CPU in
one process at the same thread count, interleaved (a warm-up each, then the
median of --runs rounds of --reps calls), and printed with its ratio
(device / eager CPU; lower is better).

With --modes, the same cases run once per protection mode of the CPU driver
(Note [Protection keys] in backends/ref/csrc/driver/cpu/Driver.cpp), each in
its own process since the driver reads the mode once: `keys` (the default
where the CPU has memory protection keys), `pages` (one mprotect per operand
per kernel, REF_DRIVER_PROTECTION=pages) and `off` (REF_DRIVER_UNPROTECTED=1).
The difference between two modes' device times is what that protection costs
per op. `--clock cpu` times this thread's CPU seconds instead of wall
time, for a machine other work shares (with --threads 1 the two agree on a
quiet one).

  PYTHONPATH=<site of a built backend> python bench/overhead.py --device <name> [--package torch_<name>]
      [--threads 1] [--runs 15] [--reps 200] [--modes keys,pages,off] [--clock wall|cpu]

Issue 28's goal for this table: every small op within 1.5x of eager CPU with
protection on.
"""

import argparse
import importlib
import json
import math
import os
import subprocess
import sys
import time

import torch


def cases(dev: str):
    """name -> (make inputs on a device, call). Inputs are made once per
    device; the call is what is timed."""

    def vec(d, n=16):
        g = torch.Generator().manual_seed(0)
        return torch.randn(n, generator=g).to(d)

    def mat(d, n=16):
        g = torch.Generator().manual_seed(0)
        return torch.randn(n, n, generator=g).to(d)

    return {
        "add 16": (lambda d: (vec(d), vec(d)), lambda a, b: torch.add(a, b)),
        "add_ 16": (lambda d: (vec(d), vec(d)), lambda a, b: a.add_(b)),
        "mul 16 by scalar": (lambda d: (vec(d),), lambda a: a * 2.0),
        "relu 16": (lambda d: (vec(d),), lambda a: torch.relu(a)),
        "exp 16": (lambda d: (vec(d),), lambda a: torch.exp(a)),
        "sum 16": (lambda d: (vec(d),), lambda a: a.sum()),
        "mm 16x16": (lambda d: (mat(d), mat(d)), lambda a, b: torch.mm(a, b)),
        "softmax 16x16": (lambda d: (mat(d),), lambda a: torch.softmax(a, -1)),
        "layer_norm 16x16": (lambda d: (mat(d),), lambda a: torch.nn.functional.layer_norm(a, (16,))),
        "index_select 16": (
            lambda d: (mat(d), torch.arange(0, 16, 2).to(d)),
            lambda a, i: torch.index_select(a, 0, i),
        ),
        "cat 2x16": (lambda d: (vec(d), vec(d)), lambda a, b: torch.cat([a, b])),
        "clone 16": (lambda d: (vec(d),), lambda a: a.clone()),
        "empty 16": (lambda d: (torch.device(d),), lambda d: torch.empty(16, device=d)),
        "view+t 16x16": (lambda d: (mat(d),), lambda a: a.view(256).view(16, 16).t()),
    }


def timed(call, args, reps: int, now=time.perf_counter) -> float:
    t0 = now()
    for _ in range(reps):
        call(*args)
    return (now() - t0) / reps


def run_cases(device: str, runs: int, reps: int, clock: str = "wall") -> dict:
    # "cpu": this thread's CPU seconds, for a machine other work shares (1 thread)
    now = time.thread_time if clock == "cpu" else time.perf_counter
    out = {}
    for name, (make, call) in cases(device).items():
        on = {"dev": make(device), "cpu": make("cpu")}
        for args in on.values():  # warm-up
            timed(call, args, reps, now)
        times = {"dev": [], "cpu": []}
        for _ in range(runs):
            for k in ("dev", "cpu"):
                times[k].append(timed(call, on[k], reps, now))
        med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
        out[name] = {"device_us": med["dev"] * 1e6, "eager_us": med["cpu"] * 1e6}
    return out


MODES = {"keys": {}, "pages": {"REF_DRIVER_PROTECTION": "pages"}, "off": {"REF_DRIVER_UNPROTECTED": "1"}}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", required=True)
    ap.add_argument("--package", help="the device's Python package (default torch_<device>)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--modes", default="", help="comma-separated protection modes to compare (keys,pages,off)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="wall time, or this thread's CPU time")
    ap.add_argument("--json", action="store_true", help="print the results as JSON (one mode, this process)")
    a = ap.parse_args()
    if a.modes:
        results = {}
        for mode in a.modes.split(","):
            if mode not in MODES:
                print(f"--modes: unknown mode {mode!r}; allowed: {', '.join(MODES)}", file=sys.stderr)
                return 2
            argv = [sys.executable, os.path.abspath(__file__), "--device", a.device, "--threads", str(a.threads)]
            argv += ["--runs", str(a.runs), "--reps", str(a.reps), "--clock", a.clock, "--json"]
            if a.package:
                argv += ["--package", a.package]
            env = {k: v for k, v in os.environ.items() if k not in ("REF_DRIVER_PROTECTION", "REF_DRIVER_UNPROTECTED")}
            print(f"running mode {mode} ...", file=sys.stderr, flush=True)
            p = subprocess.run(argv, env={**env, **MODES[mode]}, capture_output=True, text=True)
            if p.returncode != 0:
                print(p.stderr[-4000:], file=sys.stderr)
                return p.returncode
            results[mode] = json.loads(p.stdout)
        modes = list(results)
        head = f"{'case':<18}" + "".join(f"{m + ' us':>11}{'ratio':>7}" for m in modes) + f"{'eager us':>10}"
        print(head + f"   ({a.threads} threads, median of {a.runs} x {a.reps} calls)")
        logs = {m: [] for m in modes}
        for name in results[modes[0]]:
            eager = results[modes[0]][name]["eager_us"]
            row = f"{name:<18}"
            for m in modes:
                r = results[m][name]
                ratio = r["device_us"] / r["eager_us"]
                logs[m].append(math.log(ratio))
                row += f"{r['device_us']:>11.2f}{ratio:>7.2f}"
            print(row + f"{eager:>10.2f}")
        print("geomean ratio: " + ", ".join(f"{m} {math.exp(sum(v) / len(v)):.2f}" for m, v in logs.items()))
        worst = {m: max(results[m].items(), key=lambda kv: kv[1]["device_us"] / kv[1]["eager_us"]) for m in modes}
        print(
            "worst: "
            + ", ".join(f"{m} {w[0]} {w[1]['device_us'] / w[1]['eager_us']:.2f}" for m, w in worst.items())
        )
        return 0
    torch.set_num_threads(a.threads)
    importlib.import_module(a.package or f"torch_{a.device}")
    results = run_cases(a.device, a.runs, a.reps, a.clock)
    if a.json:
        print(json.dumps(results))
    else:
        for name, r in results.items():
            print(f"{name:<18} {r['device_us']:>9.2f} {r['eager_us']:>9.2f} {r['device_us'] / r['eager_us']:>7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
