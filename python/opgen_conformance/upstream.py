"""PyTorch's own device-generic test files on the device: the Python side of
``opgen-backend test --upstream`` (src/conformance/upstream.ts fetches the
files and reads what this writes).

Note [Upstream runs]: one pytest process per file, with our plugin
(upstream_plugin.py) and the device chosen by torch's own switch,
``PYTORCH_TESTING_DEVICE_ONLY_FOR=<device>``: the test files are PyTorch's,
unedited, and instantiate_device_type_tests makes their PrivateUse1 classes
(``TestViewOpsPRIVATEUSE1``) because the device package is imported first.
The plugin streams each test's start and result; this coordinator follows
the stream, so when a process dies (a kernel's segfault, an abort) the test
that was running is recorded as a crash, and when one test runs past the
timeout the process is killed and the test recorded as a timeout. Either
way the file runs again without every test that has a result, until a run
ends by itself. The results go to a JSONL file (``upstream_test`` and
``upstream_file`` records, sorted per file so a run's results do not depend
on timing) and progress events to stdout, as the op runner's do.

What the op under test is (for "passed on CPU"): an @ops test's OpInfo's
aten overloads (what its samples dispatch on CPU, from the OpInfo index of
sources/opinfo.py) and an overload named like the OpInfo; for other tests, an
overload whose name appears in the test's name (``test_unfold_view`` ->
``aten::unfold``). ``under_test`` lists the fallback overloads that are.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from typing import Any

from .results import emit

PLUGIN = "opgen_conformance.upstream_plugin"


def load(config_file: str) -> dict:
    with open(config_file, encoding="utf-8") as f:
        return json.load(f)


def missing_imports(files: list[str], test_dir: str) -> dict[str, list[str]]:
    """Per file, the top-level modules it imports (anywhere in it, absolute
    imports) that neither this Python nor test_dir provides: the sibling
    files of test/ it needs (``from common_foo import ...``)."""
    sys.path.insert(0, test_dir)
    out: dict[str, list[str]] = {}
    for file in files:
        with open(file, encoding="utf-8") as f:
            tree = ast.parse(f.read(), file)
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
        gone = set()
        for name in names:
            top = name.split(".")[0]
            try:
                if importlib.util.find_spec(top) is None:
                    gone.add(name)
            except (ImportError, ValueError):
                gone.add(name)
        out[file] = sorted(gone)
    return out


class FileRun:
    """One test file through as many pytest processes as its crashes take."""

    def __init__(self, config: dict, spec: dict, work: str) -> None:
        self.config = config
        self.spec = spec
        self.work = work
        self.results: dict[str, dict] = {}
        self.collected: list[str] = []
        self.errors: list[str] = []
        self.processes = 0
        self.crashes = 0
        self.timeouts = 0

    def env(self, stream: str, deselect: str) -> dict[str, str]:
        c = self.config
        env = dict(os.environ)
        env.update(
            {
                "PYTORCH_TESTING_DEVICE_ONLY_FOR": c["device"],
                "OPGEN_UPSTREAM_STREAM": stream,
                "OPGEN_UPSTREAM_DESELECT": deselect,
                "OPGEN_UPSTREAM_PACKAGE": c.get("package") or "",
                "OPGEN_UPSTREAM_CLASSES": ",".join(self.spec.get("classes", [])),
                "OPGEN_UPSTREAM_SHARD": f"{c['shard'][0]}/{c['shard'][1]}" if c.get("shard") else "",
                "PYTHONUNBUFFERED": "1",
            }
        )
        return env

    def run(self, progress: Any) -> None:
        name = self.spec["name"]
        base = os.path.join(self.work, name.replace("/", "_"))
        stream, deselect, log = base + ".stream.jsonl", base + ".deselect", base + ".log"
        ini = os.path.join(self.work, "pytest.ini")
        with open(ini, "w", encoding="utf-8") as f:
            f.write("[pytest]\n")
        for p in (stream, deselect, log):
            if os.path.exists(p):
                os.remove(p)
        while True:
            with open(deselect, "w", encoding="utf-8") as f:
                f.writelines(i + "\n" for i in sorted(self.results))
            offset = os.path.getsize(stream) if os.path.exists(stream) else 0
            cmd = [
                sys.executable, "-m", "pytest", "-p", PLUGIN, "-p", "no:cacheprovider",
                "--noconftest", "-c", ini, "--rootdir", self.config["test_dir"], "-q", "--tb=short",
                self.spec["path"],
            ]  # fmt: skip
            self.processes += 1
            with open(log, "ab") as out:
                proc = subprocess.Popen(
                    cmd, cwd=self.config["test_dir"], env=self.env(stream, deselect),
                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                )  # fmt: skip
                running, started, killed = None, 0.0, False
                new_results = 0
                while True:
                    rc = proc.poll()
                    for ev in self.read(stream, offset):
                        offset = ev.pop("_end")
                        kind = ev["event"]
                        if kind == "collected" and not self.collected:
                            self.collected = ev["ids"]
                            progress({"event": "upstream_file", "file": name, "tests": len(ev["ids"])})
                        elif kind == "collect_error":
                            msg = f"{ev['where'] or name}: {ev['message']}"
                            if msg not in self.errors:
                                self.errors.append(msg)
                        elif kind == "start":
                            running, started = ev["id"], time.monotonic()
                        elif kind == "result":
                            running = None
                            self.record(ev)
                            new_results += 1
                            progress({"event": "upstream_test", "file": name, "id": ev["id"], "status": ev["status"]})
                    if rc is not None:
                        break
                    if running is not None and time.monotonic() - started > self.config["timeout_s"]:
                        _kill(proc)
                        killed = True
                        proc.wait()
                        for ev in self.read(stream, offset):  # a result written just before the kill
                            offset = ev.pop("_end")
                            if ev["event"] == "result":
                                running = None
                                self.record(ev)
                        break
                    time.sleep(0.05)
            rc = proc.returncode
            if running is not None:
                if killed:
                    self.timeouts += 1
                    status = "timeout"
                    msg = f"ran over {self.config['timeout_s']} s; the process was killed and the rest of the file rerun"
                else:
                    self.crashes += 1
                    status = "crash"
                    msg = f"the test process died ({_death(rc)}) during this test; the rest of the file was rerun without it"
                    why = _last_error(log)
                    if why:
                        msg += f": {why}"
                self.record({"id": running, "status": status, "message": msg, "fallback": {}, "opinfo": None})
                progress({"event": "incident", "kind": status, "file": name, "id": running, "message": msg})
                continue
            left = set(self.collected) - set(self.results)
            if left and new_results > 0 and rc in (0, 1):
                continue  # the run stopped before the end (unittest's result.stop()): the rest again
            if rc not in (0, 1, 5) and not self.errors:
                # pytest stopped outside any test: a crash at import or collection
                self.errors.append(
                    f"{name}: pytest exited with {_death(rc)} outside any test" + (f": {_last_error(log)}" if _last_error(log) else "")
                )
            return

    def record(self, ev: dict) -> None:
        self.results[ev["id"]] = {k: ev[k] for k in ("status", "message", "fallback", "opinfo")}

    @staticmethod
    def read(stream: str, offset: int) -> list[dict]:
        """Complete JSON lines of the stream after `offset`, each with the offset past it."""
        if not os.path.exists(stream):
            return []
        out = []
        with open(stream, "rb") as f:
            f.seek(offset)
            data = f.read()
        pos = offset
        for raw in data.split(b"\n")[:-1]:
            pos += len(raw) + 1
            try:
                ev = json.loads(raw)
            except ValueError:
                continue
            ev["_end"] = pos
            out.append(ev)
        return out


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _death(rc: int | None) -> str:
    if rc is not None and rc < 0:
        try:
            return signal.Signals(-rc).name
        except ValueError:
            return f"signal {-rc}"
    return f"exit {rc}"


def _last_error(log: str) -> str:
    """What the dying process said last: the fatal error line faulthandler or
    c10 prints (``Fatal Python error: Segmentation fault``, ``terminate called ...``)."""
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f.read().splitlines()[-200:] if line.strip()]
    except OSError:
        return ""
    for line in reversed(lines):
        for marker in ("Fatal Python error", "terminate called", "what():"):
            at = line.find(marker)
            if at >= 0:  # after pytest's progress dots, when there are any
                return line[at : at + 300]
    # pytest's own failure (exit 3: the plugin could not import the device package, ...)
    for line in reversed(lines):
        text = line.removeprefix("INTERNALERROR>").strip()
        if re.match(r"^[\w.]*(Error|Exception)\b", text):
            return text[:300]
    return ""


def _overload_base(key: str) -> str:
    """``aten::add_.Tensor`` -> ``add``; ``aten::_fft_c2r`` -> ``fft_c2r``."""
    name = key.split("::", 1)[-1].split(".")[0]
    return name.strip("_")


class UnderTest:
    """Which fallback overloads are the op under test (Note [Upstream runs])."""

    def __init__(self, cache_dir: str | None) -> None:
        self.cache_dir = cache_dir
        self._by_opinfo: dict[str, set[str]] | None = None

    def by_opinfo(self) -> dict[str, set[str]]:
        if self._by_opinfo is None:
            from .sources.opinfo import load_index

            idx = load_index(self.cache_dir)
            inv: dict[str, set[str]] = {}
            for overload, keys in idx.get("reach", {}).items():
                for k in keys:
                    inv.setdefault(k, set()).add(overload)
            self._by_opinfo = inv
        return self._by_opinfo

    def of(self, test_id: str, fallback: dict[str, int], opinfo: dict | None) -> list[str]:
        if not fallback:
            return []
        method = "_" + test_id.rsplit("::", 1)[-1] + "_"
        out = []
        for key in fallback:
            base = _overload_base(key)
            overload = key.split("::", 1)[-1]
            if opinfo is not None:
                hit = overload in self.by_opinfo().get(opinfo["key"], set()) or base in {
                    n.strip("_") for n in opinfo["names"]
                }
            else:
                hit = bool(base) and f"_{base}_" in method
            if hit:
                out.append(key)
        return sorted(out)


def run(config_file: str) -> int:
    config = load(config_file)
    results_file = config["results"]
    work = results_file + ".work"
    os.makedirs(work, exist_ok=True)
    under = UnderTest(config.get("cache_dir"))
    files = config["files"]
    emit({"event": "upstream_start", "files": len(files), "device": config["device"]})
    t0 = time.monotonic()
    records: list[dict] = []
    for spec in files:
        fr = FileRun(config, spec, work)
        fr.run(emit)
        counts: dict[str, int] = {}
        for test_id in sorted(fr.results):
            r = fr.results[test_id]
            counts[r["status"]] = counts.get(r["status"], 0) + 1
            records.append(
                {
                    "kind": "upstream_test",
                    "file": spec["name"],
                    "id": test_id,
                    "status": r["status"],
                    "message": r["message"],
                    "fallback": dict(sorted(r["fallback"].items())),
                    "under_test": under.of(test_id, r["fallback"], r["opinfo"]),
                }
            )
        # Selected tests without a result (a run stopped early): said, not lost.
        never = sorted(set(fr.collected) - set(fr.results))
        records.append(
            {
                "kind": "upstream_file",
                "file": spec["name"],
                "collected": len(fr.collected),
                "errors": fr.errors,
                "not_run": never,
                "processes": fr.processes,
                "crashes": fr.crashes,
                "timeouts": fr.timeouts,
            }
        )
        emit({"event": "upstream_done", "file": spec["name"], "counts": counts})
        _write_results(results_file, config, records)
    _write_results(results_file, config, records)
    emit({"event": "finished", "elapsed_s": time.monotonic() - t0})
    return 0


def _write_results(results_file: str, config: dict, records: list[dict]) -> None:
    """The whole results file again, atomically: after each file, so an interrupted run keeps the files it ran."""
    tmp = results_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps({"kind": "upstream_header", "device": config["device"]}, sort_keys=True) + "\n")
        for r in records:
            f.write(json.dumps(r, sort_keys=True) + "\n")
    os.replace(tmp, results_file)
