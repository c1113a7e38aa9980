"""torch.compile with Inductor on the device (issue 25's speed goals), in one
process per mode at the same thread count, compile time excluded (each
compiled function is warmed up before the clock starts):

- `chain 16M`: a pointwise chain over 16M float32 elements, eager on the
  device (one kernel per op) against compiled on the device (one fused
  Inductor kernel run through the driver's kernel scope, Note [Kernel
  scope]) and compiled on plain CPU tensors;
- `mlp step` and `block step`: a training step (forward, loss, backward) of
  an MLP and of a transformer encoder block, eager against compiled on the
  device.

Modes (each its own process, since the driver reads its protection mode
once): `keys` is the default (protection on, kernels launched through the
driver's scope); `direct` turns protection off (REF_DRIVER_UNPROTECTED=1)
and calls the generated kernels straight from Python
(<NAME>_INDUCTOR_DIRECT=1). Their difference on the compiled device column
is what the scope costs.

  PYTHONPATH=<site of a built backend> python bench/inductor.py --device <name>
      [--package torch_<name>] [--threads 2] [--runs 7] [--cases chain,mlp,block] [--modes keys,direct]
      [--clock wall|cpu]

Goals: the compiled chain at least 2x faster than eager on the device, and
within 1.2x of compiled CPU with protection on.
"""

import argparse
import importlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import torch


def make_cases(dev: str):
    """name -> (inputs on a device, the function timed). The function is run
    eager and compiled."""

    def chain_inputs(d):
        g = torch.Generator().manual_seed(0)
        return (torch.randn(1 << 24, generator=g).to(d),)

    def chain(x):
        return (torch.relu(x * 2.0 + 1.0).sin() * 0.5 - x).abs()

    def mlp_inputs(d):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 512)).to(d)
        return model, torch.randn(64, 512).to(d)

    def block_inputs(d):
        torch.manual_seed(0)
        model = torch.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True).to(d)
        return model, torch.randn(8, 64, 256).to(d)

    return {
        "chain 16M": ("fn", chain_inputs, chain),
        "mlp step": ("step", mlp_inputs, None),
        "block step": ("step", block_inputs, None),
    }


def _step(model):
    def run(x):
        out = model(x)
        out.square().mean().backward()
        return out

    return run


def _median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def _time(fn, args, runs: int, sync, now) -> float:
    fn(*args)
    fn(*args)  # warm: compile, autotune, allocator caches
    sync()
    times = []
    for _ in range(runs):
        t0 = now()
        fn(*args)
        sync()
        times.append(now() - t0)
    return _median(times)


def run_mode(device: str, package: str, cases: list[str], runs: int, clock: str) -> dict:
    # "cpu": the process's CPU seconds (all its threads: the kernels' OpenMP
    # and pool threads too), for a machine other work shares
    now = time.process_time if clock == "cpu" else time.perf_counter
    importlib.import_module(package)
    sync_dev = getattr(torch, device).synchronize
    table = make_cases(device)
    out = {}
    for name, (kind, make, fn) in table.items():
        if not any(name.startswith(c) for c in cases):
            continue
        row = {}
        targets = [("dev", device, sync_dev)]
        if kind == "fn":
            targets.append(("cpu", "cpu", lambda: None))
        for tag, d, sync in targets:
            made = make(d)
            if kind == "fn":
                eager, args = fn, made
            else:
                model, x = made
                eager, args = _step(model), (x,)
            torch._dynamo.reset()
            compiled = torch.compile(eager, backend="inductor") if kind == "fn" else _step(torch.compile(made[0]))
            if tag == "dev":
                row["eager dev"] = _time(eager, args, runs, sync, now)
            row[f"compiled {tag}"] = _time(compiled, args, runs, sync, now)
        out[name] = row
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", required=True)
    ap.add_argument("--package", help="the device's Python package (default torch_<device>)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--cases", default="chain,mlp,block")
    ap.add_argument("--modes", default="keys,direct")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="wall time, or the process's CPU time")
    ap.add_argument("--json", action="store_true", help="one mode in this process, as JSON")
    a = ap.parse_args()
    package = a.package or f"torch_{a.device}"
    torch.set_num_threads(a.threads)
    cases = [c.strip() for c in a.cases.split(",") if c.strip()]
    if a.json:
        print(json.dumps(run_mode(a.device, package, cases, a.runs, a.clock)))
        return 0
    results = {}
    for mode in [m.strip() for m in a.modes.split(",") if m.strip()]:
        if mode not in ("keys", "direct"):
            print(f"bench/inductor.py: --modes: '{mode}' is not a mode (allowed: keys, direct)", file=sys.stderr)
            return 2
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=tempfile.mkdtemp(prefix="bench-inductor-"))
        env.pop("REF_DRIVER_UNPROTECTED", None)
        if mode == "direct":
            env["REF_DRIVER_UNPROTECTED"] = "1"
            env[f"{a.device.upper()}_INDUCTOR_DIRECT"] = "1"
        cmd = [sys.executable, __file__, "--device", a.device, "--package", package, "--threads", str(a.threads),
               "--runs", str(a.runs), "--cases", a.cases, "--clock", a.clock, "--json"]
        print(f"[bench] mode {mode}: running {', '.join(cases)} ...", file=sys.stderr, flush=True)
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stderr[-4000:], file=sys.stderr)
            return 1
        results[mode] = json.loads(r.stdout.strip().splitlines()[-1])
    ms = lambda s: f"{s * 1e3:9.2f}"  # noqa: E731
    unit = "CPU milliseconds (all threads)" if a.clock == "cpu" else "milliseconds"
    print(f"threads {a.threads}, median of {a.runs}, {unit}; speedup = eager dev / compiled dev")
    for mode, rows in results.items():
        print(f"\nmode {mode}")
        print(f"{'case':<12} {'eager dev':>9} {'comp dev':>9} {'comp cpu':>9} {'speedup':>8} {'dev/cpu':>8}")
        for name, row in rows.items():
            cpu = row.get("compiled cpu")
            print(f"{name:<12} {ms(row['eager dev'])} {ms(row['compiled dev'])} {ms(cpu) if cpu else ' ' * 9}"
                  f" {row['eager dev'] / row['compiled dev']:8.2f} {row['compiled dev'] / cpu if cpu else math.nan:8.2f}")
    if "keys" in results and "direct" in results:
        print("\nkernel scope cost (compiled dev, keys - direct):")
        for name, row in results["keys"].items():
            d = results["direct"].get(name)
            if d:
                diff = row["compiled dev"] - d["compiled dev"]
                print(f"  {name:<12} {diff * 1e3:+.3f} ms ({row['compiled dev'] / d['compiled dev']:.3f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
