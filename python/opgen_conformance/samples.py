"""Which inputs each aten overload is called with.

OpInfo entries are Python API names (``torch.add``), not aten overloads
(``add.Tensor``). We run each OpInfo's samples on CPU under a TorchDispatchMode
and record, for every call that reaches the dispatcher, the overload and a copy
of its arguments; such a recorded call *is* a sample for that overload, called
directly afterwards. In-place and out= overloads reuse the samples of their
functional sibling. Samples synthesized from the schema (0-d, empty,
non-contiguous and broadcast shapes; in-range dims) add what the traced ones
lack (Note [Sample budget]), and probes (probes.py) follow the ordinary samples.

Note [Sample determinism]: the sample list of (overload, dtype, seed) is a pure
function of those three (and the torch version): every generator is seeded with
``derive_seed`` right before it runs, and samples are numbered in the order
they are produced. A result's (seed, sample) therefore reruns it alone, and a
worker that replaces a crashed one skips to sample k+1 by regenerating the list.

Which OpInfos reach which overload is learned once (tracing ~700 OpInfos takes
~30 s) and cached as JSON per torch version (``build_index``).

Note [Sample cache]: being a pure function, a task's sample list is also
cached on disk (torch.save, one file per overload, kind, dtype, seed and sample
count) in a directory named by the torch version and a hash of the code that
makes samples (this file and probes.py), so a change to either starts a fresh
cache. A worker whose task is cached never imports OpInfo (seconds) nor traces
anything: retesting one operator after editing its kernel starts in about the
time it takes to import torch. A file whose recorded task differs (a hash
collision) or that does not load is regenerated.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
import zlib
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from . import INDEX_VERSION, KNOWN_DTYPES, index_file

DTYPES: dict[str, torch.dtype] = {name: getattr(torch, name) for name in KNOWN_DTYPES}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}


def derive_seed(*parts: object) -> int:
    """A stable 31-bit seed from any printable parts (Python's hash() is salted)."""
    return zlib.crc32("|".join(str(p) for p in parts).encode()) & 0x7FFFFFFF


def seed_cpu(seed: int) -> None:
    """torch.manual_seed for CPU alone, which is where samples are made: the
    full one also seeds every other device type, lazily, capturing a Python
    traceback for each (~0.6 ms a call, thousands of calls a run)."""
    torch.random.default_generator.manual_seed(seed)


def resolve_overload(name: str) -> torch._ops.OpOverload:
    """``add.Tensor`` -> torch.ops.aten.add.Tensor; ``relu`` -> ...relu.default."""
    base, _, overload = name.partition(".")
    packet = getattr(torch.ops.aten, base)
    return getattr(packet, overload or "default")


def overload_name(op: torch._ops.OpOverload) -> str:
    """The inverse of resolve_overload: ``aten::add.Tensor`` -> ``add.Tensor``."""
    n = op.name()
    return n[len("aten::") :] if n.startswith("aten::") else n


@dataclass
class Sample:
    """One direct call of an overload: positional args and kwargs, all on CPU."""

    args: tuple
    kwargs: dict
    source: str
    # out= overloads: names of the out arguments; their tensors are made per run
    out_names: tuple = ()
    out_dtypes: tuple = ()
    # a probe (probes.py): the one check it feeds; "" for an ordinary sample
    check: str = ""
    # a probe's particulars: its ordinary "base" sample, prepared "outs", ...
    meta: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------
# copying inputs without losing their layout


def _copy_tensor(t: torch.Tensor, device: Any = None) -> torch.Tensor:
    """A copy with the same sizes and strides (non-contiguous inputs stay so)."""
    dev = device if device is not None else t.device
    if t.layout != torch.strided:
        return t.to(dev) if device is not None else t.clone()
    try:
        if _overlapping(t):
            out = t.contiguous().to(dev) if device is not None else t.clone()
        else:
            out = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=dev)
            out.copy_(t)
    except Exception:
        out = t.detach().clone().to(dev)
    return out


def _overlapping(t: torch.Tensor) -> bool:
    return any(st == 0 and sz > 1 for sz, st in zip(t.size(), t.stride()))


def clone_tree(x: Any, device: Any = None) -> Any:
    """Copies every tensor in nested tuples/lists/dicts (optionally onto
    `device`; CPU torch.device values are retargeted too). Hand-rolled rather
    than pytree: this runs several times per sample and pytree costs ~0.5 ms."""
    if isinstance(x, torch.Tensor):
        return _copy_tensor(x.detach(), device)
    if isinstance(x, tuple):
        return tuple(clone_tree(v, device) for v in x)
    if isinstance(x, list):
        return [clone_tree(v, device) for v in x]
    if isinstance(x, dict):
        return {k: clone_tree(v, device) for k, v in x.items()}
    if device is not None and isinstance(x, torch.device) and x.type == "cpu":
        return torch.device(device)
    return x


