"""Note [CUDA semantics] (references.py): integer histc's reference is CUDA's
rule. Checked against that rule written out element by element (int64
integer division, as _histc_cuda's getBin), and floating input against eager
CPU's histc itself."""

from __future__ import annotations

import pytest
import torch

from opgen_conformance.references import CPU_REFERENCES


def cuda_histc(x: torch.Tensor, bins: int, lo: float, hi: float) -> torch.Tensor:
    lo, hi = int(lo), int(hi)  # Scalar::to<int64_t> truncates
    values = [int(v) for v in x.flatten().tolist()]
    if lo == hi and values:
        lo, hi = min(values), max(values)
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    counts = [0] * bins
    for v in values:
        if lo <= v <= hi:
            b = (v - lo) * bins // (hi - lo)  # non-negative: // is C's truncation
            counts[min(b, bins - 1)] += 1
    return torch.tensor(counts, dtype=x.dtype)


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64])
def test_integer_histc_is_cudas_rule(dtype):
    g = torch.Generator().manual_seed(0)
    hi_v = 100 if dtype != torch.int8 else 60
    for case in range(40):
        x = torch.randint(0, hi_v, (int(torch.randint(0, 50, (1,), generator=g)),), generator=g).to(dtype)
        bins = int(torch.randint(1, 13, (1,), generator=g))
        lo, hi = [(0, 0), (0, 7), (2.7, 50.2), (5, 90), (10, 11)][case % 5]
        got = CPU_REFERENCES["histc"](x, bins, lo, hi)
        assert got.dtype == dtype
        assert torch.equal(got, cuda_histc(x, bins, lo, hi)), (case, x, bins, lo, hi)
    out = torch.empty(0, dtype=dtype)
    x = torch.tensor([0, 1, 2, 3, 9, 9], dtype=dtype)
    assert CPU_REFERENCES["histc.out"](x, 4, 0, 9, out=out) is out
    assert out.tolist() == [3, 1, 0, 2]


def test_integer_histc_refuses_as_cuda():
    x = torch.tensor([1, 2], dtype=torch.int32)
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        CPU_REFERENCES["histc"](x, 0, 0, 3)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        CPU_REFERENCES["histc"](x, 4, 5, 1)
    with pytest.raises(NotImplementedError):  # eager CPU's own refusal, without the reference
        torch.histc(x, 4, 0, 3)


def test_floating_histc_is_eager_cpu():
    x = torch.randn(200, generator=torch.Generator().manual_seed(1))
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        assert torch.equal(CPU_REFERENCES["histc"](x.to(dtype), 9, -1.5, 2), torch.histc(x.to(dtype), 9, -1.5, 2))


# The fused attention's reference for the half types (references.py, Note
# [Half-precision attention] in backends/ref's aten/Attention.cpp): computed in
# float32, out and gradients rounded to the input dtype, logsumexp float32.
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_sdpa_reference_half_types_compute_in_float32(dtype):
    fwd = CPU_REFERENCES["_scaled_dot_product_fused_attention_overrideable"]
    bwd = CPU_REFERENCES["_scaled_dot_product_fused_attention_overrideable_backward"]
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 4)
    bias = torch.randn(3, 5, 7)
    half = [t.to(dtype) for t in (q, k, v, bias)]
    got = fwd(*half[:3], half[3])
    want = fwd(*(t.float() for t in half))  # the same rounded inputs, float32 throughout
    assert (got[0].dtype, got[1].dtype, got[8].dtype) == (dtype, torch.float32, dtype)
    assert torch.equal(got[0], want[0].to(dtype)) and torch.equal(got[1], want[1])
    go = torch.randn(2, 3, 5, 4).to(dtype)
    grads = bwd(go, *half, [True] * 4, *got[:6], 0.0, False, got[6], got[7])
    want_grads = bwd(go.float(), *(t.float() for t in half), [True] * 4, *want[:6], 0.0, False, want[6], want[7])
    for g, w, t in zip(grads, want_grads, half):
        assert g.dtype == t.dtype and torch.equal(g, w.to(t.dtype))
    with pytest.raises(NotImplementedError, match="not implemented for 'torch.int32'"):
        fwd(*(t.int() for t in (q, k, v)))
