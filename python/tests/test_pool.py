"""The coordinator: crash/hang isolation, JSONL stream, resume."""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

from opgen_conformance import PROTOCOL_VERSION
from opgen_conformance.results import read_results

from .helpers import FAULTS, write_empty_index

PYDIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def config(tmp, ops, **kw):
    # Every key, as src/conformance/runconfig.ts writes them (Note [Run config contract]).
    c = {
        "version": PROTOCOL_VERSION,
        "device": "cpu",
        "package": None,
        "faults": FAULTS,
        "seed": 0,
        "max_samples": 3,
        "grad_samples": 3,
        "timeout_s": 10,
        "startup_timeout_s": 300,
        "gen_timeout_s": 180,
        "max_incidents": 2,
        "workers": 2,
        "worker_memory_bytes": None,
        "resume": False,
        "compile": False,
        "results": os.path.join(tmp, "results.jsonl"),
        "cache_dir": os.path.join(tmp, "cache"),
        "tolerances": [],
        "ops": ops,
        "models": [],
    }
    c.update(kw)
    path = os.path.join(tmp, "config.json")
    with open(path, "w") as f:
        json.dump(c, f)
    return path


def run(cfg):
    env = dict(os.environ, PYTHONPATH=PYDIR)
    return subprocess.run(
        [sys.executable, "-m", "opgen_conformance", "run", "--config", cfg], env=env, capture_output=True, text=True, timeout=300
    )


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def ordinary(recs):
    """The records of ordinary samples, not of probes (probes.py: each feeds one check of its own)."""
    probes = {"extremes", "device_index", "invalid_inputs", "out_nonempty"}
    return [r for r in recs if not set(r["checks"]) <= probes]


def op(name, kind="functional", dtypes=("float32",)):
    return {"name": name, "kind": kind, "view": False, "core": False, "decomposed": False, "dtypes": list(dtypes)}