# ---------------------------------------------------------------------------
# tracing


class _Capture(TorchDispatchMode):
    """Records (overload, cloned args, kwargs) of every top-level aten call."""

    def __init__(self, wanted: set[str] | None, limit: int = 64) -> None:
        super().__init__()
        self.wanted = wanted
        self.limit = limit
        self.calls: list[tuple[str, tuple, dict]] = []
        self.seen: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        kwargs = kwargs or {}
        name = overload_name(func) if isinstance(func, torch._ops.OpOverload) else str(func)
        self.seen.add(name)
        if self.wanted is not None and name in self.wanted and len(self.calls) < self.limit:
            flat, _ = tree_flatten((args, kwargs))
            if all(_plain(v) for v in flat):
                self.calls.append((name, clone_tree(args), clone_tree(kwargs)))
        return func(*args, **kwargs)


def _plain(v: Any) -> bool:
    if isinstance(v, torch.Tensor):
        return type(v) is torch.Tensor and v.layout == torch.strided and not v.is_quantized
    return True


def _opinfo_key(op: Any) -> str:
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


_OPDB: dict[str, Any] | None = None


def opinfo_db() -> dict[str, Any]:
    global _OPDB
    if _OPDB is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from torch.testing._internal import common_utils
            from torch.testing._internal.common_methods_invocations import op_db
            from torch.testing._internal.opinfo import core

        # Note [OpInfo outside a test]: every OpInfo input iterator, and each
        # sample and error input it yields, looks for the unittest test that
        # runs it by walking the Python stack with inspect.stack() -- ~50 ms
        # a time in a worker, most of the time spent generating samples. The
        # runner is no test, so the answer is None, which is what OpInfo
        # falls back to (a fixed seed per input, no per-test skips).
        common_utils.extract_test_fn = core.extract_test_fn = lambda: None
        _OPDB = {}
        for op in op_db:
            _OPDB.setdefault(_opinfo_key(op), op)
    return _OPDB


def _run_opinfo_sample(op: Any, s: Any, backward: bool = False) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = op.op(s.input, *s.args, **s.kwargs)
            if backward:
                outs = [o for o in tree_flatten(out)[0] if isinstance(o, torch.Tensor) and o.requires_grad]
                if outs:
                    torch.autograd.backward(outs, [torch.ones_like(o) for o in outs])
        except Exception:
            pass


# Note [Deep reach]: the index traces each OpInfo's first few samples, which
# reach most overloads; some are reached only by later samples (the 2-d and
# 3-d inputs of nn.functional.pad come after its 1-d ones) or only by a
# backward pass (convolution_backward, the pooling and norm backward ops: the
# kernels autograd calls). A second pass over more samples, forward then
# backward on inputs that require grad, finds those, and records them apart
# ("deep"), so the overloads the first pass reaches keep exactly their
# samples, and only the others are traced deep (more samples per OpInfo, and
# a backward pass for a backward overload).
DEEP_PER_OPINFO = 32


def _grad_inputs(op: Any, dtype: torch.dtype) -> Iterator[Any]:
    return op.sample_inputs("cpu", dtype, requires_grad=True)


def _is_backward(name: str) -> bool:
    return "backward" in name.partition(".")[0]


def build_index(per_opinfo: int = 6) -> dict:
    """Trace every OpInfo once (float32 or its first dtype): overload -> OpInfo keys."""
    reach: dict[str, set[str]] = {}
    opinfos: dict[str, list[str]] = {}
    for key, op in sorted(opinfo_db().items()):
        try:
            dts = op.supported_dtypes("cpu")
        except Exception:
            continue
        names = sorted(DTYPE_NAMES[d] for d in dts if d in DTYPE_NAMES)
        if not names:
            continue
        opinfos[key] = names
        dt = torch.float32 if torch.float32 in dts else DTYPES[names[0]]
        try:
            torch.manual_seed(derive_seed("index", key))
            it = op.sample_inputs("cpu", dt, requires_grad=False)
            for i, s in enumerate(it):
                if i >= per_opinfo:
                    break
                cap = _Capture(None)
                with cap:
                    _run_opinfo_sample(op, s)
                for n in cap.seen:
                    reach.setdefault(n, set()).add(key)
        except Exception:
            continue
    deep: dict[str, set[str]] = {}
    for key, names in sorted(opinfos.items()):
        op = opinfo_db()[key]
        dt = torch.float32 if "float32" in names else DTYPES[names[0]]
        grad = dt.is_floating_point and getattr(op, "supports_autograd", False)
        for inputs, backward in ((opinfo_inputs, False), (_grad_inputs, True)) if grad else ((opinfo_inputs, False),):
            try:
                torch.manual_seed(derive_seed("index-deep", key, backward))
                for i, s in enumerate(inputs(op, dt)):
                    if i >= DEEP_PER_OPINFO:
                        break
                    cap = _Capture(None)
                    with cap:
                        _run_opinfo_sample(op, s, backward)
                    for n in cap.seen - reach.keys():
                        deep.setdefault(n, set()).add(key)
            except Exception:
                continue
    return {
        "version": INDEX_VERSION,
        "torch": torch.__version__,
        "opinfos": opinfos,
        "reach": {k: sorted(v) for k, v in sorted(reach.items())},
        "deep": {k: sorted(v) for k, v in sorted(deep.items())},
    }


