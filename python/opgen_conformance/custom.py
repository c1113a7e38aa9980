"""Conformance of a backend's custom operators (backend.yaml `custom:`,
issue 14): each is called on the device and its Python reference
(``<package>.ops.REFERENCES``, the YAML's `reference:`) on CPU with the same
inputs, and must agree in

- errors: both raise or neither does;
- values, dtype, shape (the tolerances of each result's dtype, as `values`);
- gradients, for an operator with a backward (``<package>.ops.DIFFERENTIABLE``):
  of every float32/float64 Tensor input, through the operator's autograd (the
  generated Function and its backward operator) against autograd through the
  reference.

Samples: the entry's `samples:` (``<package>.ops.SAMPLES[name](dtype)``, a
list of ``(args, kwargs)``), else made from the schema: every Tensor
argument a 2-d tensor of one shape, defaults left alone.

Note [Custom samples]: schema-made samples fit only operators whose Tensor
inputs all take one shape; one with a bias vector or a weight over the last
dimension raises on them. An operator none of whose samples reached a
comparison (the schema had an argument no sample can be made for, or every
sample raised on the device and in the reference alike) is a skip, not a
pass, and says what to add where: `samples:` at its custom: entry's
file:line:col (``<package>.ops.LOCATIONS``). A schema-made sample that
fails says so too, since the failure may be the sample's shape and not the
kernel.

``python -m opgen_conformance custom --package P --device D [--json]``
prints one line per (operator, dtype) and exits 1 when any fails.
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any, Callable

import torch
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

from .compare import DEFAULT_TOL
from .tensors import as_leaves

DTYPES = (torch.float32, torch.float64, torch.bfloat16)


SAMPLES_EXAMPLE = 'samples: "[((torch.randn(4, 8).to(dtype), torch.randn(8).to(dtype)), {})]"'


def schema_sample_problem(schema: torch._C.FunctionSchema) -> str | None:
    """Why no sample can be made from the schema (an argument without a
    default that is not Tensor, int, float or bool), or None."""
    for a in schema.arguments:
        if not a.has_default_value() and str(a.type) not in ("Tensor", "int", "float", "bool"):
            return f"argument {a.name} is {a.type}, which the runner cannot make a sample of"
    return None


def _schema_samples(schema: torch._C.FunctionSchema, dtype: torch.dtype) -> list[tuple[tuple, dict]]:
    gen = torch.Generator().manual_seed(0)
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for a in schema.arguments:
        if a.has_default_value():
            continue
        t = str(a.type)
        if t == "Tensor":
            v: Any = torch.randn(3, 4, generator=gen, dtype=torch.float64).to(dtype)
        elif t == "int":
            v = 1
        elif t == "float":
            v = 0.5
        elif t == "bool":
            v = False
        else:
            return []
        if a.kwarg_only:
            kwargs[a.name] = v
        else:
            args.append(v)
    return [(tuple(args), kwargs)]


def _to(tree: Any, device: str) -> Any:
    return tree_map(lambda x: x.detach().clone().to(device) if isinstance(x, torch.Tensor) else x, tree)


def _tensors(out: Any) -> list[torch.Tensor]:
    return [x for x in tree_flatten(out)[0] if isinstance(x, torch.Tensor)]


def _close(d: torch.Tensor, c: torch.Tensor, scale: float = 1.0) -> str | None:
    rtol, atol = DEFAULT_TOL.get(c.dtype, (0.0, 0.0))
    try:
        torch.testing.assert_close(d.detach().cpu(), c.detach(), rtol=rtol * scale, atol=atol * scale, equal_nan=True)
    except AssertionError as e:
        return str(e).strip().splitlines()[0] if str(e).strip() else "differs"
    return None


def _call(f: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    try:
        return f(), None
    except Exception as e:  # noqa: BLE001 - any error is a verdict
        return None, e


def check_sample(op: Any, ref: Callable, args: tuple, kwargs: dict, device: str, grads: bool = True) -> list[str]:
    """The problems of one sample (empty: it passes). ``grads``: also
    compare gradients (operators that declare a backward)."""
    return compare_sample(op, ref, args, kwargs, device, grads)[0]


def compare_sample(
    op: Any, ref: Callable, args: tuple, kwargs: dict, device: str, grads: bool = True
) -> tuple[list[str], bool]:
    """check_sample's problems, and whether anything was compared (False:
    the device and the reference both raised; Note [Custom samples])."""
    problems: list[str] = []
    cargs, ckw = _to(args, "cpu"), _to(kwargs, "cpu")
    dargs, dkw = _to(args, device), _to(kwargs, device)
    cout, cerr = _call(lambda: ref(*cargs, **ckw))
    dout, derr = _call(lambda: op(*dargs, **dkw))
    if (cerr is None) != (derr is None):
        which = f"the device raised {type(derr).__name__}: {derr}" if derr else f"only the reference raised {type(cerr).__name__}"
        return [f"errors: {which}"[:300]], True
    if cerr is not None:
        return [], False
    return _compare_values(op, ref, cargs, ckw, dargs, dkw, cout, dout, device, grads), True


def _compare_values(
    op: Any, ref: Callable, cargs: Any, ckw: Any, dargs: Any, dkw: Any, cout: Any, dout: Any, device: str, grads: bool
) -> list[str]:
    problems: list[str] = []
    ct, dt = _tensors(cout), _tensors(dout)
    if len(ct) != len(dt):
        return [f"returns {len(dt)} tensors, the reference {len(ct)}"]
    for i, (c, d) in enumerate(zip(ct, dt)):
        if d.dtype != c.dtype:
            problems.append(f"result {i}: dtype {d.dtype}, the reference's {c.dtype}")
        elif d.shape != c.shape:
            problems.append(f"result {i}: shape {tuple(d.shape)}, the reference's {tuple(c.shape)}")
        elif d.device.type != device:
            problems.append(f"result {i} is on {d.device}, not {device}")
        else:
            why = _close(d, c)
            if why:
                problems.append(f"result {i}: {why}")
    if problems or not grads:
        return problems
    # gradients
    flat, spec = tree_flatten((cargs, ckw))
    idx = [i for i, v in enumerate(flat) if isinstance(v, torch.Tensor) and v.dtype in (torch.float32, torch.float64)]
    if not idx:
        return []

    cl = as_leaves(flat, idx)
    ca, ck = tree_unflatten(cl, spec)
    cres, err = _call(lambda: ref(*ca, **ck))
    if err is not None:
        return [f"gradients: the reference raised {type(err).__name__} with inputs that require grad: {str(err).strip()[:200]}"]
    couts = [o for o in _tensors(cres) if o.requires_grad]
    if not couts:
        return []
    gen = torch.Generator().manual_seed(1)
    gos = [torch.randn(o.shape, dtype=o.dtype, generator=gen) for o in couts]
    cg, err = _call(lambda: torch.autograd.grad(couts, [cl[i] for i in idx], gos, allow_unused=True))
    if err is not None:
        return [f"gradients: the reference's backward raised {type(err).__name__}: {str(err).strip()[:200]}"]
    dl = as_leaves(tree_flatten((dargs, dkw))[0], idx)
    da, dk = tree_unflatten(dl, spec)
    dres, err = _call(lambda: op(*da, **dk))
    if err is not None:
        return [f"gradients: the device raised {type(err).__name__} with inputs that require grad: {str(err).strip()[:200]}"]
    douts = [o for o in _tensors(dres) if o.requires_grad]
    if len(douts) != len(couts):
        return ["gradients: the device outputs do not require grad; autograd is not wired for this operator"]
    dg, err = _call(
        lambda: torch.autograd.grad(douts, [dl[i] for i in idx], [g.to(device) for g in gos], allow_unused=True)
    )
    if err is not None:
        return [f"gradients: the device backward raised {type(err).__name__}: {str(err).strip()[:200]}"]
    for k, (c, d) in enumerate(zip(cg, dg)):
        if (c is None) != (d is None):
            problems.append(f"gradients: grad of input {k} {'missing' if d is None else 'unexpected'}")
        elif c is not None:
            why = _close(d, c, scale=10.0)
            if why:
                problems.append(f"gradients: grad of input {k}: {why}")
    return problems


def run(package: str, device: str) -> list[dict]:
    pkg = importlib.import_module(package)
    try:
        ops = importlib.import_module(f"{package}.ops")
    except ImportError:
        return []
    del pkg
    results = []
    samples_of = getattr(ops, "SAMPLES", {})
    locations = getattr(ops, "LOCATIONS", {})
    for name, ref in sorted(ops.REFERENCES.items()):
        base, _, overload = name.partition(".")
        op = getattr(getattr(torch.ops, device), base)
        op = getattr(op, overload or "default")
        made = samples_of.get(name)
        where = f"at {locations[name]}" if name in locations else "in its custom: entry"
        add = f"add samples: {where}, a list of (args, kwargs) over dtype, e.g. {SAMPLES_EXAMPLE}"
        grads = name in getattr(ops, "DIFFERENTIABLE", ())
        for dtype in DTYPES:
            samples, err = _call(lambda: list(made(dtype))) if made else (_schema_samples(op._schema, dtype), None)
            if err is not None:
                problem = f"its samples: raised {type(err).__name__} for {dtype}: {str(err).strip()[:200]}"
                results.append(_result(device, name, dtype, 0, "fail", [problem]))
                continue
            problems: list[str] = []
            compared = 0
            for k, (args, kwargs) in enumerate(samples):
                got, did = compare_sample(op, ref, args, kwargs, device, grads)
                compared += did
                problems += [f"sample {k}: {p}" for p in got]
            # Note [Custom samples]
            if problems and not made:
                problems.append(
                    "the samples were made from the schema (every Tensor 3x4); if the operator needs other shapes, " + add
                )
            status = "fail" if problems else ("pass" if compared else "skip")
            if status == "skip":
                why = schema_sample_problem(op._schema) if not made else None
                if why is not None:
                    problems.append(f"no samples: {why}; {add}")
                elif samples:
                    problems.append(
                        "nothing compared: every sample raised on the device and in the reference; "
                        + (add if not made else "give a sample the operator accepts")
                    )
                else:
                    problems.append(f"no samples: its samples: gave none for {dtype}")
            results.append(_result(device, name, dtype, len(samples), status, problems))
    return results


def _result(device: str, name: str, dtype: torch.dtype, samples: int, status: str, problems: list[str]) -> dict:
    return {
        "op": f"{device}::{name}",
        "dtype": str(dtype).replace("torch.", ""),
        "samples": samples,
        "status": status,
        "problems": problems,
    }


def main(package: str, device: str, as_json: bool) -> int:
    results = run(package, device)
    if as_json:
        print(json.dumps(results, indent=2))
    else:
        for r in results:
            line = f"{r['status']:4} {r['op']} {r['dtype']} ({r['samples']} samples)"
            print(line + ("".join(f"\n       {p}" for p in r["problems"])))
        n = sum(r["status"] == "fail" for r in results)
        s = sum(r["status"] == "skip" for r in results)
        print(f"custom operators: {len(results) - n - s} passed, {s} skipped, {n} failed", file=sys.stderr)
    return 1 if any(r["status"] == "fail" for r in results) else 0
