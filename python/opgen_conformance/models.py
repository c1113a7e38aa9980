"""Model-level conformance: one case of a model file (modelfile.py) run on
the device and on eager CPU from the same weights, judged against float64.

A case runs three times: eager CPU in float32, eager CPU in float64 (the
judge), and the device in float32, each from a deep copy of the one module
the builder made. Each run is forward, loss, backward and, when the case has
an optimizer, one step. What each run gives (the loss, every floating tensor
of the output, every parameter's gradient, every parameter after the step) is
judged tensor by tensor with the precision rule (Note [Precision rule] in
compare.py): the device's error against float64 may be at most K times eager
CPU float32's own.

The device run is traced with a TorchDispatchMode: every aten overload it
dispatches, per phase (forward, backward, step), with counts, and whether the
device served it (its own kernel, a composite kernel, or the CPU fallback).
On a mismatch the first-divergence search (Note [First divergence]) names
the operator that went wrong.
"""

from __future__ import annotations

import copy
import difflib
import os
import statistics
import time
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes
from torch.utils._pytree import tree_flatten, tree_map

from .compare import PRECISION_K as K
from .compare import error_units, precision_verdict, short
from .modelfile import build, load

PHASES = ("forward", "backward", "step")

# Each case's checks, in report order (a subset of checks.CHECKS).
MODEL_CHECKS = ("errors", "values", "gradients", "step", "fallback", "compile")

TIMING_RUNS = 5

# Note [Judgeable]: eager CPU float32 this many tolerance units or more from
# the float64 judge means the two runs computed different things (a branch
# on a value, routing by argmax, a random op), not rounding: the tensor is
# reported as not judgeable, a failure of the case, not of the device.
JUDGEABLE_UNITS = 1e4

# Note [Eager's spread]: eager's float32 error in a model case is one draw of
# a random variable, and where the model amplifies rounding it is a wide one.
# A ResNet whose last stage batch-normalizes N*H*W = 2 elements per channel
# (the zoo's resnet) computes gradients that are almost all cancellation:
# eager CPU itself, run on the same model with each float32 weight moved by
# at most one ulp (an equally valid float32 copy of the float64 model), was
# 1.06-1.71x its own error on the median gradient and up to 4.8x on the
# worst, failing the rule 2 draws in 6 (measured on torch 2.13, AMD EPYC);
# the reference device, every one of its calls within 1.22x eager's error on
# its own inputs, landed anywhere from 0.07x to 2.9x eager's median error as
# the inputs changed. One draw is then not eager's accuracy, so a case the
# device fails is judged again against the worst of SPREAD_DRAWS such draws
# of eager (compare.py's eager_spread): a device that loses accuracy loses
# it on every draw and still fails; a device as accurate as eager passes
# whichever way the rounding fell. Only failing cases pay for the draws.
SPREAD_DRAWS = 4


# -- running a case ------------------------------------------------------------


def _no_dropout(module: torch.nn.Module) -> None:
    for m in module.modules():
        if isinstance(m, torch.nn.modules.dropout._DropoutNd):
            m.p = 0.0


def _cast(tree: Any, dtype: torch.dtype | None, device: Any) -> Any:
    """Floating tensors to ``dtype`` (None: as they are), every tensor to ``device``."""

    def one(x: Any) -> Any:
        if not isinstance(x, torch.Tensor):
            return x
        if dtype is not None and x.is_floating_point():
            x = x.to(dtype)
        return x.to(device)

    return tree_map(one, tree)


def _floating(out: Any) -> list[tuple[str, torch.Tensor]]:
    """Every floating tensor of a model's output, named by its path
    (ModelOutput is a dict; tuples and lists by index)."""
    found: list[tuple[str, torch.Tensor]] = []

    def walk(x: Any, path: str) -> None:
        if isinstance(x, torch.Tensor):
            if x.is_floating_point():
                found.append((path or "output", x))
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(v, f"{path}.{k}" if path else str(k))
        elif isinstance(x, (tuple, list)):
            for i, v in enumerate(x):
                walk(v, f"{path}[{i}]")

    walk(out, "")
    return found