def samples_cache_dir(cache_dir: str) -> str:
    """Where Note [Sample cache] keeps sample lists for this torch and this code."""
    import hashlib

    here = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    for name in ("samples.py", "probes.py"):
        with open(os.path.join(here, name), "rb") as f:
            h.update(f.read())
    return os.path.join(cache_dir, f"samples-{torch.__version__}-{h.hexdigest()[:12]}")


def sample_cache_file(samples_dir: str, task: dict) -> str:
    """The file of one task's sample list in Note [Sample cache]; `task` holds
    op, kind, dtype, seed and max_samples (and is stored with the samples)."""
    key = derive_seed(*(task[k] for k in ("op", "kind", "dtype", "seed", "max_samples")))
    return os.path.join(samples_dir, f"{key:08x}.pt")


def load_index(cache_dir: str | None) -> dict:
    """The cached index for this torch, building (and caching) it when missing."""
    path = None
    if cache_dir:
        path = index_file(cache_dir, torch.__version__)
        try:
            with open(path) as f:
                idx = json.load(f)
            if idx.get("version") == INDEX_VERSION and idx.get("torch") == torch.__version__:
                return idx
        except (OSError, ValueError):
            pass
    idx = build_index()
    if path:
        os.makedirs(cache_dir, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=".index-")
        with os.fdopen(fd, "w") as f:
            json.dump(idx, f)
        os.replace(tmp, path)
    return idx


# ---------------------------------------------------------------------------
# schema helpers


def schema_of(name: str) -> torch._C.FunctionSchema:
    return resolve_overload(name)._schema


def out_arg_names(schema: torch._C.FunctionSchema) -> tuple[str, ...]:
    return tuple(a.name for a in _out_args(schema))


def _out_args(schema: torch._C.FunctionSchema) -> list:
    return [a for a in schema.arguments if a.kwarg_only and a.alias_info is not None and a.alias_info.is_write]


# Note [List outs]: the out= form of a foreach op writes a list
# (`_foreach_sqrt.out(Tensor[] self, *, Tensor(a!)[] out) -> ()`). Its
# out_dtypes entry is a tuple of dtypes, one per tensor of the list, and
# empty_outs makes a list of empty tensors for it; a single tensor there
# is an error on CPU and device alike, which reaches nothing of the kernel.
def group_out_dtypes(name: str, flat: tuple) -> tuple | None:
    """The dtypes of an out= overload's outputs, flat as a call returns them,
    grouped by its out arguments: one dtype for a tensor argument, a tuple of
    them for a list argument (the only out argument, as in every foreach op).
    None when they do not fit."""
    lists = [isinstance(a.type, torch.ListType) for a in _out_args(schema_of(name))]
    if not any(lists):
        return flat if len(flat) == len(lists) else None
    return (tuple(flat),) if lists == [True] else None


def empty_outs(s: Sample, device: Any = None) -> dict:
    """Fresh empty out tensors for a sample's out arguments (Note [List outs])."""

    def one(d: Any) -> Any:
        if isinstance(d, tuple):
            return [torch.empty(0, dtype=x, device=device) for x in d]
        return torch.empty(0, dtype=d, device=device)

    return {n: one(d) for n, d in zip(s.out_names, s.out_dtypes)}


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


# ---------------------------------------------------------------------------
# synthesis from the schema


def _make(shape: tuple, dtype: torch.dtype, noncontig: bool = False) -> torch.Tensor:
    if noncontig and len(shape) >= 2:
        t = _make(tuple(reversed(shape)), dtype).t() if len(shape) == 2 else _make(shape, dtype)
        return t
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if dtype.is_floating_point or dtype.is_complex:
        return torch.empty(shape, dtype=dtype).uniform_(-3, 3) if not dtype.is_complex else torch.randn(shape, dtype=dtype)
    lo = 0 if dtype == torch.uint8 else -5
    return torch.randint(lo, 6, shape, dtype=dtype)


_VARIANTS = ("2d", "0d", "empty", "noncontig", "broadcast")


