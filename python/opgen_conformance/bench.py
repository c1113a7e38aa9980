"""``opgen-backend bench``: every listed operator timed on the device and on
the eager reference, in one process per worker at the same thread count.

  python -m opgen_conformance bench --config FILE         the coordinator
  python -m opgen_conformance bench-worker --config FILE  one worker (internal)

The config is written by src/conformance/bench.ts (Note [Bench config]); the
coordinator hands one operator at a time to its workers (workers.py, the
conformance run's processes), writes each measured row to the results JSONL
as it comes and prints progress events (JSON lines) for the TypeScript side,
which computes the summaries and writes the reports (bench-report.ts).

Note [Bench inputs]: each operator is timed at two or three sizes of its
family (SIZES), with its inputs made, in this order of preference,
  1. by a per-operator generator (GENERATORS: convolution, pooling, the
     norms, batched and vector linear algebra, index_select), whose
     arguments the schema alone cannot get right;
  2. by the runner's schema source (sources/schema.py) with a square N x N
     base shape instead of its 3 x 4, when eager CPU accepts that call;
  3. else from the runner's ordinary samples (samples.py, OpInfo's traced
     calls first): the largest one eager CPU runs, as the one size "sample".
A size whose eager call takes longer than MAX_CALL_S is dropped with the
larger ones (the row says so), so no operator holds up a run.

Note [Bench timing]: after WARMUP calls, each timed sample is `reps` calls
(reps chosen so one sample lasts at least MIN_SAMPLE_S, so the clock's
resolution and Python's per-sample cost do not decide small ops), the device
synchronized before the clock stops. Device and eager samples alternate, so
a change of the machine's load hits both sides alike. A row keeps the median
per call of each side and its spread (interquartile range / median), and the
ratio device / eager of the medians. In-place calls keep writing the same
inputs (values drift, the work does not); out= calls reuse out tensors the
first call resized, as a user's loop would. An op's `repeat` > 1 (the
`--repeat-op [GLOB=]N` debug knob) makes each timed device call run the
operator that many times: a real, known slowdown of that kernel, for testing
`report diff`.

Note [Bench accuracy]: for floating dtypes other than float64, the same
inputs also run once in float64 on CPU (calls.py's widening); the row's
accuracy is the device's RMS error against that run divided by eager CPU's
own RMS error in the task's dtype, both floored at half an ulp of the
result's RMS: an op eager computes exactly gets a ratio of about 2 for a
device that is off by an ulp, not infinity, and 1 where both are exact. Random and uninitialized results
(nondeterministic overloads, factories) get no accuracy.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import time
from typing import Any, Callable

BENCH_VERSION = 1

# Note [Bench config]: src/conformance/bench.ts writes these keys, every
# default filled in there.
CONFIG_KEYS = (
    "version", "device", "package", "threads", "workers", "warmup", "runs", "budget_s", "clock",
    "accuracy", "timeout_s", "seed", "results", "cache_dir", "ops",
)
# "alternatives": dtypes to try, in order, when eager runs no input in any of
# "dtypes" (the backend's claim is per project, not per op: bitwise_and is
# claimed in float32 and runs in int64).
OP_KEYS = ("name", "kind", "family", "dtypes", "alternatives", "repeat")

WARMUP = 2
MIN_SAMPLE_S = 2e-4
MAX_CALL_S = 0.05

# The square base sizes N (N x N tensors) per family; the largest takes of the
# order of 10 ms on eager CPU on one thread of this machine.
SIZES: dict[str, tuple[int, ...]] = {
    "pointwise-unary": (64, 512, 2048),
    "pointwise-binary": (64, 512, 2048),
    "reduction": (64, 512, 2048),
    "normalization": (64, 512, 1024),
    "loss": (64, 512, 1024),
    "linalg": (64, 256, 512),
    "indexing": (64, 256, 1024),
    "view": (64, 512, 2048),
    "factory": (64, 512, 2048),
    "convolution": (64, 256, 512),
    "recurrent": (64, 256),
    "other": (64, 256),
}


def load_bench_config(path: str) -> dict[str, Any]:
    with open(path) as f:
        c = json.load(f)
    missing = [k for k in CONFIG_KEYS if k not in c]
    unknown = sorted(k for k in c if k not in CONFIG_KEYS)
    if missing or unknown or c.get("version") != BENCH_VERSION:
        raise SystemExit(
            f"opgen-conformance bench: {path}: missing {missing}, unknown {unknown}, version {c.get('version')!r} "
            f"(this runner reads version {BENCH_VERSION}); opgen-backend and python/opgen_conformance differ"
        )
    for i, op in enumerate(c["ops"]):
        if set(op) != set(OP_KEYS):
            raise SystemExit(f"opgen-conformance bench: {path}: ops[{i}] has keys {sorted(op)}; expected {list(OP_KEYS)}")
    return c


# -- inputs (Note [Bench inputs]) -------------------------------------------------


def _gen_conv(i: int, dtype: Any) -> Any:
    import torch

    n, c, hw = ((1, 16, 32), (4, 32, 32), (8, 64, 32))[i]
    x = torch.randn(n, c, hw, hw).to(dtype)
    w = (torch.randn(c, c, 3, 3) / (3 * math.sqrt(c))).to(dtype)
    return x, w, torch.randn(c).to(dtype), f"x[{n},{c},{hw},{hw}] w[{c},{c},3,3]"


def _convolution(i: int, dtype: Any) -> tuple:
    x, w, b, label = _gen_conv(i, dtype)
    return (x, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), {}, label


def _conv2d(i: int, dtype: Any) -> tuple:
    x, w, b, label = _gen_conv(i, dtype)
    return (x, w, b, [1, 1], [1, 1]), {}, label


def _convolution_backward(i: int, dtype: Any) -> tuple:
    import torch

    x, w, b, label = _gen_conv(i, dtype)
    g = torch.randn(x.shape).to(dtype)
    return (g, x, w, [w.shape[0]], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, True]), {}, label


def _pool_input(i: int, dtype: Any) -> tuple:
    import torch

    n, c, hw = ((1, 16, 32), (4, 32, 64), (8, 64, 64))[i]
    return torch.randn(n, c, hw, hw).to(dtype), f"x[{n},{c},{hw},{hw}]"


def _max_pool2d_with_indices(i: int, dtype: Any) -> tuple:
    x, label = _pool_input(i, dtype)
    return (x, [3, 3], [2, 2], [1, 1]), {}, f"{label} k3 s2"


def _avg_pool2d(i: int, dtype: Any) -> tuple:
    x, label = _pool_input(i, dtype)
    return (x, [3, 3], [2, 2], [1, 1]), {}, f"{label} k3 s2"


def _adaptive_avg_pool2d(i: int, dtype: Any) -> tuple:
    x, label = _pool_input(i, dtype)
    return (x, [7, 7]), {}, f"{label} -> 7x7"


def _bn_input(i: int, dtype: Any) -> tuple:
    import torch

    n, c, hw = ((2, 16, 16), (8, 32, 32), (16, 64, 32))[i]
    return torch.randn(n, c, hw, hw).to(dtype), c, f"x[{n},{c},{hw},{hw}]"


def _native_batch_norm(i: int, dtype: Any) -> tuple:
    import torch

    x, c, label = _bn_input(i, dtype)
    return (x, torch.rand(c).to(dtype), torch.randn(c).to(dtype), torch.zeros(c).to(dtype), torch.ones(c).to(dtype), True, 0.1, 1e-5), {}, label


def _native_batch_norm_legit_no_training(i: int, dtype: Any) -> tuple:
    import torch

    x, c, label = _bn_input(i, dtype)
    return (x, torch.rand(c).to(dtype), torch.randn(c).to(dtype), torch.randn(c).to(dtype), (torch.rand(c) + 0.5).to(dtype), 0.1, 1e-5), {}, label


def _native_group_norm(i: int, dtype: Any) -> tuple:
    import torch

    x, c, label = _bn_input(i, dtype)
    n, hw = x.shape[0], x.shape[2] * x.shape[3]
    return (x, torch.rand(c).to(dtype), torch.randn(c).to(dtype), n, c, hw, 4, 1e-5), {}, f"{label} groups 4"


def _native_layer_norm(i: int, dtype: Any) -> tuple:
    import torch

    n = SIZES["normalization"][i]
    return (torch.randn(n, n).to(dtype), [n], torch.rand(n).to(dtype), torch.randn(n).to(dtype), 1e-5), {}, f"[{n},{n}] over [{n}]"


def _batched(i: int, dtype: Any) -> tuple:
    import torch

    n = SIZES["linalg"][i] // 2
    return torch.randn(8, n, n).to(dtype), torch.randn(8, n, n).to(dtype), f"[8,{n},{n}] @ [8,{n},{n}]"


def _bmm(i: int, dtype: Any) -> tuple:
    a, b, label = _batched(i, dtype)
    return (a, b), {}, label


def _baddbmm(i: int, dtype: Any) -> tuple:
    a, b, label = _batched(i, dtype)
    return (a.clone(), a, b), {}, label


def _addbmm(i: int, dtype: Any) -> tuple:
    import torch

    a, b, label = _batched(i, dtype)
    return (torch.randn(a.shape[1], b.shape[2]).to(dtype), a, b), {}, label


def _mv(i: int, dtype: Any) -> tuple:
    import torch

    n = SIZES["linalg"][i] * 4
    return (torch.randn(n, n).to(dtype), torch.randn(n).to(dtype)), {}, f"[{n},{n}] @ [{n}]"


def _dot(i: int, dtype: Any) -> tuple:
    import torch

    n = SIZES["pointwise-binary"][i] ** 2
    return (torch.randn(n).to(dtype), torch.randn(n).to(dtype)), {}, f"[{n}] . [{n}]"


def _index_select(i: int, dtype: Any) -> tuple:
    import torch

    n = SIZES["indexing"][i]
    return (torch.randn(n, n).to(dtype), 0, torch.randint(0, n, (n,))), {}, f"[{n},{n}] dim 0, {n} indices"


# Per-overload generators by base name (the in-place and out= overloads of a
# name take the same inputs; out= ones get their outs made by the caller).
GENERATORS: dict[str, Callable[[int, Any], tuple]] = {
    "convolution": _convolution,
    "_convolution": lambda i, d: ((*_convolution(i, d)[0], False, False, False, False), {}, _convolution(i, d)[2]),
    "conv2d": _conv2d,
    "convolution_backward": _convolution_backward,
    "max_pool2d_with_indices": _max_pool2d_with_indices,
    "avg_pool2d": _avg_pool2d,
    "_adaptive_avg_pool2d": _adaptive_avg_pool2d,
    "adaptive_avg_pool2d": _adaptive_avg_pool2d,
    "native_batch_norm": _native_batch_norm,
    "_native_batch_norm_legit": lambda i, d: (_native_batch_norm(i, d)[0][:5] + (True, 0.1, 1e-5), {}, _native_batch_norm(i, d)[2]),
    "_native_batch_norm_legit_no_training": _native_batch_norm_legit_no_training,
    "native_group_norm": _native_group_norm,
    "native_layer_norm": _native_layer_norm,
    "bmm": _bmm,
    "baddbmm": _baddbmm,
    "addbmm": _addbmm,
    "mv": _mv,
    "dot": _dot,
    "vdot": _dot,
    "index_select": _index_select,
}

# Generators whose only overloads this table knows (the name's .out has the same inputs).
_GENERATED_OVERLOADS = ("", "default", "out", "Tensor", "input")


class BenchInput:
    """One size of one operator: the call's CPU arguments, what they are, where they come from."""

    def __init__(self, size: str, source: str, args: tuple, kwargs: dict, out_names: tuple, out_dtypes: tuple) -> None:
        self.size, self.source = size, source
        self.args, self.kwargs = args, kwargs
        self.out_names, self.out_dtypes = out_names, out_dtypes


