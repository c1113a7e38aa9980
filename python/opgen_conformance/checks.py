"""One sample in, one verdict per check out.

A sample is run twice -- on CPU (the reference) and on the device -- and the
two runs are compared by independent checks, so that "wrong dtype" and "wrong
values" show up as different failures:

  errors          CPU raises <=> device raises (both raising passes; nothing else runs)
  invalid_inputs  on inputs CPU refuses, the device raises the same exception class
  values          assert_close of outputs, tolerances of each result's dtype
  extremes        the same on NaN, +-inf, -0.0, min/max, subnormals (pointwise ops)
  dtype           output dtypes equal
  shape           output shapes equal
  device          every output tensor lives on the inputs' device, index included
  device_index    with inputs on device 1 (device 0 current): results there, as on 0
  strides         output strides equal (a warning only: strides are not contract)
  mutation        arguments the schema does not let the op write are unchanged
  inplace         in-place ops return self and mutate it like CPU does
  out             out= ops return `out`, write into it and resize it
  out_nonempty    out= into a wrongly shaped non-empty out and a non-contiguous out
  view            view ops share storage with their base (when CPU's result does)
  gradients       backward on device vs CPU (functional ops, floating dtypes)
  fallback        the device's own kernel ran, not the CPU fallback

invalid_inputs, extremes, device_index and out_nonempty run on probes
(probes.py), samples made for them; the others on ordinary samples.
Verdicts are (status, message) with status one of pass, fail, warn, skip.
Messages never contain addresses or timings, so reruns compare equal.
"""

from __future__ import annotations

import fnmatch
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from .overloads import resolve_overload
from .sample import Sample, derive_seed, empty_outs
from .tensors import DTYPE_NAMES, clone_tree

Verdict = tuple[str, str]

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
)

# DESIGN.md: assert_close defaults; integers and bool exact.
DEFAULT_TOL: dict[torch.dtype, tuple[float, float]] = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}

GRAD_DTYPES = (torch.float32, torch.float64)
_MAX_MSG = 400


def tolerance(
    op: str, dtype: torch.dtype, overrides: list[dict], result: torch.dtype | None = None
) -> tuple[float, float]:
    """Note [Tolerance of the result dtype]: the default is the compared
    result's dtype's, not the task's: an int64 -> float32 op (div, sqrt,
    mean) rounds to float32 and may be an ulp off, and a float -> bool op
    (eq) must be exact. The last override whose op glob and optional dtype
    match the task wins."""
    rtol, atol = DEFAULT_TOL.get(result or dtype, (0.0, 0.0))
    dname = DTYPE_NAMES.get(dtype, str(dtype))
    for o in overrides:
        if not fnmatch.fnmatchcase(op, o.get("op", "*")):
            continue
        if o.get("dtype") not in (None, "*", dname):
            continue
        rtol = float(o.get("rtol", rtol))
        atol = float(o.get("atol", atol))
    return rtol, atol


def _short(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    first = text[0] if text else ""
    # assert_close explains itself on several lines; keep the informative ones
    if isinstance(e, AssertionError) and len(text) > 1:
        first = " ".join(line.strip() for line in text[:4] if line.strip())
    msg = f"{type(e).__name__}: {first}" if first else type(e).__name__
    return msg[:_MAX_MSG]


def nondeterministic(name: str, op: torch._ops.OpOverload) -> bool:
    base = name.partition(".")[0]
    if "empty" in base or base in ("resize_", "resize_as_", "set_"):
        return True
    return torch.Tag.nondeterministic_seeded in op.tags


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
# autograd's gradient of that, per grad_input_mask. float32 and float64.
def _sdpa_checked(query, key, value, attn_bias, dropout_p, is_causal):
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise RuntimeError("expected 4-d query, key and value")
    if key.dtype != query.dtype or value.dtype != query.dtype:
        raise RuntimeError("expected query, key and value of one dtype")
    if query.dtype not in (torch.float32, torch.float64):
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
    s = _sdpa_scores(query, key, attn_bias, is_causal, scale)
    out = (torch.softmax(s, -1) @ value) if key.size(2) > 0 else torch.zeros(*query.shape[:3], value.size(3),
                                                                            dtype=query.dtype)
    empty = torch.empty(0, dtype=torch.int64)
    return (out.contiguous(), torch.logsumexp(s, -1).detach(), empty, empty.clone(), query.size(2), key.size(2),
            empty.clone(), empty.clone(), torch.empty(0, dtype=query.dtype))


@torch.no_grad()  # not differentiable (no derivatives.yaml entry)
def _sdpa_overrideable_backward(grad_out, query, key, value, attn_bias, grad_input_mask, out, logsumexp, cum_seq_q,
                                cum_seq_k, max_q, max_k, dropout_p, is_causal, philox_seed, philox_offset, *,
                                scale=None):
    # attn_bias is a Tensor here, never None: autograd passes an undefined one
    # for no bias, which Python cannot; a causal sample's bias then adds too.
    _sdpa_checked(query, key, value, attn_bias, dropout_p, False)
    with torch.enable_grad():
        inputs = [t.detach().requires_grad_() for t in (query, key, value, attn_bias)]
        s = _sdpa_scores(inputs[0], inputs[1], inputs[3], is_causal, scale)
        o = torch.softmax(s, -1) @ inputs[2]
        grads = torch.autograd.grad(o, inputs, grad_out, allow_unused=True)
    return tuple(
        (g if g is not None else torch.zeros_like(t)).contiguous() if m else None
        for g, t, m in zip(grads, inputs, grad_input_mask)
    )


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
    "_scaled_dot_product_fused_attention_overrideable": _sdpa_overrideable,
    "_scaled_dot_product_fused_attention_overrideable_backward": _sdpa_overrideable_backward,
}