def _synth_value(arg: Any, variant: str, dtype: torch.dtype, tensor_i: int) -> Any:
    ty = str(arg.type)
    name = arg.name
    # an in-place op's self must already have the broadcast shape
    written = arg.alias_info is not None and arg.alias_info.is_write
    first = (3, 4) if written else (3, 1)
    shapes = {"2d": (3, 4), "0d": (), "empty": (0, 4), "noncontig": (3, 4), "broadcast": first if tensor_i == 0 else (1, 4)}
    shape = shapes[variant]
    nd = len(shape)
    if ty in ("Tensor", "Optional[Tensor]"):
        if ty.startswith("Optional") and tensor_i > 0:
            return None
        if name in ("index", "indices"):
            return torch.randint(0, max(1, shape[-1] if nd else 1), shape or (), dtype=torch.int64)
        return _make(shape, dtype, noncontig=variant == "noncontig")
    if ty == "List[Tensor]":
        return [_make(shape, dtype), _make(shape, dtype)]
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


# Note [Samples of the fused cells]: the recurrent cells' arguments relate
# (gates B x G*H, the state B x H, biases G*H, a workspace B x 4H or 5H), so
# the schema's uniform shapes only reach their argument checks, and no OpInfo
# reaches them on CPU (eager CPU has no kernel: the reference is
# checks.py's). Their samples are made here: B = 3, H = 4, with and without
# biases, non-contiguous, and an empty batch.
_CELL_GATES = {
    "_thnn_fused_lstm_cell": 4,
    "_thnn_fused_lstm_cell_backward_impl": 4,
    "_thnn_fused_gru_cell": 3,
    "_thnn_fused_gru_cell_backward": 3,
}


def _cell_samples(base: str, dtype: torch.dtype) -> list[tuple[tuple, str]] | None:
    gates = _CELL_GATES.get(base)
    if gates is None:
        return None
    found: list[tuple[tuple, str]] = []
    for variant, b, nc, bias in (("cell", 3, False, True), ("cell-nobias", 3, False, False),
                                 ("cell-noncontig", 3, True, True), ("cell-empty", 0, False, True)):
        h = 4
        if base == "_thnn_fused_lstm_cell_backward_impl":
            state = [_make((b, h), dtype, noncontig=nc) for _ in range(4)]  # grad_hy, grad_cy, cx, cy
            ws = _make((b, 4 * h), dtype, noncontig=nc)
            found.append(((state[0], state[1], state[2], state[3], ws, bias), variant))
            if variant == "cell":
                found.append(((state[0], None, state[2], state[3], ws, bias), "cell-no-grad-cy"))
                found.append(((None, state[1], state[2], state[3], ws, bias), "cell-no-grad-hy"))
        elif base == "_thnn_fused_gru_cell_backward":
            found.append(((_make((b, h), dtype, noncontig=nc), _make((b, 5 * h), dtype, noncontig=nc), bias), variant))
        else:
            ig, hg = _make((b, gates * h), dtype, noncontig=nc), _make((b, gates * h), dtype, noncontig=nc)
            biases = (_make((gates * h,), dtype), _make((gates * h,), dtype)) if bias else (None, None)
            found.append(((ig, hg, _make((b, h), dtype, noncontig=nc)) + biases, variant))
    return found


# Note [Hand-made samples]: overloads that no OpInfo sample reaches, even
# deep (Note [Deep reach]), and whose schema alone makes only invalid calls
# (a col2im input's second dim must be C * prod(kernel_size), an
# embedding_bag's offsets must index its indices, a ScalarList must be as
# long as the tensor list), get valid calls made by hand, like the fused
# cells' above; floating dtypes only, where eager CPU takes them.
def _col2im(dt: torch.dtype) -> list[tuple[tuple, str]]:
    # (N, C * kh * kw, L), L the number of blocks: (4-2+1) * (5-2+1) = 12; (5+2-3)//2+1 = 3 per dim
    return [
        ((_make((2, 3 * 2 * 2, 12), dt), [4, 5], [2, 2], [1, 1], [0, 0], [1, 1]), "col2im"),
        ((_make((3 * 2 * 2, 12), dt, noncontig=True), [4, 5], [2, 2], [1, 1], [0, 0], [1, 1]), "col2im-unbatched"),
        ((_make((1, 2 * 3 * 3, 9), dt), [5, 5], [3, 3], [1, 1], [1, 1], [2, 2]), "col2im-stride-padding"),
    ]


def _embedding_bag(dt: torch.dtype) -> list[tuple[tuple, str]]:
    w, idx, off = _make((10, 3), dt), torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 3, 3, 6])
    found = [((w, idx, off, False, mode), f"bag-mode{mode}") for mode in (0, 1, 2)]  # sum, mean, max; an empty bag
    found.append(((w, idx, off, False, 0, False, _make((8,), dt)), "bag-per-sample-weights"))
    found.append(((w, idx, torch.tensor([0, 3, 6, 8]), False, 1, False, None, True), "bag-include-last-offset"))
    return found