def _outs_for(name: str, dtype: Any) -> tuple[tuple, tuple]:
    from .overloads import out_arg_names, schema_of

    outs = out_arg_names(schema_of(name))
    return outs, tuple(dtype for _ in outs)


def _eager_call_s(func: Any, b: BenchInput, device: Any = None) -> float:
    """One call's seconds on eager CPU (raises what eager raises)."""
    from .sample import Sample, empty_outs
    from .tensors import clone_tree

    args, kwargs = clone_tree(b.args), clone_tree(b.kwargs)
    outs = empty_outs(Sample(args, kwargs, "", b.out_names, b.out_dtypes))
    t0 = time.perf_counter()
    func(*args, **kwargs, **outs)
    return time.perf_counter() - t0


def eager_function(name: str) -> Any:
    """What eager CPU runs for an overload: the overload itself, or, where
    eager CPU has no kernel for it (the fused RNN cells, the fused attention,
    histc), the composition of eager ops the conformance runner compares with
    (references.py)."""
    from .overloads import resolve_overload
    from .references import CPU_REFERENCES

    return CPU_REFERENCES.get(name) or resolve_overload(name)


def inputs_for(name: str, kind: str, family: str, dtype: Any, cache_dir: str, seed: int) -> tuple[list[BenchInput], str]:
    """The sized inputs of one (overload, dtype) (Note [Bench inputs]) and a
    note on sizes dropped or not made ("" when none)."""
    import torch

    from .overloads import target_of
    from .samples import _eager_runs
    from .sample import seed_cpu, derive_seed
    from .sources.schema import synthesize
    from .tensors import DTYPE_NAMES

    func = eager_function(name)
    target = target_of(name, kind)
    base, _, overload = name.partition(".")
    gen_name = base[:-1] if base.endswith("_") and not base.endswith("__") and base[:-1] in GENERATORS else base
    outs, out_dtypes = _outs_for(name, dtype)
    note = ""
    found: list[BenchInput] = []

    def keep(b: BenchInput, growth: float = 1.0) -> bool:
        """Appends b when eager runs it; False to stop growing: it took over
        MAX_CALL_S, or the next size (`growth` times the elements) would take
        over 4 x MAX_CALL_S at this rate (an embedding of N x N indices grows
        as N^3: its next size would need gigabytes)."""
        nonlocal note
        try:
            _eager_call_s(func, b)  # first call: allocation, lazy init
            t = _eager_call_s(func, b)
        except Exception as e:
            if not found:
                note = f"eager CPU refuses every input in this dtype (the last: {b.source} {b.size}: {type(e).__name__})"
            return False
        found.append(b)
        if t > MAX_CALL_S or t * growth > 4 * MAX_CALL_S:
            note = f"larger sizes dropped: {b.size} takes {t * 1e3:.1f} ms on eager CPU"
            return False
        return True

    seed_cpu(derive_seed(seed, name, DTYPE_NAMES.get(dtype, dtype), "bench"))
    gen = GENERATORS.get(gen_name)
    if gen is not None and overload in _GENERATED_OVERLOADS:
        for i in range(3):
            args, kwargs, label = gen(i, dtype)
            if not keep(BenchInput(label, "table", args, kwargs, outs, out_dtypes)):
                break
        if found:
            return found, note
    sizes = SIZES.get(family, SIZES["other"])
    for j, n in enumerate(sizes):
        made = synthesize(name, dtype, base=(n, n), variants=("2d",))
        if not made:
            break
        # the argument combinations eager CPU itself crashes on, changed as the runner changes them
        s = _eager_runs(name, target, made[0])
        b = BenchInput(f"{n}x{n}", "schema", s.args, s.kwargs, s.out_names, s.out_dtypes)
        if kind == "out" and s.out_names:
            from .kinds import out_dtypes_via_cpu

            dts = out_dtypes_via_cpu(name, s.args, s.kwargs, s.out_names, dtype)
            b.out_dtypes = dts if dts is not None else b.out_dtypes
        if not keep(b, (sizes[j + 1] / n) ** 2 if j + 1 < len(sizes) else 1.0):
            break
    if found:
        return found, note
    # 3. the runner's own samples: the largest ordinary one eager runs
    from .cache import cached_sample_list
    from .tensors import DTYPE_NAMES as NAMES

    try:
        samples = cached_sample_list(cache_dir, {"op": name, "kind": kind, "dtype": NAMES[dtype]}, dtype, seed, 20)
    except Exception as e:
        return [], f"no samples: {type(e).__name__}: {e}"[:200]
    from torch.utils._pytree import tree_flatten

    def numel(s: Any) -> int:
        return sum(t.numel() for t in tree_flatten((s.args, s.kwargs))[0] if isinstance(t, torch.Tensor))

    from .sample import describe

    for s in sorted((s for s in samples if not s.check), key=numel, reverse=True):
        b = BenchInput(describe(s)[:120], f"sample:{s.source}", s.args, s.kwargs, s.out_names, s.out_dtypes)
        before = len(found)
        keep(b)
        if len(found) > before:
            return found, "one size: the runner's largest sample eager runs"
    return [], note or "no input eager CPU runs"


