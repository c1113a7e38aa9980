"""The schema sample source: calls made from an overload's schema alone, for
what OpInfo samples do not reach or do not try. Each is one of a few shape
variants -- 2-d, 0-d, empty, non-contiguous and broadcast inputs -- with
required arguments filled in (dims in range, sizes matching the shape) and
defaults left alone; samples.py gives the variants no traced sample already
is a place in a task's budget (Note [Sample budget]).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._pytree import tree_flatten

from ..overloads import out_arg_names, schema_of
from ..sample import Sample
from ..tensors import random_tensor

_VARIANTS = ("2d", "0d", "empty", "noncontig", "broadcast")


def _synth_value(arg: Any, variant: str, dtype: torch.dtype, tensor_i: int, base: tuple = (3, 4)) -> Any:
    ty = str(arg.type)
    name = arg.name
    # an in-place op's self must already have the broadcast shape
    written = arg.alias_info is not None and arg.alias_info.is_write
    first = base if written else (base[0], 1)
    shapes = {"2d": base, "0d": (), "empty": (0, base[1]), "noncontig": base, "broadcast": first if tensor_i == 0 else (1, base[1])}
    shape = shapes[variant]
    nd = len(shape)
    if ty in ("Tensor", "Optional[Tensor]"):
        if ty.startswith("Optional") and tensor_i > 0:
            return None
        if name in ("index", "indices"):
            return torch.randint(0, max(1, shape[-1] if nd else 1), shape or (), dtype=torch.int64)
        return random_tensor(shape, dtype, noncontig=variant == "noncontig")
    if ty == "List[Tensor]":
        return [random_tensor(shape, dtype), random_tensor(shape, dtype)]
    if ty in ("number", "Optional[number]"):
        return True if dtype == torch.bool else (2 if not (dtype.is_floating_point or dtype.is_complex) else 1.5)
    if ty in ("int", "SymInt", "Optional[int]", "Optional[SymInt]"):
        if "dim" in name:
            return -1 if nd else 0
        return 1
    if ty in ("List[int]", "List[SymInt]", "Optional[List[int]]", "Optional[List[SymInt]]"):
        if name in ("size", "shape", "sizes"):
            return list(shape)
        if "dim" in name:
            return [-1] if nd else []
        if name == "stride":
            return list(torch.empty(shape).stride())
        return [1]
    if ty in ("bool", "Optional[bool]"):
        return False
    if ty in ("float", "Optional[float]"):
        return 0.5
    if ty in ("ScalarType", "Optional[ScalarType]"):
        return dtype
    if ty.startswith("Optional["):
        return None
    raise _Unsupported(ty)


class _Unsupported(Exception):
    pass


def synthesize(name: str, dtype: torch.dtype, base: tuple = (3, 4), variants: tuple = _VARIANTS) -> list[Sample]:
    """Samples from the schema alone: required args filled, defaults left alone.
    `base` is the 2-d shape the variants derive from (`opgen-backend bench`
    asks for large square ones, bench.py)."""
    try:
        schema = schema_of(name)
    except Exception:
        return []
    outs = out_arg_names(schema)
    # Note [Factories name their device]: an operator without tensor
    # arguments (full, arange, rand) reaches a device only through its
    # `device` argument, so its samples pass CPU's, which the device run
    # retargets (clone_tree); left at its default, both runs would be CPU's.
    factory = not any("Tensor" in str(a.type) for a in schema.arguments if a.name not in outs)
    samples: list[Sample] = []
    for variant in variants:
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        ti = 0
        try:
            for a in schema.arguments:
                if a.name in outs:
                    continue
                if a.has_default_value():
                    if a.kwarg_only and str(a.type) == "Optional[ScalarType]" and a.name == "dtype":
                        kwargs["dtype"] = dtype
                    if factory and a.kwarg_only and str(a.type) == "Optional[Device]" and a.name == "device":
                        kwargs["device"] = torch.device("cpu")
                    continue
                v = _synth_value(a, variant, dtype, ti, base)
                if isinstance(v, torch.Tensor):
                    ti += 1
                if a.kwarg_only:
                    kwargs[a.name] = v
                else:
                    args.append(v)
        except _Unsupported:
            return samples
        if variant == "broadcast" and ti < 2:
            continue
        samples.append(
            Sample(tuple(args), kwargs, f"schema:{variant}", out_names=outs, out_dtypes=tuple(dtype for _ in outs))
        )
    return samples



def variants_of(s: Sample) -> set[str]:
    """Which of synthesize()'s variants a sample already is."""
    ts = [v for v in tree_flatten((s.args, s.kwargs))[0] if isinstance(v, torch.Tensor)]
    found = {"2d"}
    if any(t.dim() == 0 for t in ts):
        found.add("0d")
    if any(t.numel() == 0 for t in ts):
        found.add("empty")
    if any(not t.is_contiguous() for t in ts):
        found.add("noncontig")
    if len({tuple(t.shape) for t in ts if t.dim() > 0}) > 1:
        found.add("broadcast")
    return found
