"""The hand-made sample source: valid calls written by hand for the
overloads whose arguments relate in ways neither OpInfo (no sample reaches
them, even deep) nor the schema (its uniform shapes make only invalid calls)
covers -- the fused recurrent cells, col2im, embedding_bag, the FFT
primitives, the fused attention, list-of-scalars foreach ops, view_as_real
and weight norm's fused interface. Floating dtypes only, where eager CPU
takes them; an overload with a hand-made entry gets no schema samples.

The ill-conditioned samples of the norms and the variance (Note
[Ill-conditioned samples]) are hand-made too, and come in addition to the
overload's other samples.
"""

from __future__ import annotations

from typing import Callable

import torch

from ..overloads import out_arg_names, schema_of
from ..sample import Sample
from ..tensors import DTYPE_NAMES, random_tensor

# Note [Samples of the fused cells]: the recurrent cells' arguments relate
# (gates B x G*H, the state B x H, biases G*H, a workspace B x 4H or 5H), so
# the schema's uniform shapes only reach their argument checks, and no OpInfo
# reaches them on CPU (eager CPU has no kernel: the reference is
# references.py's). Their samples are made here: B = 3, H = 4, with and without
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
            state = [random_tensor((b, h), dtype, noncontig=nc) for _ in range(4)]  # grad_hy, grad_cy, cx, cy
            ws = random_tensor((b, 4 * h), dtype, noncontig=nc)
            found.append(((state[0], state[1], state[2], state[3], ws, bias), variant))
            if variant == "cell":
                found.append(((state[0], None, state[2], state[3], ws, bias), "cell-no-grad-cy"))
                found.append(((None, state[1], state[2], state[3], ws, bias), "cell-no-grad-hy"))
        elif base == "_thnn_fused_gru_cell_backward":
            found.append(((random_tensor((b, h), dtype, noncontig=nc), random_tensor((b, 5 * h), dtype, noncontig=nc), bias), variant))
        else:
            ig, hg = random_tensor((b, gates * h), dtype, noncontig=nc), random_tensor((b, gates * h), dtype, noncontig=nc)
            biases = (random_tensor((gates * h,), dtype), random_tensor((gates * h,), dtype)) if bias else (None, None)
            found.append(((ig, hg, random_tensor((b, h), dtype, noncontig=nc)) + biases, variant))
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
        ((random_tensor((2, 3 * 2 * 2, 12), dt), [4, 5], [2, 2], [1, 1], [0, 0], [1, 1]), "col2im"),
        ((random_tensor((3 * 2 * 2, 12), dt, noncontig=True), [4, 5], [2, 2], [1, 1], [0, 0], [1, 1]), "col2im-unbatched"),
        ((random_tensor((1, 2 * 3 * 3, 9), dt), [5, 5], [3, 3], [1, 1], [1, 1], [2, 2]), "col2im-stride-padding"),
    ]


def _embedding_bag(dt: torch.dtype) -> list[tuple[tuple, str]]:
    w, idx, off = random_tensor((10, 3), dt), torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 3, 3, 6])
    found = [((w, idx, off, False, mode), f"bag-mode{mode}") for mode in (0, 1, 2)]  # sum, mean, max; an empty bag
    found.append(((w, idx, off, False, 0, False, random_tensor((8,), dt)), "bag-per-sample-weights"))
    found.append(((w, idx, torch.tensor([0, 3, 6, 8]), False, 1, False, None, True), "bag-include-last-offset"))
    return found


def _foreach_lists(dt: torch.dtype, n: int) -> list[list[torch.Tensor]]:
    return [[random_tensor((3,), dt), random_tensor((2, 2), dt, noncontig=True)] for _ in range(n)]


