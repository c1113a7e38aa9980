"""The worker processes of a run (worker.py is what runs in them): started
with this package on PYTHONPATH and one OpenMP thread each, their protocol
lines read without blocking, tasks written to their stdin, stopped politely
or killed, and their stderr appended to ``<results>.log``, whose last lines
explain a worker that does not start.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from .scheduler import Task


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


class Workers:
    """The live workers, and the means to start, hear, tell and stop them."""

    def __init__(self, config_path: str, log_path: str, command: str = "worker") -> None:
        # "worker" (worker.py) or "bench-worker" (bench.py)
        self.command = command
        self.config_path = config_path
        self.log_path = log_path
        self.log = open(log_path, "ab")
        self.sel = selectors.DefaultSelector()
        self.live: list[Worker] = []
        self.starts = 0

    def spawn(self) -> Worker:
        env = dict(os.environ)
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env.setdefault("OMP_NUM_THREADS", "1")
        proc = subprocess.Popen(
            [sys.executable, "-m", "opgen_conformance", self.command, "--config", self.config_path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=env,
        )
        w = Worker(proc)
        self.starts += 1
        os.set_blocking(proc.stdout.fileno(), False)
        self.sel.register(proc.stdout, selectors.EVENT_READ, w)
        self.live.append(w)
        return w

    def readable(self, timeout: float) -> list[Worker]:
        """The workers with something to read (or that closed their stdout)."""
        return [key.data for key, _ in self.sel.select(timeout=timeout)]

    def read(self, w: Worker) -> list[dict[str, Any]] | None:
        """The complete protocol lines `w` has written since the last read;
        None when its stdout closed (the worker died)."""
        try:
            chunk = os.read(w.proc.stdout.fileno(), 1 << 16)
        except BlockingIOError:
            return []
        if not chunk:
            return None
        w.buf += chunk
        msgs = []
        while b"\n" in w.buf:
            line, w.buf = w.buf.split(b"\n", 1)
            if line.strip():
                msgs.append(json.loads(line))
        return msgs

    def send(self, w: Worker, msg: dict[str, Any]) -> bool:
        """Writes one line to `w`; False when it is gone."""
        try:
            assert w.proc.stdin is not None
            w.proc.stdin.write((json.dumps(msg) + "\n").encode())
            w.proc.stdin.flush()
            return True
        except OSError:
            return False

    def stop(self, w: Worker, graceful: bool) -> None:
        if w in self.live:
            self.live.remove(w)
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
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 8192))
                lines = f.read().decode(errors="replace").strip().splitlines()
            return "\n".join(lines[-n:])
        except OSError:
            return ""
