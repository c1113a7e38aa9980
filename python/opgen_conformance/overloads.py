"""Aten overloads by name: resolving them, reading their schemas, their kind
(functional, in-place, out=, mutable), their functional sibling, and the
core tag. Nothing here runs an operator.
"""

from __future__ import annotations


import torch


def resolve_overload(name: str) -> torch._ops.OpOverload:
    """``add.Tensor`` -> torch.ops.aten.add.Tensor; ``relu`` -> ...relu.default."""
    base, _, overload = name.partition(".")
    packet = getattr(torch.ops.aten, base)
    return getattr(packet, overload or "default")


def overload_name(op: torch._ops.OpOverload) -> str:
    """The inverse of resolve_overload: ``aten::add.Tensor`` -> ``add.Tensor``."""
    n = op.name()
    return n[len("aten::") :] if n.startswith("aten::") else n


def schema_of(name: str) -> torch._C.FunctionSchema:
    return resolve_overload(name)._schema


def out_arg_names(schema: torch._C.FunctionSchema) -> tuple[str, ...]:
    return tuple(a.name for a in _out_args(schema))


def _out_args(schema: torch._C.FunctionSchema) -> list:
    return [a for a in schema.arguments if a.kwarg_only and a.alias_info is not None and a.alias_info.is_write]


# Note [List outs]: the out= form of a foreach op writes a list
# (`_foreach_sqrt.out(Tensor[] self, *, Tensor(a!)[] out) -> ()`). Its
# out_dtypes entry is a tuple of dtypes, one per tensor of the list, and
# empty_outs (sample.py) makes a list of empty tensors for it; a single tensor
# there is an error on CPU and device alike, which reaches nothing of the kernel.
def group_out_dtypes(name: str, flat: tuple) -> tuple | None:
    """The dtypes of an out= overload's outputs, flat as a call returns them,
    grouped by its out arguments: one dtype for a tensor argument, a tuple of
    them for a list argument (the only out argument, as in every foreach op).
    None when they do not fit."""
    lists = [isinstance(a.type, torch.ListType) for a in _out_args(schema_of(name))]
    if not any(lists):
        return flat if len(flat) == len(lists) else None
    return (tuple(flat),) if lists == [True] else None


def _arg_key(schema: torch._C.FunctionSchema, skip: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    return [(a.name, str(a.type)) for a in schema.arguments if a.name not in skip]


def functional_sibling(name: str, kind: str) -> str | None:
    """``add_.Tensor`` -> ``add.Tensor``; ``add.out`` -> ``add.Tensor``."""
    try:
        schema = schema_of(name)
    except Exception:
        return None
    base, _, overload = name.partition(".")
    if kind == "inplace":
        fbase = base[:-1] if base.endswith("_") else base
        cand = f"{fbase}.{overload}" if overload else fbase
        try:
            resolve_overload(cand)
            return cand
        except Exception:
            return None
    if kind == "out":
        outs = out_arg_names(schema)
        want = _arg_key(schema, outs)
        for s in torch._C._jit_get_schemas_for_operator(f"aten::{base}"):
            if out_arg_names(s):
                continue
            if any(a.alias_info is not None and a.alias_info.is_write for a in s.arguments):
                continue
            if _arg_key(s) == want:
                return f"{base}.{s.overload_name}" if s.overload_name else base
        return None
    return None


def target_of(name: str, kind: str) -> str:
    """The overload whose traced calls become samples of `name`: its
    functional sibling for in-place and out= overloads, else itself."""
    if kind in ("inplace", "out"):
        return functional_sibling(name, kind) or name
    return name


def op_info(name: str) -> dict:
    """What the manifest records of an overload (kind, core, view), from its schema (the tests' oracle)."""
    try:
        op = resolve_overload(name)
    except Exception:
        return {"exists": False, "kind": "functional", "core": False, "view": False}
    schema = op._schema
    writes = [a for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    if out_arg_names(schema):
        kind = "out"
    elif writes and writes[0].name == "self" and name.partition(".")[0].endswith("_"):
        kind = "inplace"
    elif writes:
        kind = "mutable"
    else:
        kind = "functional"
    view = any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns)
    return {"exists": True, "kind": kind, "core": torch.Tag.core in op.tags, "view": view}
