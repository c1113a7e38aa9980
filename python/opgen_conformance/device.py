"""How the runner reaches the device under test.

``RealDevice`` imports the backend's ``torch_<device>`` package and calls aten
overloads on tensors moved to the device; it reads the package's CPU-fallback
counter (docs/INTERFACES.md). ``FaultDevice`` is CPU with faults injected from
a Python file, so the runner's own tests (and a vendor's dry run) exercise every
check, the watchdog and the reports without an accelerator.

A faults file defines any of:

    FAULTS = {"add.Tensor": lambda func, args, kwargs: ...}   # replaces the call
    FALLBACK = {"mul.Tensor"}                                   # counted as CPU fallback
    UNGUARDED = {"div.Tensor"}      # no device guard: results on the current device

Both have the calls the runner needs for the device-1 pass (probe_checks.py):
``device_count``, ``to_device(tree, index)``, ``index_of(tensor)``,
``current_index`` and ``set_current``.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any, Callable

import torch
from torch.utils._pytree import tree_flatten

from .config import RunConfig
from .tensors import clone_tree


class RealDevice:
    def __init__(self, device: str, package: str | None) -> None:
        self.type = device
        self.package = importlib.import_module(package) if package else None
        self.device = torch.device(device, 0) if device != "cpu" else torch.device("cpu")
        pkg = self.package
        self.has_fallback_counter = bool(pkg is not None and hasattr(pkg, "fallback_counts"))
        # torch.<device>, registered by the package (torch.cuda for cuda)
        self.module = getattr(torch, device, None) if device != "cpu" else None

    def to_device(self, tree: Any, index: int = 0) -> Any:
        return clone_tree(tree, self.device if index == 0 else torch.device(self.type, index))

    def device_count(self) -> int:
        count = getattr(self.module, "device_count", None)
        return int(count()) if count is not None else 1

    def unavailable_reason(self) -> str | None:
        """Why the device does not exist here (Note [Unavailable device] in
        pool.py): the package's unavailable_reason(), else no devices."""
        why = getattr(self.package, "unavailable_reason", None)
        reason = why() if why is not None else None
        if reason:
            return str(reason)
        return None if self.device_count() > 0 else f"no {self.type} device is available"

    def index_of(self, t: torch.Tensor) -> int:
        return t.device.index or 0

    def current_index(self) -> int:
        current = getattr(self.module, "current_device", None)
        return int(current()) if current is not None else 0

    def set_current(self, index: int) -> None:
        self.module.set_device(index)

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
    """Note [Fault device]: CPU standing in for a device with two devices, and
    with autograd's wrapping, so that faults behave as on a real backend:

    - A tensor's device index is an attribute (CPU tensors have none); a
      call's new tensors are on the current device, which the generated
      wrapper's device guard makes the first tensor input's during the call,
      as a real backend's kernels allocate. UNGUARDED ops lack that guard.
    - Autograd's (and ADInplaceOrView's) kernel for an in-place or out=
      overload returns its self/out argument, whatever the backend kernel
      returned, except in inference mode on inference tensors (Note
      [Identity under inference mode] in calls.py).
    """

    def __init__(self, faults_file: str | None, devices: int = 2) -> None:
        self.type = "cpu"
        self.device = torch.device("cpu")
        self.devices = devices
        self.current = 0
        self.faults: dict[str, Callable] = {}
        self.fallback: set[str] = set()
        self.unguarded: set[str] = set()
        self.counts: dict[str, int] = {}
        self.has_fallback_counter = True
        if faults_file:
            spec = importlib.util.spec_from_file_location("opgen_conformance_faults", faults_file)
            assert spec is not None and spec.loader is not None
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            self.faults = dict(getattr(mod, "FAULTS", {}))
            self.fallback = set(getattr(mod, "FALLBACK", set()))
            self.unguarded = set(getattr(mod, "UNGUARDED", set()))

    def to_device(self, tree: Any, index: int = 0) -> Any:
        out = clone_tree(tree, self.device)
        place(out, index)
        return out

    def device_count(self) -> int:
        return self.devices

    def index_of(self, t: torch.Tensor) -> int:
        return getattr(t, _INDEX, 0)

    def current_index(self) -> int:
        return self.current

    def set_current(self, index: int) -> None:
        self.current = index

    def call(self, name: str, func: Callable, args: tuple, kwargs: dict) -> Any:
        if name in self.fallback:
            key = "aten::" + name
            self.counts[key] = self.counts.get(key, 0) + 1
        guarded = name not in self.unguarded
        before = self.current
        if guarded:
            first = next((t for t in _tensors((args, kwargs))), None)
            self.current = self.index_of(first) if first is not None else self.current
        try:
            fault = self.faults.get(name)
            res = fault(func, args, kwargs) if fault is not None else func(*args, **kwargs)
            for t in _tensors(res):
                if not hasattr(t, _INDEX):
                    setattr(t, _INDEX, self.current)
        finally:
            if guarded:
                self.current = before
        if torch.is_inference_mode_enabled() and all(t.is_inference() for t in _tensors((args, kwargs))):
            return res
        return _autograd_returns(func, args, kwargs, res)

    def fallback_counts(self) -> dict[str, int]:
        return dict(self.counts)

    def reset_fallback_counts(self) -> None:
        self.counts.clear()


_INDEX = "_opgen_device_index"


def place(tree: Any, index: int) -> None:
    """Puts FaultDevice tensors on device `index` (a faults file may too)."""
    for t in _tensors(tree):
        setattr(t, _INDEX, index)


def _tensors(tree: Any) -> list[torch.Tensor]:
    return [v for v in tree_flatten(tree)[0] if isinstance(v, torch.Tensor)]


def _autograd_returns(func: Any, args: tuple, kwargs: dict, res: Any) -> Any:
    """What autograd's kernel returns for `func`: each return that aliases a
    written argument is that argument."""
    schema = func._schema
    written = {}
    for i, a in enumerate(schema.arguments):
        if a.alias_info is not None and a.alias_info.is_write:
            written[frozenset(a.alias_info.before_set)] = args[i] if i < len(args) else kwargs.get(a.name)
    rets = schema.returns
    if not written or not any(r.alias_info is not None and r.alias_info.before_set for r in rets):
        return res
    got = list(res) if len(rets) > 1 else [res]
    out = [
        written.get(frozenset(r.alias_info.before_set), v) if r.alias_info is not None else v for r, v in zip(rets, got)
    ]
    return tuple(out) if len(rets) > 1 else out[0]


def open_device(config: RunConfig) -> Any:
    if config.compile:
        # Note [Compiled mode]: the environment before Inductor is first imported
        from .compiled import CompiledDevice, setup_environment

        setup_environment(config.results)
    dev = FaultDevice(config.faults) if config.device == "cpu" and not config.package else RealDevice(config.device, config.package)
    if not config.compile:
        return dev
    CompiledDevice.warm_up()
    return CompiledDevice(dev)
