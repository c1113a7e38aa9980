"""A call of one overload as a sample of another of its kind: in-place and
out= overloads are sampled with their functional sibling's calls (the
sibling is what OpInfo samples reach), and an out= sample needs the dtypes
of its out tensors, which running the sibling or CPU tells.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

from .overloads import group_out_dtypes, out_arg_names, resolve_overload, schema_of
from .sample import Sample
from .tensors import clone_tree


def as_kind(
    name: str, kind: str, target: str, src: str, args: tuple, kwargs: dict, dtype: torch.dtype, invalid: bool = False
) -> Sample | None:
    """A traced call of `target` as a sample of `name`: in-place overloads take
    the functional sibling's arguments as they are, out= overloads get out
    tensors of the dtypes the functional sibling returns (of `dtype` for
    `invalid` calls, which return nothing), and a call of `name` itself keeps
    its own out tensors' dtypes. None when no out dtypes can be had."""
    if kind == "out":
        outs = out_arg_names(schema_of(name))
        if target == name:
            traced = [kwargs.get(n) for n in outs]
            dts = tuple(_dtypes_of(x) for x in traced)
            if not all(dts):
                return None
            kw = {kk: vv for kk, vv in kwargs.items() if kk not in outs}
            return Sample(args, kw, src, out_names=outs, out_dtypes=dts)
        dts = tuple(dtype for _ in outs) if invalid else out_dtypes_via_functional(name, target, args, kwargs)
        if dts is None:
            return None
        return Sample(args, kwargs, src + "->out", out_names=outs, out_dtypes=dts)
    if kind == "inplace" and target != name:
        return Sample(args, kwargs, src + "->inplace")
    return Sample(args, kwargs, src)


def _dtypes_of(x: Any) -> Any:
    """A traced out argument's dtype entry (Note [List outs] in overloads.py);
    None if it holds no tensors."""
    if isinstance(x, torch.Tensor):
        return x.dtype
    if isinstance(x, (list, tuple)) and x and all(isinstance(t, torch.Tensor) for t in x):
        return tuple(t.dtype for t in x)
    return None


def out_dtypes_via_functional(name: str, fname: str, args: tuple, kwargs: dict) -> tuple | None:
    """The out dtypes of `name` (an out= overload) for a call of its functional sibling `fname`."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = resolve_overload(fname)(*clone_tree(args), **clone_tree(kwargs))
    except Exception:
        return None
    return group_out_dtypes(name, tuple(x.dtype for x in tree_flatten(r)[0] if isinstance(x, torch.Tensor)))


def out_dtypes_via_cpu(name: str, args: tuple, kwargs: dict, outs: tuple, dtype: torch.dtype) -> tuple | None:
    """Dtypes CPU picks for out tensors: run with empty outs of `dtype`, read them back."""
    try:
        op = resolve_overload(name)
        o = {n: torch.empty(0, dtype=dtype) for n in outs}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            op(*clone_tree(args), **clone_tree(kwargs), **o)
        return tuple(o[n].dtype for n in outs)
    except Exception:
        return tuple(dtype for _ in outs)
