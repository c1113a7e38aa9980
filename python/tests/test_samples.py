"""Sample synthesis and determinism (schema samples need no OpInfo import)."""

import unittest

import torch

from opgen_conformance.samples import (
    derive_seed,
    describe,
    functional_sibling,
    op_info,
    resolve_overload,
    sample_list,
    synthesize,
)

from .helpers import empty_index


def same(a, b):
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.stride() == b.stride() and torch.equal(a, b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


class SamplesTest(unittest.TestCase):
    def test_resolve(self):
        self.assertEqual(resolve_overload("relu").name(), "aten::relu")
        self.assertEqual(resolve_overload("add.Tensor").name(), "aten::add.Tensor")

    def test_siblings(self):
        self.assertEqual(functional_sibling("add_.Tensor", "inplace"), "add.Tensor")
        self.assertEqual(functional_sibling("add.out", "out"), "add.Tensor")
        self.assertEqual(functional_sibling("add.Scalar_out", "out"), "add.Scalar")
        self.assertEqual(functional_sibling("max.dim_max", "out"), "max.dim")

    def test_op_info(self):
        self.assertEqual(op_info("add.out")["kind"], "out")
        self.assertEqual(op_info("add_.Tensor")["kind"], "inplace")
        self.assertTrue(op_info("view")["view"])
        self.assertTrue(op_info("relu")["core"])
        self.assertFalse(op_info("nope.x")["exists"])

    def test_synthesized_shapes_cover_edge_cases(self):
        torch.manual_seed(0)
        ss = synthesize("add.Tensor", torch.float32)
        kinds = [s.source for s in ss]
        self.assertEqual(kinds, ["schema:2d", "schema:0d", "schema:empty", "schema:noncontig", "schema:broadcast"])
        self.assertEqual(ss[1].args[0].dim(), 0)
        self.assertEqual(ss[2].args[0].numel(), 0)
        self.assertFalse(ss[3].args[0].is_contiguous())
        self.assertEqual((ss[4].args[0].shape, ss[4].args[1].shape), (torch.Size([3, 1]), torch.Size([1, 4])))

    def test_synthesized_dims_in_range(self):
        for s in synthesize("sum.dim_IntList", torch.float32):
            torch.ops.aten.sum.dim_IntList(*s.args, **s.kwargs)

    def test_sample_list_is_deterministic(self):
        a = sample_list("add.Tensor", "functional", torch.float32, 7, empty_index(), 5)
        b = sample_list("add.Tensor", "functional", torch.float32, 7, empty_index(), 5)
        self.assertEqual(len(a), 5)
        for x, y in zip(a, b):
            self.assertTrue(same(x.args, y.args))
            self.assertEqual(describe(x), describe(y))

    def test_seed_changes_samples(self):
        a = sample_list("add.Tensor", "functional", torch.float32, 1, empty_index(), 1)
        b = sample_list("add.Tensor", "functional", torch.float32, 2, empty_index(), 1)
        self.assertFalse(same(a[0].args, b[0].args))

    def test_out_samples_carry_out_dtypes(self):
        ss = sample_list("eq.Tensor_out", "out", torch.float32, 0, empty_index(), 2)
        self.assertEqual(ss[0].out_names, ("out",))
        self.assertEqual(ss[0].out_dtypes, (torch.bool,))

    def test_every_claimed_dtype(self):
        for dt in (torch.float16, torch.bfloat16, torch.int32, torch.bool):
            ss = sample_list("mul.Tensor", "functional", dt, 0, empty_index(), 2)
            self.assertTrue(ss and all(a.dtype == dt for a in ss[0].args))

    def test_derive_seed_is_stable(self):
        self.assertEqual(derive_seed(0, "add.Tensor", "float32"), derive_seed(0, "add.Tensor", "float32"))
        self.assertEqual(derive_seed("a"), 3904355907 & 0x7FFFFFFF)


class OpInfoTracingTest(unittest.TestCase):
    """Traces real OpInfo samples: slower (imports OpInfo)."""

    def test_traced_samples_reach_the_overload(self):
        index = {"version": 1, "torch": torch.__version__, "opinfos": {"add": ["float32"]}, "reach": {"add.Tensor": ["add"]}}
        ss = sample_list("add.Tensor", "functional", torch.float32, 0, index, 4)
        self.assertTrue(ss[0].source.startswith("opinfo:add#"))
        for s in ss:
            torch.ops.aten.add.Tensor(*s.args, **s.kwargs)
        # in-place reuses the functional sibling's samples
        ii = sample_list("add_.Tensor", "inplace", torch.float32, 0, index, 3)
        self.assertTrue(any(s.source.endswith("->inplace") for s in ii))


if __name__ == "__main__":
    unittest.main()
