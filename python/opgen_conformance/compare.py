"""Comparing a device's results with CPU's: tolerances, the comparison of
one value, the precision rule that judges a floating result against a float64
run, what tolerance hides about extreme values, and the small helpers
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


# Note [Precision rule]: assert_close against eager CPU cannot tell a kernel
# that is as accurate as eager from one that loses accuracy: on well
# conditioned inputs both are within tolerance, and on ill-conditioned ones
# (batch norm over two elements per channel, a variance a million times
# smaller than the squared mean) eager itself is far from the exact result,
# so any tolerance that passes a correct kernel there passes a bad one too.
# So a float32/float16/bfloat16 result is judged against the same call run
# in float64 on CPU (every floating input widened), the truth for the inputs
# as given, and the device must be about as close to it as eager CPU is:
#
#   err(x) = max_i |x_i - r_i| / (atol + rtol * |r_i|)     (r: the float64 run)
#   pass  iff  err(device) <= K * err(eager CPU) + FLOOR
#
# err is measured element by element in units of assert_close's tolerance of
# the result dtype (DEFAULT_TOL, or the task's override), so small elements
# are held to atol as assert_close holds them, and the worst element of the
# whole result decides, as one number per result: comparing element by
# element with eager would fail a kernel that rounds one element the other
# way from eager where eager happens to be exact.
#
# K = 3: two kernels of equal accuracy that sum in different orders differ in
# their worst error by well under 2x (the worst of many rounding errors is a
# stable statistic), while a kernel that loses accuracy loses it by a factor
# that grows with the conditioning of the input: the reference batch norm
# of issue 23 was 4-5x off in conv nets, and far more on the ill-conditioned
# samples (Note [Ill-conditioned samples] in sources/handmade.py); a
# one-pass variance E[x^2] - E[x]^2 is 10^2-10^5x off there. 3 sits between
# the two with room on both sides.
#
# FLOOR: where eager is exact (err 0: a result that is exactly
# representable, an exact zero gradient that float32 computes as 1e-9) any
# error would be "more than K times eager's", so an error below the floor
# always passes. The floor is assert_close's tolerance scaled down to one
# ulp: FLOOR(dtype) = eps / rtol units, i.e. eps * |r| + atol * eps / rtol per
# element (float32 0.092 units, float16 0.98, bfloat16 0.49: rtol is
# 10.9, 1.02 and 2.05 eps). Pure rounding (at most half an ulp) and a
# result one ulp from the correctly rounded one pass on the floor alone; a
# float32 kernel 5x off eager's error does not once eager's error is above
# the floor's share, which ill-conditioned inputs make it.
#
# Non-finite values are exact: where eager gives NaN or an infinity the
# device must give the same, where eager is finite so must the device be, and
# elements whose float64 result is not finite while eager's is are left out.
#
# A result the device gets within FLOOR / 2 units of eager's (taken at
# eager's value) passes without the float64 run: by the triangle inequality
# its error is at most err(eager) + FLOOR (within_rule_of_cpu); that is most
# results, so the float64 run costs only where the device and eager differ.
# The values check (checks.py) and the model runner use precision_verdict.
PRECISION_K = 3.0
PRECISION_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def precision_floor(dtype: torch.dtype) -> float:
    """Note [Precision rule]'s FLOOR of a dtype, in tolerance units."""
    rtol = DEFAULT_TOL.get(dtype, DEFAULT_TOL[torch.float64])[0]
    return torch.finfo(dtype).eps / rtol if dtype.is_floating_point else 1.0


def _units(x: torch.Tensor, r: torch.Tensor, rtol: float, atol: float) -> torch.Tensor:
    return (x - r).abs() / (atol + rtol * r.abs())