# The FFT primitives take their signal in the task's real precision: real
# for _fft_r2c, complex of that precision (float32 -> complex64) for
# _fft_c2c and _fft_c2r, whose schemas alone make only real (refused)
# inputs and whose OpInfo samples reach them only from complex ones. Lengths
# cover radix 2 and 4, other small primes and a large prime (97, Bluestein's
# algorithm in the reference backend), several dims, every normalization,
# both onesided modes and strided signals, and conjugated views (x.conj(),
# Note [Lazy bits in samples] in tensors.py): hfft, hfft2 and hfftn hand
# _fft_c2r the conjugate of their (c2c-transformed) signal as a view, whose
# bit the device must honour. Eager CPU has no half FFT: the half types get
# their real signal, which both sides refuse.
def _fft_signal(shape: tuple, dt: torch.dtype, complex_: bool, transposed: bool = False) -> torch.Tensor:
    cdt = dt.to_complex() if complex_ and dt in (torch.float32, torch.float64) else dt
    if transposed:
        return random_tensor(tuple(reversed(shape)), cdt).permute(*reversed(range(len(shape))))
    return random_tensor(shape, cdt)


def _conj(t: torch.Tensor) -> torch.Tensor:
    """The conjugated view of a complex signal; a real one (the half types') as it is."""
    return t.conj() if t.is_complex() else t


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
        ((_conj(c((4, 6))), [0, 1], 2, True), "c2c-conj"),
    ]


def _fft_c2r(dt: torch.dtype) -> list[tuple[tuple, str]]:
    c = lambda shape, t=False: _fft_signal(shape, dt, True, t)  # noqa: E731
    return [
        ((c((3, 7)), [1], 0, 12), "c2r-even"),
        ((c((2, 49)), [1], 2, 97), "c2r-prime"),
        ((c((4, 5, 3)), [0, 2], 1, 5), "c2r-2d"),
        ((c((6, 4), True), [1], 0, 7), "c2r-strided"),
        # hfft's and hfftn's last step: the conjugated signal, normalized forward
        ((_conj(c((4, 6))), [1], 2, 10), "c2r-conj"),
        ((_conj(c((3, 5, 4))), [2], 1, 7), "c2r-conj-odd"),
        ((_conj(c((8, 5), True)), [0], 0, 14), "c2r-conj-strided"),
    ]


# Weight norm's fused interface takes v with g (and the saved norms) of one
# element per index along dim, which must be v's first or last: the
# schema's uniform shapes make only invalid calls, and its empty ones crash
# eager CPU (a division by zero in its kernel). Contiguous v only, as
# _weight_norm passes it (eager's kernel reads v's memory as contiguous);
# the backward gets eager's own norms for v and g.
def _weight_norm_cases(dt: torch.dtype) -> list[tuple[torch.Tensor, torch.Tensor, int, str]]:
    return [
        (random_tensor((6, 3, 5), dt), random_tensor((6, 1, 1), dt), 0, "weight-norm-dim0"),
        (random_tensor((6, 3, 5), dt), random_tensor((1, 1, 5), dt), 2, "weight-norm-last"),
        (random_tensor((4, 7), dt), random_tensor((7,), dt), 1, "weight-norm-last-1d-g"),
        (random_tensor((5,), dt), random_tensor((5,), dt), 0, "weight-norm-vector"),
        (random_tensor((4, 0, 3), dt), random_tensor((4, 1, 1), dt), 0, "weight-norm-empty"),
    ]


def _weight_norm(dt: torch.dtype) -> list[tuple[tuple, str]]:
    return [((v, g, dim), variant) for v, g, dim, variant in _weight_norm_cases(dt)]


def _weight_norm_backward(dt: torch.dtype) -> list[tuple[tuple, str]]:
    found = []
    for v, g, dim, variant in _weight_norm_cases(dt):
        norms = torch.ops.aten._weight_norm_interface(v, g, dim)[1]
        found.append(((random_tensor(tuple(v.shape), dt), v, g, norms, dim), variant))
    return found


# The fused attention (eager CPU's reference: references.py's): q (B, H, L, E),
# k (B, H, S, E), v (B, H, S, Ev) with L != S and E != Ev, a bias that
# broadcasts, the causal mask, strided inputs; the backward gets the
# forward's outputs and every grad_input_mask the derivative formula sends.
def _sdpa_inputs(dt: torch.dtype, noncontig: bool = False) -> tuple[torch.Tensor, ...]:
    def make(shape):
        return random_tensor(shape, dt).transpose(1, 2).contiguous().transpose(1, 2) if noncontig else random_tensor(shape, dt)

    return make((2, 3, 5, 8)), make((2, 3, 7, 8)), make((2, 3, 7, 4))


