"""The gradients check: backward on the device against backward on CPU, for
the floating inputs of a functional (or view) overload's sample, with
random output gradients seeded per overload, at ten times the values
check's tolerances (at least 1e-4).
"""

from __future__ import annotations

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from .calls import Calls
from .compiled import failure_verdict
from .compare import MAX_MSG, Verdict, attempt, compare, short, tensors_in
from .sample import Sample, derive_seed
from .tensors import as_leaves, clone_tree


def gradients(calls: Calls, s: Sample, forward: dict[str, Verdict]) -> Verdict | None:
    """The verdict, or None where CPU's backward does not apply (no floating
    input or output, or CPU raises); `forward`: the verdicts found so far."""
    flat, spec = tree_flatten((clone_tree(s.args), clone_tree(s.kwargs)))
    idx = [i for i, v in enumerate(flat) if isinstance(v, torch.Tensor) and v.is_floating_point()]
    if not idx:
        return None
    base = [v for v in flat]

    cflat = as_leaves(base, idx)
    ca, ckw = tree_unflatten(cflat, spec)
    cout, err = attempt(lambda: calls.reference(*ca, **ckw))
    if err is not None:
        return None
    call = tensors_in(cout)
    mask = [o.requires_grad and o.is_floating_point() for o in call]
    couts = [o for o, m in zip(call, mask) if m]
    if not couts:
        return None
    gen = torch.Generator().manual_seed(derive_seed("grad", calls.name))
    gos = [torch.randn(o.shape, dtype=o.dtype, generator=gen) for o in couts]
    cl = [cflat[i] for i in idx]
    cg, err = attempt(lambda: torch.autograd.grad(couts, cl, gos, allow_unused=True))
    if err is not None:
        return None

    # the forward verdicts go with the phase change: a crash in backward
    # must not lose what the forward checks already found
    calls.phase("gradients", forward)
    dflat = as_leaves(list(calls.dev.to_device(base)), idx)
    da, dkw = tree_unflatten(dflat, spec)
    dout, err = attempt(lambda: calls.dev.call(calls.name, calls.op, da, dkw))
    if err is not None:
        return failure_verdict(calls.dev, err) or ("fail", f"device forward with requires_grad raised {short(err)}")
    dall = tensors_in(dout)
    if len(dall) != len(call):
        return ("fail", f"device forward returned {len(dall)} tensors with requires_grad, CPU {len(call)}")
    douts = [o for o, m in zip(dall, mask) if m]
    if not all(o.requires_grad for o in douts):
        return ("fail", "device outputs do not require grad; autograd is not wired for this op")
    dgos = [calls.dev.to_device(g) for g in gos]
    dl = [dflat[i] for i in idx]
    dg, err = attempt(lambda: torch.autograd.grad(douts, dl, dgos, allow_unused=True))
    if err is not None:
        return failure_verdict(calls.dev, err) or ("fail", f"device backward raised {short(err)}")
    problems = []
    for k, (c, d) in enumerate(zip(cg, dg)):
        if c is None and d is None:
            continue
        if c is None or d is None:
            problems.append(f"grad of input {k}: {'missing' if d is None else 'unexpected'}")
            continue
        rtol, atol = calls.tol(c)
        why = compare(d, c, max(rtol, 1e-5) * 10, max(atol, 1e-5) * 10)
        if why is not None:
            problems.append(f"grad of input {k}: {why}")
    return ("fail", "; ".join(problems)[:MAX_MSG]) if problems else ("pass", "")
