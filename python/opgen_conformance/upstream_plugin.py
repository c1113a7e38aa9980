"""The pytest plugin of ``opgen-backend test --upstream`` (Note [Upstream runs]
in upstream.py): loaded with ``-p opgen_conformance.upstream_plugin`` into the
pytest process that runs one of PyTorch's test files on the device.

It changes nothing of the tests. It imports the device package before pytest
imports the test file (torch's common_device_type decides at import whether
a PrivateUse1 device exists, ``_is_privateuse1_backend_available``), keeps
only the tests of this shard, of the asked classes and not run already, and
around each test resets and reads the device's CPU-fallback counter
(``torch_<device>.fallback_counts()``, docs/INTERFACES.md). Each test's
``start`` and ``result`` go to the stream file as JSON lines, flushed at once,
so that the coordinator knows which test a dying process was running.

Configured by the environment the coordinator sets: OPGEN_UPSTREAM_STREAM
(the stream file), OPGEN_UPSTREAM_PACKAGE (the device package, none on CPU),
OPGEN_UPSTREAM_DESELECT (a file of test ids not to run, one a line),
OPGEN_UPSTREAM_CLASSES (generic class names to keep, comma-separated; all
when empty), OPGEN_UPSTREAM_SHARD (``i/n``).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
from typing import Any

import pytest

_STREAM: Any = None
_PACKAGE: Any = None


def _write(record: dict) -> None:
    if _STREAM is None:  # run by hand (the rerun line test --upstream prints): pytest's own output only
        return
    _STREAM.write(json.dumps(record, sort_keys=True) + "\n")
    _STREAM.flush()


def shard_of(test_id: str, count: int) -> int:
    """The 1-based shard a test id belongs to, stable across runs and machines."""
    return int(hashlib.sha1(test_id.encode()).hexdigest()[:8], 16) % count + 1


def pytest_configure(config: pytest.Config) -> None:
    global _STREAM, _PACKAGE
    stream = os.environ.get("OPGEN_UPSTREAM_STREAM", "")
    _STREAM = open(stream, "a", encoding="utf-8") if stream else None
    pkg = os.environ.get("OPGEN_UPSTREAM_PACKAGE", "")
    if pkg:
        # Before the test file: common_device_type instantiates a PrivateUse1
        # test class only when torch.<device>.is_available() at its import.
        _PACKAGE = importlib.import_module(pkg)


def _generic_class(cls: type | None) -> str:
    """TestViewOpsPRIVATEUSE1 -> TestViewOps (instantiate_device_type_tests' naming)."""
    if cls is None:
        return ""
    name = cls.__name__
    import torch

    for suffix in ("PRIVATEUSE1", torch._C._get_privateuse1_backend_name().upper(), "CPU", "CUDA"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    skip_file = os.environ.get("OPGEN_UPSTREAM_DESELECT", "")
    done: set[str] = set()
    if skip_file and os.path.exists(skip_file):
        with open(skip_file, encoding="utf-8") as f:
            done = {line.rstrip("\n") for line in f if line.strip()}
    classes = {c for c in os.environ.get("OPGEN_UPSTREAM_CLASSES", "").split(",") if c}
    shard = os.environ.get("OPGEN_UPSTREAM_SHARD", "")
    index, count = (int(x) for x in shard.split("/")) if shard else (1, 1)
    keep, drop, selected = [], [], []
    for item in items:
        in_class = not classes or _generic_class(getattr(item, "cls", None)) in classes
        in_shard = count == 1 or shard_of(item.nodeid, count) == index
        if in_class and in_shard:
            selected.append(item.nodeid)
        (keep if in_class and in_shard and item.nodeid not in done else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    _write({"event": "collected", "ids": selected})


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _write({"event": "collect_error", "where": report.nodeid, "message": _first_line(report)})


def _first_line(report: Any) -> str:
    """The first line of a failure's error (``RuntimeError: ...``), or a skip's reason."""
    lr = report.longrepr
    if isinstance(lr, tuple) and len(lr) == 3:
        text = str(lr[2])
        return text[len("Skipped: ") :] if text.startswith("Skipped: ") else text
    crash = getattr(lr, "reprcrash", None)
    text = crash.message if crash is not None else str(lr)
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if crash is None and lines:
        # a plain text repr (collection errors): its last E line says what was raised
        errs = [line for line in lines if line.startswith("E ")]
        return (errs[0][1:].strip() if errs else lines[-1]).strip()
    return lines[0].strip() if lines else ""


def _opinfo(item: Any) -> dict | None:
    """The OpInfo of an @ops test: instantiate_device_type_tests passes it in
    the instantiated test's `param_kwargs` default."""
    fn = getattr(item, "obj", None)
    try:
        p = inspect.signature(fn, follow_wrapped=False).parameters.get("param_kwargs")
    except (TypeError, ValueError):
        return None
    op = p.default.get("op") if p is not None and isinstance(p.default, dict) else None
    if op is None or not hasattr(op, "name"):
        return None
    variant = getattr(op, "variant_test_name", "") or ""
    return {
        "key": op.name + ("." + variant if variant else ""),
        "names": sorted({op.name.replace(".", "_"), op.name.split(".")[-1], str(getattr(op, "aten_name", op.name))}),
    }


_OUTCOMES: dict[str, list] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: Any, nextitem: Any):
    _write({"event": "start", "id": item.nodeid})
    _OUTCOMES[item.nodeid] = []
    if _PACKAGE is not None and hasattr(_PACKAGE, "reset_fallback_counts"):
        _PACKAGE.reset_fallback_counts()
    yield
    fallback: dict[str, int] = {}
    if _PACKAGE is not None and hasattr(_PACKAGE, "fallback_counts"):
        fallback = {str(k): int(v) for k, v in dict(_PACKAGE.fallback_counts()).items()}
    status, message = _verdict(_OUTCOMES.pop(item.nodeid, []))
    _write(
        {
            "event": "result",
            "id": item.nodeid,
            "status": status,
            "message": message,
            "fallback": fallback,
            "opinfo": _opinfo(item),
        }
    )


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.nodeid in _OUTCOMES:
        _OUTCOMES[report.nodeid].append(report)


def _verdict(reports: list) -> tuple[str, str]:
    """One status for a test from its setup, call and teardown reports."""
    for r in reports:
        if r.failed:
            where = "" if r.when == "call" else f"in {r.when}: "
            return "fail", where + _first_line(r)
    for r in reports:
        if r.skipped:
            if hasattr(r, "wasxfail"):
                return "skip", "upstream expects it to fail" + (f": {r.wasxfail}" if r.wasxfail else "")
            return "skip", _first_line(r)
    for r in reports:
        if r.when == "call" and hasattr(r, "wasxfail"):
            return "fail", "unexpected success: upstream expects it to fail"
    if not any(r.when == "call" for r in reports):
        return "skip", "not run"
    return "pass", ""