def _foreach_lists(dt: torch.dtype, n: int) -> list[list[torch.Tensor]]:
    return [[_make((3,), dt), _make((2, 2), dt, noncontig=True)] for _ in range(n)]


# The FFT primitives take their signal in the task's real precision: real
# for _fft_r2c, complex of that precision (float32 -> complex64) for
# _fft_c2c and _fft_c2r, whose schemas alone make only real (refused)
# inputs and whose OpInfo samples reach them only from complex ones. Lengths
# cover radix 2 and 4, other small primes and a large prime (97, Bluestein's
# algorithm in the reference backend), several dims, every normalization,
# both onesided modes and strided signals. Eager CPU has no half FFT: the
# half types get their real signal, which both sides refuse.
def _fft_signal(shape: tuple, dt: torch.dtype, complex_: bool, transposed: bool = False) -> torch.Tensor:
    cdt = dt.to_complex() if complex_ and dt in (torch.float32, torch.float64) else dt
    if transposed:
        return _make(tuple(reversed(shape)), cdt).permute(*reversed(range(len(shape))))
    return _make(shape, cdt)


def _fft_r2c(dt: torch.dtype) -> list[tuple[tuple, str]]:
    x = lambda shape, t=False: _fft_signal(shape, dt, False, t)  # noqa: E731
    return [
        ((x((3, 12)), [1], 0, True), "r2c-onesided"),
        ((x((2, 97)), [1], 1, False), "r2c-prime-full"),
        ((x((5, 6, 7)), [0, 2], 2, True), "r2c-2d"),
        ((x((4, 10), True), [0, 1], 0, False), "r2c-strided"),
        ((x((1,)), [0], 2, True), "r2c-length-1"),
    ]


def _fft_c2c(dt: torch.dtype) -> list[tuple[tuple, str]]:
    c = lambda shape, t=False: _fft_signal(shape, dt, True, t)  # noqa: E731
    return [
        ((c((3, 16)), [1], 0, True), "c2c-forward"),
        ((c((2, 97)), [1], 2, False), "c2c-prime-backward"),
        ((c((6, 5, 3)), [0, 1, 2], 1, True), "c2c-3d"),
        ((c((9, 4), True), [0], 1, False), "c2c-strided"),
    ]


def _fft_c2r(dt: torch.dtype) -> list[tuple[tuple, str]]:
    c = lambda shape, t=False: _fft_signal(shape, dt, True, t)  # noqa: E731
    return [
        ((c((3, 7)), [1], 0, 12), "c2r-even"),
        ((c((2, 49)), [1], 2, 97), "c2r-prime"),
        ((c((4, 5, 3)), [0, 2], 1, 5), "c2r-2d"),
        ((c((6, 4), True), [1], 0, 7), "c2r-strided"),
    ]


# The fused attention (eager CPU's reference: checks.py's): q (B, H, L, E),
# k (B, H, S, E), v (B, H, S, Ev) with L != S and E != Ev, a bias that
# broadcasts, the causal mask, strided inputs; the backward gets the
# forward's outputs and every grad_input_mask the derivative formula sends.
def _sdpa_inputs(dt: torch.dtype, noncontig: bool = False) -> tuple[torch.Tensor, ...]:
    def make(shape):
        return _make(shape, dt).transpose(1, 2).contiguous().transpose(1, 2) if noncontig else _make(shape, dt)

    return make((2, 3, 5, 8)), make((2, 3, 7, 8)), make((2, 3, 7, 4))


def _sdpa(dt: torch.dtype) -> list[tuple[tuple, str]]:
    q, k, v = _sdpa_inputs(dt)
    return [
        ((q, k, v), "sdpa"),
        ((q, k, v, _make((3, 1, 7), dt)), "sdpa-bias-broadcast"),
        ((q, k, v, None, 0.0, True), "sdpa-causal"),
        (_sdpa_inputs(dt, noncontig=True), "sdpa-strided"),
    ]


def _sdpa_backward(dt: torch.dtype) -> list[tuple[tuple, str]]:
    if dt not in (torch.float32, torch.float64):
        q, k, v = _sdpa_inputs(dt)
        e = torch.empty(0, dtype=torch.int64)
        return [((_make((2, 3, 5, 4), dt), q, k, v, _make((5, 7), dt), [True] * 4, _make((2, 3, 5, 4), dt),
                  _make((2, 3, 5), dt), e, e, 5, 7, 0.0, False, e, e), "sdpa-backward")]
    from .checks import _sdpa_overrideable

    found = []
    for variant, bias, causal, mask in (("sdpa-backward", (5, 7), False, [True, True, True, True]),
                                        ("sdpa-backward-broadcast-bias", (3, 1, 7), False, [True, False, True, True]),
                                        ("sdpa-backward-causal", (1,), True, [True, True, True, False])):
        q, k, v = _sdpa_inputs(dt)
        b = _make(bias, dt)
        out, lse, cq, ck, mq, mk, ps, po, _ = _sdpa_overrideable(q, k, v, None if causal else b, 0.0, causal)
        found.append(((_make(tuple(out.shape), dt), q, k, v, b, mask, out, lse, cq, ck, mq, mk, 0.0, causal, ps, po),
                      variant))
    return found


