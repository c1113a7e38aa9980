"""The coordinator: runs a config's tasks on a pool of persistent workers.

Its parts, each in its own module: the scheduler (scheduler.py) says which
task runs next, the workers (workers.py) are the processes, the watchdog
(watchdog.py) turns a dead or silent worker into a CRASH/TIMEOUT for the
sample it was on, and the recorder (results.py) writes the JSONL results
stream (Note [Results stream]) and the progress events, JSON lines on stdout
for the TypeScript driver. This module starts them and runs the loop that
passes workers' messages between them.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import replace
from typing import Any

from . import index_file
from .config import ConfigError, RunConfig, load_config, write_config
from .results import Recorder, emit
from .scheduler import Scheduler
from .watchdog import Watchdog, death, incident_verdicts
from .worker import die_with_parent
from .workers import Worker, Workers


class Coordinator:
    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.nworkers = max(1, config.workers)
        self.scheduler = Scheduler(config)
        self.recorder = Recorder(config)
        self.watchdog = Watchdog(config.timeout_s, config.gen_timeout_s, config.startup_timeout_s)
        self.workers: Workers | None = None
        self.startup_failures = 0
        # timings for bench/: kept out of the results file, which must not vary run to run
        self.stats: dict[str, Any] = {"gen_s": 0.0, "run_s": 0.0, "worker_starts": 0}

    def run(self) -> int:
        nxt, done, incidents = self.recorder.open()
        self.recorder.tasks_done = self.scheduler.plan(nxt, done, incidents)
        self.recorder.tasks_total = self.scheduler.tasks_total
        t0 = time.monotonic()
        emit(
            {
                "event": "start",
                "tasks_total": self.recorder.tasks_total,
                "tasks_done": self.recorder.tasks_done,
                "workers": self.nworkers,
            }
        )
        live: list[Worker] = []
        if self.scheduler.pending:
            live = self.start_workers().live
        while self.scheduler.pending or any(w.state == "busy" for w in live):
            assert self.workers is not None
            spare = [w for w in live if w.state != "busy"]
            if self.scheduler.pending and not spare and len(live) < self.nworkers:
                self.workers.spawn()
            for w in self.workers.readable(0.5):
                self.on_readable(w)
            for w, kind, why in self.watchdog.overdue(live):
                self.incident(w, kind, why)
        for w in list(live):
            self.stop(w)
        self.finish(t0)
        return 0

    def start_workers(self) -> Workers:
        cache = self.config.cache_dir or tempfile.mkdtemp(prefix="opgen-conformance-")
        fd, worker_config = tempfile.mkstemp(prefix="opgen-worker-", suffix=".json")
        os.close(fd)
        write_config(worker_config, replace(self.config, cache_dir=cache))
        self.workers = Workers(worker_config, self.config.results + ".log")
        for _ in range(min(self.nworkers, len(self.scheduler.pending))):
            self.workers.spawn()
        # While the workers import torch: the index must be ready before
        # the first task is handed out (workers read it on a sample-cache
        # miss; Note [Sample cache] in cache.py).
        # model cases need no OpInfo index
        cached = index_cached(cache) or not self.config.ops
        emit({"event": "index", "cache_dir": cache, "building": not cached})
        if not cached:
            from .sources.opinfo import load_index  # imports torch: only to build it

            load_index(cache)
        return self.workers

    def finish(self, t0: float) -> None:
        rec = self.recorder
        elapsed = time.monotonic() - t0
        emit(
            {
                "event": "finished",
                "tasks_total": rec.tasks_total,
                "tasks_done": rec.tasks_done,
                "samples": rec.samples,
                "elapsed_s": round(elapsed, 3),
            }
        )
        rec.close()
        self.stats["worker_starts"] = self.workers.starts if self.workers else 0
        self.stats.update({"elapsed_s": elapsed, "samples": rec.samples})
        with open(self.config.results + ".stats.json", "w") as f:
            json.dump(self.stats, f, sort_keys=True)

    # -- a worker's messages ------------------------------------------------------

    def on_readable(self, w: Worker) -> None:
        assert self.workers is not None
        msgs = self.workers.read(w)
        if msgs is None:
            self.incident(w, *death(w))
            return
        for msg in msgs:
            self.on_message(w, msg)

    def on_message(self, w: Worker, msg: dict) -> None:
        w.last = time.monotonic()
        t = msg.get("t")
        if t == "ready":
            w.state = "idle"
            self.startup_failures = 0
            if msg.get("unavailable") and self.scheduler.pending:
                self.skip_all(str(msg["unavailable"]))
            self.assign(w)
        elif t == "gen":
            w.phase = "generate"
        elif t == "begin":
            w.k = int(msg["k"])
            w.phase = "values"
            w.partial = {}
            w.sample_desc = (str(msg.get("source", "")), str(msg.get("desc", "")))
        elif t == "phase":
            w.phase = msg["phase"]
            w.partial = dict(msg.get("partial") or {})
        elif t == "sample":
            assert w.task is not None
            info = msg.get("info")
            if info is not None and "time_s" in info:
                # timings vary run to run: stats, not results (Note [Results stream])
                self.stats.setdefault("model_time_s", {})[w.task.key[0]] = info.pop("time_s")
            self.recorder.sample(
                *w.task.key, int(msg["k"]), msg["checks"], msg.get("source", ""), msg.get("desc", ""), info=info
            )
        elif t == "done":
            assert w.task is not None
            self.stats["gen_s"] += float(msg.get("gen_s", 0))
            self.stats["run_s"] += float(msg.get("run_s", 0))
            self.recorder.task(*w.task.key, int(msg["n"]))
            w.task = None
            w.state = "idle"
            self.assign(w)

    def skip_all(self, reason: str) -> None:
        """Note [Unavailable device]: the device under test does not exist on
        this machine (a CUDA-backed project on a host without a GPU), as the
        first worker to start found out: every task left is recorded as
        skipped with that reason instead of each sample failing."""
        emit({"event": "unavailable", "reason": reason})
        while (task := self.scheduler.next()) is not None:
            self.recorder.task(*task.key, 0, stopped=f"skipped: {reason}")

    def assign(self, w: Worker) -> None:
        assert self.workers is not None
        task = self.scheduler.next()
        if task is None:
            self.stop(w)
            return
        w.task, w.k, w.phase, w.state, w.last = task, -1, "values", "busy", time.monotonic()
        w.partial, w.sample_desc = {}, ("", "")
        if not self.workers.send(w, task.message()):
            self.incident(w, *death(w))

    def stop(self, w: Worker, graceful: bool = True) -> None:
        assert self.workers is not None
        self.workers.stop(w, graceful)

    # -- incidents ----------------------------------------------------------------

    def incident(self, w: Worker, kind: str, message: str) -> None:
        """A worker died or hung (`kind`: "crash", "timeout" or "startup")."""
        task, k, partial = w.task, w.k, dict(w.partial)
        source, desc = w.sample_desc if k >= 0 else ("", "")
        self.stop(w, graceful=False)
        if kind == "startup":
            self.startup_failed(message)
            return
        if task is None:
            return
        k = k if k >= 0 else task.start
        phase = "values" if w.phase == "generate" else w.phase
        status, checks, message = incident_verdicts(kind, phase, partial, message)
        self.recorder.sample(*task.key, k, checks, source, desc, incident=True)
        emit({"event": "incident", "kind": status, "op": task.op["name"], "dtype": task.dtype, "sample": k, "message": message})
        stopped = self.scheduler.after_incident(task, k)
        if stopped is not None:
            self.recorder.task(*task.key, k + 1, stopped)

    def startup_failed(self, message: str) -> None:
        assert self.workers is not None
        self.startup_failures += 1
        if self.startup_failures >= 3:
            limit = self.config.worker_memory_bytes
            hint = f" (each may allocate {limit / 2**30:.1f} GiB: --worker-memory)" if limit else ""
            raise SystemExit(
                f"opgen-conformance: workers fail to start{hint} ({message}); "
                f"last lines of {self.config.results}.log:\n{self.workers.log_tail()}"
            )


def index_cached(cache_dir: str) -> bool:
    """Whether the OpInfo index of the installed torch is cached, asked
    without importing torch (the version from the package's metadata)."""
    import importlib.metadata

    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return False
    return os.path.isfile(index_file(cache_dir, version))


def run(config_path: str) -> int:
    die_with_parent()
    try:
        config = load_config(config_path)
    except ConfigError as e:
        raise SystemExit(f"opgen-conformance: {e}") from None
    return Coordinator(config).run()