# -- timing (Note [Bench timing]) -----------------------------------------------------


def _quartiles(xs: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1 else [xs[0]] * 3
    return q[0], statistics.median(xs), q[2]


def _reps_for(call: Callable[[], None]) -> int:
    t0 = time.perf_counter()
    call()
    one = time.perf_counter() - t0
    return max(1, min(10000, int(math.ceil(MIN_SAMPLE_S / max(one, 1e-7)))))


def measure(
    dev_call: Callable[[], None], eager_call: Callable[[], None], runs: int, budget_s: float, clock: str = "wall"
) -> dict:
    """Alternating timed samples of both calls; per call seconds. `clock`
    "cpu" reads this thread's CPU time instead of wall time: on a machine
    other work shares, it leaves out the time the thread waited for a core
    (meaningful only where the device computes on this thread, as the
    reference CPU device does at one thread; an asynchronous device's
    kernels are not on it)."""
    now = time.thread_time if clock == "cpu" else time.perf_counter
    for _ in range(WARMUP):
        dev_call()
        eager_call()
    rd, re_ = _reps_for(dev_call), _reps_for(eager_call)
    dev: list[float] = []
    eag: list[float] = []
    t_start = time.perf_counter()
    for r in range(runs):
        t0 = now()
        for _ in range(rd):
            dev_call()
        t1 = now()
        for _ in range(re_):
            eager_call()
        t2 = now()
        dev.append((t1 - t0) / rd)
        eag.append((t2 - t1) / re_)
        if r >= 4 and time.perf_counter() - t_start > budget_s:
            break

    def side(xs: list[float], reps: int) -> dict:
        q1, med, q3 = _quartiles(xs)
        return {"median_s": med, "q1_s": q1, "q3_s": q3, "spread": (q3 - q1) / med if med > 0 else 0.0, "runs": len(xs), "reps": reps}

    return {"device": side(dev, rd), "eager": side(eag, re_)}


# -- accuracy (Note [Bench accuracy]) ---------------------------------------------


def _floats(res: Any) -> list:
    import torch
    from torch.utils._pytree import tree_flatten

    return [t for t in tree_flatten(res)[0] if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())]


