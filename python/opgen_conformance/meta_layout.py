"""Note [Meta layout]: torch.compile traces a graph with fake tensors, whose
shapes, dtypes and strides come from each operator's meta kernel, and
Inductor then asserts them on what the device's kernel returns
(`assert_size_stride` on every extern kernel's result) and indexes the
buffers with them. A kernel whose result is laid out differently from its
meta kernel is therefore wrong under torch.compile even where eager values
match: the fused attention's output, contiguous where the meta promises
the query's dim order, failed a compiled transformer block that way.

So for a functional overload, the device's outputs are compared with the
same call on fake tensors that copy the device inputs' shapes, strides and
device: the strides of dims longer than 1 should agree (dtypes and shapes
are the dtype and shape checks' to judge).
Only outputs where eager CPU's result agrees with the meta kernel are
judged (where CPU differs too, the meta kernel speaks for no backend). An
overload without a meta kernel, or whose output shape depends on the data
(nonzero, unique), has nothing to compare and is not judged.

A difference is a warning in the `strides` check, as CPU strides are: the
reference kernels still return most elementwise results of non-contiguous
inputs contiguous where eager (TensorIterator) and the meta keep the
inputs' layout, so a failure would fail ~100 overloads that Inductor
lowers itself anyway. Ops that reach compiled graphs as extern kernels
(attention, convolution, matmul) are the ones where it breaks a compile.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_map



def _fake(t: torch.Tensor) -> torch.Tensor:
    f = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
    if t.requires_grad:
        f.requires_grad_(True)
    return f


def _layout(t: torch.Tensor) -> tuple:
    return (t.dtype, tuple(t.shape), tuple(st for sz, st in zip(t.shape, t.stride()) if sz > 1))


def meta_problems(op: Any, args: tuple, kwargs: dict, result: Any, cpu_result: Any) -> list[str] | None:
    """What differs between the device's result of op(*args, **kwargs) and
    the meta kernel's, on the outputs where CPU's result and the meta kernel's
    agree; None when the meta kernel cannot say."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    def plain(t: Any) -> bool:
        return isinstance(t, torch.Tensor) and t.layout == torch.strided and not t.is_quantized

    if not all(plain(t) for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)):
        return None
    try:
        with FakeTensorMode(allow_non_fake_inputs=False):
            fargs, fkwargs = tree_map(lambda t: _fake(t) if isinstance(t, torch.Tensor) else t, (args, kwargs))
            fres = op(*fargs, **fkwargs)
    except Exception:  # no meta kernel, data-dependent output, an op fakes cannot run
        return None
    got, _ = tree_flatten(result)
    want, _ = tree_flatten(fres)
    cpu, _ = tree_flatten(cpu_result)
    if not len(got) == len(want) == len(cpu):
        return None
    problems: list[str] = []
    for i, (d, m, c) in enumerate(zip(got, want, cpu)):
        if not all(isinstance(t, torch.Tensor) and plain(t) for t in (d, m, c)) or _layout(c) != _layout(m):
            continue
        # a dtype or shape other than the meta's (= CPU's here) is the dtype
        # and shape checks' to report
        if d.dtype == m.dtype and d.shape == m.shape and _layout(d) != _layout(m):
            at = f"output {i}: " if len(got) > 1 else ""
            problems.append(f"{at}strides {list(d.stride())} != meta {list(m.stride())}")
    return problems