def _call(fn: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(), None
    except Exception as e:  # a kernel's error, reported as error parity
        return None, e


def _compare(dev: Any, ref: Any, rtol: float, atol: float) -> str | None:
    """None when equal, else why not."""
    if isinstance(ref, torch.Tensor):
        if not isinstance(dev, torch.Tensor):
            return f"expected a tensor, got {type(dev).__name__}"
        try:
            d = dev.detach().to("cpu")
            if d.shape != ref.shape:
                return f"shape {list(d.shape)} != expected {list(ref.shape)}"
            if d.dtype != ref.dtype:
                d = d.to(ref.dtype)
            r = ref.detach()
            if r.dtype == torch.complex32:  # eager CPU compares no complex32: compare its parts
                d, r = torch.view_as_real(d), torch.view_as_real(r)
            # fast paths; assert_close (~1 ms) only runs to explain a mismatch
            if d.layout == torch.strided and r.layout == torch.strided:
                if torch.equal(d, r):
                    return None
                if (d.is_floating_point() or d.is_complex()) and bool(
                    torch.isclose(d, r, rtol=rtol, atol=atol, equal_nan=True).all()
                ):
                    return None
            torch.testing.assert_close(
                d, ref.detach(), rtol=rtol, atol=atol, equal_nan=True, check_device=False, check_stride=False
            )
        except Exception as e:
            return _short(e)
        return None
    if isinstance(ref, float) and isinstance(dev, (int, float)):
        if ref != ref and dev != dev:
            return None
        return None if abs(dev - ref) <= atol + rtol * abs(ref) else f"{dev!r} != expected {ref!r}"
    if dev != ref:
        return f"{dev!r} != expected {ref!r}"
    return None


def _specials(dev: Any, ref: Any, atol: float) -> str | None:
    """Note [Extreme values tolerance]: what assert_close's tolerance cannot
    see. NaN and infinities it compares exactly already; -0.0 it takes for
    +0.0, and a value within atol of 0 for 0 -- which is what a kernel that
    flushes subnormals (inputs or results) to zero gives. So eager's -0.0
    must stay -0.0, and where eager's result is nonzero but within atol the
    device's must not be 0 (one subnormal ulp aside: two correct kernels may
    round a result just below the smallest subnormal differently). Precision
    itself stays the values check's: eager's own vectorized float16 paths are
    a few subnormal ulps off."""
    if not (isinstance(ref, torch.Tensor) and ref.is_floating_point() and isinstance(dev, torch.Tensor)):
        return None
    d = dev.detach().to("cpu").to(ref.dtype)
    if d.shape != ref.shape:
        return None
    negative = (ref == 0) & torch.signbit(ref)
    lost = int((negative & ~torch.signbit(d)).sum())
    if lost:
        return f"+0.0 where CPU gives -0.0 ({lost} of {int(negative.sum())})"
    fi = torch.finfo(ref.dtype)
    hidden = (ref != 0) & (ref.abs() <= atol) & (ref.abs() >= 2 * fi.tiny * fi.eps)
    flushed = int((hidden & (d == 0)).sum())
    if flushed:
        return f"0 where CPU gives a nonzero value smaller than {atol:g} ({flushed} of {int(hidden.sum())}): subnormals flushed to zero?"
    return None


def fallback_verdict(name: str, counts: dict[str, int]) -> Verdict:
    """Did the call run on the CPU fallback? The op itself or a sibling overload
    (``cos`` runs ``cos.out`` when only the structured kernel is missing) on the
    fallback fails; other operators on the fallback only warn: a kernel may
    legitimately call operators the backend does not implement."""
    base = name.partition(".")[0].rstrip("_")
    own, other = [], []
    for key, n in sorted(counts.items()):
        if n <= 0:
            continue
        op = key[len("aten::") :] if key.startswith("aten::") else key
        (own if op.partition(".")[0].rstrip("_") == base else other).append(f"{key} x{n}")
    if own:
        return ("fail", "ran on the CPU fallback: " + ", ".join(own))
    if other:
        return ("warn", "called operators that ran on the CPU fallback: " + ", ".join(other))
    return ("pass", "")


def _is_oom(e: BaseException) -> bool:
    """A device allocator's out-of-memory error, or the host allocator's (the
    worker's memory limit, Note [Worker memory limit] in worker.py)."""
    if isinstance(e, MemoryError):
        return True
    m = str(e).lower()
    return "out of memory" in m or "can't allocate memory" in m or "not enough memory" in m


def _out_pairs(couts: dict, douts: dict) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """(name, CPU's, device's) for each out tensor, a list argument's
    element by element as 'out[i]' (Note [List outs])."""
    pairs = []
    for n, d in douts.items():
        c = couts[n]
        if isinstance(d, torch.Tensor):
            pairs.append((n, c, d))
        else:
            pairs += [(f"{n}[{j}]", ct, dt) for j, (ct, dt) in enumerate(zip(c, d))]
    return pairs


def _tensors(x: Any) -> list[torch.Tensor]:
    out: list[torch.Tensor] = []

    def walk(v: Any) -> None:
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, (tuple, list)):
            for e in v:
                walk(e)
        elif isinstance(v, dict):
            for e in v.values():
                walk(e)

    walk(x)
    return out