class PoolTest(unittest.TestCase):
    def test_crash_and_hang_are_isolated(self):
        with tempfile.TemporaryDirectory() as tmp:
            write_empty_index(os.path.join(tmp, "cache"))
            cfg = config(tmp, [op("neg"), op("exp"), op("relu"), op("mul.Tensor")], max_incidents=2)
            p = run(cfg)
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            recs = records(os.path.join(tmp, "results.jsonl"))
            self.assertEqual(recs[0]["kind"], "header")
            samples = [r for r in recs if r["kind"] == "sample"]
            by = lambda name: [r for r in samples if r["op"] == name]  # noqa: E731
            self.assertEqual([r["checks"]["values"][0] for r in by("neg")], ["crash", "crash"])
            self.assertIn("SIGSEGV", by("neg")[0]["checks"]["values"][1])
            self.assertEqual([r["checks"]["values"][0] for r in by("exp")], ["timeout", "timeout"])
            # the 4 synthesized variants (Note [Sample budget]), then probes
            self.assertEqual([r["checks"]["values"][0] for r in ordinary(by("relu"))], ["pass"] * 4)
            self.assertTrue(all(st == "pass" for r in by("relu") for st, _ in r["checks"].values()))
            self.assertEqual(len(ordinary(by("mul.Tensor"))), 5)
            tasks = {r["op"]: r for r in recs if r["kind"] == "task"}
            self.assertEqual(set(tasks), {"neg", "exp", "relu", "mul.Tensor"})
            self.assertIn("stopped", tasks["neg"])
            events = [json.loads(x) for x in p.stdout.splitlines()]
            self.assertEqual(events[-1]["event"], "finished")

    def test_memory_hog_fails_its_samples_under_the_worker_memory_limit(self):
        # Note [Worker memory limit]: the hog stops at the limit with an
        # out-of-memory crash on each of its samples; the worker survives and
        # the next op runs normally.
        with tempfile.TemporaryDirectory() as tmp:
            write_empty_index(os.path.join(tmp, "cache"))
            cfg = config(tmp, [op("sin"), op("relu")], workers=1, max_samples=2, timeout_s=120, worker_memory_bytes=2 << 30)
            p = run(cfg)
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            recs = records(os.path.join(tmp, "results.jsonl"))
            samples = [r for r in recs if r["kind"] == "sample"]
            sin = ordinary([r for r in samples if r["op"] == "sin"])
            self.assertEqual([r["checks"]["values"][0] for r in sin], ["crash"] * 4)
            for r in sin:
                self.assertIn("out of memory on the device (or over --worker-memory)", r["checks"]["values"][1])
                self.assertIn("can't allocate memory", r["checks"]["values"][1])
            relu = ordinary([r for r in samples if r["op"] == "relu"])
            self.assertEqual([r["checks"]["values"][0] for r in relu], ["pass"] * 4)
            events = [json.loads(x) for x in p.stdout.splitlines()]
            self.assertFalse([e for e in events if e.get("event") == "incident"], "no worker died")

    def test_crash_in_backward_keeps_forward_verdicts(self):
        with tempfile.TemporaryDirectory() as tmp:
            write_empty_index(os.path.join(tmp, "cache"))
            p = run(config(tmp, [op("sinh")], workers=1, max_samples=2, max_incidents=5))
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            samples = [r for r in records(os.path.join(tmp, "results.jsonl")) if r["kind"] == "sample"]
            # gradients run on the first 3 samples, all ordinary
            samples = [r for r in samples if "gradients" in r["checks"]]
            self.assertEqual([r["sample"] for r in samples], [0, 1, 2])
            for r in samples:
                self.assertEqual(r["checks"]["values"][0], "pass")
                self.assertEqual(r["checks"]["gradients"][0], "crash")
                self.assertIn("while checking gradients", r["checks"]["gradients"][1])
                self.assertTrue(r["desc"].startswith("(T["))

    def test_resume_skips_done_and_cuts_torn_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            write_empty_index(os.path.join(tmp, "cache"))
            ops = [op("relu", dtypes=("float32", "int64")), op("mul.Tensor")]
            cfg = config(tmp, ops, workers=1)
            self.assertEqual(run(cfg).returncode, 0)
            full = records(os.path.join(tmp, "results.jsonl"))
            # simulate a kill: keep the header, relu float32 done, one sample of relu int64, and a torn line
            res = os.path.join(tmp, "results.jsonl")
            keep = [full[0]]
            keep += [r for r in full if r.get("op") == "relu" and r.get("dtype") == "float32"]
            keep += [r for r in full if r.get("op") == "relu" and r.get("dtype") == "int64" and r["kind"] == "sample"][:1]
            with open(res, "w") as f:
                f.write("".join(json.dumps(r, sort_keys=True) + "\n" for r in keep))
                f.write('{"kind": "sample", "op": "mul')
            header, nxt, done, _ = read_results(res)
            self.assertEqual(done, {("relu", "float32")})
            self.assertEqual(nxt[("relu", "int64")], 1)
            cfg = config(tmp, ops, workers=1, resume=True)
            self.assertEqual(run(cfg).returncode, 0)
            again = records(res)
            key = lambda r: json.dumps(r, sort_keys=True)  # noqa: E731
            self.assertEqual(sorted(map(key, again)), sorted(map(key, full)))

    def test_model_cases_are_tasks_crash_isolated_and_resumed(self):
        crashing = os.path.join(os.path.dirname(FAULTS), "models", "crashing.py")
        models = [
            {"name": f"model:crashing:{c}", "file": crashing, "case": c} for c in ("dies", "fine")
        ]
        with tempfile.TemporaryDirectory() as tmp:
            cfg = config(tmp, [], workers=1, faults=None, models=models)
            p = run(cfg)
            self.assertEqual(p.returncode, 0, p.stderr)
            res = os.path.join(tmp, "results.jsonl")
            recs = records(res)
            dies = [r for r in recs if r.get("op") == "model:crashing:dies" and r["kind"] == "sample"]
            self.assertEqual(len(dies), 1)
            self.assertTrue(dies[0].get("incident"))
            self.assertEqual(dies[0]["checks"]["values"][0], "crash")
            fine = [r for r in recs if r.get("op") == "model:crashing:fine" and r["kind"] == "sample"]
            self.assertEqual(fine[0]["checks"]["values"][0], "pass")
            self.assertIn("addmm", fine[0]["model"]["ops"])
            self.assertNotIn("time_s", fine[0]["model"])  # timings go to stats, not results
            with open(res + ".stats.json") as f:
                self.assertGreater(json.load(f)["model_time_s"]["model:crashing:fine"]["device"], 0)
            done = {r["op"] for r in recs if r["kind"] == "task"}
            self.assertEqual(done, {"model:crashing:dies", "model:crashing:fine"})
            # resumed: nothing runs again
            p = run(config(tmp, [], workers=1, faults=None, models=models, resume=True))
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(records(res), recs)

    def test_rerun_reproduces_a_recorded_sample(self):
        with tempfile.TemporaryDirectory() as tmp:
            write_empty_index(os.path.join(tmp, "cache"))
            cfg = config(tmp, [op("add.Tensor")], workers=1, seed=11)
            self.assertEqual(run(cfg).returncode, 0)
            recs = [r for r in records(os.path.join(tmp, "results.jsonl")) if r["kind"] == "sample"]
            rec = [r for r in recs if r["checks"].get("values", [""])[0] == "fail"][-1]
            env = dict(os.environ, PYTHONPATH=PYDIR)
            p = subprocess.run(
                [sys.executable, "-m", "opgen_conformance", "rerun", "--config", cfg, "--op", "add.Tensor",
                 "--dtype", "float32", "--seed", "11", "--sample", str(rec["sample"])],
                env=env, capture_output=True, text=True, timeout=300,
            )
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(rec["desc"], p.stdout)
            status, msg = rec["checks"]["values"]
            self.assertEqual(status, "fail")
            self.assertIn(f"values         fail  {msg}", p.stdout)
            for check, (st, _) in rec["checks"].items():
                self.assertRegex(p.stdout, rf"\n  {check} +{st} ")

    def test_no_installed_backend_is_autoloaded(self):
        # Note [No autoload]: a backend installed in the interpreter (here one
        # whose autoload raises, as a second PrivateUse1 backend's does) is not
        # loaded by any of the runner's processes
        with tempfile.TemporaryDirectory() as tmp:
            site = os.path.join(tmp, "site")
            os.makedirs(os.path.join(site, "otherdev"))
            os.makedirs(os.path.join(site, "otherdev-1.0.dist-info"))
            with open(os.path.join(site, "otherdev", "__init__.py"), "w") as f:
                f.write("def _autoload():\n    raise RuntimeError('multiple backend fallbacks for PrivateUse1')\n")
            with open(os.path.join(site, "otherdev-1.0.dist-info", "METADATA"), "w") as f:
                f.write("Metadata-Version: 2.1\nName: otherdev\nVersion: 1.0\n")
            with open(os.path.join(site, "otherdev-1.0.dist-info", "entry_points.txt"), "w") as f:
                f.write("[torch.backends]\notherdev = otherdev:_autoload\n")
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([site, PYDIR]))
            env.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
            plain = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True)
            self.assertIn("multiple backend fallbacks", plain.stderr)
            write_empty_index(os.path.join(tmp, "cache"))
            cfg = config(tmp, [op("relu")], workers=1)
            p = subprocess.run(
                [sys.executable, "-m", "opgen_conformance", "run", "--config", cfg], env=env, capture_output=True, text=True, timeout=300
            )
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            samples = [r for r in records(os.path.join(tmp, "results.jsonl")) if r["kind"] == "sample"]
            self.assertTrue(samples and all(st == "pass" for r in samples for st, _ in r["checks"].values()))

    def test_resume_refuses_other_settings(self):
        with tempfile.TemporaryDirectory() as tmp:
            write_empty_index(os.path.join(tmp, "cache"))
            self.assertEqual(run(config(tmp, [op("relu")], workers=1)).returncode, 0)
            p = run(config(tmp, [op("relu")], workers=1, resume=True, seed=5))
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("other settings", p.stderr)


if __name__ == "__main__":
    unittest.main()