def _sdpa(dt: torch.dtype) -> list[tuple[tuple, str]]:
    q, k, v = _sdpa_inputs(dt)
    return [
        ((q, k, v), "sdpa"),
        ((q, k, v, random_tensor((3, 1, 7), dt)), "sdpa-bias-broadcast"),
        ((q, k, v, None, 0.0, True), "sdpa-causal"),
        (_sdpa_inputs(dt, noncontig=True), "sdpa-strided"),
    ]


def _sdpa_backward(dt: torch.dtype) -> list[tuple[tuple, str]]:
    if dt not in (torch.float32, torch.float64):
        q, k, v = _sdpa_inputs(dt)
        e = torch.empty(0, dtype=torch.int64)
        return [((random_tensor((2, 3, 5, 4), dt), q, k, v, random_tensor((5, 7), dt), [True] * 4, random_tensor((2, 3, 5, 4), dt),
                  random_tensor((2, 3, 5), dt), e, e, 5, 7, 0.0, False, e, e), "sdpa-backward")]
    from ..references import CPU_REFERENCES

    forward = CPU_REFERENCES["_scaled_dot_product_fused_attention_overrideable"]
    found = []
    for variant, bias, causal, mask in (("sdpa-backward", (5, 7), False, [True, True, True, True]),
                                        ("sdpa-backward-broadcast-bias", (3, 1, 7), False, [True, False, True, True]),
                                        ("sdpa-backward-causal", (1,), True, [True, True, True, False])):
        q, k, v = _sdpa_inputs(dt)
        b = random_tensor(bias, dt)
        out, lse, cq, ck, mq, mk, ps, po, _ = forward(q, k, v, None if causal else b, 0.0, causal)
        found.append(((random_tensor(tuple(out.shape), dt), q, k, v, b, mask, out, lse, cq, ck, mq, mk, 0.0, causal, ps, po),
                      variant))
    return found


# view_as_real views a complex tensor: the task's real precision names the
# complex one (float32 -> complex64), as for the FFT signals; a sliced
# signal keeps a unit last stride with a storage offset, which the view keeps.
def _view_as_real(dt: torch.dtype) -> list[tuple[tuple, str]]:
    c = lambda shape: _fft_signal(shape, dt, True)  # noqa: E731
    return [((c((3, 4)),), "complex"), ((c((4, 6))[1:, ::2],), "complex-sliced"), ((c(()),), "complex-0d")]


# _index_put_impl_ is what eager's index_put_ (CompositeExplicitAutograd)
# calls inside its kernel, so no traced call reaches it: repeated indices
# with and without accumulate, two index tensors, a None before an index,
# and a bool mask with a one-element value (eager's masked_fill_ path) and
# with accumulate.
def _index_put_impl(dt: torch.dtype) -> list[tuple[tuple, str]]:
    x = lambda: random_tensor((5, 3), dt)  # noqa: E731
    mask = torch.tensor([[True, False, True], [False, False, False], [True, True, False], [False, True, False],
                         [False, False, True]])
    return [
        ((x(), [torch.tensor([0, 2, 0, 4])], random_tensor((4, 3), dt), True, False), "put-accumulate-repeated"),
        ((x(), [torch.tensor([4, 1, -1])], random_tensor((3, 3), dt), False, False), "put"),
        ((x(), [torch.tensor([1, 0, 1]), torch.tensor([2, 2, 0])], random_tensor((3,), dt), True, False),
         "put-two-indices"),
        ((x(), [None, torch.tensor([2, 0])], random_tensor((5, 2), dt), False, False), "put-none-first"),
        ((x(), [mask], random_tensor((), dt), False, False), "put-mask-fill"),
        ((x(), [mask], random_tensor((1,), dt), True, False), "put-mask-accumulate"),
    ]


_HANDMADE: dict[str, Callable[[torch.dtype], list[tuple[tuple, str]]]] = {
    "view_as_real": _view_as_real,
    "col2im": _col2im,
    "_embedding_bag": _embedding_bag,
    "_index_put_impl_": _index_put_impl,
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
    "_weight_norm_interface": _weight_norm,
    "_weight_norm_interface_backward": _weight_norm_backward,
}



