"""The bench worker's inputs, rows and accuracy arithmetic (bench.py), with
CPU standing in for the device (FaultDevice): what is asserted is structure
and arithmetic, never a time."""

import math
import tempfile
import unittest

import torch

from opgen_conformance.bench import BenchInput, accuracy, bench_op, inputs_for
from opgen_conformance.device import FaultDevice
from opgen_conformance.overloads import resolve_overload


def config(cache_dir: str, **kw):
    c = {"runs": 5, "budget_s": 0.05, "clock": "wall", "accuracy": True, "cache_dir": cache_dir, "seed": 0}
    c.update(kw)
    return c


class BenchInputs(unittest.TestCase):
    def setUp(self):
        self.cache = tempfile.mkdtemp(prefix="opgen-bench-test-")

    def test_schema_sizes_grow_with_the_family_table(self):
        found, _ = inputs_for("add.Tensor", "functional", "pointwise-binary", torch.float32, self.cache, 0)
        self.assertEqual([b.size for b in found][:2], ["64x64", "512x512"])
        self.assertTrue(all(b.source == "schema" for b in found))
        self.assertEqual(tuple(found[0].args[0].shape), (64, 64))

    def test_generators_where_the_schema_cannot(self):
        found, _ = inputs_for("convolution", "functional", "convolution", torch.float32, self.cache, 0)
        self.assertEqual(found[0].source, "table")
        self.assertEqual(tuple(found[0].args[1].shape), (16, 16, 3, 3))
        found, _ = inputs_for("bmm.out", "out", "linalg", torch.float32, self.cache, 0)
        self.assertEqual(found[0].out_names, ("out",))
        self.assertEqual(found[0].args[0].dim(), 3)


class BenchRows(unittest.TestCase):
    def test_rows_carry_both_sides_and_accuracy_one_when_the_device_is_eager(self):
        rows = []
        op = {"name": "mul.Tensor", "kind": "functional", "family": "pointwise-binary", "dtypes": ["float32"], "alternatives": [], "repeat": 1}
        bench_op(config(tempfile.mkdtemp()), FaultDevice(None), op, rows.append)
        self.assertGreaterEqual(len(rows), 2)
        for r in rows:
            self.assertNotIn("error", r)
            self.assertGreater(r["device"]["median_s"], 0)
            self.assertGreaterEqual(r["eager"]["runs"], 5)
            self.assertLessEqual(r["eager"]["q1_s"], r["eager"]["median_s"])
            # the same kernel on both sides: the same error against float64
            self.assertEqual(r["accuracy"]["ratio"], 1.0)

    def test_random_ops_get_no_accuracy(self):
        rows = []
        op = {"name": "bernoulli.p", "kind": "functional", "family": "factory", "dtypes": ["float32"], "alternatives": [], "repeat": 1}
        bench_op(config(tempfile.mkdtemp(), runs=5), FaultDevice(None), op, rows.append)
        self.assertTrue(rows)
        self.assertTrue(all("accuracy" not in r for r in rows), rows)


class Accuracy(unittest.TestCase):
    def test_a_less_accurate_device_is_measured_against_eager(self):
        x = torch.randn(256, 256)
        b = BenchInput("256x256", "test", (x,), {}, (), ())
        func = resolve_overload("exp")
        eager = func(x)
        # a device whose exp is off by 64 ulps-ish everywhere
        worse = eager * (1 + 64 * torch.finfo(torch.float32).eps)
        a = accuracy(func, b, torch.float32, worse, eager)
        self.assertGreater(a["ratio"], 4)
        same = accuracy(func, b, torch.float32, eager.clone(), eager)
        self.assertEqual(same["ratio"], 1.0)
        # a NaN where float64 is finite is an infinite error: no ratio (flagged by the report)
        bad = eager.clone()
        bad[0, 0] = math.nan
        self.assertIsNone(accuracy(func, b, torch.float32, bad, eager)["ratio"])
        # a result float32 cannot hold overflows on eager and the device alike: not an error of either
        big = torch.rand(64, 64) * 40 + 10
        prod = resolve_overload("prod")
        p = prod(big)
        self.assertTrue(torch.isinf(p))
        self.assertEqual(accuracy(prod, BenchInput("", "test", (big,), {}, (), ()), torch.float32, p.clone(), p)["ratio"], 1.0)
        # float64 itself has nothing wider to compare with
        self.assertIsNone(accuracy(func, b, torch.float64, eager, eager))


if __name__ == "__main__":
    unittest.main()