def default_loss(out: Any) -> torch.Tensor:
    """A fixed random projection of every floating output: each element gets
    its own weight, so no part of the output is left without a gradient. The
    weights are drawn in float32 from a fixed seed, so the float64 run sees
    exactly the same ones."""
    leaves = [t for _, t in _floating(out) if t.requires_grad]
    if not leaves:
        raise ValueError("the model's output has no floating tensor that requires grad; give the case a 'loss'")
    g = torch.Generator().manual_seed(1234)
    total = None
    for t in leaves:
        # drawn outside the tracer and the float64 judge's mode: the runner's, the same for every run
        with _disable_current_modes():
            w = torch.randn(tuple(t.shape), generator=g, dtype=torch.float32).to(dtype=t.dtype, device=t.device)
        term = (t * w).sum() / max(1, t.numel()) ** 0.5
        total = term if total is None else total + term
    assert total is not None
    return total


class Run:
    """What one run of a case gives: its loss, outputs, gradients and
    updated parameters, each a list of (name, tensor)."""

    def __init__(self) -> None:
        self.groups: dict[str, list[tuple[str, torch.Tensor | None]]] = {"values": [], "gradients": [], "step": []}

    def cpu(self) -> Run:
        """The same on CPU (done outside the tracer: the copies are not the model's calls)."""
        for rows in self.groups.values():
            rows[:] = [(n, t.to("cpu") if t is not None else None) for n, t in rows]
        return self


def _sync(device: Any) -> None:
    sync = getattr(getattr(device, "module", None), "synchronize", None)
    if sync is not None:
        sync()


class _Phase:
    """The phase the tracer records calls under; ``on_leave(name)`` is
    called as each phase ends (the fallback counter is read there: the
    fallback runs below the tracer, which sees only the operator the model
    called, and the counter says which phase it fell back in)."""

    def __init__(self, on_leave: Callable[[str], None] | None = None) -> None:
        self.name = "forward"
        self.on_leave = on_leave

    def enter(self, name: str) -> None:
        if self.on_leave is not None and name != self.name:
            self.on_leave(self.name)
        self.name = name

    def leave(self) -> None:
        if self.on_leave is not None:
            self.on_leave(self.name)


def run_case(spec: dict, module: torch.nn.Module, dtype: torch.dtype, device: Any, phase: _Phase | None = None) -> Run:
    """One forward, loss, backward (and step) of ``module`` (already on its
    device and dtype), with the case's inputs cast likewise."""
    run = Run()
    inputs = _cast(spec["inputs"], dtype, device)
    kwargs = _cast(spec["kwargs"], dtype, device)
    module.train(spec["train"])
    module.zero_grad(set_to_none=True)
    torch.manual_seed(1)
    if phase is not None:
        phase.enter("forward")
    if spec["step"] is not None:
        loss = spec["step"](module, *inputs, **kwargs)
        out = None
    else:
        out = module(*inputs, **kwargs)
        if spec["loss"] is not None:
            loss = spec["loss"](out, *_cast(spec["targets"], dtype, device))
        else:
            loss = default_loss(out)
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        raise ValueError("the case's loss is not a scalar tensor")
    run.groups["values"].append(("loss", loss.detach()))
    if out is not None:
        run.groups["values"].extend((f"output {n}", t.detach()) for n, t in _floating(out))
    if phase is not None:
        phase.enter("backward")
    loss.backward()
    params = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
    run.groups["gradients"] = [
        (n, p.grad.detach() if p.grad is not None else None) for n, p in params
    ]
    if spec["optimizer"] is not None:
        if phase is not None:
            phase.enter("step")
        opt = spec["optimizer"]([p for _, p in params])
        opt.step()
        run.groups["step"] = [(n, p.detach()) for n, p in params]
    return run


def ulp_draw(module: torch.nn.Module, seed: int) -> torch.nn.Module:
    """A copy of ``module`` with every floating parameter moved by -1, 0 or +1
    ulp at random (Note [Eager's spread])."""
    other = copy.deepcopy(module)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in other.parameters():
            if not p.is_floating_point():
                continue
            step = torch.randint(-1, 2, tuple(p.shape), generator=g)
            up = torch.nextafter(p, torch.full_like(p, float("inf")))
            down = torch.nextafter(p, torch.full_like(p, float("-inf")))
            p.copy_(torch.where(step > 0, up, torch.where(step < 0, down, p)))
    return other


