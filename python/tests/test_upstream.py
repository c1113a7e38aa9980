"""The upstream coordinator (upstream.py, Note [Upstream runs]) on CPU: PyTorch's
switch selects the CPU classes of the fixture files (test/fixtures/upstream),
a crash and a hang each cost their own test only and the rest of the file
runs after them, shards split a file's tests, and a file that cannot be
imported says why. Fallback accounting needs a device; the reference e2e
(test/e2e/reference.test.ts) checks it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from opgen_conformance.upstream import UnderTest, missing_imports
from opgen_conformance.upstream_plugin import shard_of

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TESTS = os.path.join(ROOT, "test", "fixtures", "upstream", "test")
PYDIR = os.path.join(ROOT, "python")


def run(tmp_path, files, shard=None, timeout=8, hang=False):
    results = str(tmp_path / "up.jsonl")
    config = {
        "device": "cpu",
        "package": None,
        "test_dir": TESTS,
        "timeout_s": timeout,
        "shard": shard,
        "results": results,
        "cache_dir": str(tmp_path / "cache"),
        "files": [{"name": f, "path": os.path.join(TESTS, f), "classes": c} for f, c in files],
    }
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(config))
    env = dict(os.environ, PYTHONPATH=PYDIR, FIXTURE_HANG="1" if hang else "0")
    p = subprocess.run(
        [sys.executable, "-m", "opgen_conformance", "upstream", "--config", str(cfg)],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-3000:]
    events = [json.loads(line) for line in p.stdout.splitlines()]
    with open(results) as f:
        records = [json.loads(line) for line in f]
    tests = {r["id"].rsplit("::", 1)[-1]: r for r in records if r["kind"] == "upstream_test"}
    files_ = {r["file"]: r for r in records if r["kind"] == "upstream_file"}
    return tests, files_, events


def test_crash_and_hang_cost_one_test_each_and_the_rest_runs(tmp_path):
    tests, files, events = run(tmp_path, [("test_fixture_basic.py", [])], hang=True)
    assert set(tests) >= {"test_add_cpu_float32", "test_add_cpu_int64", "test_cpu_only_cpu", "test_zz_after_the_crash_cpu"}
    assert all("TestFixtureBasicCPU" in r["id"] for r in tests.values())
    crash = tests["test_crashes_the_process_cpu"]
    assert crash["status"] == "crash"
    assert "SIGSEGV" in crash["message"] and "Fatal Python error: Segmentation fault" in crash["message"]
    assert tests["test_hangs_cpu"]["status"] == "timeout"
    assert tests["test_hangs_cpu"]["message"].startswith("ran over 8 s")
    assert tests["test_zz_after_the_crash_cpu"]["status"] == "pass"
    assert tests["test_wrong_on_purpose_cpu"]["status"] == "fail"
    assert tests["test_wrong_on_purpose_cpu"]["message"].startswith("AssertionError: Scalars are not close!")
    f = files["test_fixture_basic.py"]
    assert (f["collected"], f["processes"], f["crashes"], f["timeouts"], f["not_run"]) == (11, 3, 1, 1, [])
    kinds = [e.get("kind") for e in events if e["event"] == "incident"]
    assert sorted(kinds) == ["crash", "timeout"]


def test_classes_shards_and_import_errors(tmp_path):
    spec = [("test_fixture_ops.py", ["TestFixtureOther"]), ("test_fixture_missing.py", [])]
    tests, files, _ = run(tmp_path, spec)
    assert list(tests) == ["test_not_selected_cpu"]
    assert files["test_fixture_missing.py"]["collected"] == 0
    assert files["test_fixture_missing.py"]["errors"] == [
        "test_fixture_missing.py: ModuleNotFoundError: No module named 'fixture_absent'"
    ]
    one, _, _ = run(tmp_path, [("test_fixture_ops.py", [])], shard=[1, 2])
    two, _, _ = run(tmp_path, [("test_fixture_ops.py", [])], shard=[2, 2])
    assert not set(one) & set(two)
    assert len(set(one) | set(two)) == 4
    assert all(shard_of(r["id"], 2) == 1 for r in one.values())


def test_missing_imports_and_op_under_test():
    gone = missing_imports([os.path.join(TESTS, "test_fixture_missing.py"), os.path.join(TESTS, "test_fixture_basic.py")], TESTS)
    assert gone[os.path.join(TESTS, "test_fixture_missing.py")] == ["fixture_absent"]
    assert gone[os.path.join(TESTS, "test_fixture_basic.py")] == []
    u = UnderTest(None)
    u._by_opinfo = {"special.airy_ai": {"special_airy_ai.default"}}
    fb = {"aten::special_airy_ai": 1, "aten::roll": 2}
    assert u.of("f.py::C::test_special_airy_ai_dev", fb, None) == ["aten::special_airy_ai"]
    assert u.of("f.py::C::test_sum_after_airy_dev", fb, None) == []
    assert u.of("f.py::C::test_roll_dev", {"aten::roll.default": 1}, None) == ["aten::roll.default"]
    op = {"key": "special.airy_ai", "names": ["airy_ai", "special_airy_ai"]}
    assert u.of("f.py::C::test_compare_cpu_special_airy_ai_dev_float32", fb, op) == ["aten::special_airy_ai"]