# Note [Ill-conditioned samples]: statistics that are accurate on OpInfo's
# inputs (values of one scale around 0) can lose digits where the data is
# ill-conditioned, and only there: a mean far from 0 next to a small spread
# (a variance summed in float, or as E[x^2] - E[x]^2, cancels), a spread so
# small that eps dominates it, and few elements per channel (batch norm over
# N*H*W = 2, where the normalized values are +-1 and the input gradient is
# almost all cancellation: issue 23's conv nets). Each statistic of the norms
# (forward and backward) and var gets these inputs; eager itself is far from
# exact on them, so they are judged by Note [Precision rule] (compare.py).
# The backward's saved statistics are eager's for the same input.
def _ill(shape: tuple, dt: torch.dtype, mean: float, spread: float) -> torch.Tensor:
    return (random_tensor(shape, torch.float64) * (spread / 3) + mean).to(dt)


# (variant, input shape, mean, spread): batch norm and group norm take dim 1
# as channels; layer norm and var reduce the trailing dims noted per op.
_ILL_CASES = (
    ("ill-mean-offset", (4, 3, 5), 100.0, 0.1),
    ("ill-tiny-variance", (3, 2, 8), 1.0, 1e-3),
    ("ill-few-per-channel", (2, 4, 1, 1), 0.0, 3.0),
    ("ill-few-per-channel-offset", (2, 3, 1), 10.0, 1.0),
)


def _bn_ill(dt: torch.dtype, backward: bool, variant: str, x: torch.Tensor) -> tuple:
    c = x.shape[1]
    w, b = random_tensor((c,), dt), random_tensor((c,), dt)
    if not backward:
        return (x, w, b, torch.zeros(c, dtype=dt), torch.ones(c, dtype=dt), True, 0.1, 1e-5)
    _out, mean, invstd = torch.ops.aten.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5)
    return (random_tensor(tuple(x.shape), dt), x, w, None, None, mean, invstd, True, 1e-5, [True, True, True])


def _ln_ill(dt: torch.dtype, backward: bool, variant: str, x: torch.Tensor) -> tuple:
    if variant == "ill-few-per-channel":
        x = x.reshape(-1, 2)  # rows of two
    ns = list(x.shape[1:])
    w, b = random_tensor(tuple(ns), dt), random_tensor(tuple(ns), dt)
    if not backward:
        return (x, ns, w, b, 1e-5)
    _out, mean, rstd = torch.ops.aten.native_layer_norm(x, ns, w, b, 1e-5)
    return (random_tensor(tuple(x.shape), dt), x, ns, mean, rstd, w, b, [True, True, True])


def _gn_ill(dt: torch.dtype, backward: bool, variant: str, x: torch.Tensor) -> tuple:
    n, c = x.shape[0], x.shape[1]
    hw = x[0, 0].numel()
    g = c // 2 if c % 2 == 0 else 1  # two channels a group: N*H*W-like few elements for 1x1 maps
    w, b = random_tensor((c,), dt), random_tensor((c,), dt)
    if not backward:
        return (x, w, b, n, c, hw, g, 1e-5)
    _out, mean, rstd = torch.ops.aten.native_group_norm(x, w, b, n, c, hw, g, 1e-5)
    return (random_tensor(tuple(x.shape), dt), x, mean, rstd, w, n, c, hw, g, [True, True, True])


def _var_ill(dt: torch.dtype, backward: bool, variant: str, x: torch.Tensor) -> tuple:
    return (x.reshape(x.shape[0], -1), [0])  # over the first dim: a strided reduction, N elements


