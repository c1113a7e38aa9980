"""The scheduler: which task a free worker runs next.

A task is one (overload, dtype), or one case of a model file (its op is
the case's name, ``model:<file>:<case>``, its kind ``model``, its dtype
float32; Note [Model case] in modelfile.py). The plan is every task of the run config
less what the results file already holds (Note [Results stream] in
results.py): finished tasks are left out, unfinished ones start after their
last recorded sample. Tasks are handed out in the config's order; a task
whose sample cost an incident (watchdog.py) goes back to the front, to go
on at the next sample in a fresh worker, or stops once it has had
``max_incidents`` of them.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Any

from . import KNOWN_DTYPES
from .config import RunConfig

MODEL_DTYPE = "float32"


@dataclass
class Task:
    op: dict
    dtype: str
    start: int = 0
    incidents: int = 0

    @property
    def key(self) -> tuple[str, str]:
        return (self.op["name"], self.dtype)

    def message(self) -> dict[str, Any]:
        """What a worker is sent to run this task (worker.py's protocol). An
        op's keys are the run config's, all present (Note [Run config
        contract] in config.py)."""
        msg = {
            "op": self.op["name"],
            "kind": self.op["kind"],
            "view": self.op["view"],
            "decomposed": self.op["decomposed"],
        }
        if msg["kind"] == "model":
            msg.update(file=self.op["file"], case=self.op["case"])
        msg.update({"dtype": self.dtype, "start": self.start})
        return msg


class Scheduler:
    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.pending: collections.deque[Task] = collections.deque()
        self.tasks_total = 0

    def plan(
        self, nxt: dict[tuple[str, str], int], done: set[tuple[str, str]], incidents: dict[tuple[str, str], int]
    ) -> int:
        """Queues the run's tasks, given what the results file holds (next
        sample, finished, incidents per task); returns how many are done already."""
        already = 0
        for op in self.config.ops:
            for dt in op["dtypes"]:
                if dt not in KNOWN_DTYPES:
                    continue
                self.tasks_total += 1
                key = (op["name"], dt)
                if key in done:
                    already += 1
                    continue
                self.pending.append(Task(op, dt, nxt.get(key, 0), incidents.get(key, 0)))
        for m in self.config.models:
            self.tasks_total += 1
            key = (m["name"], MODEL_DTYPE)
            if key in done:
                already += 1
                continue
            # A case is one sample (k = 0): one that crashed goes on at k = 1, i.e. is done.
            task_op = {**m, "kind": "model", "view": False, "decomposed": False}
            self.pending.append(Task(task_op, MODEL_DTYPE, nxt.get(key, 0), incidents.get(key, 0)))
        return already

    def next(self) -> Task | None:
        return self.pending.popleft() if self.pending else None

    def after_incident(self, task: Task, k: int) -> str | None:
        """After sample k of `task` crashed or hung: the task goes on at k + 1
        (None), or stops, and the returned text says why."""
        # max_incidents 0 reads as 1: a task stops at its first incident either way.
        if task.incidents + 1 >= self.config.max_incidents:
            # Each crash costs a worker restart (seconds); a kernel that crashes
            # on every sample would dominate the run. The rest is left unrun, said so.
            return f"stopped after {task.incidents + 1} crashes/timeouts"
        self.pending.appendleft(Task(task.op, task.dtype, k + 1, task.incidents + 1))
        return None
