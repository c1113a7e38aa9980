"""Tensors as the runner handles them: the dtype table, copies that keep an
input's layout (a non-contiguous sample must reach the device non-contiguous),
and the random tensors the hand-made and schema sample sources fill.
"""

from __future__ import annotations

from typing import Any

import torch

from . import KNOWN_DTYPES

DTYPES: dict[str, torch.dtype] = {name: getattr(torch, name) for name in KNOWN_DTYPES}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}


def _copy_tensor(t: torch.Tensor, device: Any = None) -> torch.Tensor:
    """A copy with the same sizes and strides (non-contiguous inputs stay so)
    and the same conjugate and negative bits (Note [Lazy bits in samples])."""
    if t.is_conj():
        return _copy_tensor(t.conj(), device).conj()
    if t.is_neg():
        return torch._neg_view(_copy_tensor(torch._neg_view(t), device))
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


# Note [Lazy bits in samples]: x.conj() of a complex tensor (and the imag of
# one, a negative view) is a view with a bit that says "conjugate (negate) me
# when read", which eager's kernels resolve on the way in (the Conjugate and
# Negative dispatch keys) except for the copies and the resolving ops, which
# take the bit themselves. torch.fft's Hermitian transforms hand such a view to
# _fft_c2r. A plain copy to the device resolves the bit on the host, so a
# sample's bit must be carried over (the memory copied, the bit set again on
# the device), or the device's handling of it is never run.
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


def random_tensor(shape: tuple, dtype: torch.dtype, noncontig: bool = False) -> torch.Tensor:
    """A CPU tensor of random values from the CPU generator (seeded by the
    caller, Note [Sample determinism] in samples.py); `noncontig`: a 2-d one
    is the transpose of its reverse shape."""
    if noncontig and len(shape) >= 2:
        t = random_tensor(tuple(reversed(shape)), dtype).t() if len(shape) == 2 else random_tensor(shape, dtype)
        return t
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if dtype.is_floating_point or dtype.is_complex:
        return torch.empty(shape, dtype=dtype).uniform_(-3, 3) if not dtype.is_complex else torch.randn(shape, dtype=dtype)
    lo = 0 if dtype == torch.uint8 else -5
    return torch.randint(lo, 6, shape, dtype=dtype)


def as_leaves(vals: list, idx: list[int]) -> list:
    """`vals` with the tensors at `idx` detached into fresh leaves that require grad."""
    out = list(vals)
    for i in idx:
        out[i] = out[i].detach().requires_grad_(True)
    return out
