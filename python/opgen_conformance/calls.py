"""The calls a check makes: one (overload, dtype)'s sample run on eager CPU
(the reference) and on the device, each on its own copies of the arguments
and out tensors, its error caught; and the comparison of two results with
the tolerances of the task. checks.py, probe_checks.py and gradients.py
judge what these calls return.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch.utils._pytree import tree_flatten

from .compare import attempt, compare, specials_hidden, tolerance
from .overloads import resolve_overload
from .references import CPU_REFERENCES
from .sample import Sample, empty_outs
from .tensors import clone_tree


@dataclass
class Call:
    """One call of the overload: its own copies of the arguments and out
    tensors (as they are after the call), and its result or error."""

    args: tuple
    kwargs: dict
    outs: dict = field(default_factory=dict)
    result: Any = None
    error: BaseException | None = None


def nondeterministic(name: str, op: torch._ops.OpOverload) -> bool:
    base = name.partition(".")[0]
    if "empty" in base or base in ("resize_", "resize_as_", "set_"):
        return True
    return torch.Tag.nondeterministic_seeded in op.tags


class Calls:
    """Calls of one (overload, dtype) on CPU and the device. `phase` tells
    the coordinator's watchdog which check (or the reference) is running."""

    def __init__(
        self,
        name: str,
        kind: str,
        dtype: torch.dtype,
        device: Any,
        overrides: list[dict] | None = None,
        phase: Callable[..., None] | None = None,
    ) -> None:
        self.name = name
        self.kind = kind
        self.dtype = dtype
        self.dev = device
        self.op = resolve_overload(name)
        self.schema = self.op._schema
        self.overrides = overrides or []
        self.tolerances: dict[torch.dtype, tuple[float, float]] = {}
        self.nondet = nondeterministic(name, self.op)
        self.phase = phase or (lambda _p, _partial=None: None)

    @property
    def reference(self) -> Callable[..., Any]:
        """What runs on CPU for the expected result: the overload itself, or
        Note [References eager CPU lacks]'s stand-in (references.py)."""
        return CPU_REFERENCES.get(self.name, self.op)

    def tol(self, like: Any) -> tuple[float, float]:
        """Tolerances for comparing with `like` (Note [Tolerance of the result
        dtype] in compare.py)."""
        dtype = like.dtype if isinstance(like, torch.Tensor) else self.dtype
        if dtype not in self.tolerances:
            self.tolerances[dtype] = tolerance(self.name, self.dtype, self.overrides, dtype)
        return self.tolerances[dtype]

    def run_reference(self, s: Sample, outs: dict | None = None) -> Call:
        # eager CPU itself can crash on odd inputs; the watchdog must not blame the device
        self.phase("reference")
        c = Call(clone_tree(s.args), clone_tree(s.kwargs), self._outs(s, outs))
        c.result, c.error = attempt(lambda: self.reference(*c.args, **c.kwargs, **c.outs))
        return c

    def run_device(self, s: Sample, check: str, index: int = 0, outs: dict | None = None) -> Call:
        self.phase(check)
        to = self.dev.to_device
        c = Call(to(s.args, index), to(s.kwargs, index), to(self._outs(s, outs), index))
        self.dev.reset_fallback_counts()
        if self.kind in ("inplace", "out", "mutable"):
            # Note [Identity under inference mode]: autograd's kernel for an
            # in-place or out= overload returns its self/out argument whatever
            # the backend's kernel returned, so a kernel returning another
            # tensor is visible only where autograd steps aside. Inference
            # mode does, and changes nothing else these overloads do.
            with torch.inference_mode():
                c.result, c.error = attempt(lambda: self.dev.call(self.name, self.op, c.args, {**c.kwargs, **c.outs}))
        else:
            c.result, c.error = attempt(lambda: self.dev.call(self.name, self.op, c.args, {**c.kwargs, **c.outs}))
        return c

    @staticmethod
    def _outs(s: Sample, outs: dict | None) -> dict:
        if outs is not None:
            return clone_tree(outs)
        return empty_outs(s)

    def differences(self, cres: Any, dres: Any, specials: bool = False) -> list[str]:
        """What differs between two results (the device's against CPU's),
        output by output; shapes included, dtypes not (the dtype check's);
        with `specials`, what tolerance hides too (specials_hidden)."""
        cflat, cspec = tree_flatten(cres)
        dflat, dspec = tree_flatten(dres)
        if len(cflat) != len(dflat) or str(cspec) != str(dspec):
            return [f"returned {len(dflat)} values, CPU returns {len(cflat)}"]
        found = []
        for i, (c, d) in enumerate(zip(cflat, dflat)):
            at = f"output {i}: " if len(cflat) > 1 else ""
            rtol, atol = self.tol(c)
            why = compare(d, c, rtol, atol)
            if why is None and specials:
                why = specials_hidden(d, c, atol)
            if why is not None:
                found.append(at + why)
        return found

    def out_problems(self, layout: str, n: str, ct: torch.Tensor, dt: torch.Tensor) -> list[str]:
        """What is wrong with the device's out tensor `n` against CPU's."""
        if dt.shape != ct.shape:
            return [f"{layout}'{n}' not resized: shape {list(dt.shape)}, expected {list(ct.shape)}"]
        why = None if self.nondet else compare(dt, ct, *self.tol(ct))
        return [] if why is None else [f"{layout}'{n}' holds wrong values: {why}"]