# view_as_real views a complex tensor: the task's real precision names the
# complex one (float32 -> complex64), as for the FFT signals; a sliced
# signal keeps a unit last stride with a storage offset, which the view keeps.
def _view_as_real(dt: torch.dtype) -> list[tuple[tuple, str]]:
    c = lambda shape: _fft_signal(shape, dt, True)  # noqa: E731
    return [((c((3, 4)),), "complex"), ((c((4, 6))[1:, ::2],), "complex-sliced"), ((c(()),), "complex-0d")]


_HANDMADE: dict[str, Callable[[torch.dtype], list[tuple[tuple, str]]]] = {
    "view_as_real": _view_as_real,
    "col2im": _col2im,
    "_embedding_bag": _embedding_bag,
    "_fft_r2c": _fft_r2c,
    "_fft_c2c": _fft_c2c,
    "_fft_c2r": _fft_c2r,
    "_scaled_dot_product_fused_attention_overrideable": _sdpa,
    "_scaled_dot_product_fused_attention_overrideable_backward": _sdpa_backward,
    "_foreach_div_.ScalarList": lambda dt: [((_foreach_lists(dt, 1)[0], [2.0, -0.5]), "foreach")],
    **{cell: (lambda dt, cell=cell: _cell_samples(cell, dt) or []) for cell in _CELL_GATES},
    "_foreach_addcdiv_.ScalarList": lambda dt: [
        ((*_foreach_lists(dt, 2), [t.abs() + 1 for t in _foreach_lists(dt, 1)[0]], [0.5, -1.0]), "foreach")
    ],
}


def synthesize(name: str, dtype: torch.dtype) -> list[Sample]:
    """Samples from the schema alone: required args filled, defaults left alone."""
    try:
        schema = schema_of(name)
    except Exception:
        return []
    outs = out_arg_names(schema)
    made = _HANDMADE.get(name) or _HANDMADE.get(name.partition(".")[0])
    if made is not None and dtype.is_floating_point:
        return [Sample(args, {}, f"schema:{v}", out_names=outs, out_dtypes=tuple(dtype for _ in outs)) for args, v in made(dtype)]
    # Note [Factories name their device]: an operator without tensor
    # arguments (full, arange, rand) reaches a device only through its
    # `device` argument, so its samples pass CPU's, which the device run
    # retargets (clone_tree); left at its default, both runs would be CPU's.
    factory = not any("Tensor" in str(a.type) for a in schema.arguments if a.name not in outs)
    samples: list[Sample] = []
    for variant in _VARIANTS:
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
                v = _synth_value(a, variant, dtype, ti)
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


# ---------------------------------------------------------------------------
# the sample list of one task


def opinfo_inputs(op: Any, dtype: torch.dtype) -> Iterator[Any]:
    """An OpInfo's ordinary samples (``SampleInput``s)."""
    return op.sample_inputs("cpu", dtype, requires_grad=False)


