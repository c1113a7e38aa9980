"""The benchmark's baseline: the samples of a run's tasks (from Note [Sample
cache] in cache.py, which the run filled), executed on CPU and on the device in one
process with no checks, no workers, no watchdog. ``bench/conformance.mjs``
divides the runner's time by this.

    python -m opgen_conformance.baseline CONFIG
"""

from __future__ import annotations

import json
import sys
import time
import warnings

import torch
from torch.utils._pytree import tree_map

from .config import load_config
from .device import open_device
from .cache import sample_cache_file, samples_cache_dir
from .overloads import resolve_overload
from .sample import empty_outs
from .tensors import clone_tree


def main(config_path: str) -> int:
    config = load_config(config_path)
    torch.set_num_threads(1)
    dev = open_device(config)
    samples_dir = samples_cache_dir(config.cache_dir)
    seed, max_samples = config.seed, config.max_samples
    tasks = []
    for op in config.ops:
        for dtype in op.get("dtypes") or []:
            what = {"op": op["name"], "kind": op["kind"], "dtype": dtype, "seed": seed, "max_samples": max_samples}
            cached = torch.load(sample_cache_file(samples_dir, what), weights_only=False)
            tasks.append({**what, "samples": cached["samples"]})
    warnings.simplefilter("ignore")
    _run(tasks, dev, grad=True)  # warm-up: first autograd use, allocator, kernels' lazy init
    fwd = _run(tasks, dev, grad=False)
    both = _run(tasks, dev, grad=True)
    n = sum(len(t["samples"]) for t in tasks)
    print(json.dumps({"samples": n, "tasks": len(tasks), "elapsed_s": fwd, "elapsed_with_grad_s": both}))
    return 0


def _backward(op, args, kwargs, dev=None):
    """What the runner's gradient check executes, minus the checking."""
    args = dev.to_device(args) if dev else clone_tree(args)
    kwargs = dev.to_device(kwargs) if dev else clone_tree(kwargs)
    leaves = [a.requires_grad_(True) for a in args if isinstance(a, torch.Tensor) and a.is_floating_point()]
    if not leaves:
        return
    out = op(*args, **kwargs)
    outs = [o for o in (out if isinstance(out, (tuple, list)) else [out]) if isinstance(o, torch.Tensor) and o.requires_grad]
    if outs:
        torch.autograd.grad(outs, leaves, [torch.ones_like(o) for o in outs], allow_unused=True)


def _run(tasks, dev, grad: bool) -> float:
    t0 = time.perf_counter()
    for t in tasks:
        op = resolve_overload(t["op"])
        for k, s in enumerate(t["samples"]):
            if grad and k < 3 and t["kind"] == "functional" and t["dtype"] in ("float32", "float64"):
                for d in (None, dev):
                    try:
                        _backward(op, s.args, s.kwargs, d)
                    except Exception:
                        pass
            couts = empty_outs(s)
            douts = empty_outs(s, dev.device)
            try:
                op(*clone_tree(s.args), **clone_tree(s.kwargs), **couts)
            except Exception:
                pass
            try:
                r = dev.call(t["op"], op, dev.to_device(s.args), {**dev.to_device(s.kwargs), **douts})
                tree_map(lambda x: x.cpu() if isinstance(x, torch.Tensor) else x, r)
            except Exception:
                pass
    return time.perf_counter() - t0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