def _rms(ts: list, ref: list, limit: float = math.inf) -> tuple[float, float]:
    """RMS of the differences from `ref` over the elements where ref is
    finite and within `limit` (the task dtype's range: a float64 result
    float32 cannot hold overflows on every device alike), and RMS of ref there."""
    import torch

    num = den = 0.0
    n = 0
    for t, r in zip(ts, ref):
        if t.shape != r.shape:
            return float("inf"), 1.0
        r64 = r.detach().cpu().to(torch.complex128 if r.is_complex() else torch.float64)
        t64 = t.detach().cpu().to(r64.dtype)
        m = torch.isfinite(r64) & (r64.abs() <= limit)
        d = (t64 - r64)[m].abs()
        d = torch.where(torch.isfinite(d), d, torch.full_like(d, float("inf")))
        num += float((d**2).sum())
        den += float((r64[m].abs() ** 2).sum())
        n += int(m.sum())
    if n == 0:
        return 0.0, 0.0
    return math.sqrt(num / n), math.sqrt(den / n)


def accuracy(func: Any, b: BenchInput, dtype: Any, dev_result: Any, eager_result: Any) -> dict | None:
    """The device's error against float64 CPU over eager's (None: not measured)."""
    import torch

    from .calls import _widened
    from .sample import Sample, empty_outs

    if dtype not in (torch.float32, torch.float16, torch.bfloat16, torch.complex64):
        return None
    wa, wk = _widened(b.args), _widened(b.kwargs)
    wide_dtypes = tuple(torch.float64 if d == dtype else d for d in b.out_dtypes) if b.out_names else ()
    outs = empty_outs(Sample(wa, wk, "", b.out_names, wide_dtypes))
    try:
        ref = func(*wa, **wk, **outs)
    except Exception:
        return None
    r, e, d = _floats(ref), _floats(eager_result), _floats(dev_result)
    if not r or len(r) != len(e) or len(r) != len(d):
        return None
    limit = float(torch.finfo(dtype if not dtype.is_complex else torch.float32).max)
    err_e, rms_ref = _rms(e, r, limit)
    err_d, _ = _rms(d, r, limit)
    floor = 0.5 * torch.finfo(dtype if not dtype.is_complex else torch.float32).eps * rms_ref
    ratio = max(err_d, floor) / max(err_e, floor) if floor > 0 else (1.0 if err_d == err_e else float("inf"))
    # an infinite error (a NaN or inf where float64 is finite) is null: JSON has no Infinity
    fin = lambda x: x if math.isfinite(x) else None  # noqa: E731
    return {"device_err": fin(err_d), "eager_err": fin(err_e), "ratio": fin(ratio)}


