"""Probes: samples for the faults no ordinary sample shows.

A kernel can pass every ordinary sample and still drop NaN, put its result on
the wrong device, accept inputs eager refuses or ignore an out= tensor that is
not empty. Each probe is a sample made for one check (``Sample.check``) and
derived from an ordinary sample of the task, its base:

  extremes        NaN, +-inf, -0.0, the dtype's min/max and subnormals: OpInfo's
                  extremal-value samples (the op's own elementwise ufunc OpInfo,
                  floating dtypes)
                  and a grid of our own that pairs every extreme value with
                  every other; pointwise overloads only (Note [Extremes only
                  where pointwise])
  device_index    the base with its inputs on device 1 while device 0 is current
  invalid_inputs  inputs eager CPU refuses: OpInfo's error_inputs, and the base
                  with one size, dim or dtype broken
  out_nonempty    out= overloads: the base into a wrongly shaped non-empty out
                  (eager resizes it) and into a non-contiguous out

A task gets at most 2 + 1 + 2 + 2 probes, appended after its ordinary samples
in a fixed order, so Note [Sample determinism] names them like any sample.
Bases and invalid inputs are chosen by running them on CPU here, once; a probe
is judged only where the device gets its base right (Note [One fault, one
check] in probe_checks.py).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Iterator

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from .kinds import as_kind
from .overloads import resolve_overload
from .sample import Sample, empty_outs
from .sources.opinfo import trace_calls
from .tensors import clone_tree


def probes(
    name: str, kind: str, target: str, dtype: torch.dtype, seed: int, index: dict, ordinary: list[Sample]
) -> list[Sample]:
    op = resolve_overload(name)
    accepted = []  # the ordinary samples eager CPU accepts, with their out tensors after the call
    for s in ordinary:
        ok, outs = _cpu_run(op, s)
        if ok:
            accepted.append((s, outs))
    if not accepted:
        return []
    base = accepted[0][0]
    found: list[Sample] = []
    found += _extremes(op, name, kind, target, dtype, seed, index, accepted)
    if any(isinstance(v, torch.Tensor) for v in tree_flatten((base.args, base.kwargs))[0]):
        found.append(_probe(base, "device_index", "@device1", base.args, base.kwargs))
    found += _invalid(op, name, kind, target, dtype, seed, index, base)
    if kind == "out":
        found += _out_nonempty(accepted)
    return found


def _probe(base: Sample, check: str, suffix: str, args: tuple, kwargs: dict, **meta: Any) -> Sample:
    return Sample(
        args,
        kwargs,
        base.source + suffix,
        out_names=base.out_names,
        out_dtypes=base.out_dtypes,
        check=check,
        meta={"base": base, **meta},
    )


def _cpu_run(op: torch._ops.OpOverload, s: Sample) -> tuple[bool, dict]:
    """Does eager CPU accept the sample? With its out tensors after the call."""
    o = empty_outs(s)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            op(*clone_tree(s.args), **clone_tree(s.kwargs), **o)
    except Exception:
        return False, o
    return True, o


# ---------------------------------------------------------------------------
# extremes


def extreme_values(dtype: torch.dtype) -> list:
    """Note [Extreme values]: a prime number of values, so that the grid's
    third and later tensors (index * odd + k, mod the count) still meet every
    value. Integers leave out 0 and -1: integer division by 0 raises on CPU,
    and min // -1 traps (SIGFPE) in eager CPU itself."""
    if dtype.is_floating_point:
        fi = torch.finfo(dtype)
        subnormal = fi.tiny * fi.eps  # the smallest one
        inf = float("inf")
        return [float("nan"), inf, -inf, -0.0, 0.0, fi.max, fi.min, fi.tiny, -fi.tiny, subnormal, -fi.tiny / 2, 1.0, -1.0]
    ii = torch.iinfo(dtype)
    if ii.min < 0:
        return [ii.min, ii.max, ii.min + 1, ii.max - 1, 1, 2, -2]
    return [ii.max, ii.max - 1, ii.max // 2 + 1, ii.max // 2, 1, 2, 3]


def _opinfo_extremal(op: Any, dtype: torch.dtype) -> Iterator[Any]:
    """OpInfo's extremal-value samples (its reference_inputs end with them);
    called directly, not through reference_inputs, whose hundreds of ordinary
    inputs come first. The first pairs +-inf and NaN with each other; the
    second, NaNs through two 128 x 128 tensors, costs more than all other
    probes together and shows nothing the grid does not."""
    from torch.testing._internal.opinfo import core

    if isinstance(op, core.BinaryUfuncInfo):
        yield from core.generate_elementwise_binary_extremal_value_tensors(op, device="cpu", dtype=dtype)
    elif isinstance(op, core.UnaryUfuncInfo):
        yield from core.generate_elementwise_unary_extremal_value_tensors(op, device="cpu", dtype=dtype)


def _extremes(
    op: torch._ops.OpOverload,
    name: str,
    kind: str,
    target: str,
    dtype: torch.dtype,
    seed: int,
    index: dict,
    accepted: list[tuple[Sample, dict]],
) -> list[Sample]:
    """Note [Extremes only where pointwise]: a pointwise result element depends
    on one element of each input, so any correct kernel gives eager's answer
    for each extreme value. Reductions and matmuls may add in another order,
    and max + max - max is inf in one order and max in another; sorts and
    arg-reductions may pick another of two equal values. Extremes there would
    be false alarms. Bool and complex have no extremes of their own here;
    nondeterministic ops compare no values."""
    if torch.Tag.pointwise not in op.tags or torch.Tag.nondeterministic_seeded in op.tags:
        return []
    if dtype == torch.bool or dtype.is_complex:
        return []
    base = next((s for s, _ in accepted if _has_wide(s, dtype)), None)
    if base is None:
        return []
    found: list[Sample] = []
    if dtype.is_floating_point:
        calls = trace_calls(index, target, dtype, seed, 1, 1, _opinfo_extremal, "opinfo-extremal", own=True)
        for src, a, k in calls:
            s = as_kind(name, kind, target, src, a, k, dtype)
            if s is not None and _cpu_run(op, s)[0]:
                found.append(Sample(s.args, s.kwargs, s.source, s.out_names, s.out_dtypes, "extremes", {"base": base}))
    grid = _grid(base, dtype)
    if _cpu_run(op, grid)[0]:
        found.append(grid)
    return found


def _has_wide(s: Sample, dtype: torch.dtype) -> bool:
    return any(
        isinstance(v, torch.Tensor) and v.dtype == dtype and v.dim() > 0 for v in tree_flatten((s.args, s.kwargs))[0]
    )


def _grid(base: Sample, dtype: torch.dtype) -> Sample:
    """The base with each of its `dtype` tensors (0-d ones aside) replaced by a
    1-d tensor of P*P extreme values, P = len(extreme_values): the first holds
    each value P times, the second cycles through them, so together they pair
    every value with every other; later ones permute them. The base's other
    tensors are repeated to the same length, keeping their values (masks,
    exponents) valid. P*P elements also run a kernel's vectorized loop, not
    only its scalar tail."""
    vals = torch.tensor(extreme_values(dtype), dtype=dtype)
    p = len(vals)
    i = torch.arange(p * p)
    k = 0

    def fill(t: torch.Tensor) -> torch.Tensor:
        nonlocal k
        if t.dim() == 0:
            return t
        if t.dtype != dtype:
            flat = t.reshape(-1)
            return flat.repeat(p * p // max(1, flat.numel()) + 1)[: p * p] if flat.numel() else t.new_zeros(p * p)
        at = i // p if k == 0 else (i * (2 * k - 1) + k - 1) % p
        k += 1
        return vals[at]

    args, kwargs = _map_tensors((base.args, base.kwargs), fill)
    return _probe(base, "extremes", "~extremes", args, kwargs)


def _map_tensors(tree: Any, f: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    flat, spec = tree_flatten(tree)
    return tree_unflatten([f(v) if isinstance(v, torch.Tensor) else v for v in flat], spec)


# ---------------------------------------------------------------------------
# invalid inputs


def _opinfo_errors(op: Any, dtype: torch.dtype) -> Iterator[Any]:
    """The inputs of an OpInfo's error_inputs (most raise before reaching aten
    and are not traced; those that reach it are), seeded once by trace_calls
    instead of before each input."""
    if op.error_inputs_func is None:
        return
    for e in op.error_inputs("cpu", set_seed=False):
        yield e.sample_input


def _invalid(
    op: torch._ops.OpOverload,
    name: str,
    kind: str,
    target: str,
    dtype: torch.dtype,
    seed: int,
    index: dict,
    base: Sample,
) -> list[Sample]:
    """At most one of the error inputs of the OpInfos named like the overload
    that eager CPU refuses, and the first of _broken's variants of the base
    that it refuses."""
    found: list[Sample] = []
    for src, a, k in trace_calls(index, target, dtype, seed, 16, 4, _opinfo_errors, "opinfo-error", own=True):
        s = as_kind(name, kind, target, src, a, k, dtype, invalid=True)
        if s is not None and not _cpu_run(op, s)[0]:
            found.append(Sample(s.args, s.kwargs, s.source, s.out_names, s.out_dtypes, "invalid_inputs", {"base": base}))
            break
    for how, args, kwargs in () if target.partition(".")[0] in _CRASHES_WHEN_BROKEN else _broken(op, base):
        s = _probe(base, "invalid_inputs", f"~{how}", args, kwargs)
        if not _cpu_run(op, s)[0]:
            found.append(s)
            break
    return found


# Overloads whose eager CPU kernel crashes the process (a segfault, not an
# error) on a broken shape, so _broken's variants cannot be asked of it:
# their invalid_inputs come from OpInfo error inputs only.
_CRASHES_WHEN_BROKEN: dict[str, str] = {
    "_adaptive_avg_pool3d_backward": "reads grad_output with the input's sizes without checking them (torch 2.13)",
}


def _broken(op: torch._ops.OpOverload, base: Sample) -> Iterator[tuple[str, tuple, dict]]:
    """The base with one thing broken, most telling first: one size of one
    tensor (the last tensors first: a mismatched `other`, a view's input of
    the wrong numel), a dim out of range, one tensor of another dtype (where
    the op needs equal dtypes or integer indices). At most 3 + 1 + 2 tries."""
    flat, spec = tree_flatten((base.args, base.kwargs))
    tensors = [j for j, v in enumerate(flat) if isinstance(v, torch.Tensor)]
    sized = [(j, d) for j in reversed(tensors) for d in range(flat[j].dim())]
    for j, d in sized[:3]:
        t = flat[j]
        grown = torch.cat([t, t.narrow(d, 0, 1)], d) if t.size(d) else t.new_zeros([*t.shape[:d], 1, *t.shape[d + 1 :]])
        yield "size", *tree_unflatten([*flat[:j], grown, *flat[j + 1 :]], spec)
    ndim = max([flat[j].dim() for j in tensors] + [1])
    args, kwargs = list(base.args), dict(base.kwargs)
    for pos, a in enumerate(op._schema.arguments):
        ty = str(a.type)
        if "dim" not in a.name or ty not in ("int", "List[int]", "Optional[int]", "Optional[List[int]]"):
            continue
        bad = [ndim + 1] if "List" in ty else ndim + 1
        if pos < len(args) and args[pos] is not None and not a.kwarg_only:
            args[pos] = bad
        elif kwargs.get(a.name) is not None:
            kwargs[a.name] = bad
        else:
            continue
        yield "dim", tuple(args), kwargs
        break
    for j in list(reversed(tensors))[:2]:
        t = flat[j]
        other = torch.float32 if not t.is_floating_point() or t.dtype == torch.float64 else torch.float64
        yield "dtype", *tree_unflatten([*flat[:j], t.to(other), *flat[j + 1 :]], spec)


# ---------------------------------------------------------------------------
# out= into non-empty tensors


def _sentinel(dtype: torch.dtype) -> Any:
    """What an out tensor holds before the call; a kernel that leaves it alone shows."""
    if dtype == torch.bool:
        return True
    return float("nan") if dtype.is_floating_point or dtype.is_complex else 77


def _out_nonempty(accepted: list[tuple[Sample, dict]]) -> list[Sample]:
    """From the first base whose outs come back non-empty: the same outs made
    3 elements longer (1-d: eager resizes them, with a warning), and made
    non-contiguous (every other element of a buffer twice as long in the
    last dimension longer than 1; none when there is no such dimension)."""
    for base, outs in accepted:
        flat = [t for t in tree_flatten(outs)[0] if isinstance(t, torch.Tensor)]
        if flat and all(t.numel() > 0 for t in flat):
            break
    else:
        return []
    wrong = _map_tensors(outs, lambda o: torch.full((o.numel() + 3,), _sentinel(o.dtype), dtype=o.dtype))
    found = [_probe(base, "out_nonempty", "~out-wrong-shape", base.args, base.kwargs, outs=wrong, layout="wrong-shape")]
    if any(not any(o.size(d) > 1 for d in range(o.dim())) for o in flat):
        return found

    def every_other(o: torch.Tensor) -> torch.Tensor:
        d = [d for d in range(o.dim()) if o.size(d) > 1][-1]
        buf = torch.full([*o.shape[:d], 2 * o.size(d), *o.shape[d + 1 :]], _sentinel(o.dtype), dtype=o.dtype)
        return buf[(slice(None),) * d + (slice(None, None, 2),)]

    strided = _map_tensors(outs, every_other)
    found.append(_probe(base, "out_nonempty", "~out-noncontig", base.args, base.kwargs, outs=strided, layout="noncontig"))
    return found
