"""The coordinator: a pool of persistent workers, a watchdog, the JSONL stream.

A task is one (overload, dtype). Workers run tasks sample by sample and say
which sample and check they are in ("begin"/"phase"). When a worker dies
(segfault, abort, OOM kill) or says nothing for ``timeout_s`` (a hang), that
sample is recorded as CRASH/TIMEOUT against the check it was in, the worker is
replaced and the task continues at the next sample (Note [Sample determinism]
in samples.py makes "the next sample" well defined in a fresh process).

Note [Results stream]: every sample result is appended to the results file as
one JSON line the moment it arrives, and a task's completion is its own line.
``--resume`` reads the file back: finished tasks are skipped, unfinished ones
continue after their last recorded sample, and a torn last line (the run was
killed mid-write) is cut off. Nothing recorded is lost and nothing is run twice.

Progress goes to stdout as JSON lines for the TypeScript driver.
"""

from __future__ import annotations

import collections
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from typing import Any

from . import KNOWN_DTYPES, index_file, sanitizer
from .config import ConfigError, RunConfig, load_config, write_config
from .results import ResultsFile
from .worker import _die_with_parent



def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event, sort_keys=True) + "\n")
    sys.stdout.flush()


@dataclass
class Task:
    op: dict
    dtype: str
    start: int = 0
    incidents: int = 0

    @property
    def key(self) -> tuple[str, str]:
        return (self.op["name"], self.dtype)


@dataclass
class Worker:
    proc: subprocess.Popen
    state: str = "starting"  # starting | idle | busy
    task: Task | None = None
    k: int = -1
    phase: str = "values"
    last: float = field(default_factory=time.monotonic)
    buf: bytes = b""
    partial: dict = field(default_factory=dict)
    sample_desc: tuple = ("", "")
    started: float = field(default_factory=time.monotonic)


