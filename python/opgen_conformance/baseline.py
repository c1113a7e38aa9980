"""The benchmark's baseline: the samples a run generated (its sample cache),
executed on CPU and on the device in one process with no checks, no workers,
no watchdog. ``bench/conformance.mjs`` divides the runner's time by this.

    python -m opgen_conformance.baseline CONFIG SAMPLES_DIR
"""

from __future__ import annotations

import glob
import json
import os
import sys
import time
import warnings

import torch
from torch.utils._pytree import tree_map

from .device import open_device
from .samples import clone_tree, resolve_overload


def main(config_path: str, samples_dir: str) -> int:
    with open(config_path) as f:
        config = json.load(f)
    torch.set_num_threads(1)
    dev = open_device(config)
    tasks = [torch.load(p, weights_only=False) for p in sorted(glob.glob(os.path.join(samples_dir, "*.pt")))]
    n = 0
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    for t in tasks:
        op = resolve_overload(t["op"])
        for s in t["samples"]:
            n += 1
            couts = {k: torch.empty(0, dtype=d) for k, d in zip(s.out_names, s.out_dtypes)}
            douts = {k: torch.empty(0, dtype=d, device=dev.device) for k, d in zip(s.out_names, s.out_dtypes)}
            try:
                op(*clone_tree(s.args), **clone_tree(s.kwargs), **couts)
            except Exception:
                pass
            try:
                r = dev.call(t["op"], op, dev.to_device(s.args), {**dev.to_device(s.kwargs), **douts})
                tree_map(lambda x: x.cpu() if isinstance(x, torch.Tensor) else x, r)
            except Exception:
                pass
    elapsed = time.perf_counter() - t0
    print(json.dumps({"samples": n, "tasks": len(tasks), "elapsed_s": elapsed}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
