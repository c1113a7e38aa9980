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
