"""The coordinator's parts on their own: the scheduler's queue, the
watchdog's limits and an incident's verdicts (no workers started), and a
run whose workers cannot start."""

import os
import tempfile
import time
import unittest
from types import SimpleNamespace

from opgen_conformance.scheduler import Scheduler
from opgen_conformance.watchdog import Watchdog, incident_verdicts

from .helpers import write_empty_index
from .test_pool import config, op, run


def scheduler(ops, max_incidents=2):
    return Scheduler(SimpleNamespace(ops=ops, models=[], max_incidents=max_incidents))


class SchedulerTest(unittest.TestCase):
    def test_plan_leaves_out_finished_tasks_and_resumes_the_others(self):
        s = scheduler([op("relu", dtypes=("float32", "int64", "nope")), op("neg")])
        already = s.plan({("relu", "int64"): 3}, {("neg", "float32")}, {("relu", "int64"): 1})
        self.assertEqual((already, s.tasks_total), (1, 3))
        got = [(t.key, t.start, t.incidents) for t in s.pending]
        self.assertEqual(got, [(("relu", "float32"), 0, 0), (("relu", "int64"), 3, 1)])
        self.assertEqual(s.next().message(), {"op": "relu", "kind": "functional", "view": False, "decomposed": False, "dtype": "float32", "start": 0})

    def test_an_incident_puts_the_task_back_first_until_it_stops(self):
        s = scheduler([op("relu"), op("neg")], max_incidents=2)
        s.plan({}, set(), {})
        t = s.next()
        self.assertIsNone(s.after_incident(t, 4))
        again = s.next()
        self.assertEqual((again.key, again.start, again.incidents), (("relu", "float32"), 5, 1))
        self.assertEqual(s.after_incident(again, 5), "stopped after 2 crashes/timeouts")
        self.assertEqual(s.next().key, ("neg", "float32"))
        self.assertIsNone(s.next())


def worker(state, phase="values", idle_s=0.0):
    now = time.monotonic()
    return SimpleNamespace(state=state, phase=phase, last=now - idle_s, started=now - idle_s)


class WatchdogTest(unittest.TestCase):
    def test_limits_per_phase(self):
        dog = Watchdog(timeout_s=10, gen_timeout_s=60, startup_timeout_s=30)
        hung, generating, slow_start, fine = (
            worker("busy", "values", 11), worker("busy", "generate", 11), worker("starting", idle_s=31), worker("idle", idle_s=99)
        )
        got = [(w, kind, why) for w, kind, why in dog.overdue([hung, generating, slow_start, fine])]
        self.assertEqual(
            got,
            [
                (hung, "timeout", "no answer in 10s (hang) while checking values"),
                (slow_start, "startup", "worker did not start in 30s"),
            ],
        )

    def test_incident_verdicts_keep_what_was_found(self):
        status, checks, msg = incident_verdicts("crash", "gradients", {"values": ["pass", ""]}, "worker killed by SIGSEGV")
        self.assertEqual((status, checks), ("crash", {"values": ["pass", ""], "gradients": ["crash", "worker killed by SIGSEGV"]}))
        # eager CPU dying is no verdict on the device
        status, checks, msg = incident_verdicts("timeout", "reference", {}, "no answer")
        self.assertEqual(status, "skip")
        self.assertEqual(checks, {"errors": ["skip", "the CPU reference hung on this sample (no answer)"]})


class StartupTest(unittest.TestCase):
    def test_workers_that_cannot_start_stop_the_run_with_the_log(self):
        with tempfile.TemporaryDirectory() as tmp:
            write_empty_index(os.path.join(tmp, "cache"))
            # 64 MiB of data is too little to import torch
            cfg = config(tmp, [op("relu")], workers=1, worker_memory_bytes=64 << 20)
            p = run(cfg)
            self.assertEqual(p.returncode, 1, p.stderr[-2000:])
            self.assertIn("opgen-conformance: workers fail to start (each may allocate 0.1 GiB: --worker-memory)", p.stderr)
            self.assertIn(f"last lines of {os.path.join(tmp, 'results.jsonl')}.log:", p.stderr)
            self.assertNotIn("Traceback", p.stderr.split("last lines of")[0])


if __name__ == "__main__":
    unittest.main()
