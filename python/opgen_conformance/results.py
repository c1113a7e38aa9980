"""The results file: one JSON record a line, a header first, then a record
per sample and per finished task, each flushed as it is written, so a killed
run loses at most its last line and ``--resume`` goes on from what is there.
The coordinator (pool.py) writes it through a Recorder, which also reports
progress on stdout; the TypeScript driver reads both.

Note [Results stream]: every sample result is appended to the results file as
one JSON line the moment it arrives, and a task's completion is its own line.
``--resume`` reads the file back: finished tasks are skipped, unfinished ones
continue after their last recorded sample, and a torn last line (the run was
killed mid-write) is cut off. Nothing recorded is lost and nothing is run twice.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, TextIO

from .config import RunConfig

# The header's keys: a run resumes a results file only if they are equal.
HEADER_KEYS = ("seed", "max_samples", "grad_samples", "device")


def read_results(
    path: str,
) -> tuple[dict | None, dict[tuple[str, str], int], set[tuple[str, str]], dict[tuple[str, str], int]]:
    """(header, next sample per task, finished tasks, incidents per task); cuts a torn last line."""
    header = None
    incidents: dict[tuple[str, str], int] = {}
    nxt: dict[tuple[str, str], int] = {}
    done: set[tuple[str, str]] = set()
    if not os.path.exists(path):
        return header, nxt, done, incidents
    with open(path, "rb") as f:
        data = f.read()
    good = data.rfind(b"\n") + 1
    if good != len(data):
        with open(path, "r+b") as f:
            f.truncate(good)
    for raw in data[:good].splitlines():
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        kind = rec.get("kind")
        if kind == "header":
            header = rec
        elif kind == "sample":
            key = (rec["op"], rec["dtype"])
            nxt[key] = max(nxt.get(key, 0), int(rec["sample"]) + 1)
            if rec.get("incident"):
                incidents[key] = incidents.get(key, 0) + 1
        elif kind == "task":
            done.add((rec["op"], rec["dtype"]))
    return header, nxt, done, incidents


class ResultsFile:
    """The results file of one run: opened (fresh or resumed) once, then appended to."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.path = config.results
        self.out: TextIO | None = None

    def open(self) -> tuple[dict[tuple[str, str], int], set[tuple[str, str]], dict[tuple[str, str], int]]:
        """Starts the file, or takes up an earlier one under --resume; returns
        (next sample per task, finished tasks, incidents per task) of what is there."""
        header: dict[str, Any] = {k: getattr(self.config, k) for k in HEADER_KEYS}
        header["kind"] = "header"
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        nxt: dict[tuple[str, str], int] = {}
        done: set[tuple[str, str]] = set()
        incidents: dict[tuple[str, str], int] = {}
        if self.config.resume:
            old, nxt, done, incidents = read_results(self.path)
            if old is not None and any(old.get(k) != header.get(k) for k in HEADER_KEYS):
                diff = ", ".join(f"{k} {old.get(k)!r} -> {header.get(k)!r}" for k in HEADER_KEYS if old.get(k) != header.get(k))
                raise SystemExit(f"opgen-conformance: cannot resume {self.path}: it was run with other settings ({diff})")
            fresh = old is None
        else:
            fresh = True
        self.out = open(self.path, "a" if not fresh else "w")
        if fresh:
            self.write(header)
        return nxt, done, incidents

    def write(self, rec: dict[str, Any]) -> None:
        assert self.out is not None
        self.out.write(json.dumps(rec, sort_keys=True) + "\n")
        self.out.flush()

    def close(self) -> None:
        if self.out:
            self.out.close()
            self.out = None


def emit(event: dict[str, Any]) -> None:
    """One progress event on stdout, a JSON line, for the TypeScript driver."""
    sys.stdout.write(json.dumps(event, sort_keys=True) + "\n")
    sys.stdout.flush()


class Recorder:
    """Records one run: each sample's verdicts and each finished task, to the
    results file and, for finished tasks, as a progress event; counts them."""

    def __init__(self, config: RunConfig) -> None:
        self.seed = config.seed
        self.file = ResultsFile(config)
        self.tasks_total = 0
        self.tasks_done = 0
        self.samples = 0

    def open(self) -> tuple[dict[tuple[str, str], int], set[tuple[str, str]], dict[tuple[str, str], int]]:
        return self.file.open()

    def close(self) -> None:
        self.file.close()

    def sample(
        self, op: str, dtype: str, k: int, checks: dict, source: str, desc: str, incident: bool = False, info: dict | None = None
    ) -> None:
        rec = {
            "kind": "sample",
            "op": op,
            "dtype": dtype,
            "sample": k,
            "seed": self.seed,
            "source": source,
            "desc": desc,
            "checks": checks,
        }
        if incident:
            rec["incident"] = True
        if info is not None:
            rec["model"] = info  # a model case's report data (models.py run_model_task)
        self.file.write(rec)
        self.samples += 1

    def task(self, op: str, dtype: str, n: int, stopped: str = "") -> None:
        rec: dict[str, Any] = {"kind": "task", "op": op, "dtype": dtype, "samples": n}
        if stopped:
            rec["stopped"] = stopped
        self.file.write(rec)
        self.tasks_done += 1
        emit(
            {
                "event": "task",
                "op": op,
                "dtype": dtype,
                "tasks_done": self.tasks_done,
                "tasks_total": self.tasks_total,
                "samples": self.samples,
            }
        )