def spread_of(draws: list[Run], ref: Run) -> dict[tuple[str, str], float]:
    """Eager's worst error per (group, tensor) over its draws."""
    out: dict[tuple[str, str], float] = {}
    for group, rows in ref.groups.items():
        tables = [dict(d.groups[group]) for d in draws]
        for name, r in rows:
            if r is None:
                continue
            errs = [error_units(t, r) for t in (table.get(name) for table in tables)
                    if t is not None and tuple(t.shape) == tuple(r.shape)]
            out[(group, name)] = max(errs, default=0.0)
    return out


def judge(dev: Run, cpu: Run, ref: Run, spread: dict[tuple[str, str], float] | None = None) -> dict[str, tuple[str, str]]:
    """Per group, the precision rule over every tensor (the worst named);
    ``spread``: eager's error over its draws (Note [Eager's spread])."""
    verdicts: dict[str, tuple[str, str]] = {}
    for group in ("values", "gradients", "step"):
        rows = ref.groups[group]
        if not rows:
            verdicts[group] = ("skip", "the case has no optimizer" if group == "step" else "nothing to compare")
            continue
        d = dict(dev.groups[group])
        c = dict(cpu.groups[group])
        bad: list[str] = []
        for name, r in rows:
            dv, cv = d.get(name), c.get(name)
            if r is None:
                if dv is not None:
                    bad.append(f"{name}: the device has a gradient where eager has none")
                continue
            if dv is None:
                bad.append(f"{name}: missing on the device")
                continue
            if tuple(dv.shape) != tuple(r.shape):
                bad.append(f"{name}: shape {list(dv.shape)} != {list(r.shape)}")
                continue
            assert cv is not None
            eager = error_units(cv, r)
            if eager >= JUDGEABLE_UNITS:
                bad.append(
                    f"{name}: not judgeable: eager CPU float32 is {eager:.3g} tolerance units from the float64 run "
                    "(Note [Judgeable]: the case computes something else in float64)"
                )
                continue
            ok, msg = precision_verdict(dv, cv, r, eager_spread=(spread or {}).get((group, name), 0.0))
            if not ok:
                bad.append(f"{name}: {msg}")
        if bad:
            more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
            verdicts[group] = ("fail", f"{len(bad)}/{len(rows)} tensors off: {bad[0]}{more}")
        else:
            within = f"the worst of eager float32's error over {SPREAD_DRAWS + 1} draws" if spread else "eager float32's error"
            verdicts[group] = ("pass", f"{len(rows)} tensors within {K:g}x {within}")
    return verdicts


# -- tracing the device run ----------------------------------------------------


def _name(func: Any) -> str:
    """The manifest's name: ``add.Tensor``, ``_softmax`` for a default
    overload; other namespaces keep theirs (``mylib::op``)."""
    s = func.name()
    return s[len("aten::") :] if s.startswith("aten::") else s


def _clone_cpu(tree: Any) -> Any:
    return tree_map(lambda x: x.detach().to("cpu", copy=True) if isinstance(x, torch.Tensor) else x, tree)


class Tracer(TorchDispatchMode):
    """Counts every aten overload a run dispatches, per phase, routing each
    call through ``device.call`` (the fault device injects its faults there).
    With ``keep``, also keeps each call's inputs (before the call: in-place
    ops write them) and outputs on CPU, for the first-divergence search."""

    def __init__(self, device: Any, phase: _Phase, keep: bool = False) -> None:
        super().__init__()
        self.device = device
        self.phase = phase
        self.keep = keep
        self.counts: dict[tuple[str, str], int] = {}
        self.names: list[str] = []
        self.calls: list[dict[str, Any]] = []
        # On a real device, calls on host tensors alone (the default loss's
        # weights drawn on CPU) are not the device's: not counted.
        self.host = device.device.type == "cpu"

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        name = _name(func)
        before = _clone_cpu((args, kwargs)) if self.keep and _replayable(func) else None
        out = self.device.call(name, func, args, kwargs)
        if not self.host and not any(
            isinstance(x, torch.Tensor) and x.device.type != "cpu" for x in tree_flatten((args, kwargs, out))[0]
        ):
            return out
        key = (self.phase.name, name)
        self.counts[key] = self.counts.get(key, 0) + 1
        self.names.append(name)
        if self.keep:
            call: dict[str, Any] = {"func": func, "name": name, "phase": self.phase.name}
            if before is not None:
                call.update(inputs=before, output=_clone_cpu(out))
            self.calls.append(call)
        return out