# -- the worker ------------------------------------------------------------------------


def _eager_reference() -> tuple[Any, Callable[[], None]]:
    """Eager CUDA where this torch has a GPU, else eager CPU (the inputs are
    made on CPU either way)."""
    import torch

    if torch.cuda.is_available():
        return torch.device("cuda"), torch.cuda.synchronize
    return torch.device("cpu"), lambda: None


def describe_setup(device: Any, threads: int) -> dict:
    """What ran, in words, for the reports."""
    import torch

    mod = getattr(device, "module", None)
    name = None
    for attr in ("get_device_name",):
        fn = getattr(mod, attr, None)
        if fn is not None:
            try:
                name = str(fn(0))
            except Exception:
                name = None
    ref = f"eager CUDA ({torch.cuda.get_device_name(0)})" if torch.cuda.is_available() else f"eager CPU ({torch.backends.cpu.get_cpu_capability()})"
    label = f"device {device.type}" + (f" ({name})" if name else f" (package {device.package.__name__})" if device.package else "")
    return {"device_label": label, "reference": ref, "torch_version": torch.__version__.split("+")[0], "threads": threads}


def _sync(device: Any) -> Callable[[], None]:
    mod = getattr(device, "module", None)
    fn = getattr(mod, "synchronize", None)
    return fn if fn is not None else (lambda: None)


