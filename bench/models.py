"""The model zoo's training steps on the device vs eager CPU, side by side in
one process at the same thread count: per case, the median time of one step
(forward, loss, backward, and the optimizer step where the case has one) on
each, their ratio (device / eager CPU; lower is better), then the geomean and
the worst. Issue 23's goal: geomean <= 1.0, no case above 1.5.

  PYTHONPATH=<site of a built backend>:python python bench/models.py --device <name> [--package torch_<name>]
      [--threads 2] [--runs 7] [--cases 'gpt2,bert*'] [--clock wall|cpu]

Same timing as `opgen-backend test --model` reports per case
(opgen_conformance.models.step_times: a warm-up each, then the runs
interleaved so a change in the machine's load falls on both), with more runs
and no checks around it. `--clock cpu` times the process's CPU seconds
instead of wall time, for a machine other work shares (with --threads 1 the
two agree on a quiet machine).
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402

from opgen_conformance.device import RealDevice  # noqa: E402
from opgen_conformance.modelfile import ZOO, build, select  # noqa: E402
from opgen_conformance.models import _no_dropout, step_times  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", required=True)
    ap.add_argument("--package", help="the device's Python package (default torch_<device>)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--cases", default="", help="comma-separated globs of zoo case names (default: all)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="wall time, or the process's CPU time")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    dev = RealDevice(a.device, a.package or f"torch_{a.device}")
    names = select(ZOO, [g for g in a.cases.split(",") if g])
    print(f"{'case':<14} {'device ms':>10} {'eager ms':>10} {'ratio':>7}   ({a.threads} threads, median of {a.runs}, {a.clock} clock)")
    ratios = []
    for name in names:
        spec = build(ZOO, name)
        _no_dropout(spec["module"])
        t = step_times(spec, spec["module"], dev, a.runs, a.clock)
        ratios.append(t["ratio"])
        print(f"{name:<14} {t['device'] * 1e3:>10.2f} {t['eager'] * 1e3:>10.2f} {t['ratio']:>7.2f}", flush=True)
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    worst = max(zip(ratios, names))
    print(f"geomean {geo:.2f}, worst {worst[0]:.2f} ({worst[1]}) over {len(ratios)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