def _replayable(func: Any) -> bool:
    """A call whose result can be recomputed from copies of its inputs: not a
    view (it aliases storage a copy lacks), not random, not a device copy."""
    schema = func._schema
    if any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns):
        return False
    tags = getattr(func, "tags", ())
    if torch.Tag.nondeterministic_seeded in tags or torch.Tag.view_copy in tags:
        return False
    return _name(func) not in ("_to_copy", "copy_", "_copy_from", "_copy_from_and_resize", "empty_strided", "empty.memory_format")


def served(name: str, fell_back: set[str]) -> str:
    """How the device served an overload the run dispatched: ``fallback``
    (the CPU fallback ran it), ``kernel`` (a PrivateUse1 kernel is registered:
    the backend's own, or a wrapper gen derived; the driver tells which from
    the manifest), ``composite`` (a CompositeExplicitAutograd kernel that calls
    other operators) or ``other`` (a key of its own, as autograd's)."""
    if name in fell_back:
        return "fallback"
    qual = name if "::" in name else "aten::" + name
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    try:
        if has(qual, "PrivateUse1"):
            return "kernel"
        if has(qual, "CompositeExplicitAutograd") or has(qual, "CompositeExplicitAutogradNonFunctional"):
            return "composite"
    except RuntimeError:
        pass
    return "other"


# -- Note [First divergence] -----------------------------------------------------
# When a case does not match, its device run is traced again keeping every
# call's inputs and outputs, and each call is replayed alone on CPU from the
# inputs the device saw: in float32 (what eager would have computed) and in
# float64 (the judge). The first call whose device output fails the
# precision rule against those is the first divergent operator: judged on its
# own inputs, an operator is not blamed for the error it was handed. The
# device may take another path than eager CPU (a fused attention kernel
# instead of its decomposition), so the device's call sequence is aligned
# with eager's (difflib over the overload names) only to say where in eager's
# run the operator stands, or that eager has no counterpart.


_NARROW = (torch.float32, torch.float16, torch.bfloat16)


