"""How the runner reaches the device under test.

``RealDevice`` imports the backend's ``torch_<device>`` package and calls aten
overloads on tensors moved to the device; it reads the package's CPU-fallback
counter (docs/INTERFACES.md). ``FaultDevice`` is CPU with faults injected from
a Python file, so the runner's own tests (and a vendor's dry run) exercise every
check, the watchdog and the reports without an accelerator.

A faults file defines any of:

    FAULTS = {"add.Tensor": lambda func, args, kwargs: ...}   # replaces the call
    FALLBACK = {"mul.Tensor"}                                   # counted as CPU fallback
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any, Callable

import torch

from .samples import clone_tree


class RealDevice:
    def __init__(self, device: str, package: str | None) -> None:
        self.type = device
        self.package = importlib.import_module(package) if package else None
        self.device = torch.device(device, 0) if device != "cpu" else torch.device("cpu")
        pkg = self.package
        self.has_fallback_counter = bool(pkg is not None and hasattr(pkg, "fallback_counts"))

    def to_device(self, tree: Any) -> Any:
        return clone_tree(tree, self.device)

    def call(self, name: str, func: Callable, args: tuple, kwargs: dict) -> Any:
        return func(*args, **kwargs)

    def fallback_counts(self) -> dict[str, int]:
        if not self.has_fallback_counter:
            return {}
        return dict(self.package.fallback_counts())

    def reset_fallback_counts(self) -> None:
        if self.has_fallback_counter:
            self.package.reset_fallback_counts()


class FaultDevice:
    def __init__(self, faults_file: str | None) -> None:
        self.type = "cpu"
        self.device = torch.device("cpu")
        self.faults: dict[str, Callable] = {}
        self.fallback: set[str] = set()
        self.counts: dict[str, int] = {}
        self.has_fallback_counter = True
        if faults_file:
            spec = importlib.util.spec_from_file_location("opgen_conformance_faults", faults_file)
            assert spec is not None and spec.loader is not None
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            self.faults = dict(getattr(mod, "FAULTS", {}))
            self.fallback = set(getattr(mod, "FALLBACK", set()))

    def to_device(self, tree: Any) -> Any:
        return clone_tree(tree, self.device)

    def call(self, name: str, func: Callable, args: tuple, kwargs: dict) -> Any:
        if name in self.fallback:
            key = "aten::" + name
            self.counts[key] = self.counts.get(key, 0) + 1
        fault = self.faults.get(name)
        if fault is not None:
            return fault(func, args, kwargs)
        return func(*args, **kwargs)

    def fallback_counts(self) -> dict[str, int]:
        return dict(self.counts)

    def reset_fallback_counts(self) -> None:
        self.counts.clear()


def open_device(config: dict) -> RealDevice | FaultDevice:
    if config.get("device", "cpu") == "cpu" and not config.get("package"):
        return FaultDevice(config.get("faults"))
    return RealDevice(config["device"], config.get("package"))
