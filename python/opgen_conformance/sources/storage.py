"""Samples in the storage dtypes: uint16, uint32, uint64 and the float8
formats, which no task is of (a backend claims the dtypes a task can have,
and these are not among them) and which eager CPU only stores, copies,
casts, fills, concatenates and compares for equality.

Note [Storage-dtype samples]: they come in addition to an overload's other
samples, for the overloads eager CPU serves them with:
  _to_copy, copy_   the task's dtype converted to each storage dtype and
                    back (every task: together they cover the conversion
                    matrix between the claimed dtypes and these)
  clone, cat, fill_, eq/ne/lt/le/gt/ge (Tensor and Scalar, in place, out=)
                    tensors of each storage dtype, once, in the float32 task
Where eager refuses (lt/le/gt/ge of these dtypes, promotion of float8 with
another dtype, a fill value float8 cannot hold, uint16/32/64 with a signed
integer), the sample is kept: the `errors` check wants the device to refuse
with eager's exception class. Values stay where eager agrees with itself:
eager's float->uint32 cast answers differently in its vectorized and its
scalar loops outside uint32's range (and NaN), so no sample converts such a
value (float_to_integral in backends/ref's kernels/common/Dtypes.h).
"""

from __future__ import annotations

import torch

from ..overloads import out_arg_names, schema_of
from ..sample import Sample
from ..tensors import random_tensor

UNSIGNED = (torch.uint16, torch.uint32, torch.uint64)
FLOAT8 = tuple(
    getattr(torch, n)
    for n in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu")
    if hasattr(torch, n)
)
STORAGE_DTYPES = UNSIGNED + FLOAT8

_CONVERSIONS = ("_to_copy", "copy_")
_ONCE = ("clone", "cat", "fill_", "eq", "ne", "lt", "le", "gt", "ge", "eq_", "ne_", "lt_", "le_", "gt_", "ge_")
_ONCE_TASK = torch.float32


def _name(dt: torch.dtype) -> str:
    return str(dt).removeprefix("torch.")


def storage_tensor(shape: tuple, dt: torch.dtype, nan: bool = False) -> torch.Tensor:
    """Random values of a storage dtype: small integers for the unsigned ones,
    uniform(-3, 3) rounded to the format for float8 (e8m0fnu keeps their
    magnitudes' exponents), with a NaN first when asked."""
    if dt in UNSIGNED:
        return torch.randint(0, 100, shape).to(dt)
    t = torch.empty(shape).uniform_(-3, 3)
    if nan and t.numel():
        t.view(-1)[0] = float("nan")
    return t.to(dt)


def _conversions(base: str, dt: torch.dtype) -> list[tuple[tuple, dict, str]]:
    found = []
    for s in STORAGE_DTYPES:
        x = random_tensor((3, 4), dt)
        y = storage_tensor((3, 4), s)
        if base == "_to_copy":
            found.append(((x,), {"dtype": s}, f"to-{_name(s)}"))
            found.append(((y,), {"dtype": dt}, f"from-{_name(s)}"))
            found.append(((y.t(),), {"dtype": dt}, f"from-{_name(s)}-noncontig"))
        else:
            found.append(((torch.empty((3, 4), dtype=s), x), {}, f"to-{_name(s)}"))
            found.append(((torch.empty((3, 4), dtype=dt), y), {}, f"from-{_name(s)}"))
            found.append(((torch.empty((4, 3), dtype=dt).t(), y), {}, f"from-{_name(s)}-noncontig"))
    return found


def _once(base: str, overload: str) -> list[tuple[tuple, dict, str]]:
    found = []
    for s in STORAGE_DTYPES:
        n = _name(s)
        a = storage_tensor((3, 4), s, nan=True)
        if base == "clone":
            found += [((a,), {}, n), ((a.t(),), {}, f"{n}-noncontig")]
        elif base == "cat":
            found += [(([a, storage_tensor((2, 4), s)],), {}, n), (([a, storage_tensor((3, 2), s)], 1), {}, f"{n}-dim1")]
            found.append((([a, random_tensor((2, 4), torch.float32)],), {}, f"{n}-with-float32"))
        elif base == "fill_":
            if overload == "Tensor":
                found.append(((a, torch.tensor(3)), {}, n))
            else:
                found += [((a, 2), {}, n), ((a.t(), 1.5), {}, f"{n}-noncontig")]
                if s in FLOAT8:
                    found.append(((a, 1e6), {}, f"{n}-overflow"))
        else:  # the comparisons, functional and in place
            b = a.clone()
            b.view(-1)[1::2] = storage_tensor((6,), s)
            if overload.startswith("Scalar"):
                found += [((a, 1), {}, n), ((a, 1.5), {}, f"{n}-float")]
            else:
                found += [((a, b), {}, n), ((a, b[:1]), {}, f"{n}-broadcast")]
                found.append(((a, random_tensor((3, 4), torch.float32)), {}, f"{n}-with-float32"))
    return found


def storage_samples(name: str, dtype: torch.dtype) -> list[Sample]:
    """Note [Storage-dtype samples] of overload `name` for a task of `dtype`."""
    base, _, overload = name.partition(".")
    if base in _CONVERSIONS:
        made = _conversions(base, dtype)
    elif base in _ONCE and dtype == _ONCE_TASK:
        made = _once(base, overload)
    else:
        return []
    outs = out_arg_names(schema_of(name))
    return [
        Sample(args, kwargs, f"storage:{v}", out_names=outs, out_dtypes=tuple(dtype for _ in outs))
        for args, kwargs, v in made
    ]
