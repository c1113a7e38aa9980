"""One sample in, one verdict per check out.

A sample is run twice -- on CPU (the reference) and on the device -- and the
two runs are compared by independent checks, so that "wrong dtype" and "wrong
values" show up as different failures:

  errors          CPU raises <=> device raises (both raising passes; nothing else runs)
  invalid_inputs  on inputs CPU refuses, the device raises the same exception class
  values          outputs as eager CPU's: a float32/float16/bfloat16 result as
                  accurate as eager's against a float64 run (Note [Precision
                  rule] in compare.py; inplace and out judge their tensors'
                  values so too), any other assert_close of eager's
  extremes        the same on NaN, +-inf, -0.0, min/max, subnormals (pointwise ops)
  dtype           output dtypes equal
  shape           output shapes equal
  device          every output tensor lives on the inputs' device, index included
  device_index    with inputs on device 1 (device 0 current): results there, as on 0
  strides         output strides equal to CPU's, and where CPU's agree with the op's
                  meta kernel, to the meta's (torch.compile assumes those: Note
                  [Meta layout] in meta_layout.py); warnings only
  mutation        arguments the schema does not let the op write are unchanged
  inplace         in-place ops return self itself (also where autograd does not
                  return it for them: inference mode) and mutate it like CPU does
  out             out= ops return `out` itself, write into it and resize it
  out_nonempty    out= into a wrongly shaped non-empty out and a non-contiguous out
  view            view ops share storage with their base (when CPU's result does),
                  and a write through the result reaches the base as on CPU
  gradients       backward on device vs CPU (functional ops, floating dtypes)
  fallback        the device's own kernel ran, not the CPU fallback
  compile         (test --compile only) Inductor compiled the call: compile-failed
                  with its first error line, warn on graph breaks (compiled.py)

invalid_inputs, extremes, device_index and out_nonempty run on probes
(probes.py), samples made for them, and are judged in probe_checks.py; the
others on ordinary samples, here (gradients in gradients.py).
Verdicts are (status, message) with status one of pass, fail, warn, skip.
Messages never contain addresses or timings, so reruns compare equal.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import torch
from torch.utils._pytree import tree_flatten

from .calls import Call, Calls, Wide
from .compiled import CompileFailed, compile_verdict, presized
from .compare import MAX_MSG, Verdict, compare, is_oom, out_pairs, short, storage_ptr, tensors_in
from .gradients import gradients
from .meta_layout import meta_problems
from .probe_checks import ProbeChecks
from .sample import Sample
from .tensors import DTYPE_NAMES

# Report order; src/conformance/types.ts CHECKS is the same list (a test says so).
CHECKS = (
    "errors",
    "invalid_inputs",
    "values",
    "extremes",
    "dtype",
    "shape",
    "device",
    "device_index",
    "strides",
    "mutation",
    "inplace",
    "out",
    "out_nonempty",
    "view",
    "gradients",
    "fallback",
    "compile",
)

GRAD_DTYPES = (torch.float32, torch.float64)


def is_view_key(key: str) -> bool:
    """Is the fallback counter's key (``aten::unfold``, ``aten::add.out``) a view
    op: a return aliasing an input without writing it (``Tensor(a)``), or an
    in-place view op (tag inplace_view)? Unknown names are not."""
    ns, sep, rest = key.partition("::")
    if not sep:
        ns, rest = "aten", key
    base, _, overload = rest.partition(".")
    try:
        op = getattr(getattr(getattr(torch.ops, ns), base), overload or "default")
    except (AttributeError, RuntimeError):
        return False
    if torch.Tag.inplace_view in op.tags:
        return True
    return any(r.alias_info is not None and not r.alias_info.is_write for r in op._schema.returns)


def fallback_verdict(name: str, counts: dict[str, int], decomposed: bool = False) -> Verdict:
    """Did the call run on the CPU fallback? The op itself or a sibling overload
    (``cos`` runs ``cos.out`` when only the structured kernel is missing) on the
    fallback fails; other operators on the fallback only warn: a kernel may
    legitimately call operators the backend does not implement -- except a view
    op, which fails wherever it is (Note [No views through the fallback] in
    backends/ref's runtime/Fallback.cpp): the fallback can only return a copy,
    so writes through the result never reach its base. An overload run through
    its decomposition (``decomposed``) warns on anything that fell back."""
    base = name.partition(".")[0].rstrip("_")
    own, other, views = [], [], []
    for key, n in sorted(counts.items()):
        if n <= 0:
            continue
        op = key[len("aten::") :] if key.startswith("aten::") else key
        if is_view_key(key):
            views.append(f"{key} x{n}")
        (own if op.partition(".")[0].rstrip("_") == base else other).append(f"{key} x{n}")
    if views:
        return (
            "fail",
            "view ops reached the CPU fallback, which returns a copy, not a view (a write through the "
            "result would not reach its base); a view op must be native on the device: " + ", ".join(views),
        )
    if decomposed and (own or other):
        # Note [Core overloads through their decomposition] (src/conformance/coverage.ts):
        # an overload the backend does not register, so whatever fell back is reported, not failed.
        return ("warn", "decomposes into operators served by the CPU fallback: " + ", ".join(own + other))
    if own:
        return ("fail", "ran on the CPU fallback: " + ", ".join(own))
    if other:
        return ("warn", "called operators that ran on the CPU fallback: " + ", ".join(other))
    return ("pass", "")



def _write_through(c: torch.Tensor, d: torch.Tensor, cinputs: list, dinputs: list) -> str | None:
    """Note [Views write through]: the same write through CPU's view `c` and
    the device's `d` (a fill with a value `c` does not hold everywhere, or
    where the device cannot fill that dtype, a copy of CPU's filled view) must
    leave every input as it leaves CPU's: sharing a storage is not enough, the
    view must cover the same elements of it. None where it does, or where CPU
    itself cannot write through its view (a conjugate or negative view)."""
    with torch.no_grad():
        if c.dtype == torch.bool:
            marker: Any = not bool(c.reshape(-1)[0])
        else:
            marker = 3 if bool((c == 5).all()) else 5
        try:
            c.fill_(marker)
        except Exception:
            return None
        try:
            d.fill_(marker)
        except Exception as e:
            # a dtype the device fills not (yet): the same values copied in
            # from the host write through the view too
            try:
                d.copy_(c)
            except Exception:
                return f"a write through it raised {short(e)}; CPU's view takes it"
    for j, (ci, di) in enumerate(zip(cinputs, dinputs)):
        if not isinstance(di, torch.Tensor) or di.shape != ci.shape:
            continue
        try:
            torch.testing.assert_close(di.detach().to("cpu"), ci, rtol=0, atol=0, equal_nan=True)
        except AssertionError:
            return f"a write through it left input {j} unlike CPU's (the view does not cover the same elements of its base)"
        except Exception:
            continue
    return None


def _same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    """One StorageImpl (empty tensors' storages all have data_ptr 0)."""
    try:
        return a.untyped_storage()._cdata == b.untyped_storage()._cdata
    except Exception:
        return False


class Runner:
    """Runs samples of one (overload, dtype) on CPU and the device."""

    def __init__(
        self,
        name: str,
        kind: str,
        is_view: bool,
        dtype: torch.dtype,
        device: Any,
        *,
        grad_samples: int,
        overrides: list[dict] | None = None,
        phase: Callable[..., None] | None = None,
        decomposed: bool = False,
    ) -> None:
        if getattr(device, "compiled", False):
            device.begin_task()  # Note [Compiled mode]: Dynamo reset per (overload, dtype)
        self.calls = Calls(name, kind, dtype, device, overrides, phase)
        self.name = name
        self.kind = kind
        self.is_view = is_view
        self.decomposed = decomposed
        self.dtype = dtype
        self.dev = device
        self.schema = self.calls.schema
        self.nondet = self.calls.nondet
        self.grad_samples = grad_samples
        self.write_args = [
            i
            for i, a in enumerate(self.schema.arguments)
            if a.alias_info is not None and a.alias_info.is_write and not a.kwarg_only
        ]
        self.probes = ProbeChecks(self.calls)

    # -- one sample -----------------------------------------------------------

    def run(self, s: Sample, sample_index: int = 0) -> dict[str, Verdict]:
        """Verdicts for one sample. Gradients are checked on the first
        ``grad_samples`` sample indices only -- by index, not by count, so a
        worker that resumes mid-task decides exactly as an uninterrupted one."""
        compiled = getattr(self.dev, "compiled", False)
        if compiled:
            self.dev.begin_sample()
        if s.check:
            verdict = self.probes.by_check[s.check](s)
            if compiled and self.dev.failures and verdict[0] == "fail":
                line = self.dev.failures[0].line
                # an invalid_inputs probe is a call eager refuses: a failed compile refuses it too
                refused = s.check == "invalid_inputs"
                verdict = ("warn", f"eager CPU refuses the call; Inductor failed to compile it: {line}") if refused else ("compile-failed", line)
            return {s.check: verdict}
        ref = self.calls.run_reference(s)
        # Note [Compiled mode]: out= tensors of eager's result shape (resizing is out_nonempty's)
        dev = self.calls.run_device(s, "values", outs=presized(ref.outs) if compiled and ref.error is None else None)
        counts = self.dev.fallback_counts()
        refusal: CompileFailed | None = None
        if compiled and isinstance(dev.error, CompileFailed):
            if ref.error is None:
                # Note [Compiled mode]: its own status; nothing else was run compiled
                return {"compile": ("compile-failed", dev.error.line)}
            # eager refuses the call too: the failed compile is the compiled refusal
            refusal = dev.error
            self.dev.failures.remove(refusal)
            dev.error = refusal.inner
        raised = self._error_parity(ref.error, dev.error, s.meta.get("error_regex"), bool(s.meta.get("error_sample")))
        if raised is not None:
            if compiled:
                raised["compile"] = compile_verdict(self.dev)
                if refusal is not None and raised["compile"][0] == "pass":
                    raised["compile"] = ("warn", f"eager CPU refuses the call; Inductor failed to compile it: {refusal.line}")
            return raised
        r: dict[str, Verdict] = {"errors": ("pass", "")}
        if self.dev.has_fallback_counter:
            r["fallback"] = fallback_verdict(self.name, counts, self.decomposed)

        # Note [Precision rule]: the float64 run, made once if a value needs it
        wide = Wide(self.calls, s)
        self._outputs(wide, ref.result, dev.result, r)
        if self.kind == "functional" and not getattr(self.dev, "compiled", False):
            self._meta_layout(ref, dev, r)
        self._mutation(s, ref, dev, r)
        if self.kind == "inplace" or self.write_args and self.kind != "out":
            self._inplace(wide, ref.args, dev.args, dev.result, r, dev.kwargs)
        if self.kind == "out":
            self._out(wide, ref.outs, dev.outs, dev.result, r)
        if self.is_view:
            self._view(ref.args, ref.kwargs, ref.result, tensors_in((dev.args, dev.kwargs)), dev.result, r)
        if (
            self.kind in ("functional", "view")
            and self.dtype in GRAD_DTYPES
            and sample_index < self.grad_samples
            and not self.nondet
        ):
            g = gradients(self.calls, s, r)
            if g is not None:
                r["gradients"] = g
        if compiled:
            r["compile"] = compile_verdict(self.dev)
        return r

    @staticmethod
    def _error_parity(
        cerr: BaseException | None,
        derr: BaseException | None,
        expected: str | None = None,
        error_sample: bool = False,
    ) -> dict[str, Verdict] | None:
        """The verdicts of a sample where CPU or the device raised (no other
        check runs then); None where neither did. Note [Error parity]: where
        both raise, the device's exception must be one that code catching
        eager's catches (of its class or a subclass, as invalid_inputs
        judges), and, where the sample names the message eager's callers
        match (``meta["error_regex"]``, as upstream's assertRaisesRegex
        does), its message must match it too (re.search). Other wording is
        not compared: eager's own texts differ by CPU kernel, and between
        its internal asserts and a device's checks.

        The class is a failure on an error sample (Note [Error samples]:
        a call made to be refused, whose class is eager's API) and a warning
        on any other sample that both refuse: there eager's class is often
        an accident of where its kernel gave up (batch norm of a 0-d tensor
        is a ValueError from SmallVector, the LSTM cell's backward without a
        workspace an AttributeError), which no caller catches by name."""
        if cerr is not None and is_oom(cerr):
            # Eager CPU itself ran out (the worker memory limit counts both): no reference.
            return {"errors": ("skip", f"the CPU reference ran out of memory ({short(cerr)}); raise --worker-memory")}
        if cerr is not None and derr is not None:
            if is_oom(derr):  # out of memory before it could refuse: no verdict on the error
                return {"errors": ("pass", "")}
            if not isinstance(derr, type(cerr)):
                verdict = "fail" if error_sample or expected is not None else "warn"
                return {"errors": (verdict, f"device raised {short(derr)}; CPU raises {short(cerr)}")}
            if expected is not None and re.search(expected, str(derr)) is None:
                return {"errors": ("fail", f"device raised {short(derr)}, not matching {expected!r} as CPU's does")}
            return {"errors": ("pass", "")}
        if cerr is not None:
            return {"errors": ("fail", f"CPU raises ({short(cerr)}) but the device returned a result")}
        if derr is not None and is_oom(derr):
            return {"values": ("crash", f"out of memory on the device (or over --worker-memory): {short(derr)}")}
        if derr is not None:
            return {"errors": ("fail", f"device raised {short(derr)}; CPU returns a result")}
        return None

    # -- outputs --------------------------------------------------------------

    def _outputs(self, wide: Wide, cres: Any, dres: Any, r: dict[str, Verdict]) -> None:
        cflat, cspec = tree_flatten(cres)
        dflat, dspec = tree_flatten(dres)
        if len(cflat) != len(dflat) or str(cspec) != str(dspec):
            r["values"] = ("fail", f"returned {len(dflat)} values, CPU returns {len(cflat)}")
            return
        values: list[str] = []
        dtypes: list[str] = []
        shapes: list[str] = []
        devices: list[str] = []
        strides: list[str] = []
        for i, (c, d) in enumerate(zip(cflat, dflat)):
            at = f"output {i}: " if len(cflat) > 1 else ""
            if isinstance(c, torch.Tensor) and isinstance(d, torch.Tensor):
                if d.dtype != c.dtype:
                    dtypes.append(f"{at}dtype {DTYPE_NAMES.get(d.dtype, d.dtype)} != expected {DTYPE_NAMES.get(c.dtype, c.dtype)}")
                if d.shape != c.shape:
                    shapes.append(f"{at}shape {list(d.shape)} != expected {list(c.shape)}")
                if d.device.type != self.dev.device.type:
                    devices.append(f"{at}on {d.device.type}, expected {self.dev.device.type}")
                elif self.dev.index_of(d) != 0:
                    devices.append(f"{at}on device {self.dev.index_of(d)}, inputs on device 0")
                if d.shape == c.shape and d.layout == torch.strided and c.layout == torch.strided:
                    ds = [st for sz, st in zip(d.shape, d.stride()) if sz > 1]
                    cs = [st for sz, st in zip(c.shape, c.stride()) if sz > 1]
                    if ds != cs:
                        strides.append(f"{at}strides {list(d.stride())} != CPU {list(c.stride())}")
                if not self.nondet:
                    why = self.calls.value_problem(c, d, lambda i=i: wide.result(i))
                    if why is not None and d.shape == c.shape:
                        values.append(at + why)
            elif isinstance(c, torch.Tensor) or isinstance(d, torch.Tensor):
                values.append(f"{at}returned {type(d).__name__}, CPU returns {type(c).__name__}")
            elif not self.nondet:
                why = compare(d, c, *self.calls.tol(c))
                if why is not None:
                    values.append(at + why)
        if self.nondet:
            r["values"] = ("skip", "nondeterministic op: values not compared")
        elif shapes and not values:
            r["values"] = ("skip", "shapes differ")
        else:
            r["values"] = ("fail", "; ".join(values)) if values else ("pass", "")
        r["dtype"] = ("fail", "; ".join(dtypes)) if dtypes else ("pass", "")
        r["shape"] = ("fail", "; ".join(shapes)) if shapes else ("pass", "")
        r["device"] = ("fail", "; ".join(devices)) if devices else ("pass", "")
        r["strides"] = ("warn", "; ".join(strides)) if strides else ("pass", "")

    def _meta_layout(self, ref: Call, dev: Call, r: dict[str, Verdict]) -> None:
        """Note [Meta layout]: the device's outputs laid out as the op's meta
        kernel says, which is what compiled graphs assume."""
        problems = meta_problems(self.calls.op, dev.args, dev.kwargs, dev.result, ref.result)
        if problems:
            said = r.get("strides", ("pass", ""))[1]
            meta = "; ".join(problems) + " (torch.compile assumes the meta kernel's layout)"
            r["strides"] = ("warn", f"{said}; {meta}" if said else meta)

    def _mutation(self, s: Sample, ref: Call, dev: Call, r: dict[str, Verdict]) -> None:
        """Every argument the schema does not mark written (``Tensor(a!)``)
        must be as it was, bit for bit (NaN as NaN), unless eager CPU itself
        writes it."""
        problems: list[str] = []
        for i, a in enumerate(self.schema.arguments):
            if a.alias_info is not None and a.alias_info.is_write:
                continue
            if i < len(s.args) and not a.kwarg_only:
                given, c, d = s.args[i], ref.args[i], dev.args[i]
            elif a.name in s.kwargs:
                given, c, d = s.kwargs[a.name], ref.kwargs[a.name], dev.kwargs[a.name]
            else:
                continue
            for g, ct, dt in zip(tensors_in(given), tensors_in(c), tensors_in(d)):
                if compare(ct, g, 0.0, 0.0) is not None:
                    continue
                why = compare(dt, g, 0.0, 0.0)
                if why is not None:
                    problems.append(f"'{a.name}' was written by the call: {why}")
                    break
        r["mutation"] = ("fail", "; ".join(problems)[:MAX_MSG]) if problems else ("pass", "")

    def _identity(self, dargs: tuple, dkwargs: dict, dres: Any, outs: bool) -> tuple[list[str], list[str]]:
        """Note [Identity under inference mode] (calls.py): each return the
        schema aliases to a written argument (``-> Tensor(a!)``) must be that
        argument, the same tensor as eager returns; `outs` picks the out=
        arguments (keyword-only) or the others. In-place foreach overloads
        (``Tensor(a!)[] self``) return nothing and are not judged here.
        (failures, warnings): another tensor over the argument's memory (same
        storage, offset, shape and strides, not the same tensor) only warns."""
        rets = self.schema.returns
        values = [dres] if len(rets) == 1 else list(dres) if isinstance(dres, (tuple, list)) else [dres]
        fails: list[str] = []
        warns: list[str] = []
        for k, ret in enumerate(rets):
            alias = ret.alias_info
            if k >= len(values) or alias is None or not alias.is_write or not isinstance(ret.type, torch.TensorType):
                continue
            for i, a in enumerate(self.schema.arguments):
                if a.alias_info is None or not a.alias_info.is_write or a.alias_info.before_set != alias.before_set:
                    continue
                if a.kwarg_only != outs:
                    break
                arg = dargs[i] if i < len(dargs) and not a.kwarg_only else dkwargs.get(a.name)
                got = values[k]
                what = "self" if a.name == "self" else f"'{a.name}'"
                if got is arg or not isinstance(arg, torch.Tensor):
                    break
                if not isinstance(got, torch.Tensor):
                    fails.append(f"returned {type(got).__name__} instead of {what}")
                elif (
                    _same_storage(got, arg)
                    and got.storage_offset() == arg.storage_offset()
                    and got.shape == arg.shape
                    and got.stride() == arg.stride()
                    and got.dtype == arg.dtype
                ):
                    warns.append(
                        f"returned another tensor over {what}'s memory, not {what} itself (`result is {a.name}` "
                        "is False under torch.inference_mode(), where autograd does not return it for the kernel)"
                    )
                else:
                    fails.append(
                        f"returned a new tensor instead of {what} (seen under torch.inference_mode(), where "
                        f"autograd does not return {what} for the kernel)"
                    )
                break
        return fails, warns

    def _inplace(
        self, wide: Wide, cargs: tuple, dargs: tuple, dres: Any, r: dict[str, Verdict], dkwargs: dict | None = None
    ) -> None:
        problems, warns = self._identity(dargs, dkwargs or {}, dres, outs=False)
        idx = self.write_args or [0]
        for i in idx:
            if i >= len(cargs) or i >= len(dargs):
                continue
            for j, (ct, dt) in enumerate(zip(tensors_in(cargs[i]), tensors_in(dargs[i]))):
                why = None if self.nondet else self.calls.value_problem(ct, dt, lambda i=i, j=j: wide.arg(i, j))
                if why is not None:
                    name = self.schema.arguments[i].name
                    problems.append(f"'{name}' after the call differs from CPU: {why}")
                    break
        r["inplace"] = ("fail", "; ".join(problems)) if problems else ("warn", "; ".join(warns)) if warns else ("pass", "")

    def _out(self, wide: Wide, couts: dict, douts: dict, dres: Any, r: dict[str, Verdict]) -> None:
        problems, warns = self._identity((), douts, dres, outs=True)
        for n, ct, dt in out_pairs(couts, douts):
            problems += self.calls.out_problems("", n, ct, dt, lambda n=n: wide.out(n))
        if problems:
            r["out"] = ("fail", "; ".join(problems)[:MAX_MSG])
        else:
            r["out"] = ("warn", "; ".join(warns)[:MAX_MSG]) if warns else ("pass", "")

    def _view(self, cargs: tuple, ckw: dict, cres: Any, dinputs: list, dres: Any, r: dict[str, Verdict]) -> None:
        cin = {storage_ptr(t) for t in tensors_in((cargs, ckw)) if t.numel() > 0}
        din = {storage_ptr(t) for t in dinputs if t.numel() > 0}
        problems: list[str] = []
        checked = False
        cinputs = tensors_in((cargs, ckw))
        for i, (c, d) in enumerate(zip(tensors_in(cres), tensors_in(dres))):
            if c.numel() == 0 or storage_ptr(c) not in cin:
                continue
            checked = True
            if storage_ptr(d) not in din:
                problems.append(f"output {i} is a copy, not a view of its input")
                continue
            why = _write_through(c, d, cinputs, dinputs)
            if why is not None:
                problems.append(f"output {i}: {why}")
        if problems:
            r["view"] = ("fail", "; ".join(problems))
        else:
            r["view"] = ("pass", "") if checked else ("skip", "no aliasing output on CPU for this sample")
