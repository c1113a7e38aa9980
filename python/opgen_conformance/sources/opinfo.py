"""The OpInfo sample source.

OpInfo entries are Python API names (``torch.add``), not aten overloads
(``add.Tensor``). We run each OpInfo's samples on CPU under a TorchDispatchMode
and record, for every call that reaches the dispatcher, the overload and a copy
of its arguments; such a recorded call *is* a sample for that overload, called
directly afterwards (trace_calls).

Which OpInfos reach which overload is learned once (tracing ~700 OpInfos takes
~30 s) and cached as JSON per torch version (``build_index``, ``load_index``).
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from typing import Any, Callable, Iterable, Iterator

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from .. import INDEX_VERSION, index_file
from ..overloads import overload_name
from ..sample import derive_seed, seed_cpu
from ..tensors import DTYPE_NAMES, DTYPES, clone_tree

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

