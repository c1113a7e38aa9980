"""Custom-operator checks (custom.py), CPU against CPU: an operator that
matches its reference passes; wrong values, a missing error and a wrong
gradient each fail with what is wrong."""

import unittest

import torch
import torch.nn.functional as F

from opgen_conformance.custom import check_sample


class _WrongGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return F.gelu(x)

    @staticmethod
    def backward(ctx, g):
        return g * 2


class CustomChecksTest(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.x = torch.randn(3, 4, dtype=torch.float64)

    def test_matching_operator_passes(self):
        self.assertEqual(check_sample(torch.ops.aten.gelu.default, F.gelu, (self.x,), {}, "cpu"), [])

    def test_wrong_values_fail(self):
        got = check_sample(lambda x: F.gelu(x) * 1.01, F.gelu, (self.x,), {}, "cpu")
        self.assertEqual(len(got), 1)
        self.assertTrue(got[0].startswith("result 0: "), got)

    def test_missing_error_fails(self):
        def ref(x, b):
            return F.gelu(x + b)

        got = check_sample(lambda x, b: F.gelu(x), ref, (self.x, torch.randn(5, dtype=torch.float64)), {}, "cpu")
        self.assertEqual(got, ["errors: only the reference raised RuntimeError"])

    def test_wrong_gradient_fails(self):
        got = check_sample(_WrongGrad.apply, F.gelu, (self.x,), {}, "cpu")
        self.assertEqual(len(got), 1)
        self.assertTrue(got[0].startswith("gradients: grad of input 0: "), got)


if __name__ == "__main__":
    unittest.main()