def bench_op(config: dict, device: Any, op: dict, send: Callable[[dict], None]) -> None:
    import torch

    from .calls import nondeterministic
    from .overloads import resolve_overload
    from .sample import Sample, empty_outs
    from .tensors import DTYPES, clone_tree

    name, kind, family = op["name"], op["kind"], op["family"]
    func = resolve_overload(name)
    eager_func = eager_function(name)
    sync = _sync(device)
    eager_dev, eager_sync = _eager_reference()
    repeat = max(1, int(op["repeat"]))
    random_op = nondeterministic(name, func) or family == "factory"
    def inputs(dtname: str) -> tuple[list, str]:
        try:
            return inputs_for(name, kind, family, DTYPES[dtname], config["cache_dir"], int(config["seed"]))
        except Exception as e:
            return [], f"inputs: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]

    plan = [(d, *inputs(d)) for d in op["dtypes"]]
    if not any(found for _, found, _ in plan):
        for alt in op["alternatives"]:
            found, note = inputs(alt)
            if found:
                plan = [(alt, found, note)]
                break
    for dtname, found, note in plan:
        dtype = DTYPES[dtname]
        row0 = {"op": name, "kind": kind, "family": family, "dtype": dtname}
        if not found:
            send({**row0, "size": "", "error": note or "no input"})
            continue
        for b in found:
            row = {**row0, "size": b.size, "source": b.source}
            if note:
                row["note"] = note
            try:
                cpu_args, cpu_kwargs = clone_tree(b.args, eager_dev), clone_tree(b.kwargs, eager_dev)
                cpu_outs = empty_outs(Sample(cpu_args, cpu_kwargs, "", b.out_names, b.out_dtypes), eager_dev)
                dev_args, dev_kwargs = device.to_device(b.args), device.to_device(b.kwargs)
                dev_outs = empty_outs(Sample(dev_args, dev_kwargs, "", b.out_names, b.out_dtypes), device.device)
                # the results the accuracy column compares, from fresh copies (in-place ops write their inputs)
                acc = None
                if config["accuracy"] and not random_op:
                    a1, k1 = clone_tree(b.args, eager_dev), clone_tree(b.kwargs, eager_dev)
                    o1 = empty_outs(Sample(a1, k1, "", b.out_names, b.out_dtypes), eager_dev)
                    eager_res = clone_tree(eager_func(*a1, **k1, **o1), torch.device("cpu"))
                    a2, k2 = device.to_device(b.args), device.to_device(b.kwargs)
                    o2 = empty_outs(Sample(a2, k2, "", b.out_names, b.out_dtypes), device.device)
                    dev_res = func(*a2, **k2, **o2)
                    sync()
                    acc = accuracy(eager_func, b, dtype, clone_tree(dev_res, torch.device("cpu")), eager_res)

                def dev_call() -> None:
                    for _ in range(repeat):
                        func(*dev_args, **dev_kwargs, **dev_outs)
                    sync()

                def eager_call() -> None:
                    eager_func(*cpu_args, **cpu_kwargs, **cpu_outs)
                    eager_sync()

                m = measure(dev_call, eager_call, int(config["runs"]), float(config["budget_s"]), config["clock"])
                row.update(m)
                if acc is not None:
                    row["accuracy"] = acc
            except Exception as e:
                row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
            send(row)


