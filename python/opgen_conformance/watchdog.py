"""The watchdog: a worker that dies (segfault, abort, OOM kill) or says
nothing for ``timeout_s`` (a hang) costs only the sample it was on. Workers
say which sample and check they are in ("begin"/"phase", worker.py); the
sample is recorded as CRASH/TIMEOUT against that check, with the verdicts
found before it, the worker is replaced and the task continues at the next
sample (Note [Sample determinism] in samples.py makes "the next sample" well
defined in a fresh process; scheduler.py puts the task back).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Iterator

from . import sanitizer
from .workers import Worker


class Watchdog:
    def __init__(self, timeout_s: float, gen_timeout_s: float, startup_timeout_s: float) -> None:
        self.timeout = float(timeout_s)
        self.gen_timeout = max(self.timeout, float(gen_timeout_s))
        self.startup_timeout = float(startup_timeout_s)

    def overdue(self, workers: list[Worker]) -> Iterator[tuple[Worker, str, str]]:
        """(worker, "timeout" or "startup", why) for each worker past its limit."""
        now = time.monotonic()
        for w in list(workers):
            # Generating samples may import OpInfo and trace (seconds, more on a
            # loaded machine); it runs only CPU code of torch's, so it gets a
            # generous limit of its own instead of the per-sample one.
            limit = self.gen_timeout if w.phase == "generate" else self.timeout
            if w.state == "busy" and now - w.last > limit:
                yield w, "timeout", f"no answer in {limit:g}s (hang) while {doing(w.phase)}"
            elif w.state == "starting" and now - w.started > self.startup_timeout:
                yield w, "startup", f"worker did not start in {self.startup_timeout:g}s"


def death(w: Worker) -> tuple[str, str]:
    """("startup" or "crash", why) for a worker whose stdout closed: the
    signal or exit status, or the sanitizer's report of the crash."""
    why = _exit_cause(w.proc)
    found = sanitizer.crash_message(os.environ.get(sanitizer.LOGS_ENV), w.proc.pid)
    if found:
        why = found
    if w.state == "starting":
        return "startup", why
    return "crash", f"{why} while {doing(w.phase)}"


def _exit_cause(proc: subprocess.Popen) -> str:
    rc = proc.wait()
    if rc >= 0:
        return f"worker exited with status {rc}"
    try:
        sig = signal.Signals(-rc).name
    except ValueError:
        sig = f"signal {-rc}"
    return f"worker killed by {sig}" + (" (out of memory?)" if -rc == signal.SIGKILL else "")


def incident_verdicts(kind: str, phase: str, partial: dict, message: str) -> tuple[str, dict, str]:
    """(status, the sample's checks, message) for a "crash" or "timeout" in
    `phase`, with the verdicts `partial` found before it."""
    status = "crash" if kind == "crash" else "timeout"
    if phase == "reference":
        # eager CPU died on this input, not the device: nothing to compare against
        status = "skip"
        message = f"the CPU reference {'crashed' if kind == 'crash' else 'hung'} on this sample ({message})"
        return status, {"errors": [status, message]}, message
    return status, {**partial, phase: [status, message]}, message


def doing(phase: str) -> str:
    if phase == "generate":
        return "generating samples"
    if phase == "reference":
        return "running the CPU reference"
    return f"checking {phase}"
