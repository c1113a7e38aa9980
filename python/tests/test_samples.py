"""Sample synthesis and determinism (schema samples need no OpInfo import)."""

import unittest

import torch

from opgen_conformance.checks import Runner
from opgen_conformance.device import FaultDevice
from opgen_conformance.probes import extreme_values
from opgen_conformance.overloads import functional_sibling, op_info, resolve_overload
from opgen_conformance.sample import Sample, derive_seed, describe
from opgen_conformance.samples import _with_variants, sample_list
from opgen_conformance.sources.schema import synthesize, variants_of

from .helpers import empty_index, write_empty_index


def same(a, b):
    if isinstance(a, torch.Tensor):
        if not (isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.stride() == b.stride()):
            return False
        return torch.allclose(a, b, rtol=0, atol=0, equal_nan=True) if a.is_floating_point() else torch.equal(a, b)
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

    def test_factories_name_their_device(self):
        # the device run retargets a CPU device argument; without one it would run on CPU
        for name in ("full", "rand", "arange.start_step", "randperm"):
            for s in synthesize(name, torch.float32):
                self.assertEqual(s.kwargs.get("device"), torch.device("cpu"), name)
        for s in synthesize("full_like", torch.float32):
            self.assertNotIn("device", s.kwargs)

    def test_synthesized_dims_in_range(self):
        for s in synthesize("sum.dim_IntList", torch.float32):
            torch.ops.aten.sum.dim_IntList(*s.args, **s.kwargs)

    def test_sample_list_is_deterministic(self):
        a = sample_list("add.Tensor", "functional", torch.float32, 7, empty_index(), 5)
        b = sample_list("add.Tensor", "functional", torch.float32, 7, empty_index(), 5)
        self.assertEqual(len([s for s in a if not s.check]), 5)
        self.assertEqual(len(a), len(b))
        for x, y in zip(a, b):
            self.assertTrue(same(x.args, y.args))
            self.assertEqual((x.source, x.check, describe(x)), (y.source, y.check, describe(y)))

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

    def test_sample_cache_hashes_every_file_that_makes_samples(self):
        # Note [Sample cache]: the directory's hash covers samples.py's imports, transitively
        import os

        import opgen_conformance
        from opgen_conformance.cache import sample_modules

        files = set(sample_modules())
        here = os.path.dirname(opgen_conformance.__file__)
        sources = {os.path.join("sources", f) for f in os.listdir(os.path.join(here, "sources")) if f.endswith(".py")}
        want = {"samples.py", "probes.py", "sample.py", "overloads.py", "kinds.py", "tensors.py", "references.py", "__init__.py"}
        self.assertLessEqual(want | sources, files)
        # the coordinator's side and the cache itself make no samples
        self.assertFalse(files & {"pool.py", "worker.py", "cache.py", "results.py", "config.py", "checks.py"}, files)

    def test_sample_cache_stores_memory_formats_and_leaves_no_temporary_files(self):
        # torch.save cannot write a torch.memory_format by itself; clone's samples pass one
        import os
        import tempfile
        from unittest import mock

        from opgen_conformance.cache import cached_sample_list, sample_cache_file, samples_cache_dir

        task = {"op": "clone", "kind": "functional", "dtype": "float32"}
        made = [Sample((torch.rand(2, 3, 4, 5),), {"memory_format": torch.channels_last}, "opinfo:clone#0")]
        with tempfile.TemporaryDirectory() as d, mock.patch("opgen_conformance.samples.sample_list", return_value=made):
            write_empty_index(d)
            self.assertIs(cached_sample_list(d, task, torch.float32, 0, 6), made)
            sdir = samples_cache_dir(d)
            stored = torch.load(sample_cache_file(sdir, {**task, "seed": 0, "max_samples": 6}), weights_only=False)
            self.assertIs(stored["samples"][0].kwargs["memory_format"], torch.channels_last)
            # what torch.save cannot write is not cached, and leaves nothing behind
            unsaveable = [Sample((torch.rand(2),), {"fn": lambda x: x}, "x")]
            with mock.patch("opgen_conformance.samples.sample_list", return_value=unsaveable):
                self.assertIs(cached_sample_list(d, {**task, "op": "neg"}, torch.float32, 0, 6), unsaveable)
            self.assertEqual(len(os.listdir(sdir)), 1, os.listdir(sdir))

    def test_budget_always_reaches_the_synthesized_variants(self):
        # Note [Sample budget]: 6 plain traced samples leave room for 3, the 4 missing variants take it
        torch.manual_seed(0)
        synth = synthesize("add.Tensor", torch.float32)
        traced = [Sample((torch.rand(2, 5), torch.rand(2, 5)), {}, f"opinfo:add#{i}") for i in range(6)]
        got = [s.source for s in _with_variants(traced, synth, 6)]
        self.assertEqual(got, ["opinfo:add#0", "opinfo:add#1", "opinfo:add#2", "schema:0d", "schema:empty", "schema:noncontig", "schema:broadcast"])
        # what the traced samples already are is not synthesized again
        traced[1] = Sample((torch.rand(3, 1), torch.rand(1, 4)), {}, "opinfo:add#1")
        got = [s.source for s in _with_variants(traced, synth, 6)]
        self.assertEqual(got, ["opinfo:add#0", "opinfo:add#1", "opinfo:add#2", "schema:0d", "schema:empty", "schema:noncontig"])
        # nothing traced: every variant
        self.assertEqual(len(_with_variants([], synth, 2)), 5)

    def test_inplace_broadcast_variant_is_valid(self):
        s = synthesize("mul_.Tensor", torch.float32)[-1]
        self.assertEqual(s.source, "schema:broadcast")
        torch.ops.aten.mul_.Tensor(*s.args)