def _widen(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """A call's arguments in float64: every narrower floating tensor, and a
    ``dtype=`` that asks for one."""

    def one(x: Any) -> Any:
        if isinstance(x, torch.Tensor) and x.dtype in _NARROW:
            return x.to(torch.float64)
        return x

    kwargs = {k: (torch.float64 if k == "dtype" and v in _NARROW else v) for k, v in kwargs.items()}
    return tree_map(one, args), tree_map(one, kwargs)


class Widened(TorchDispatchMode):
    """Note [Float64 judge]: the judge's run must be float64 all through, but
    models cast to float32 on their own (transformers' causal-LM loss, RMS
    norm, rotary embeddings and eager softmax call .float()): with the cast
    kept, the "float64" loss of a causal LM is bit for bit eager's float32
    one, eager's error is 0 and the rule judges against rounding. Under this
    mode every call of the float64 run computes in float64 (a cast to float32
    becomes one to float64), so the judge is the model's exact result to
    float64's precision."""

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if func is torch.ops.aten.detach.default:  # autograd's own saved tensors: as they are
            return func(*args, **(kwargs or {}))
        args, kwargs = _widen(args, kwargs or {})
        return func(*args, **kwargs)


def _describe(tree: Any) -> str:
    parts = []
    for x in tree_flatten(tree)[0]:
        if isinstance(x, torch.Tensor):
            dt = str(x.dtype).replace("torch.", "")
            parts.append(f"{dt}{list(x.shape)}" + ("" if x.is_contiguous() else f" strides {list(x.stride())}"))
    return ", ".join(parts)


def _replay_verdict(call: dict) -> tuple[bool, str] | None:
    """Is the device's output of one recorded call right, given its inputs?
    None: not judgeable (eager itself fails on them, or no tensor output)."""
    func = call["func"]
    args, kwargs = call["inputs"]
    try:
        c32 = func(*_clone_cpu(args), **_clone_cpu(kwargs))
        wide_args, wide_kwargs = _widen(_clone_cpu(args), _clone_cpu(kwargs))
        c64 = func(*wide_args, **wide_kwargs)
    except Exception:
        return None
    dev_t = [x for x in tree_flatten(call["output"])[0] if isinstance(x, torch.Tensor)]
    c32_t = [x for x in tree_flatten(c32)[0] if isinstance(x, torch.Tensor)]
    c64_t = [x for x in tree_flatten(c64)[0] if isinstance(x, torch.Tensor)]
    if not dev_t or len(dev_t) != len(c32_t) or len(c32_t) != len(c64_t):
        return None
    for i, (d, c, r) in enumerate(zip(dev_t, c32_t, c64_t)):
        where = f"result {i}: " if len(dev_t) > 1 else ""
        if tuple(d.shape) != tuple(c.shape):
            return False, f"{where}shape {list(d.shape)} != eager's {list(c.shape)}"
        if d.is_floating_point() and r.is_floating_point():
            ok, msg = precision_verdict(d, c, r)
            if not ok:
                return False, where + msg
        elif not d.is_floating_point() and not c.is_floating_point():
            if not torch.equal(d, c.to(d.dtype)):
                n = int((d != c.to(d.dtype)).sum())
                return False, f"{where}{n} of {d.numel()} elements differ from eager's"
    return True, ""


def first_divergence(
    spec: dict,
    module: torch.nn.Module,
    device: Any,
    eager_names: list[str],
    save_dir: str | None,
    case: str,
    model_file: str,
) -> dict[str, Any] | None:
    """Note [First divergence]: the first device call whose output is off,
    with what reruns it alone."""
    phase = _Phase()
    tracer = Tracer(device, phase, keep=True)
    try:
        with tracer:
            run_case(spec, module, torch.float32, device.device, phase)
    except Exception:
        pass  # the calls recorded up to the error are searched all the same
    names = [c["name"] for c in tracer.calls]
    match = difflib.SequenceMatcher(a=names, b=eager_names, autojunk=False)
    eager_at: dict[int, int] = {}
    for a, b, n in match.get_matching_blocks():
        for j in range(n):
            eager_at[a + j] = b + j
    for i, call in enumerate(tracer.calls):
        if "inputs" not in call:
            continue
        verdict = _replay_verdict(call)
        if verdict is None or verdict[0]:
            continue
        found: dict[str, Any] = {
            "op": call["name"],
            "phase": call["phase"],
            "index": i,
            "calls": len(tracer.calls),
            "eager_index": eager_at.get(i),
            "inputs": _describe(call["inputs"]),
            "message": verdict[1],
        }
        if save_dir:
            os.makedirs(save_dir, exist_ok=True)
            file = os.path.join(save_dir, f"{case.replace('/', '_').replace(':', '_')}.{call['name']}.pt")
            # with the model file: importing it again registers what it registers (custom operators)
            saved = {"op": call["func"].name(), "args": call["inputs"][0], "kwargs": call["inputs"][1], "model_file": model_file}
            torch.save(saved, file)
            found["replay"] = file
        return found
    return None


def replay(file: str, device: Any) -> tuple[bool, str]:
    """Reruns one saved call (first_divergence's file) on the device and
    judges it as the search did."""
    saved = torch.load(file, weights_only=False)
    if saved.get("model_file"):
        load(saved["model_file"])
    ns, _, rest = saved["op"].partition("::")
    opname, _, overload = rest.partition(".")
    func = getattr(getattr(getattr(torch.ops, ns), opname), overload or "default")
    args, kwargs = saved["args"], saved["kwargs"]
    out = device.call(_name(func), func, device.to_device(args), device.to_device(kwargs))
    verdict = _replay_verdict({"func": func, "inputs": (args, kwargs), "output": _clone_cpu(out)})
    if verdict is None:
        return True, "eager CPU cannot run the saved call itself"
    return verdict[0], verdict[1] or f"within {K:g}x eager float32's error"


# -- one case, as a worker task --------------------------------------------------


def step_times(
    spec: dict, base: torch.nn.Module, device: Any, runs: int = TIMING_RUNS, clock: str = "wall"
) -> dict[str, float]:
    """Median seconds of a training step (forward, loss, backward, step) on
    the device and on eager CPU, in the worker's thread count: one warm-up
    each, then ``runs`` of each, alternating, so that a change in the
    machine's load falls on both. ``clock`` "cpu" counts the process's CPU
    seconds (all its threads) instead of wall time: on a machine that other
    work shares, a step's own cost, not what the scheduler gave it."""
    now = time.process_time if clock == "cpu" else time.perf_counter
    times: dict[str, list[float]] = {"device": [], "eager": []}
    for i in range(runs + 1):
        for which, where in (("device", device.device), ("eager", torch.device("cpu"))):
            m = copy.deepcopy(base).to(where)
            _sync(device)
            t0 = now()
            run_case(spec, m, torch.float32, where)
            _sync(device)
            if i:
                times[which].append(now() - t0)
    t_dev, t_cpu = statistics.median(times["device"]), statistics.median(times["eager"])
    return {"device": round(t_dev, 6), "eager": round(t_cpu, 6), "ratio": round(t_dev / t_cpu, 3)}


def run_model_task(file: str, case: str, device: Any, save_dir: str | None, phase_cb: Callable[[str], None]) -> tuple[dict, dict]:
    """(checks, info) of one case: the verdict per check of MODEL_CHECKS, and
    what the report shows of it (ops dispatched, fallbacks, timings, first
    divergence)."""
    info: dict[str, Any] = {"file": file, "case": case}
    spec = build(file, case)
    base = spec["module"]
    _no_dropout(base)
    checks: dict[str, tuple[str, str]] = {}
    cpu32 = copy.deepcopy(base)
    cpu64 = copy.deepcopy(base).double()
    dev = copy.deepcopy(base).to(device.device)
    with Widened():
        ref = run_case(spec, cpu64, torch.float64, "cpu")
    eager_phase = _Phase()
    eager_trace = Tracer(_Eager(), eager_phase)
    with eager_trace:
        cpu = run_case(spec, cpu32, torch.float32, "cpu", eager_phase)
    eager_names = eager_trace.names

    phase_cb("values")
    device.reset_fallback_counts()
    per_phase: dict[str, dict[str, int]] = {}

    def fallbacks_of(ph: str) -> None:
        total = {k[len("aten::") :] if k.startswith("aten::") else k: v for k, v in device.fallback_counts().items()}
        before: dict[str, int] = {}
        for counts in per_phase.values():
            for k, v in counts.items():
                before[k] = before.get(k, 0) + v
        per_phase[ph] = {k: v - before.get(k, 0) for k, v in total.items() if v > before.get(k, 0)}

    phase = _Phase(fallbacks_of)
    tracer = Tracer(device, phase)
    compiled = getattr(device, "compiled", False)
    try:
        if compiled:
            # Note [Compiled mode] (compiled.py): the forward (and so, through
            # AOTAutograd, the backward) compiled by Inductor; no tracer, whose
            # dispatch mode Dynamo would trace instead of the model
            out = _run_compiled(spec, dev, device, phase, checks)
        else:
            with tracer:
                out = run_case(spec, dev, torch.float32, device.device, phase)
        out.cpu()
    except Exception as e:
        out = None
        from .compiled import failure_verdict

        failed = failure_verdict(device, e)
        if failed is not None:
            checks["compile"] = failed
        else:
            checks["errors"] = ("fail", f"the device run raised where eager CPU did not: {short(e)}")
    finally:
        phase.leave()
    fell_back: dict[str, int] = {}
    for counts in per_phase.values():
        for k, v in counts.items():
            fell_back[k] = fell_back.get(k, 0) + v
    ops: dict[str, dict[str, Any]] = {}
    for (ph, name), n in sorted(tracer.counts.items()):
        row = ops.setdefault(name, {"served": served(name, set(fell_back)), "forward": 0, "backward": 0, "step": 0})
        row[ph] += n
    # What fell back below an operator the model called (all.all_out under
    # a composite all): its own row, counted in the phase it fell back in.
    for ph, counts in per_phase.items():
        for name, n in counts.items():
            row = ops.setdefault(name, {"served": "fallback", "forward": 0, "backward": 0, "step": 0})
            if row["served"] == "fallback" and (ph, name) not in tracer.counts:
                row[ph] += n
    info["ops"] = ops
    info["fallback"] = dict(sorted(fell_back.items()))
    if out is not None:
        checks["errors"] = ("pass", "")
        verdicts = judge(out, cpu, ref)
        if any(v[0] == "fail" for v in verdicts.values()):
            phase_cb("spread")
            draws = [run_case(spec, ulp_draw(base, seed), torch.float32, "cpu") for seed in range(SPREAD_DRAWS)]
            verdicts = judge(out, cpu, ref, spread_of(draws, ref))
        checks.update(verdicts)
    else:
        for g in ("values", "gradients", "step"):
            checks[g] = ("skip", "the device run raised" if "compile" not in checks else "the case did not compile")
        checks.setdefault("errors", ("skip", "the case did not compile"))
    if not device.has_fallback_counter:
        checks["fallback"] = ("skip", "the device has no fallback counter")
    elif fell_back:
        names = ", ".join(f"{k} ({v})" for k, v in sorted(fell_back.items()))
        checks["fallback"] = ("fail", f"{len(fell_back)} operators ran on the CPU fallback: {names}")
    else:
        checks["fallback"] = ("pass", "")

    if compiled:
        # the first-divergence search and the step times are eager device runs: not this mode's
        if out is not None:
            info["compiled"] = True
        return checks, info
    if out is not None and any(checks[g][0] == "fail" for g in ("values", "gradients", "step")):
        phase_cb("divergence")
        found = first_divergence(spec, copy.deepcopy(base).to(device.device), device, eager_names, save_dir, case, file)
        info["divergence"] = found
        if found is not None:
            msg = f"first divergent op: {found['op']} ({found['phase']}, call {found['index']}): {found['message']}; "
            g = next(g for g in ("values", "gradients", "step") if checks[g][0] == "fail")
            checks[g] = ("fail", (msg + checks[g][1])[:1000])
    if out is not None:
        phase_cb("timing")
        info["time_s"] = step_times(spec, base, device)
    return checks, info


def _run_compiled(spec: dict, module: torch.nn.Module, device: Any, phase: _Phase, checks: dict) -> Run:
    """run_case with the module compiled by Inductor for the device
    (torch._dynamo reset first: a case is its own compile); sets the
    ``compile`` check (graph breaks warn) in ``checks``."""
    import torch._dynamo

    from .compiled import compile_verdict

    torch._dynamo.reset()
    device.begin_sample()
    before = device.break_counts()
    out = run_case(spec, torch.compile(module, backend="inductor", dynamic=False), torch.float32, device.device, phase)
    # judge() pairs tensors by name: the compiled wrapper's parameters are "_orig_mod.<name>"
    # (nn.Module.compile, which keeps them, compiles nothing here on torch 2.13)
    for rows in out.groups.values():
        rows[:] = [(n.removeprefix("_orig_mod."), t) for n, t in rows]
    device.note_breaks(before)
    checks["compile"] = compile_verdict(device)
    return out


def model_ops(file: str, case: str) -> dict[str, dict[str, int]]:
    """The aten overloads one case dispatches on eager CPU (forward, backward,
    step), with counts: what a device needs to run it (``coverage --model``).
    Traced as the device run is, so below autograd and the
    CompositeImplicitAutograd decompositions, as a device sees them."""
    spec = build(file, case)
    _no_dropout(spec["module"])
    phase = _Phase()
    tracer = Tracer(_Eager(), phase)
    with tracer:
        run_case(spec, spec["module"], torch.float32, "cpu", phase)
    ops: dict[str, dict[str, int]] = {}
    for (ph, name), n in sorted(tracer.counts.items()):
        ops.setdefault(name, {p: 0 for p in PHASES})[ph] += n
    return ops


class _Eager:
    """Eager CPU as the tracer's device: calls run as they are."""

    device = torch.device("cpu")

    def call(self, name: str, func: Callable, args: tuple, kwargs: dict) -> Any:
        return func(*args, **kwargs)
