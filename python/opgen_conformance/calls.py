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

from .compare import (
    PRECISION_DTYPES,
    attempt,
    compare,
    precision_verdict,
    specials_hidden,
    tolerance,
    tensors_in,
    within_rule_of_cpu,
)
from .overloads import resolve_overload
from .references import CPU_REFERENCES
from .sample import Sample, empty_outs
from .tensors import clone_tree


_WIDER = {
    torch.float16: torch.float64,
    torch.bfloat16: torch.float64,
    torch.float32: torch.float64,
    torch.complex32: torch.complex128,
    torch.complex64: torch.complex128,
}


def _widened(x: Any) -> Any:
    """A copy of a call's arguments with floating tensors and dtypes widened
    to double precision (.to keeps a dense tensor's strides)."""
    if isinstance(x, torch.Tensor):
        wide = _WIDER.get(x.dtype)
        return clone_tree(x) if wide is None else x.detach().to(wide)
    if isinstance(x, torch.dtype):
        return _WIDER.get(x, x)
    if isinstance(x, tuple):
        return tuple(_widened(v) for v in x)
    if isinstance(x, list):
        return [_widened(v) for v in x]
    if isinstance(x, dict):
        return {k: _widened(v) for k, v in x.items()}
    return x


class Wide:
    """A sample's float64 run (Calls.run_reference64), made at most once and
    only when a value needs it; its result, out tensors and arguments by the
    positions the checks name them."""

    def __init__(self, calls: "Calls", s: Sample) -> None:
        self.calls, self.s = calls, s
        self._call: Call | None = None
        self._ran = False

    def call(self) -> Call | None:
        if not self._ran:
            self._call, self._ran = self.calls.run_reference64(self.s), True
        return self._call

    def result(self, i: int) -> Any:
        c = self.call()
        flat = tree_flatten(c.result)[0] if c is not None else []
        return flat[i] if i < len(flat) else None

    def out(self, name: str) -> Any:
        """Out tensor `name`, or element j of a list out as 'name[j]'."""
        c = self.call()
        if c is None:
            return None
        base, _, j = name.partition("[")
        v = c.outs.get(base)
        if j and isinstance(v, (list, tuple)):
            k = int(j.rstrip("]"))
            return v[k] if k < len(v) else None
        return v

    def flat_out(self, i: int) -> Any:
        """Element i of the out tensors flattened in order (list outs too)."""
        c = self.call()
        flat = tree_flatten(list(c.outs.values()))[0] if c is not None else []
        return flat[i] if i < len(flat) else None

    def arg(self, i: int, j: int) -> Any:
        """The j-th tensor in positional argument i, after the call."""
        c = self.call()
        ts = tensors_in(c.args[i]) if c is not None and i < len(c.args) else []
        return ts[j] if j < len(ts) else None


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
        if self.kind in ("inplace", "out", "mutable"):
            # Note [Identity under inference mode]: autograd's kernel for an
            # in-place or out= overload returns its self/out argument whatever
            # the backend's kernel returned, and so does the ADInplaceOrView
            # kernel, so a kernel returning another tensor is visible only
            # where both step aside: inference mode, on inference tensors (a
            # tensor made outside it keeps the ADInplaceOrView key, and its
            # in-place ops inside it still return self through that kernel).
            # So the inputs are made on the device inside it too; it changes
            # nothing else these overloads do. Users' code sees it there
            # (`y = x.add_(1)` under inference_mode must give `y is x`).
            # Runner._identity (checks.py) judges each `-> Tensor(a!)` return
            # against the argument of its alias set.
            with torch.inference_mode():
                return self._device_call(s, index, outs)
        return self._device_call(s, index, outs)

    def _device_call(self, s: Sample, index: int, outs: dict | None) -> Call:
        to = self.dev.to_device
        c = Call(to(s.args, index), to(s.kwargs, index), to(self._outs(s, outs), index))
        self.dev.reset_fallback_counts()
        c.result, c.error = attempt(lambda: self.dev.call(self.name, self.op, c.args, {**c.kwargs, **c.outs}))
        return c

    def run_reference64(self, s: Sample) -> Call | None:
        """The call on CPU with every floating input (and dtype argument, and
        out tensor) widened to float64, for Note [Precision rule]; None where
        the task's dtype is not one the rule judges or where the widened call
        raises (the op takes no float64)."""
        if self.dtype not in PRECISION_DTYPES or self.nondet:
            return None
        self.phase("reference")
        c = Call(_widened(s.args), _widened(s.kwargs), _widened(self._outs(s, None)))
        c.result, c.error = attempt(lambda: self.reference(*c.args, **c.kwargs, **c.outs))
        return c if c.error is None else None

    def value_problem(self, c: Any, d: Any, wide: Callable[[], Any]) -> str | None:
        """Why the device's value `d` is wrong against eager's `c`, or None:
        Note [Precision rule] where `c` is a result of a dtype it judges and
        wide() gives its float64 counterpart (wide runs only when the device
        is not already within the rule of eager's value), else assert_close
        of eager's."""
        rtol, atol = self.tol(c)
        judged = isinstance(c, torch.Tensor) and isinstance(d, torch.Tensor) and c.layout == torch.strided
        if judged and self.dtype in PRECISION_DTYPES and c.dtype in PRECISION_DTYPES:
            dv = d.detach().to("cpu")
            if dv.layout == torch.strided and dv.shape == c.shape:
                if within_rule_of_cpu(dv, c, rtol, atol):
                    return None
                w = wide()
                if isinstance(w, torch.Tensor) and w.dtype == torch.float64 and w.shape == c.shape:
                    ok, why = precision_verdict(dv, c, w, tol=(rtol, atol))
                    return None if ok else why
        return compare(d, c, rtol, atol)

    @staticmethod
    def _outs(s: Sample, outs: dict | None) -> dict:
        if outs is not None:
            return clone_tree(outs)
        return empty_outs(s)

    def differences(
        self, cres: Any, dres: Any, specials: bool = False, wide: Callable[[int], Any] | None = None
    ) -> list[str]:
        """What differs between two results (the device's against CPU's),
        output by output; shapes included, dtypes not (the dtype check's);
        with `specials`, what tolerance hides too (specials_hidden); with
        `wide` (flattened output i of the float64 run), values are judged by
        Note [Precision rule] as the values check judges them."""
        cflat, cspec = tree_flatten(cres)
        dflat, dspec = tree_flatten(dres)
        if len(cflat) != len(dflat) or str(cspec) != str(dspec):
            return [f"returned {len(dflat)} values, CPU returns {len(cflat)}"]
        found = []
        for i, (c, d) in enumerate(zip(cflat, dflat)):
            at = f"output {i}: " if len(cflat) > 1 else ""
            rtol, atol = self.tol(c)
            if wide is not None:
                why = self.value_problem(c, d, lambda i=i: wide(i))
            else:
                why = compare(d, c, rtol, atol)
            if why is None and specials:
                why = specials_hidden(d, c, atol)
            if why is not None:
                found.append(at + why)
        return found

    def out_problems(
        self, layout: str, n: str, ct: torch.Tensor, dt: torch.Tensor, wide: Callable[[], Any] | None = None
    ) -> list[str]:
        """What is wrong with the device's out tensor `n` against CPU's;
        `wide` gives its float64 counterpart (value_problem)."""
        if dt.shape != ct.shape:
            return [f"{layout}'{n}' not resized: shape {list(dt.shape)}, expected {list(ct.shape)}"]
        why = None if self.nondet else self.value_problem(ct, dt, wide or (lambda: None))
        return [] if why is None else [f"{layout}'{n}' holds wrong values: {why}"]
