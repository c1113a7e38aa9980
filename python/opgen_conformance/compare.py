"""Comparing a device's results with CPU's: tolerances, the comparison of
one value, what tolerance hides about extreme values, and the small helpers
every check shares (running a call without letting its error escape, short
error texts, out-of-memory errors, the tensors in a result).
"""

from __future__ import annotations

import fnmatch
import warnings
from typing import Any, Callable

import torch

from .tensors import DTYPE_NAMES, clone_tree

# DESIGN.md: assert_close defaults; integers and bool exact.
DEFAULT_TOL: dict[torch.dtype, tuple[float, float]] = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}

Verdict = tuple[str, str]

MAX_MSG = 400


def tolerance(
    op: str, dtype: torch.dtype, overrides: list[dict], result: torch.dtype | None = None
) -> tuple[float, float]:
    """Note [Tolerance of the result dtype]: the default is the compared
    result's dtype's, not the task's: an int64 -> float32 op (div, sqrt,
    mean) rounds to float32 and may be an ulp off, and a float -> bool op
    (eq) must be exact. The last override whose op glob and optional dtype
    match the task wins."""
    rtol, atol = DEFAULT_TOL.get(result or dtype, (0.0, 0.0))
    dname = DTYPE_NAMES.get(dtype, str(dtype))
    for o in overrides:
        if not fnmatch.fnmatchcase(op, o.get("op", "*")):
            continue
        if o.get("dtype") not in (None, "*", dname):
            continue
        rtol = float(o.get("rtol", rtol))
        atol = float(o.get("atol", atol))
    return rtol, atol


def short(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    first = text[0] if text else ""
    # assert_close explains itself on several lines; keep the informative ones
    if isinstance(e, AssertionError) and len(text) > 1:
        first = " ".join(line.strip() for line in text[:4] if line.strip())
    msg = f"{type(e).__name__}: {first}" if first else type(e).__name__
    return msg[:MAX_MSG]


def attempt(fn: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(), None
    except Exception as e:  # a kernel's error, reported as error parity
        return None, e


def compare(dev: Any, ref: Any, rtol: float, atol: float) -> str | None:
    """None when equal, else why not."""
    if isinstance(ref, torch.Tensor):
        if not isinstance(dev, torch.Tensor):
            return f"expected a tensor, got {type(dev).__name__}"
        try:
            d = dev.detach().to("cpu")
            if d.shape != ref.shape:
                return f"shape {list(d.shape)} != expected {list(ref.shape)}"
            if d.dtype != ref.dtype:
                d = d.to(ref.dtype)
            r = ref.detach()
            if r.dtype == torch.complex32:  # eager CPU compares no complex32: compare its parts
                d, r = torch.view_as_real(d), torch.view_as_real(r)
            # fast paths; assert_close (~1 ms) only runs to explain a mismatch
            if d.layout == torch.strided and r.layout == torch.strided:
                if torch.equal(d, r):
                    return None
                if (d.is_floating_point() or d.is_complex()) and bool(
                    torch.isclose(d, r, rtol=rtol, atol=atol, equal_nan=True).all()
                ):
                    return None
            torch.testing.assert_close(
                d, ref.detach(), rtol=rtol, atol=atol, equal_nan=True, check_device=False, check_stride=False
            )
        except Exception as e:
            return short(e)
        return None
    if isinstance(ref, float) and isinstance(dev, (int, float)):
        if ref != ref and dev != dev:
            return None
        return None if abs(dev - ref) <= atol + rtol * abs(ref) else f"{dev!r} != expected {ref!r}"
    if dev != ref:
        return f"{dev!r} != expected {ref!r}"
    return None


def specials_hidden(dev: Any, ref: Any, atol: float) -> str | None:
    """Note [Extreme values tolerance]: what assert_close's tolerance cannot
    see. NaN and infinities it compares exactly already; -0.0 it takes for
    +0.0, and a value within atol of 0 for 0 -- which is what a kernel that
    flushes subnormals (inputs or results) to zero gives. So eager's -0.0
    must stay -0.0, and where eager's result is nonzero but within atol the
    device's must not be 0 (one subnormal ulp aside: two correct kernels may
    round a result just below the smallest subnormal differently). Precision
    itself stays the values check's: eager's own vectorized float16 paths are
    a few subnormal ulps off."""
    if not (isinstance(ref, torch.Tensor) and ref.is_floating_point() and isinstance(dev, torch.Tensor)):
        return None
    d = dev.detach().to("cpu").to(ref.dtype)
    if d.shape != ref.shape:
        return None
    negative = (ref == 0) & torch.signbit(ref)
    lost = int((negative & ~torch.signbit(d)).sum())
    if lost:
        return f"+0.0 where CPU gives -0.0 ({lost} of {int(negative.sum())})"
    fi = torch.finfo(ref.dtype)
    hidden = (ref != 0) & (ref.abs() <= atol) & (ref.abs() >= 2 * fi.tiny * fi.eps)
    flushed = int((hidden & (d == 0)).sum())
    if flushed:
        return f"0 where CPU gives a nonzero value smaller than {atol:g} ({flushed} of {int(hidden.sum())}): subnormals flushed to zero?"
    return None


def is_oom(e: BaseException) -> bool:
    """A device allocator's out-of-memory error, or the host allocator's (the
    worker's memory limit, Note [Worker memory limit] in worker.py)."""
    if isinstance(e, MemoryError):
        return True
    m = str(e).lower()
    return "out of memory" in m or "can't allocate memory" in m or "not enough memory" in m


def out_pairs(couts: dict, douts: dict) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """(name, CPU's, device's) for each out tensor, a list argument's
    element by element as 'out[i]' (Note [List outs] in overloads.py)."""
    pairs = []
    for n, d in douts.items():
        c = couts[n]
        if isinstance(d, torch.Tensor):
            pairs.append((n, c, d))
        else:
            pairs += [(f"{n}[{j}]", ct, dt) for j, (ct, dt) in enumerate(zip(c, d))]
    return pairs


def tensors_in(x: Any) -> list[torch.Tensor]:
    out: list[torch.Tensor] = []

    def walk(v: Any) -> None:
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, (tuple, list)):
            for e in v:
                walk(e)
        elif isinstance(v, dict):
            for e in v.values():
                walk(e)

    walk(x)
    return out


def on_cpu(x: Any) -> Any:
    return clone_tree(x, torch.device("cpu"))


def storage_ptr(t: torch.Tensor) -> int:
    try:
        return t.untyped_storage().data_ptr()
    except Exception:
        return -1