class Coordinator:
    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.results_path: str = config.results
        self.timeout = float(config.timeout_s)
        self.startup_timeout = float(config.startup_timeout_s)
        self.gen_timeout = max(self.timeout, float(config.gen_timeout_s))
        self.nworkers = max(1, config.workers)
        self.seed = config.seed
        self.max_incidents = max(1, config.max_incidents)
        self.sel = selectors.DefaultSelector()
        self.workers: list[Worker] = []
        self.pending: collections.deque[Task] = collections.deque()
        self.tasks_total = 0
        self.tasks_done = 0
        self.samples = 0
        self.startup_failures = 0
        self.results = ResultsFile(config)
        self.log = None
        self.worker_config = ""
        # timings for bench/: kept out of the results file, which must not vary run to run
        self.stats: dict[str, float] = {"gen_s": 0.0, "run_s": 0.0, "worker_starts": 0}

    # -- setup ------------------------------------------------------------------

    def plan(self) -> None:
        nxt, done, incidents = self.results.open()
        for op in self.config.ops:
            for dt in op.get("dtypes") or []:
                if dt not in KNOWN_DTYPES:
                    continue
                self.tasks_total += 1
                key = (op["name"], dt)
                if key in done:
                    self.tasks_done += 1
                    continue
                self.pending.append(Task(op, dt, nxt.get(key, 0), incidents.get(key, 0)))

    def prepare_workers(self) -> None:
        self.cache = self.config.cache_dir or tempfile.mkdtemp(prefix="opgen-conformance-")
        fd, self.worker_config = tempfile.mkstemp(prefix="opgen-worker-", suffix=".json")
        os.close(fd)
        write_config(self.worker_config, replace(self.config, cache_dir=self.cache))
        self.log = open(self.results_path + ".log", "ab")

    def spawn(self) -> Worker:
        env = dict(os.environ)
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env.setdefault("OMP_NUM_THREADS", "1")
        proc = subprocess.Popen(
            [sys.executable, "-m", "opgen_conformance", "worker", "--config", self.worker_config],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=env,
        )
        w = Worker(proc)
        self.stats["worker_starts"] += 1
        os.set_blocking(proc.stdout.fileno(), False)
        self.sel.register(proc.stdout, selectors.EVENT_READ, w)
        self.workers.append(w)
        return w

    # -- the loop ---------------------------------------------------------------

    def run(self) -> int:
        self.plan()
        t0 = time.monotonic()
        emit({"event": "start", "tasks_total": self.tasks_total, "tasks_done": self.tasks_done, "workers": self.nworkers})
        if self.pending:
            self.prepare_workers()
            for _ in range(min(self.nworkers, len(self.pending))):
                self.spawn()
            # While the workers import torch: the index must be ready before
            # the first task is handed out (workers read it on a sample-cache
            # miss; Note [Sample cache]).
            cached = index_cached(self.cache)
            emit({"event": "index", "cache_dir": self.cache, "building": not cached})
            if not cached:
                from .sources.opinfo import load_index  # imports torch: only to build it

                load_index(self.cache)
        while self.pending or any(w.state == "busy" for w in self.workers):
            spare = [w for w in self.workers if w.state != "busy"]
            if self.pending and not spare and len(self.workers) < self.nworkers:
                self.spawn()
            events = self.sel.select(timeout=0.5)
            for key, _ in events:
                self.on_readable(key.data)
            self.watchdog()
        for w in list(self.workers):
            self.stop(w, graceful=True)
        emit(
            {
                "event": "finished",
                "tasks_total": self.tasks_total,
                "tasks_done": self.tasks_done,
                "samples": self.samples,
                "elapsed_s": round(time.monotonic() - t0, 3),
            }
        )
        self.results.close()
        self.stats.update({"elapsed_s": time.monotonic() - t0, "samples": self.samples})
        with open(self.results_path + ".stats.json", "w") as f:
            json.dump(self.stats, f, sort_keys=True)
        return 0

    def on_readable(self, w: Worker) -> None:
        try:
            chunk = os.read(w.proc.stdout.fileno(), 1 << 16)
        except BlockingIOError:
            return
        if not chunk:
            self.on_death(w)
            return
        w.buf += chunk
        while b"\n" in w.buf:
            line, w.buf = w.buf.split(b"\n", 1)
            if line.strip():
                self.on_message(w, json.loads(line))

    def on_message(self, w: Worker, msg: dict) -> None:
        w.last = time.monotonic()
        t = msg.get("t")
        if t == "ready":
            w.state = "idle"
            self.startup_failures = 0
            if msg.get("unavailable") and self.pending:
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
            self.record_sample(w.task, int(msg["k"]), msg["checks"], msg.get("source", ""), msg.get("desc", ""))
        elif t == "done":
            assert w.task is not None
            self.stats["gen_s"] += float(msg.get("gen_s", 0))
            self.stats["run_s"] += float(msg.get("run_s", 0))
            self.record_done(w.task, int(msg["n"]))
            w.task = None
            w.state = "idle"
            self.assign(w)

    def skip_all(self, reason: str) -> None:
        """Note [Unavailable device]: the device under test does not exist on
        this machine (a CUDA-backed project on a host without a GPU), as the
        first worker to start found out: every task left is recorded as
        skipped with that reason instead of each sample failing."""
        emit({"event": "unavailable", "reason": reason})
        while self.pending:
            self.record_done(self.pending.popleft(), 0, stopped=f"skipped: {reason}")

    def assign(self, w: Worker) -> None:
        if not self.pending:
            self.stop(w, graceful=True)
            return
        task = self.pending.popleft()
        w.task, w.k, w.phase, w.state, w.last = task, -1, "values", "busy", time.monotonic()
        w.partial, w.sample_desc = {}, ("", "")
        msg = {"op": task.op["name"], "kind": task.op.get("kind", "functional"), "view": bool(task.op.get("view"))}
        msg.update({"dtype": task.dtype, "start": task.start})
        try:
            assert w.proc.stdin is not None
            w.proc.stdin.write((json.dumps(msg) + "\n").encode())
            w.proc.stdin.flush()
        except OSError:
            self.on_death(w)

    def watchdog(self) -> None:
        now = time.monotonic()
        for w in list(self.workers):
            # Generating samples may import OpInfo and trace (seconds, more on a
            # loaded machine); it runs only CPU code of torch's, so it gets a
            # generous limit of its own instead of the per-sample one.
            limit = self.gen_timeout if w.phase == "generate" else self.timeout
            if w.state == "busy" and now - w.last > limit:
                self.incident(w, "timeout", f"no answer in {limit:g}s (hang) while {_doing(w.phase)}")
            elif w.state == "starting" and now - w.started > self.startup_timeout:
                self.incident(w, "startup", f"worker did not start in {self.startup_timeout:g}s")

    def on_death(self, w: Worker) -> None:
        rc = w.proc.wait()
        if rc < 0:
            try:
                sig = signal.Signals(-rc).name
            except ValueError:
                sig = f"signal {-rc}"
            why = f"worker killed by {sig}"
            if -rc == signal.SIGKILL:
                why += " (out of memory?)"
        else:
            why = f"worker exited with status {rc}"
        found = sanitizer.crash_message(os.environ.get(sanitizer.LOGS_ENV), w.proc.pid)
        if found:
            why = found
        if w.state == "starting":
            self.incident(w, "startup", why)
        else:
            self.incident(w, "crash", f"{why} while {_doing(w.phase)}")

    def incident(self, w: Worker, kind: str, message: str) -> None:
        task, k, partial = w.task, w.k, dict(w.partial)
        source, desc = w.sample_desc if k >= 0 else ("", "")
        self.stop(w, graceful=False)
        if kind == "startup":
            self.startup_failures += 1
            if self.startup_failures >= 3:
                limit = self.config.worker_memory_bytes
                hint = f" (each may allocate {limit / 2**30:.1f} GiB: --worker-memory)" if limit else ""
                raise SystemExit(
                    f"opgen-conformance: workers fail to start{hint} ({message}); "
                    f"last lines of {self.results_path}.log:\n{self.log_tail()}"
                )
            return
        if task is None:
            return
        k = k if k >= 0 else task.start
        if w.phase == "generate":
            w.phase = "values"
        status = "crash" if kind == "crash" else "timeout"
        if w.phase == "reference":
            # eager CPU died on this input, not the device: nothing to compare against
            status = "skip"
            message = f"the CPU reference {'crashed' if kind == 'crash' else 'hung'} on this sample ({message})"
            self.record_sample(task, k, {"errors": [status, message]}, source, desc, incident=True)
        else:
            self.record_sample(task, k, {**partial, w.phase: [status, message]}, source, desc, incident=True)
        emit({"event": "incident", "kind": status, "op": task.op["name"], "dtype": task.dtype, "sample": k, "message": message})
        if task.incidents + 1 >= self.max_incidents:
            # Each crash costs a worker restart (seconds); a kernel that crashes
            # on every sample would dominate the run. The rest is left unrun, said so.
            self.record_done(task, k + 1, f"stopped after {task.incidents + 1} crashes/timeouts")
        else:
            self.pending.appendleft(Task(task.op, task.dtype, k + 1, task.incidents + 1))

    def stop(self, w: Worker, graceful: bool) -> None:
        if w in self.workers:
            self.workers.remove(w)
        try:
            self.sel.unregister(w.proc.stdout)
        except (KeyError, ValueError):
            pass
        if graceful and w.proc.poll() is None:
            try:
                assert w.proc.stdin is not None
                w.proc.stdin.write(b'{"quit": true}\n')
                w.proc.stdin.close()
                w.proc.wait(timeout=10)
            except Exception:
                pass
        if w.proc.poll() is None:
            w.proc.kill()
            w.proc.wait()
        for s in (w.proc.stdin, w.proc.stdout):
            try:
                if s:
                    s.close()
            except OSError:
                pass

    def log_tail(self, n: int = 8) -> str:
        try:
            with open(self.results_path + ".log", "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 8192))
                lines = f.read().decode(errors="replace").strip().splitlines()
            return "\n".join(lines[-n:])
        except OSError:
            return ""

    # -- records ----------------------------------------------------------------

    def record_sample(self, task: Task, k: int, checks: dict, source: str, desc: str, incident: bool = False) -> None:
        rec = {
            "kind": "sample",
            "op": task.op["name"],
            "dtype": task.dtype,
            "sample": k,
            "seed": self.seed,
            "source": source,
            "desc": desc,
            "checks": checks,
        }
        if incident:
            rec["incident"] = True
        self.results.write(rec)
        self.samples += 1

    def record_done(self, task: Task, n: int, stopped: str = "") -> None:
        rec: dict[str, Any] = {"kind": "task", "op": task.op["name"], "dtype": task.dtype, "samples": n}
        if stopped:
            rec["stopped"] = stopped
        self.results.write(rec)
        self.tasks_done += 1
        emit(
            {
                "event": "task",
                "op": task.op["name"],
                "dtype": task.dtype,
                "tasks_done": self.tasks_done,
                "tasks_total": self.tasks_total,
                "samples": self.samples,
            }
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


def _doing(phase: str) -> str:
    if phase == "generate":
        return "generating samples"
    if phase == "reference":
        return "running the CPU reference"
    return f"checking {phase}"


def run(config_path: str) -> int:
    _die_with_parent()
    try:
        config = load_config(config_path)
    except ConfigError as e:
        raise SystemExit(f"opgen-conformance: {e}") from None
    return Coordinator(config).run()
