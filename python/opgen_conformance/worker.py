"""A persistent worker: imports torch (and the device, and OpInfo when a task's
samples are not cached yet) once, then runs tasks sent by the coordinator one
JSON line at a time.

Protocol (JSON lines; stdin from the coordinator, answers on the worker's
original stdout -- fd 1 itself is pointed at stderr so that kernels printing to
stdout cannot corrupt it):

  <- {"op", "kind", "view", "dtype", "start"}
  -> {"t": "ready", "unavailable"?: reason}     once, after imports; with the
                                                 reason the device does not exist here
  -> {"t": "gen"}                               before generating the task's samples
  -> {"t": "begin", "k": k}                      before sample k runs
  -> {"t": "phase", "k": k, "phase": check, "partial"?: {...}}
                                                 the check now running on device,
                                                 with the verdicts found so far
  -> {"t": "sample", "k": k, "source", "desc", "checks": {check: [status, msg]}}
  -> {"t": "done", "n": total_samples}

The coordinator's watchdog reads "begin"/"phase" to know which sample and check
a crash or hang belongs to.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from .config import RunConfig, load_config


def die_with_parent() -> None:
    """PR_SET_PDEATHSIG: a killed coordinator must not leave workers running."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)
    except Exception:
        pass


def _warm_up(device: Any) -> None:
    """The autograd engine's first use costs tens of ms once; pay it at
    startup, not on the first sample's clock."""
    import torch

    # CPU only: a broken device kernel here would kill every worker at startup
    # and with it the run, instead of costing one sample.
    try:
        y = torch.ones(2, requires_grad=True)
        torch.autograd.grad([(y * y).sum()], [y])
    except Exception:
        pass


def _limit_memory(limit: int | None) -> None:
    """Note [Worker memory limit]: a kernel that allocates without bound (a
    size computed wrong, a leak in a loop) must fail its sample, not take the
    machine down with the run (and, on a CI runner, whatever else runs there).
    RLIMIT_DATA caps the worker's private writable memory (heap and anonymous
    mappings, Linux >= 4.7): past it, allocation fails, the device allocator
    (host memory for the reference backend) or torch's CPU allocator raises,
    and checks.py records an out-of-memory crash for that sample. Unlike
    RLIMIT_AS it does not count address space that is only reserved
    (PROT_NONE), which GPU runtimes reserve by the tens of GB."""
    if not limit:
        return
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    n = int(limit) if hard == resource.RLIM_INFINITY else min(int(limit), hard)
    if soft == resource.RLIM_INFINITY or soft > n:
        resource.setrlimit(resource.RLIMIT_DATA, (n, hard))


class Channel:
    """The worker's side of the protocol: JSON lines on the original stdout,
    each saying which sample (`k`, set before it runs) it is about."""

    def __init__(self) -> None:
        self.out = os.fdopen(os.dup(1), "w", buffering=1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        self.k = -1

    def send(self, msg: dict[str, Any]) -> None:
        self.out.write(json.dumps(msg) + "\n")
        self.out.flush()

    def phase(self, p: str, partial: dict | None = None) -> None:
        """The check now running on the device, with the verdicts found so far."""
        msg: dict[str, Any] = {"t": "phase", "k": self.k, "phase": p}
        if partial:
            msg["partial"] = {c: list(v) for c, v in partial.items()}
        self.send(msg)


def main(config_path: str) -> int:
    die_with_parent()
    chan = Channel()
    config = load_config(config_path)
    _limit_memory(config.worker_memory_bytes)

    import torch

    from .device import open_device

    torch.set_num_threads(1)
    device = open_device(config)
    unavailable = device.unavailable_reason() if hasattr(device, "unavailable_reason") else None
    _warm_up(device)
    chan.send({"t": "ready", "unavailable": unavailable} if unavailable else {"t": "ready"})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        task = json.loads(line)
        if task.get("quit"):
            break
        if task.get("kind") == "model":
            _run_model(config, device, task, chan)
        else:
            _run_task(config, device, task, chan)
    return 0


def _run_model(config: RunConfig, device: Any, task: dict, chan: Channel) -> None:
    """One case of a model file as a task of one sample (models.py)."""
    from .models import run_model_task

    t0 = time.perf_counter()
    if int(task.get("start", 0)) == 0:
        chan.k = 0
        chan.send({"t": "begin", "k": 0, "source": "model", "desc": task["case"]})
        try:
            checks, info = run_model_task(
                task["file"], task["case"], device, config.results + ".divergence", chan.phase
            )
        except Exception as e:  # the model file's own error (its builder raised), reported as the case's
            checks, info = {"errors": ("fail", f"the case could not be run: {type(e).__name__}: {e}"[:1000])}, {}
        chan.send(
            {"t": "sample", "k": 0, "source": "model", "desc": task["case"], "checks": {c: list(v) for c, v in checks.items()}, "info": info}
        )
    chan.send({"t": "done", "n": 1, "gen_s": 0.0, "run_s": time.perf_counter() - t0})


def _run_task(config: RunConfig, device: Any, task: dict, chan: Channel) -> None:
    from .cache import cached_sample_list
    from .checks import Runner
    from .sample import describe
    from .tensors import DTYPES

    dtype = DTYPES[task["dtype"]]
    chan.send({"t": "gen"})
    t_gen = time.perf_counter()
    samples = cached_sample_list(config.cache_dir, task, dtype, config.seed, config.max_samples)
    t_run = time.perf_counter()
    chan.k = -1
    runner = Runner(
        task["op"], task["kind"], bool(task["view"]), dtype, device,
        grad_samples=config.grad_samples, overrides=config.tolerances, phase=chan.phase,
        decomposed=bool(task["decomposed"]),
    )
    for k in range(int(task.get("start", 0)), len(samples)):
        chan.k = k
        s = samples[k]
        desc = describe(s)
        chan.send({"t": "begin", "k": k, "source": s.source, "desc": desc})
        try:
            checks = runner.run(s, k)
        except Exception as e:  # a bug in a check, not in the kernel: still report it
            checks = {"values": ("fail", f"runner error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")}
        chan.send({"t": "sample", "k": k, "source": s.source, "desc": desc, "checks": {c: list(v) for c, v in checks.items()}})
    t_end = time.perf_counter()
    chan.send({"t": "done", "n": len(samples), "gen_s": t_run - t_gen, "run_s": t_end - t_run})