def trace_calls(
    index: dict,
    wanted: str,
    dtype: torch.dtype,
    seed: int,
    per_opinfo: int,
    limit: int,
    inputs: Callable[[Any, torch.dtype], Iterable[Any]] = opinfo_inputs,
    what: str = "opinfo",
    own: bool = False,
) -> Iterator[tuple[str, tuple, dict]]:
    """Calls of `wanted` made by the OpInfos that reach it (`own`: only those
    named like it), run on the inputs `inputs` gives each OpInfo (its
    samples, unless told otherwise), as (source, args, kwargs); `what` names
    the source and seeds the generators."""
    dname = DTYPE_NAMES.get(dtype, str(dtype))
    reached = index.get("reach", {}).get(wanted)
    backward = False
    if reached is None:  # Note [Deep reach]
        reached = index.get("deep", {}).get(wanted, [])
        per_opinfo = max(per_opinfo, DEEP_PER_OPINFO)
        backward = _is_backward(wanted) and dtype.is_floating_point and inputs is opinfo_inputs
        if backward:
            inputs = _grad_inputs
    keys = _rank_opinfos(wanted, reached, own)
    per_key = max(2, limit // 2)
    db = None
    for key in keys:
        if dname not in index.get("opinfos", {}).get(key, []):
            continue
        if db is None:
            db = opinfo_db()
        op = db.get(key)
        if op is None:
            continue
        seed_cpu(derive_seed(seed, wanted, dname, key) if what == "opinfo" else derive_seed(seed, wanted, dname, key, what))
        try:
            for i, s in enumerate(inputs(op, dtype)):
                if i >= per_opinfo:
                    break
                cap = _Capture({wanted}, limit=4)
                with cap:
                    _run_opinfo_sample(op, s, backward)
                taken = 0
                for n, a, k in cap.calls:
                    if not _has_dtype((a, k), dtype):
                        continue
                    yield f"{what}:{key}#{i}", a, k
                    taken += 1
                    limit -= 1
                    if limit <= 0:
                        return
                per_key -= taken
                if per_key <= 0:
                    break
            per_key = max(2, limit // 2)
        except Exception:
            continue


def _rank_opinfos(wanted: str, keys: list[str], own: bool = False) -> list[str]:
    """OpInfos named like the overload first (``add`` for ``add.Tensor``), then
    the rest (unless `own`: only those)."""
    base = wanted.partition(".")[0].rstrip("_").lstrip("_")

    def rank(key: str) -> tuple[int, str]:
        name = key.partition(".")[0] if not key.startswith("nn.") else key.split(".")[2] if key.count(".") > 1 else key
        leaf = key.split(".")[-1]
        if key == base or name == base:
            return (0, key)
        if leaf == base or base in key.split("."):
            return (1, key)
        return (2, key)

    return sorted((k for k in keys if not own or rank(k)[0] < 2), key=rank)


def _has_dtype(tree: Any, dtype: torch.dtype) -> bool:
    ts = [v for v in tree_flatten(tree)[0] if isinstance(v, torch.Tensor)]
    return not ts or any(t.dtype == dtype for t in ts)


def target_of(name: str, kind: str) -> str:
    """The overload whose traced calls become samples of `name`: its
    functional sibling for in-place and out= overloads, else itself."""
    if kind in ("inplace", "out"):
        return functional_sibling(name, kind) or name
    return name


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
        dts = tuple(dtype for _ in outs) if invalid else _out_dtypes_via_functional(name, target, args, kwargs)
        if dts is None:
            return None
        return Sample(args, kwargs, src + "->out", out_names=outs, out_dtypes=dts)
    if kind == "inplace" and target != name:
        return Sample(args, kwargs, src + "->inplace")
    return Sample(args, kwargs, src)


def _variants(s: Sample) -> set[str]:
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


def _with_variants(traced: list[Sample], synth: list[Sample], max_samples: int) -> list[Sample]:
    """Note [Sample budget]: `max_samples` is a budget, and the synthesized
    variants (0-d, empty, non-contiguous, broadcast; 2-d when nothing was
    traced) that no traced sample already is always get a place in it: they
    take places from the traced samples down to half of the budget, and beyond
    that are added to it. Filling the budget with traced samples first would
    never reach them for any op OpInfo samples generously, and those are the
    inputs a vendor's kernel gets wrong (a broadcast read with the wrong
    stride passes every same-shape sample)."""
    half = (max_samples + 1) // 2
    keep = len(traced)
    while True:
        covered = set().union(*(_variants(s) for s in traced[:keep]))
        missing = [s for s in synth if s.source.partition(":")[2] not in covered]
        if keep + len(missing) <= max_samples or keep <= half:
            return traced[:keep] + missing
        keep -= 1


def sample_list(
    name: str,
    kind: str,
    dtype: torch.dtype,
    seed: int,
    index: dict,
    max_samples: int,
    per_opinfo: int = 12,
) -> list[Sample]:
    """The ordered samples of one (overload, dtype): the ordinary samples, then
    the probes derived from them (probes.py); see Note [Sample determinism]."""
    from .probes import probes

    try:
        schema_of(name)
    except Exception:
        return []
    target = target_of(name, kind)
    traced: list[Sample] = []
    if target != name:
        # calls of the in-place/out= overload itself first, then its sibling's
        for src, a, k in trace_calls(index, name, dtype, seed, per_opinfo, max_samples):
            s = as_kind(name, kind, name, src, a, k, dtype)
            if s is not None:
                traced.append(s)
    if len(traced) < max_samples and (kind not in ("inplace", "out") or target != name):
        for src, a, k in trace_calls(index, target, dtype, seed, per_opinfo, max_samples - len(traced)):
            s = as_kind(name, kind, target, src, a, k, dtype)
            if s is not None:
                traced.append(s)
            if len(traced) >= max_samples:
                break
    seed_cpu(derive_seed(seed, name, DTYPE_NAMES.get(dtype, dtype), "schema"))
    traced = [_eager_runs(name, target, s) for s in traced]
    synth = [_eager_runs(name, target, s) for s in synthesize(name, dtype)]
    for s in synth:
        if kind == "out" and s.out_names:
            dts = _out_dtypes_via_functional(name, target, s.args, s.kwargs) if target != name else None
            if dts is None:
                dts = _out_dtypes_via_cpu(name, s.args, s.kwargs, s.out_names, dtype)
            s.out_dtypes = dts if dts is not None else s.out_dtypes
    ordinary = _with_variants(traced, synth, max_samples)
    return ordinary + probes(name, kind, target, dtype, seed, index, ordinary)


# Note [Samples eager CPU crashes on]: a few argument combinations make eager
# CPU itself kill the process (a segfault, not an error), so there is nothing
# to compare a device with, and deriving probes or out= dtypes from such a
# sample kills the worker that generates them, losing the whole (overload,
# dtype). Such a sample is changed into the nearest one eager runs, per
# overload (the functional one and its out= form), each with the reason.
def _no_stats_training(s: Sample) -> Sample:
    # training=False without running stats: ATen's CPU kernel reads the
    # undefined running_mean/running_var (torch 2.13); train instead.
    if len(s.args) > 3 and s.args[3] is False:
        return replace(s, args=s.args[:3] + (True,) + s.args[4:])
    if s.kwargs.get("training") is False:
        return replace(s, kwargs={**s.kwargs, "training": True})
    return s


def _eval_needs_stats(s: Sample) -> Sample:
    # native_batch_norm(input, weight, bias, running_mean, running_var,
    # training, ...) with training=False and a running stat missing: ATen's
    # CPU kernel reads the undefined tensor (torch 2.13); train instead.
    args, kw = list(s.args), dict(s.kwargs)
    get = lambda i, k: args[i] if len(args) > i else kw.get(k)  # noqa: E731
    if get(5, "training") is False and (get(3, "running_mean") is None or get(4, "running_var") is None):
        if len(args) > 5:
            args[5] = True
        else:
            kw["training"] = True
        return replace(s, args=tuple(args), kwargs=kw)
    return s


_EAGER_CRASHES: dict[str, Callable[[Sample], Sample]] = {
    "_native_batch_norm_legit.no_stats": _no_stats_training,
    "_native_batch_norm_legit.no_stats_out": _no_stats_training,
    "native_batch_norm": _eval_needs_stats,
    "native_batch_norm.out": _eval_needs_stats,
}


def _eager_runs(name: str, target: str, s: Sample) -> Sample:
    fix = _EAGER_CRASHES.get(name) or _EAGER_CRASHES.get(target)
    return fix(s) if fix is not None else s


def _dtypes_of(x: Any) -> Any:
    """A traced out argument's dtype entry (Note [List outs]); None if it holds no tensors."""
    if isinstance(x, torch.Tensor):
        return x.dtype
    if isinstance(x, (list, tuple)) and x and all(isinstance(t, torch.Tensor) for t in x):
        return tuple(t.dtype for t in x)
    return None


def _out_dtypes_via_functional(name: str, fname: str, args: tuple, kwargs: dict) -> tuple | None:
    """The out dtypes of `name` (an out= overload) for a call of its functional sibling `fname`."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = resolve_overload(fname)(*clone_tree(args), **clone_tree(kwargs))
    except Exception:
        return None
    return group_out_dtypes(name, tuple(x.dtype for x in tree_flatten(r)[0] if isinstance(x, torch.Tensor)))


def _out_dtypes_via_cpu(name: str, args: tuple, kwargs: dict, outs: tuple, dtype: torch.dtype) -> tuple | None:
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


def describe(s: Sample) -> str:
    """A short, address-free text of a sample for reports."""

    def f(v: Any) -> str:
        if isinstance(v, torch.Tensor):
            nc = "" if v.is_contiguous() else ",noncontig"
            return f"T{list(v.shape)}:{DTYPE_NAMES.get(v.dtype, str(v.dtype))}{nc}"
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(f(x) for x in v) + "]"
        if isinstance(v, torch.dtype):
            return DTYPE_NAMES.get(v, str(v))
        if isinstance(v, float):
            return repr(v)
        return repr(v)

    parts = [f(a) for a in s.args] + [f"{k}={f(v)}" for k, v in {**s.kwargs, **s.meta.get("outs", {})}.items()]
    return "(" + ", ".join(parts) + ")"


def core_overloads() -> list[str]:
    """Overloads tagged ``core`` in the native_functions.yaml torch ships."""
    import torchgen
    import yaml

    path = os.path.join(os.path.dirname(torchgen.__file__), "packaged", "ATen", "native", "native_functions.yaml")
    with open(path) as f:
        entries = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    out = []
    for e in entries:
        tags = e.get("tags", [])
        tags = [tags] if isinstance(tags, str) else tags
        if "core" in tags:
            out.append(e["func"].split("(", 1)[0])
    return sorted(out)


def op_info(name: str) -> dict:
    """What the manifest may leave out, from the schema: kind, core, view."""
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