def _on_cpu(x: Any) -> Any:
    return clone_tree(x, torch.device("cpu"))


@dataclass
class _Call:
    """One call of the overload: its own copies of the arguments and out
    tensors (as they are after the call), and its result or error."""

    args: tuple
    kwargs: dict
    outs: dict = field(default_factory=dict)
    result: Any = None
    error: BaseException | None = None


def _storage_ptr(t: torch.Tensor) -> int:
    try:
        return t.untyped_storage().data_ptr()
    except Exception:
        return -1


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
    ) -> None:
        self.name = name
        self.kind = kind
        self.is_view = is_view
        self.dtype = dtype
        self.dev = device
        self.op = resolve_overload(name)
        self.schema = self.op._schema
        self.overrides = overrides or []
        self.tolerances: dict[torch.dtype, tuple[float, float]] = {}
        self.nondet = nondeterministic(name, self.op)
        self.grad_samples = grad_samples
        self.phase = phase or (lambda _p, _partial=None: None)
        self.write_args = [
            i
            for i, a in enumerate(self.schema.arguments)
            if a.alias_info is not None and a.alias_info.is_write and not a.kwarg_only
        ]
        # probes' bases, judged once per task: id -> (base, why it fails or None)
        self.bases: dict[int, tuple[Sample, str | None]] = {}
        self.probes: dict[str, Callable[[Sample], Verdict]] = {
            "extremes": self._extremes,
            "device_index": self._device_index,
            "invalid_inputs": self._invalid_inputs,
            "out_nonempty": self._out_nonempty,
        }

    @property
    def reference(self) -> Callable[..., Any]:
        """What runs on CPU for the expected result: the overload itself, or
        Note [References eager CPU lacks]'s stand-in."""
        return CPU_REFERENCES.get(self.name, self.op)

    def tol(self, like: Any) -> tuple[float, float]:
        """Tolerances for comparing with `like` (Note [Tolerance of the result dtype])."""
        dtype = like.dtype if isinstance(like, torch.Tensor) else self.dtype
        if dtype not in self.tolerances:
            self.tolerances[dtype] = tolerance(self.name, self.dtype, self.overrides, dtype)
        return self.tolerances[dtype]

    # -- calls ------------------------------------------------------------------

    def _reference(self, s: Sample, outs: dict | None = None) -> _Call:
        # eager CPU itself can crash on odd inputs; the watchdog must not blame the device
        self.phase("reference")
        c = _Call(clone_tree(s.args), clone_tree(s.kwargs), self._outs(s, outs))
        c.result, c.error = _call(lambda: self.reference(*c.args, **c.kwargs, **c.outs))
        return c

    def _device(self, s: Sample, check: str, index: int = 0, outs: dict | None = None) -> _Call:
        self.phase(check)
        to = self.dev.to_device
        c = _Call(to(s.args, index), to(s.kwargs, index), to(self._outs(s, outs), index))
        self.dev.reset_fallback_counts()
        if self.kind in ("inplace", "out", "mutable"):
            # Note [Identity under inference mode]: autograd's kernel for an
            # in-place or out= overload returns its self/out argument whatever
            # the backend's kernel returned, so a kernel returning another
            # tensor is visible only where autograd steps aside. Inference
            # mode does, and changes nothing else these overloads do.
            with torch.inference_mode():
                c.result, c.error = _call(lambda: self.dev.call(self.name, self.op, c.args, {**c.kwargs, **c.outs}))
        else:
            c.result, c.error = _call(lambda: self.dev.call(self.name, self.op, c.args, {**c.kwargs, **c.outs}))
        return c

    @staticmethod
    def _outs(s: Sample, outs: dict | None) -> dict:
        if outs is not None:
            return clone_tree(outs)
        return empty_outs(s)

    def _differences(self, cres: Any, dres: Any, specials: bool = False) -> list[str]:
        """What differs between two results (the device's against CPU's),
        output by output; shapes included, dtypes not (the dtype check's);
        with `specials`, what tolerance hides too (_specials)."""
        cflat, cspec = tree_flatten(cres)
        dflat, dspec = tree_flatten(dres)
        if len(cflat) != len(dflat) or str(cspec) != str(dspec):
            return [f"returned {len(dflat)} values, CPU returns {len(cflat)}"]
        found = []
        for i, (c, d) in enumerate(zip(cflat, dflat)):
            at = f"output {i}: " if len(cflat) > 1 else ""
            rtol, atol = self.tol(c)
            why = _compare(d, c, rtol, atol)
            if why is None and specials:
                why = _specials(d, c, atol)
            if why is not None:
                found.append(at + why)
        return found

    # -- one sample -----------------------------------------------------------

    def run(self, s: Sample, sample_index: int = 0) -> dict[str, Verdict]:
        """Verdicts for one sample. Gradients are checked on the first
        ``grad_samples`` sample indices only -- by index, not by count, so a
        worker that resumes mid-task decides exactly as an uninterrupted one."""
        if s.check:
            return {s.check: self.probes[s.check](s)}
        r: dict[str, Verdict] = {}
        ref = self._reference(s)
        dev = self._device(s, "values")
        counts = self.dev.fallback_counts()
        cerr, derr = ref.error, dev.error

        if cerr is not None and _is_oom(cerr):
            # Eager CPU itself ran out (the worker memory limit counts both): no reference.
            r["errors"] = ("skip", f"the CPU reference ran out of memory ({_short(cerr)}); raise --worker-memory")
            return r
        if cerr is not None and derr is not None:
            r["errors"] = ("pass", "")
            return r
        if cerr is not None:
            r["errors"] = ("fail", f"CPU raises ({_short(cerr)}) but the device returned a result")
            return r
        if derr is not None and _is_oom(derr):
            r["values"] = ("crash", f"out of memory on the device (or over --worker-memory): {_short(derr)}")
            return r
        if derr is not None:
            r["errors"] = ("fail", f"device raised {_short(derr)}; CPU returns a result")
            return r
        r["errors"] = ("pass", "")

        if self.dev.has_fallback_counter:
            r["fallback"] = fallback_verdict(self.name, counts)

        self._outputs(ref.result, dev.result, r)
        self._mutation(s, ref, dev, r)
        if self.kind == "inplace" or self.write_args and self.kind != "out":
            self._inplace(ref.args, dev.args, dev.result, r)
        if self.kind == "out":
            self._out(ref.outs, dev.outs, dev.result, r)
        if self.is_view:
            self._view(ref.args, ref.kwargs, ref.result, _tensors((dev.args, dev.kwargs)), dev.result, r)
        if (
            self.kind in ("functional", "view")
            and self.dtype in GRAD_DTYPES
            and sample_index < self.grad_samples
            and not self.nondet
        ):
            g = self._gradients(s, r)
            if g is not None:
                r["gradients"] = g
        return r

    # -- outputs --------------------------------------------------------------

    def _outputs(self, cres: Any, dres: Any, r: dict[str, Verdict]) -> None:
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
                    why = _compare(d, c, *self.tol(c))
                    if why is not None and d.shape == c.shape:
                        values.append(at + why)
            elif isinstance(c, torch.Tensor) or isinstance(d, torch.Tensor):
                values.append(f"{at}returned {type(d).__name__}, CPU returns {type(c).__name__}")
            elif not self.nondet:
                why = _compare(d, c, *self.tol(c))
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

    def _mutation(self, s: Sample, ref: _Call, dev: _Call, r: dict[str, Verdict]) -> None:
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
            for g, ct, dt in zip(_tensors(given), _tensors(c), _tensors(d)):
                if _compare(ct, g, 0.0, 0.0) is not None:
                    continue
                why = _compare(dt, g, 0.0, 0.0)
                if why is not None:
                    problems.append(f"'{a.name}' was written by the call: {why}")
                    break
        r["mutation"] = ("fail", "; ".join(problems)[:_MAX_MSG]) if problems else ("pass", "")

    def _inplace(self, cargs: tuple, dargs: tuple, dres: Any, r: dict[str, Verdict]) -> None:
        problems: list[str] = []
        idx = self.write_args or [0]
        # In-place foreach overloads (Tensor(a!)[] self) return nothing: only
        # their lists' values are checked.
        if self.kind == "inplace" and self.schema.returns:
            first = dres[0] if isinstance(dres, (tuple, list)) and dres else dres
            if idx[0] < len(dargs) and first is not dargs[idx[0]]:
                problems.append("returned a new tensor instead of self")
        for i in idx:
            if i >= len(cargs) or i >= len(dargs):
                continue
            for ct, dt in zip(_tensors(cargs[i]), _tensors(dargs[i])):
                why = None if self.nondet else _compare(dt, ct, *self.tol(ct))
                if why is not None:
                    name = self.schema.arguments[i].name
                    problems.append(f"'{name}' after the call differs from CPU: {why}")
                    break
        r["inplace"] = ("fail", "; ".join(problems)) if problems else ("pass", "")

    def _out(self, couts: dict, douts: dict, dres: Any, r: dict[str, Verdict]) -> None:
        problems: list[str] = []
        rflat = _tensors(dres)
        for i, (n, ct, dt) in enumerate(_out_pairs(couts, douts)):
            if i < len(rflat) and rflat[i] is not dt:
                problems.append(f"returned a new tensor instead of '{n}'")
            problems += self._out_problems("", n, ct, dt)
        r["out"] = ("fail", "; ".join(problems)[:_MAX_MSG]) if problems else ("pass", "")

    def _out_problems(self, layout: str, n: str, ct: torch.Tensor, dt: torch.Tensor) -> list[str]:
        """What is wrong with the device's out tensor `n` against CPU's."""
        if dt.shape != ct.shape:
            return [f"{layout}'{n}' not resized: shape {list(dt.shape)}, expected {list(ct.shape)}"]
        why = None if self.nondet else _compare(dt, ct, *self.tol(ct))
        return [] if why is None else [f"{layout}'{n}' holds wrong values: {why}"]

    def _view(self, cargs: tuple, ckw: dict, cres: Any, dinputs: list, dres: Any, r: dict[str, Verdict]) -> None:
        cin = {_storage_ptr(t) for t in _tensors((cargs, ckw)) if t.numel() > 0}
        din = {_storage_ptr(t) for t in dinputs if t.numel() > 0}
        problems: list[str] = []
        checked = False
        for i, (c, d) in enumerate(zip(_tensors(cres), _tensors(dres))):
            if c.numel() == 0 or _storage_ptr(c) not in cin:
                continue
            checked = True
            if _storage_ptr(d) not in din:
                problems.append(f"output {i} is a copy, not a view of its input")
        if problems:
            r["view"] = ("fail", "; ".join(problems))
        else:
            r["view"] = ("pass", "") if checked else ("skip", "no aliasing output on CPU for this sample")

    # -- probes -----------------------------------------------------------------

    def _base_fails(self, s: Sample) -> str | None:
        """Note [One fault, one check]: a probe is judged only when the device
        gets its ordinary base sample right (no error, the same results and
        out tensors as CPU). A kernel that is wrong everywhere then fails the
        ordinary checks only, instead of every probe too, and each probe's
        failure means what its check says. The probes of a task share few
        bases; each is judged once (the verdict is deterministic, so a worker
        that resumes mid-task and judges it again agrees)."""
        base = s.meta["base"]
        if id(base) not in self.bases:
            self.bases[id(base)] = (base, self._judge_base(base, s.check))
        return self.bases[id(base)][1]

    def _judge_base(self, base: Sample, check: str) -> str | None:
        ref = self._reference(base)
        dev = self._device(base, check)
        if dev.error is not None:
            return f"the device raises on the sample this one derives from ({_short(dev.error)}; see errors)"
        wrong = self._differences(ref.result, dev.result)
        if self.kind == "out":
            wrong += self._differences(list(ref.outs.values()), list(dev.outs.values()))
        if wrong and not self.nondet:
            return f"the device gets the sample this one derives from wrong ({wrong[0]}; see values)"
        return None

    def _extremes(self, s: Sample) -> Verdict:
        """The results, compared as values does and then by the rules of
        Note [Extreme values tolerance]."""
        why = self._base_fails(s)
        if why is not None:
            return ("skip", why)
        ref = self._reference(s)
        dev = self._device(s, "extremes")
        if ref.error is not None:
            return ("skip", f"CPU raises on these values ({_short(ref.error)})")
        if dev.error is not None:
            return ("fail", f"device raised {_short(dev.error)}; CPU returns a result")
        problems = self._differences(ref.result, dev.result, specials=True)
        return ("fail", "; ".join(problems)[:_MAX_MSG]) if problems else ("pass", "")

    def _device_index(self, s: Sample) -> Verdict:
        """The sample on device 1 while device 0 is current: a kernel that
        allocates on the current device, or runs there, or leaves device 1
        current, passes every sample on device 0. Its results are compared
        with the same sample's on device 0 (values compares those with CPU)."""
        n = self.dev.device_count()
        if n < 2:
            return ("skip", f"the device has {n} device; this check needs 2")
        zero = self._device(s, "device_index")
        if zero.error is not None:
            return ("skip", f"the device raises on this sample ({_short(zero.error)}; see errors)")
        one = self._device(s, "device_index", index=1)
        problems: list[str] = []
        current = self.dev.current_index()
        if current != 0:
            problems.append(f"the call left device {current} current, not 0")
            self.dev.set_current(0)
        if one.error is not None:
            problems.append(f"raised {_short(one.error)} with inputs on device 1")
            return ("fail", "; ".join(problems))
        for i, t in enumerate(_tensors(one.result)):
            if t.device.type == self.dev.device.type and self.dev.index_of(t) != 1:
                problems.append(f"output {i} on device {self.dev.index_of(t)}, inputs on device 1")
        if not self.nondet:
            problems += [f"differs from device 0: {p}" for p in self._differences(_on_cpu(zero.result), one.result)]
        return ("fail", "; ".join(problems)[:_MAX_MSG]) if problems else ("pass", "")

    def _invalid_inputs(self, s: Sample) -> Verdict:
        """The device must refuse what eager CPU refuses, with an exception
        that code catching eager's catches: of its class or a subclass (eager
        checks the out dtype and raises RuntimeError where a kernel that
        checks its inputs first raises NotImplementedError, one of those)."""
        why = self._base_fails(s)
        if why is not None:
            return ("skip", why)
        ref = self._reference(s)
        if ref.error is None or _is_oom(ref.error):
            return ("skip", "CPU does not refuse these inputs")
        dev = self._device(s, "invalid_inputs")
        if dev.error is None:
            return ("fail", f"returned a result; CPU raises {_short(ref.error)}")
        if _is_oom(dev.error):
            return ("crash", f"out of memory on the device (or over --worker-memory): {_short(dev.error)}")
        if not isinstance(dev.error, type(ref.error)):
            return ("fail", f"raised {_short(dev.error)}; CPU raises {_short(ref.error)}")
        return ("pass", "")

    def _out_nonempty(self, s: Sample) -> Verdict:
        """Whether out= returns `out` is the out check's; this one judges what
        ends up in an out that was not empty. Eager is the reference only
        where it agrees with itself: its gelu.out leaves a non-contiguous out
        unwritten, and what it writes into an empty out is the answer."""
        why = self._base_fails(s)
        if why is not None:
            return ("skip", why)
        layout = {"wrong-shape": "wrongly shaped out", "noncontig": "non-contiguous out"}[s.meta["layout"]]
        ref = self._reference(s, s.meta["outs"])
        if ref.error is not None:
            return ("skip", f"CPU raises with a {layout} ({_short(ref.error)})")
        empty = self._reference(s.meta["base"])
        if not self.nondet and self._differences(list(empty.outs.values()), list(ref.outs.values())):
            return ("skip", f"eager CPU writes a {layout} other than an empty one: no reference")
        dev = self._device(s, "out_nonempty", outs=s.meta["outs"])
        if dev.error is not None:
            return ("fail", f"{layout}: device raised {_short(dev.error)}; CPU writes it")
        problems: list[str] = []
        for n, ct, dt in _out_pairs(ref.outs, dev.outs):
            problems += self._out_problems(f"{layout} ", n, ct, dt)
        return ("fail", "; ".join(problems)[:_MAX_MSG]) if problems else ("pass", "")

    # -- gradients ------------------------------------------------------------

    def _gradients(self, s: Sample, forward: dict[str, Verdict]) -> Verdict | None:
        flat, spec = tree_flatten((clone_tree(s.args), clone_tree(s.kwargs)))
        idx = [i for i, v in enumerate(flat) if isinstance(v, torch.Tensor) and v.is_floating_point()]
        if not idx:
            return None
        base = [v for v in flat]

        def leaves(vals: list) -> list:
            out = list(vals)
            for i in idx:
                out[i] = out[i].detach().requires_grad_(True)
            return out

        cflat = leaves(base)
        ca, ckw = tree_unflatten(cflat, spec)
        cout, err = _call(lambda: self.reference(*ca, **ckw))
        if err is not None:
            return None
        call = _tensors(cout)
        mask = [o.requires_grad and o.is_floating_point() for o in call]
        couts = [o for o, m in zip(call, mask) if m]
        if not couts:
            return None
        gen = torch.Generator().manual_seed(derive_seed("grad", self.name))
        gos = [torch.randn(o.shape, dtype=o.dtype, generator=gen) for o in couts]
        cl = [cflat[i] for i in idx]
        cg, err = _call(lambda: torch.autograd.grad(couts, cl, gos, allow_unused=True))
        if err is not None:
            return None

        # the forward verdicts go with the phase change: a crash in backward
        # must not lose what the forward checks already found
        self.phase("gradients", forward)
        dflat = leaves(list(self.dev.to_device(base)))
        da, dkw = tree_unflatten(dflat, spec)
        dout, err = _call(lambda: self.dev.call(self.name, self.op, da, dkw))
        if err is not None:
            return ("fail", f"device forward with requires_grad raised {_short(err)}")
        dall = _tensors(dout)
        if len(dall) != len(call):
            return ("fail", f"device forward returned {len(dall)} tensors with requires_grad, CPU {len(call)}")
        douts = [o for o, m in zip(dall, mask) if m]
        if not all(o.requires_grad for o in douts):
            return ("fail", "device outputs do not require grad; autograd is not wired for this op")
        dgos = [self.dev.to_device(g) for g in gos]
        dl = [dflat[i] for i in idx]
        dg, err = _call(lambda: torch.autograd.grad(douts, dl, dgos, allow_unused=True))
        if err is not None:
            return ("fail", f"device backward raised {_short(err)}")
        problems = []
        for k, (c, d) in enumerate(zip(cg, dg)):
            if c is None and d is None:
                continue
            if c is None or d is None:
                problems.append(f"grad of input {k}: {'missing' if d is None else 'unexpected'}")
                continue
            rtol, atol = self.tol(c)
            why = _compare(d, c, max(rtol, 1e-5) * 10, max(atol, 1e-5) * 10)
            if why is not None:
                problems.append(f"grad of input {k}: {why}")
        return ("fail", "; ".join(problems)[:_MAX_MSG]) if problems else ("pass", "")
