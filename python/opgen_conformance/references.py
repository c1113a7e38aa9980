"""The CPU references eager CPU lacks: what runs on CPU for the expected
result of an overload that has no CPU kernel (Note [References eager CPU
lacks]) or whose CPU kernel refuses what CUDA's accepts (Note [CUDA
semantics]). checks.py calls them in the overload's place; the hand-made sample
source (sources/handmade.py) runs the fused attention's to make its
backward's samples.
"""

from __future__ import annotations

from typing import Any, Callable

import torch


def _copy_from(self: torch.Tensor, dst: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    return dst.copy_(self, non_blocking)


def _copy_from_and_resize(self: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    return dst.resize_(self.shape).copy_(self)


# Note [References eager CPU lacks]: a few overloads exist only for backends
# other than CPU. copy_ calls _copy_from when source and destination are on
# different backends (never both on CPU), and out= resizing calls
# _copy_from_and_resize likewise. Eager CPU has no kernel for them, so their
# reference is what copy_ means: the destination, now holding self's values
# (resized first for _copy_from_and_resize).
# The fused recurrent cells (_thnn_fused_*) have CUDA kernels only: their
# reference is CUDA's kernels' math in torch ops (aten/src/ATen/native/cuda/
# RNN.cu), computed in float for the half types and rounded once, with
# CUDA's workspace layout (LSTM: i, f, g, o; GRU: r, z, n, hx, hn + b_hn) and
# checks (2-d gates of equal shape, 1-d biases of a gate row's length, the
# state batch x H). Their autograd is derivatives.yaml's: the workspaces are
# not differentiable (LSTM's by output_differentiability; GRU's formula uses
# `grad`, its first output's gradient, only), and the backward ops not at all.
def _contiguous_results(fn: Callable[..., Any]) -> Callable[..., Any]:
    """fn with contiguous results, as CUDA allocates them (LEGACY_CONTIGUOUS)."""

    def run(*args: Any, **kwargs: Any) -> Any:
        return tuple(r.contiguous() if isinstance(r, torch.Tensor) else r for r in fn(*args, **kwargs))

    return run


def _opmath(t: torch.Tensor | None) -> torch.Tensor | None:
    return t.float() if t is not None and t.dtype in (torch.float16, torch.bfloat16) else t


def _cell_inputs(input_gates, hidden_gates, prev, input_bias, hidden_bias, factor):
    if input_gates.dim() != 2 or hidden_gates.shape != input_gates.shape:
        raise RuntimeError("gates must be 2-d and of one shape")
    if input_bias is not None and (
        input_bias.dim() != 1 or input_bias.numel() != input_gates.size(1) or hidden_bias is None
        or hidden_bias.shape != input_bias.shape
    ):
        raise RuntimeError("biases must be 1-d with a gate row's length")
    if prev.dim() != 2 or prev.numel() * factor != input_gates.numel():
        raise RuntimeError("the previous state must be 2-d, batch x hidden")
    for t in (hidden_gates, prev, input_bias, hidden_bias):
        if t is not None and t.dtype != input_gates.dtype:
            raise RuntimeError("expected operands of one dtype")
    if not input_gates.is_floating_point():
        raise NotImplementedError(f"not implemented for '{input_gates.dtype}'")
    g = _opmath(input_gates) + _opmath(hidden_gates)
    if input_bias is not None:
        g = g + _opmath(input_bias) + _opmath(hidden_bias)
    return g


def _thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    dt = input_gates.dtype
    gates = _cell_inputs(input_gates, hidden_gates, cx, input_bias, hidden_bias, 4)
    if cx.numel() == 0:  # CUDA's shapes, nothing computed
        return torch.empty_like(cx), torch.empty_like(cx), torch.empty_like(input_gates)
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * _opmath(cx) + i * g
    hy = o * cy.tanh()
    return hy.to(dt), cy.to(dt), torch.cat([i, f, g, o], 1).to(dt).detach()


@torch.no_grad()  # not differentiable (no derivatives.yaml entry)
def _thnn_fused_lstm_cell_backward_impl(grad_hy, grad_cy, cx, cy, workspace, has_bias):
    if grad_hy is None and grad_cy is None:
        return None, None, None
    dt = workspace.dtype
    if not workspace.is_floating_point():
        raise NotImplementedError(f"not implemented for '{dt}'")
    if cx.numel() == 0:
        grad_gates = torch.empty_like(workspace)
        return grad_gates, torch.empty_like(cx), grad_gates.sum(0) if has_bias else None
    i, f, g, o = _opmath(workspace).view(cx.size(0), 4 * cx.size(1)).chunk(4, 1)
    zeros = torch.zeros_like(_opmath(cx))
    go = _opmath(grad_hy) if grad_hy is not None else zeros
    t = _opmath(cy).tanh()
    gc = go * o * (1 - t * t) + (_opmath(grad_cy) if grad_cy is not None else zeros)
    grad_gates = torch.cat(
        [gc * g * (1 - i) * i, gc * _opmath(cx) * (1 - f) * f, gc * i * (1 - g * g), go * t * (1 - o) * o], 1
    ).to(dt)
    return grad_gates, (gc * f).to(dt), grad_gates.sum(0) if has_bias else None


def _thnn_fused_gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    dt = input_gates.dtype
    _cell_inputs(input_gates, hidden_gates, hx, input_bias, hidden_bias, 3)
    if hx.numel() == 0:
        return torch.empty_like(hx), torch.empty(hx.size(0), hx.size(1) * 5, dtype=dt)
    ir, iz, in_ = _opmath(input_gates).chunk(3, 1)
    hr, hz, hn = _opmath(hidden_gates).chunk(3, 1)
    if input_bias is not None:
        b1r, b1z, b1n = _opmath(input_bias).chunk(3)
        b2r, b2z, b2n = _opmath(hidden_bias).chunk(3)
        r, z = (ir + hr + b1r + b2r).sigmoid(), (iz + hz + b1z + b2z).sigmoid()
        hn, in_ = hn + b2n, in_ + b1n
    else:
        r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (in_ + r * hn).tanh()
    hy = n + z * (_opmath(hx) - n)
    workspace = torch.cat([r.to(dt), z.to(dt), n.to(dt), hx, hn.to(dt)], 1)
    return hy.to(dt), workspace.detach()


@torch.no_grad()  # not differentiable (no derivatives.yaml entry)
def _thnn_fused_gru_cell_backward(grad_hy, workspace, has_bias):
    dt = grad_hy.dtype
    if grad_hy.dim() != 2 or workspace.shape != (grad_hy.size(0), grad_hy.size(1) * 5):
        raise RuntimeError("workspace must be batch x 5 * hidden")
    if not grad_hy.is_floating_point() or workspace.dtype != dt:
        raise NotImplementedError(f"not implemented for '{dt}'")
    if grad_hy.numel() == 0:
        gi = torch.empty(workspace.size(0), workspace.size(1) // 5 * 3, dtype=dt)
        gh = torch.empty_like(gi)
        return gi, gh, torch.empty_like(grad_hy), gi.sum(0) if has_bias else None, gh.sum(0) if has_bias else None
    r, z, n, x, hn = _opmath(workspace).chunk(5, 1)
    go = _opmath(grad_hy)
    gz = go * (x - n) * (1 - z) * z
    gn = go * (1 - z) * (1 - n * n)
    gr = gn * hn * (1 - r) * r
    gi = torch.cat([gr, gz, gn], 1).to(dt)
    gh = torch.cat([gr, gz, gn * r], 1).to(dt)
    return gi, gh, (go * z).to(dt), gi.sum(0) if has_bias else None, gh.sum(0) if has_bias else None


# The fused attention a PrivateUse1 device offers
# (_scaled_dot_product_fused_attention_overrideable and its backward) has no
# CPU kernel: eager CPU raises NotImplementedError. Its reference is the
# attention it computes, in torch ops: softmax(scale * q @ k^T + attn_bias,
# causal keys above the diagonal at -inf) @ v, logsumexp over keys, empty
# cum_seq/philox/debug tensors, max_q = L and max_k = S; the backward is
# autograd's gradient of that, per grad_input_mask. float32 and float64, and
# float16/bfloat16 computed in float32 with out and the gradients rounded to
# the input dtype at the end and logsumexp kept in float32, as the reference
# device does it (Note [Half-precision attention] in backends/ref's
# aten/Attention.cpp) and eager's math path computes the half types.
_SDPA_HALF = (torch.float16, torch.bfloat16)
def _sdpa_checked(query, key, value, attn_bias, dropout_p, is_causal):
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise RuntimeError("expected 4-d query, key and value")
    if key.dtype != query.dtype or value.dtype != query.dtype:
        raise RuntimeError("expected query, key and value of one dtype")
    if query.dtype not in (torch.float32, torch.float64, *_SDPA_HALF):
        raise NotImplementedError(f"not implemented for '{query.dtype}'")
    if key.shape[:2] != query.shape[:2] or value.shape[:2] != query.shape[:2] or key.size(3) != query.size(3) \
            or value.size(2) != key.size(2):
        raise RuntimeError("query, key and value shapes do not match")
    if attn_bias is not None:
        torch.broadcast_shapes(attn_bias.shape, (*query.shape[:3], key.size(2)))
        if attn_bias.dim() > 4:
            raise RuntimeError("attn_bias must broadcast to (B, H, L, S)")
    if dropout_p != 0.0:
        raise NotImplementedError("no dropout")
    if is_causal and attn_bias is not None:
        raise RuntimeError("Explicit attn_mask should not be set when is_causal=True")


def _sdpa_scores(query, key, attn_bias, is_causal, scale):
    s = (query @ key.transpose(-2, -1)) * (scale if scale is not None else query.size(-1) ** -0.5)
    if attn_bias is not None:
        s = s + attn_bias.to(s.dtype)
    if is_causal:
        above = torch.ones(query.size(2), key.size(2), dtype=torch.bool).triu(1)
        s = s.masked_fill(above, float("-inf"))
    return s


def _sdpa_overrideable(query, key, value, attn_bias=None, dropout_p=0.0, is_causal=False, return_debug_mask=False,
                       *, scale=None):
    _sdpa_checked(query, key, value, attn_bias, dropout_p, is_causal)
    if return_debug_mask:
        raise NotImplementedError("return_debug_mask")
    dtype = query.dtype
    if dtype in _SDPA_HALF:
        query, key, value = query.float(), key.float(), value.float()
    s = _sdpa_scores(query, key, attn_bias, is_causal, scale)
    out = (torch.softmax(s, -1) @ value) if key.size(2) > 0 else torch.zeros(*query.shape[:3], value.size(3),
                                                                            dtype=query.dtype)
    empty = torch.empty(0, dtype=torch.int64)
    # Laid out as the op's meta kernel promises (Note [Attention layouts] in
    # the reference backend's aten/Attention.cpp): the output in the query's
    # order of dims, 0-dim philox seed and offset.
    from torch._meta_registrations import alloc_with_matching_layout

    res = alloc_with_matching_layout(query.to(dtype), (*query.shape[:3], value.size(3))).copy_(out.to(dtype))
    seed = torch.empty((), dtype=torch.int64)
    return (res, torch.logsumexp(s, -1).detach().float(), empty, empty.clone(), query.size(2),
            key.size(2), seed, seed.clone(), torch.empty(0, dtype=dtype))


@torch.no_grad()  # not differentiable (no derivatives.yaml entry)
def _sdpa_overrideable_backward(grad_out, query, key, value, attn_bias, grad_input_mask, out, logsumexp, cum_seq_q,
                                cum_seq_k, max_q, max_k, dropout_p, is_causal, philox_seed, philox_offset, *,
                                scale=None):
    # attn_bias is a Tensor here, never None: autograd passes an undefined one
    # for no bias, which Python cannot; a causal sample's bias then adds too.
    _sdpa_checked(query, key, value, attn_bias, dropout_p, False)
    originals = (query, key, value, attn_bias)
    up = (lambda t: t.float()) if query.dtype in _SDPA_HALF else (lambda t: t)
    with torch.enable_grad():
        inputs = [up(t).detach().requires_grad_() for t in originals[:3]] + [attn_bias.detach().requires_grad_()]
        s = _sdpa_scores(inputs[0], inputs[1], inputs[3], is_causal, scale)
        o = torch.softmax(s, -1) @ inputs[2]
        grads = torch.autograd.grad(o, inputs, up(grad_out), allow_unused=True)
    return tuple(
        (g.to(t.dtype) if g is not None else torch.zeros_like(t)).contiguous() if m else None
        for g, t, m in zip(grads, originals, grad_input_mask)
    )


# Note [CUDA semantics]: where downstream code relies on CUDA's behaviour
# that eager CPU lacks, a device does what CUDA does, and the reference is
# CUDA's rule computed on CPU. torch.histc of an integer tensor is one:
# eager CPU refuses it ("histogram_cpu" not implemented for 'Int'), CUDA
# counts it, and transformers' MoE routing calls it on int32 expert ids on
# every device but cpu and mps. CUDA's rule (_histc_cuda): the bounds
# truncated to integers, min == max widened to the data's extremes and then
# by one each side, max > min, and bin = (x - min) * bins // (max - min) in
# int64, x == max in the last bin; the result has the input's dtype. The
# reference runs eager CPU's histc on the input as float64 with those
# bounds, which bins exactly as the integer division does while
# |x - min| * bins < 2**52, and casts the counts back. Floating and bool
# inputs get eager CPU's histc itself. README.md "CUDA semantics" lists
# every such case.
def _histc(self, bins=100, min=0, max=0):
    if self.is_floating_point() or self.is_complex() or self.dtype == torch.bool:
        return torch.ops.aten.histc.default(self, bins, min, max)
    if bins <= 0:
        raise RuntimeError("bins must be > 0")
    try:
        lo, hi = int(min), int(max)
    except (ValueError, OverflowError) as e:
        raise RuntimeError(f"value cannot be converted to type int64_t without overflow: {e}") from None
    if lo == hi and self.numel() > 0:
        lo, hi = int(self.min()), int(self.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not lo < hi:
        raise RuntimeError("max must be larger than min")
    return torch.ops.aten.histc.default(self.double(), bins, lo, hi).to(self.dtype)


def _histc_out(self, bins=100, min=0, max=0, *, out):
    if self.is_floating_point() or self.is_complex() or self.dtype == torch.bool:
        return torch.ops.aten.histc.out(self, bins, min, max, out=out)
    r = _histc(self, bins, min, max)
    return out.resize_(r.shape).copy_(r)  # CUDA's _histc_out_cuda


def _into_outs(fn: Callable[..., Any]) -> Callable[..., Any]:
    """fn's results copied into its out= variant's outs (out0, out1, ...)."""

    def run(*args: Any, **kwargs: Any) -> Any:
        names = sorted(k for k in kwargs if k.startswith("out"))
        outs = [kwargs.pop(k) for k in names]
        for o, r in zip(outs, fn(*args, **kwargs)):
            o.resize_(r.shape).copy_(r)
        return tuple(outs)

    return run


CPU_REFERENCES: dict[str, Callable[..., Any]] = {
    "_copy_from": _copy_from,
    "_copy_from_and_resize": _copy_from_and_resize,
    "_thnn_fused_lstm_cell": _contiguous_results(_thnn_fused_lstm_cell),
    "_thnn_fused_lstm_cell.out": _into_outs(_thnn_fused_lstm_cell),
    "_thnn_fused_lstm_cell_backward_impl": _contiguous_results(_thnn_fused_lstm_cell_backward_impl),
    "_thnn_fused_lstm_cell_backward_impl.out": _into_outs(_thnn_fused_lstm_cell_backward_impl),
    "_thnn_fused_gru_cell": _contiguous_results(_thnn_fused_gru_cell),
    "_thnn_fused_gru_cell.out": _into_outs(_thnn_fused_gru_cell),
    "_thnn_fused_gru_cell_backward": _contiguous_results(_thnn_fused_gru_cell_backward),
    "_thnn_fused_gru_cell_backward.out": _into_outs(_thnn_fused_gru_cell_backward),
    "histc": _histc,
    "histc.out": _histc_out,
    "_scaled_dot_product_fused_attention_overrideable": _sdpa_overrideable,
    "_scaled_dot_product_fused_attention_overrideable_backward": _sdpa_overrideable_backward,
}