def precision_verdict(
    device_value: torch.Tensor,
    cpu_value: torch.Tensor,
    ref64: torch.Tensor,
    k: float = PRECISION_K,
    *,
    tol: tuple[float, float] | None = None,
    eager_spread: float = 0.0,
) -> tuple[bool, str]:
    """Note [Precision rule]: (ok, why not) for a device result against eager
    CPU's and the float64 run's, all on CPU and of one shape; `tol` is (rtol,
    atol), by default assert_close's of eager's dtype. `eager_spread`: eager's
    worst error over equally valid float32 draws of the same computation, in
    units (the model runner's Note [Eager's spread]); eager's error is the
    larger of it and eager's own."""
    if device_value.shape != cpu_value.shape or ref64.shape != cpu_value.shape:
        return False, f"shape {list(device_value.shape)} != expected {list(cpu_value.shape)}"
    rtol, atol = tol if tol is not None else DEFAULT_TOL.get(cpu_value.dtype, (0.0, 0.0))
    if rtol == 0.0 and atol == 0.0:
        rtol, atol = DEFAULT_TOL[torch.float64]
    d = device_value.detach().to(torch.float64)
    c = cpu_value.detach().to(torch.float64)
    r = ref64.detach().to(torch.float64)
    c_fin, d_fin = torch.isfinite(c), torch.isfinite(d)
    special = ~c_fin & ~((d == c) | (d.isnan() & c.isnan()))
    if bool(special.any()):
        i = _first(special)
        return False, f"{_at(i)}device {d.flatten()[i].item()!r} where CPU gives {c.flatten()[i].item()!r}"
    lost = c_fin & ~d_fin
    if bool(lost.any()):
        i = _first(lost)
        return False, f"{_at(i)}device {d.flatten()[i].item()!r} where CPU gives {c.flatten()[i].item()!r}"
    judged = c_fin & torch.isfinite(r)
    if not bool(judged.any()):
        return True, ""
    ud = torch.where(judged, _units(d, r, rtol, atol), 0.0)
    uc = torch.where(judged, _units(c, r, rtol, atol), 0.0)
    ed, own = float(ud.max()), float(uc.max())
    ec = max(own, eager_spread)
    floor = precision_floor(cpu_value.dtype)
    if ed <= k * ec + floor:
        return True, ""
    i = int(ud.flatten().argmax())
    spread = f" ({ec:.3g} over its float32 draws)" if ec > own else ""
    return False, (
        f"less accurate than eager CPU: error against float64 {ed:.3g} x tolerance, eager CPU's {own:.3g}{spread} "
        f"(allowed {k:g} x that + {floor:.2g}); worst {_at(i)}device {d.flatten()[i].item():.9g}, "
        f"CPU {c.flatten()[i].item():.9g}, float64 {r.flatten()[i].item():.9g}"
    )[:MAX_MSG]


def error_units(value: torch.Tensor, ref64: torch.Tensor) -> float:
    """The worst element's distance from the float64 run, in tolerance units
    of the value's dtype (Note [Precision rule]), finite elements only."""
    rtol, atol = DEFAULT_TOL.get(value.dtype, DEFAULT_TOL[torch.float64])
    v, r = value.detach().to(torch.float64), ref64.detach().to(torch.float64)
    fin = torch.isfinite(v) & torch.isfinite(r)
    return float(torch.where(fin, _units(v, r, rtol, atol), 0.0).max()) if v.numel() else 0.0


def within_rule_of_cpu(device_value: torch.Tensor, cpu_value: torch.Tensor, rtol: float, atol: float) -> bool:
    """True when the device's result is so close to eager's that
    precision_verdict must pass whatever the float64 run gives (Note
    [Precision rule]): within FLOOR / 2 tolerance units of eager's value,
    non-finite values equal."""
    if device_value.shape != cpu_value.shape:
        return False
    d = device_value.detach().to(torch.float64)
    c = cpu_value.detach().to(torch.float64)
    fin = torch.isfinite(c)
    if not bool(((d == c) | (d.isnan() & c.isnan()) | fin).all()):
        return False
    near = (d - c).abs() <= (precision_floor(cpu_value.dtype) / 2) * (atol + rtol * c.abs())
    return bool((near | ~fin).all())


def _first(mask: torch.Tensor) -> int:
    return int(mask.flatten().nonzero()[0])


def _at(i: int) -> str:
    return f"at flat index {i}: "


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