_ILL: dict[str, Callable[[torch.dtype, bool, str, torch.Tensor], tuple]] = {
    "native_batch_norm": _bn_ill,
    "_native_batch_norm_legit": _bn_ill,
    "_native_batch_norm_legit.no_stats": lambda dt, bw, v, x: _bn_ill(dt, bw, v, x)[:3] + (True, 0.1, 1e-5),
    "_native_batch_norm_legit_no_training": lambda dt, bw, v, x: _bn_ill(dt, bw, v, x)[:5] + (0.1, 1e-5),
    "native_batch_norm_backward": lambda dt, bw, v, x: _bn_ill(dt, True, v, x),
    "native_layer_norm": _ln_ill,
    "native_layer_norm_backward": lambda dt, bw, v, x: _ln_ill(dt, True, v, x),
    "native_group_norm": _gn_ill,
    "native_group_norm_backward": lambda dt, bw, v, x: _gn_ill(dt, True, v, x),
    "var.correction": _var_ill,
}


# Note [Error samples]: calls eager CPU refuses that no OpInfo error input
# and no broken probe reaches, for the errors check (Note [Error parity] in
# checks.py): the exception class must be eager's, and where eager's callers
# match its message (upstream's assertRaisesRegex), the message too, named
# here as error_regex. index_put with no index at all (eager: RuntimeError,
# from inside its kernel; an IndexError escapes `except RuntimeError`), and
# nonzero into an out= of another dtype than int64 (the out given as a
# keyword: the out= kind would make it int64). Any dtype.
def _index_put_no_index(dt: torch.dtype) -> list[tuple[tuple, dict, str, str | None]]:
    return [((random_tensor((4, 3), dt), [], random_tensor((1,), dt), acc), {}, f"error-no-index-acc{int(acc)}", None)
            for acc in (False, True)]


def _index_put_impl_no_index(dt: torch.dtype) -> list[tuple[tuple, dict, str, str | None]]:
    return [(args + (False,), kw, v, rx) for args, kw, v, rx in _index_put_no_index(dt)]


def _nonzero_out_dtype(dt: torch.dtype) -> list[tuple[tuple, dict, str, str | None]]:
    rx = "nonzero: Expected out tensor to have scalar type Long but got scalar type"
    return [((random_tensor((3, 4), dt),), {"out": torch.empty(0, dtype=o)}, f"error-out-{DTYPE_NAMES[o]}", rx)
            for o in (torch.int32, torch.float32)]


_ERRORS: dict[str, Callable[[torch.dtype], list[tuple[tuple, dict, str, str | None]]]] = {
    "index_put": _index_put_no_index,
    "index_put_": _index_put_no_index,
    "_index_put_impl_": _index_put_impl_no_index,
    "nonzero.out": _nonzero_out_dtype,
}


def error_samples(name: str, dtype: torch.dtype) -> list[Sample]:
    """Note [Error samples] of `name` (any dtype), [] for other overloads."""
    made = _ERRORS.get(name)
    if made is None:
        return []
    return [
        Sample(args, kwargs, f"schema:{v}", meta={"error_sample": True, **({"error_regex": rx} if rx else {})})
        for args, kwargs, v, rx in made(dtype)
    ]


def _functional_of(name: str) -> str:
    """The functional overload an out= overload's samples are those of."""
    base, _, overload = name.partition(".")
    if overload == "out":
        return base
    return f"{base}.{overload[: -len('_out')]}" if overload.endswith("_out") else name


def ill_conditioned(name: str, dtype: torch.dtype) -> list[Sample]:
    """Note [Ill-conditioned samples] of `name` for a floating `dtype`, [] for
    any other overload."""
    made = _ILL.get(_functional_of(name))
    if made is None or dtype not in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        return []
    outs = out_arg_names(schema_of(name))
    found = []
    for variant, shape, mean, spread in _ILL_CASES:
        args = made(dtype, False, variant, _ill(shape, dtype, mean, spread))
        found.append(Sample(args, {}, f"schema:{variant}", out_names=outs, out_dtypes=tuple(dtype for _ in outs)))
    return found


def handmade(name: str, dtype: torch.dtype) -> list[Sample] | None:
    """The hand-made samples of `name` (by overload, else by base name), or
    None when it has none for `dtype` and the schema source makes them."""
    made = _HANDMADE.get(name) or _HANDMADE.get(name.partition(".")[0])
    if made is None or not dtype.is_floating_point:
        return None
    outs = out_arg_names(schema_of(name))
    return [Sample(args, {}, f"schema:{v}", out_names=outs, out_dtypes=tuple(dtype for _ in outs)) for args, v in made(dtype)]