class ProbesTest(unittest.TestCase):
    def probes(self, op, dtype=torch.float32, index=None):
        info = op_info(op)
        return [s for s in sample_list(op, info["kind"], dtype, 0, index or empty_index(), 3) if s.check]

    def test_probes_of_a_binary_op(self):
        self.assertEqual([s.check for s in self.probes("add.Tensor")], ["extremes", "device_index", "invalid_inputs"])

    def test_extremes_grid_pairs_every_value_with_every_other(self):
        (grid,) = [s for s in self.probes("add.Tensor") if s.check == "extremes"]
        a, b = grid.args[0], grid.args[1]
        pairs = {(x.view(torch.int32).item(), y.view(torch.int32).item()) for x, y in zip(a, b)}
        n = len(extreme_values(torch.float32))
        self.assertEqual(len(pairs), n * n)
        self.assertTrue(a.isnan().any() and (a == float("inf")).any())
        self.assertTrue(((a == 0) & a.signbit()).any(), "-0.0")
        self.assertTrue(((a != 0) & (a.abs() < torch.finfo(torch.float32).tiny)).any(), "subnormals")
        self.assertTrue((a == torch.finfo(torch.float32).max).any())
        self.assertTrue(grid.meta["base"].source.startswith("schema:"))

    def test_integer_extremes_are_the_dtype_limits(self):
        (grid,) = [s for s in self.probes("mul.Tensor", torch.int32) if s.check == "extremes"]
        ii = torch.iinfo(torch.int32)
        self.assertEqual((grid.args[0].min().item(), grid.args[0].max().item()), (ii.min, ii.max))
        self.assertFalse((grid.args[1] == 0).any())

    def test_no_extremes_where_results_may_differ_legitimately(self):
        for op, dtype in [("sum.dim_IntList", torch.float32), ("mm", torch.float32), ("mul.Tensor", torch.bool)]:
            with self.subTest(op=op):
                self.assertNotIn("extremes", [s.check for s in self.probes(op, dtype)])

    def test_invalid_inputs_break_one_thing(self):
        (p,) = [s for s in self.probes("add.Tensor") if s.check == "invalid_inputs"]
        self.assertEqual(p.source, "schema:2d~size")
        self.assertEqual([list(t.shape) for t in p.args[:2]], [[3, 4], [4, 4]])
        (p,) = [s for s in self.probes("sum.dim_IntList") if s.check == "invalid_inputs"]
        self.assertEqual((p.source, p.args[1]), ("schema:2d~dim", [3]))

    def test_out_nonempty_probes(self):
        ps = [s for s in self.probes("sub.out") if s.check == "out_nonempty"]
        self.assertEqual([s.meta["layout"] for s in ps], ["wrong-shape", "noncontig"])
        self.assertEqual(list(ps[0].meta["outs"]["out"].shape), [15])
        nc = ps[1].meta["outs"]["out"]
        self.assertEqual((list(nc.shape), nc.is_contiguous()), ([3, 4], False))
        self.assertIn("out=T[3, 4]:float32,noncontig", describe(ps[1]))


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


    def test_opinfo_probes(self):
        # OpInfo's extremal-value samples and its error inputs, where they reach the overload
        index = {
            "version": 1,
            "torch": torch.__version__,
            "opinfos": {"add": ["float32"], "cat": ["float32"]},
            "reach": {"add.Tensor": ["add"], "cat": ["cat"]},
        }
        ss = sample_list("add.Tensor", "functional", torch.float32, 0, index, 3)
        extremes = [s.source for s in ss if s.check == "extremes"]
        self.assertEqual(extremes[0], "opinfo-extremal:add#0")
        self.assertRegex(extremes[1], r"^opinfo:add#\d+~extremes$")
        self.assertEqual(set().union(*(variants_of(s) for s in ss if not s.check)), {"2d", "0d", "empty", "noncontig", "broadcast"})
        cat = sample_list("cat", "functional", torch.float32, 0, index, 3)
        invalid = [s.source for s in cat if s.check == "invalid_inputs"]
        self.assertTrue(invalid[0].startswith("opinfo-error:cat#"), invalid)
        # and a correct device passes them all
        for op, samples in (("add.Tensor", ss), ("cat", cat)):
            runner = Runner(op, "functional", False, torch.float32, FaultDevice(None), grad_samples=2)
            for k, s in enumerate(samples):
                for check, (status, msg) in runner.run(s, k).items():
                    self.assertIn(status, ("pass", "skip"), (op, s.source, check, msg))


if __name__ == "__main__":
    unittest.main()
