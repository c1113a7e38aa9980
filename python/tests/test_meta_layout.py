"""Note [Meta layout] (meta_layout.py): a result laid out otherwise than the
op's meta kernel says is named, where eager CPU agrees with the meta; an op
without a meta kernel, or where CPU disagrees with it, is not judged.
CPU tensors stand in for the device's (the fakes copy their device)."""

from __future__ import annotations

import torch

from opgen_conformance.meta_layout import meta_problems

aten = torch.ops.aten


def _transposed():
    g = torch.Generator().manual_seed(0)
    return torch.randn(4, 3, generator=g).t(), torch.randn(4, 3, generator=g).t()


def test_a_contiguous_result_where_the_meta_keeps_the_inputs_layout_is_named():
    a, b = _transposed()
    cpu = torch.add(a, b)
    assert cpu.stride() == (1, 3)  # eager keeps the inputs' layout, as the meta does
    assert meta_problems(aten.add.Tensor, (a, b), {}, cpu.contiguous(), cpu) == [
        "strides [4, 1] != meta [1, 3]"
    ]
    assert meta_problems(aten.add.Tensor, (a, b), {}, cpu, cpu) == []


def test_strides_are_named_per_output_and_dtype_or_shape_left_to_their_checks():
    a = torch.randn(4, 3).t()
    values, indices = torch.max(a, 1)
    wrong = torch.empty_strided((3,), (2,))
    wrong.copy_(values)
    assert meta_problems(aten.max.dim, (a, 1), {}, (wrong, indices), (values, indices)) == [
        "output 0: strides [2] != meta [1]"
    ]
    got = (values, indices.to(torch.int32))
    assert meta_problems(aten.max.dim, (a, 1), {}, got, (values, indices)) == []
    assert meta_problems(aten.max.dim, (a, 1), {}, (values[:1], indices), (values, indices)) == []


def test_outputs_where_cpu_disagrees_with_the_meta_are_not_judged():
    a, b = _transposed()
    cpu = torch.add(a, b).contiguous()  # as if eager CPU itself returned another layout than the meta
    assert meta_problems(aten.add.Tensor, (a, b), {}, cpu, cpu) == []


def test_data_dependent_outputs_are_not_judged():
    x = torch.tensor([0.0, 1.0, 0.0, 2.0])
    out = torch.nonzero(x)
    assert meta_problems(aten.nonzero.default, (x,), {}, out, out) is None