def worker_main(config_path: str) -> int:
    from .worker import Channel, _limit_memory, die_with_parent

    die_with_parent()
    chan = Channel()
    config = load_bench_config(config_path)
    # Note [Worker memory limit] (worker.py): a size that allocates too much
    # fails its row instead of waking the machine's OOM killer; half the RAM
    # shared among the workers.
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    _limit_memory(ram // (2 * max(1, int(config["workers"]))))
    import torch

    from .config import RunConfig  # noqa: F401  (the device module's import)
    from .device import RealDevice

    torch.set_num_threads(int(config["threads"]))
    device = RealDevice(config["device"], config["package"])
    why = device.unavailable_reason()
    setup = describe_setup(device, int(config["threads"])) if not why else {}
    chan.send({"t": "ready", "unavailable": why} if why else {"t": "ready", "setup": setup})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        task = json.loads(line)
        if task.get("quit"):
            break
        bench_op(config, device, task, lambda row: chan.send({"t": "row", "row": row}))
        chan.send({"t": "done"})
    return 0


# -- the coordinator -----------------------------------------------------------------


def run(config_path: str) -> int:
    from .results import emit
    from .worker import die_with_parent
    from .workers import Workers

    die_with_parent()
    config = load_bench_config(config_path)
    ops = list(config["ops"])
    results = config["results"]
    os.makedirs(os.path.dirname(os.path.abspath(results)), exist_ok=True)
    out = open(results, "w")
    if os.path.exists(results + ".setup.json"):
        os.remove(results + ".setup.json")
    emit({"event": "start", "tasks_total": len(ops), "tasks_done": 0, "workers": config["workers"]})
    # The OpInfo index is built by the first worker that needs the runner's
    # own samples (Note [Bench inputs], 3.), not up front: most operators never do.
    env_threads = str(config["threads"])
    os.environ["OMP_NUM_THREADS"] = env_threads
    ws = Workers(config_path, results + ".log", command="bench-worker")
    pending = list(reversed(ops))
    busy: dict[int, tuple[Any, dict, float]] = {}
    done = 0
    t0 = time.monotonic()
    unavailable: str | None = None
    startup_failures = 0

    def record(row: dict) -> None:
        try:
            line = json.dumps(row, sort_keys=True, allow_nan=False)
        except ValueError:  # a NaN or infinity somewhere: JSON cannot carry it, the row says so
            keep = {k: row[k] for k in ("op", "kind", "family", "dtype", "size") if k in row}
            line = json.dumps({**keep, "error": "the row had a non-finite number (a bug of bench.py)"}, sort_keys=True)
        out.write(line + "\n")
        out.flush()

    def assign(w: Any) -> None:
        if unavailable is not None:
            while pending:
                op = pending.pop()
                for d in op["dtypes"]:
                    record({"op": op["name"], "kind": op["kind"], "family": op["family"], "dtype": d, "size": "", "error": f"skipped: {unavailable}"})
        if not pending:
            ws.stop(w, True)
            return
        op = pending.pop()
        busy[id(w)] = (w, op, time.monotonic())
        w.state = "busy"
        ws.send(w, op)

    def finish_task(w: Any, error: str | None) -> None:
        nonlocal done
        entry = busy.pop(id(w), None)
        if entry is None:
            return
        _, op, _ = entry
        if error is not None:
            for d in op["dtypes"]:
                record({"op": op["name"], "kind": op["kind"], "family": op["family"], "dtype": d, "size": "", "error": error})
        done += 1
        emit({"event": "task", "op": op["name"], "tasks_done": done, "tasks_total": len(ops)})

    for _ in range(min(max(1, int(config["workers"])), len(ops))):
        ws.spawn()
    while ws.live:
        for w in ws.readable(0.5):
            msgs = ws.read(w)
            if msgs is None:
                code = w.proc.poll()
                if w.state == "starting":
                    startup_failures += 1
                    if startup_failures >= 3:
                        raise SystemExit(f"opgen-conformance bench: workers fail to start; last lines of {results}.log:\n{ws.log_tail()}")
                finish_task(w, f"crash: the worker died (exit {code}) benchmarking this operator")
                ws.stop(w, False)
                if pending:
                    ws.spawn()
                continue
            for msg in msgs:
                w.last = time.monotonic()
                if msg.get("t") == "ready":
                    w.state = "idle"
                    if msg.get("setup") and not os.path.exists(results + ".setup.json"):
                        with open(results + ".setup.json", "w") as f:
                            json.dump(msg["setup"], f, sort_keys=True)
                    if msg.get("unavailable"):
                        unavailable = str(msg["unavailable"])
                        emit({"event": "unavailable", "reason": unavailable})
                    assign(w)
                elif msg.get("t") == "row":
                    record(msg["row"])
                elif msg.get("t") == "done":
                    finish_task(w, None)
                    assign(w)
        now = time.monotonic()
        for w, op, started in list(busy.values()):
            if now - started > float(config["timeout_s"]):
                finish_task(w, f"timeout: benchmarking this operator took over {config['timeout_s']} s")
                ws.stop(w, False)
                if pending:
                    ws.spawn()
    out.close()
    emit({"event": "finished", "tasks_done": done, "samples": done, "elapsed_s": round(time.monotonic() - t0, 3)})
    return 0
