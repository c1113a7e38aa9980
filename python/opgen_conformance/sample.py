"""One sample: a direct call of an overload, with the seed helpers every
sample source draws from and the address-free text reports show of it.

Every module that makes or runs samples imports this one; it imports only
tensors.py, so it is the runner's ground floor, not samples.py (which puts
the sources together).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

import torch

from .tensors import DTYPE_NAMES


def derive_seed(*parts: object) -> int:
    """A stable 31-bit seed from any printable parts (Python's hash() is salted)."""
    return zlib.crc32("|".join(str(p) for p in parts).encode()) & 0x7FFFFFFF


def seed_cpu(seed: int) -> None:
    """torch.manual_seed for CPU alone, which is where samples are made: the
    full one also seeds every other device type, lazily, capturing a Python
    traceback for each (~0.6 ms a call, thousands of calls a run)."""
    torch.random.default_generator.manual_seed(seed)


@dataclass
class Sample:
    """One direct call of an overload: positional args and kwargs, all on CPU."""

    args: tuple
    kwargs: dict
    source: str
    # out= overloads: names of the out arguments; their tensors are made per run
    out_names: tuple = ()
    out_dtypes: tuple = ()
    # a probe (probes.py): the one check it feeds; "" for an ordinary sample
    check: str = ""
    # a probe's particulars: its ordinary "base" sample, prepared "outs", ...
    meta: dict = field(default_factory=dict)


def empty_outs(s: Sample, device: Any = None) -> dict:
    """Fresh empty out tensors for a sample's out arguments (Note [List outs]
    in overloads.py)."""

    def one(d: Any) -> Any:
        if isinstance(d, tuple):
            return [torch.empty(0, dtype=x, device=device) for x in d]
        return torch.empty(0, dtype=d, device=device)

    return {n: one(d) for n, d in zip(s.out_names, s.out_dtypes)}


def describe(s: Sample) -> str:
    """A short, address-free text of a sample for reports."""

    def f(v: Any) -> str:
        if isinstance(v, torch.Tensor):
            nc = "" if v.is_contiguous() else ",noncontig"
            return f"T{list(v.shape)}:{DTYPE_NAMES.get(v.dtype, str(v.dtype))}{nc}"
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(f(x) for x in v) + "]"
        if isinstance(v, torch.dtype):
            return DTYPE_NAMES.get(v, str(v))
        if isinstance(v, float):
            return repr(v)
        return repr(v)

    parts = [f(a) for a in s.args] + [f"{k}={f(v)}" for k, v in {**s.kwargs, **s.meta.get("outs", {})}.items()]
    return "(" + ", ".join(parts) + ")"
