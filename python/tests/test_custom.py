"""Custom-operator checks (custom.py), CPU against CPU: an operator that
matches its reference passes; wrong values, a missing error and a wrong
gradient each fail with what is wrong."""

import sys
import types
import unittest

import torch
import torch.nn.functional as F

from opgen_conformance.custom import check_sample, compare_sample, run


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


def _bias_check(x, b):
    torch._check(b.dim() == 1 and b.shape[0] == x.shape[-1], lambda: "bias must be a vector over the last dim")
    return x + b


# Note [Custom samples]: operators in a namespace named after the device the
# runner is given ("cpu"), with a package module holding what gen's ops.py holds.
_LIB = torch.library.Library("cpu", "FRAGMENT")
_LIB.define("opgen_test_bias(Tensor self, Tensor bias) -> Tensor")
_LIB.impl("opgen_test_bias", _bias_check, "CPU")
_LIB.define("opgen_test_strict(Tensor self, Tensor bias) -> Tensor")
_LIB.impl("opgen_test_strict", _bias_check, "CPU")
_LIB.define("opgen_test_mode(Tensor self, str mode) -> Tensor")
_LIB.impl("opgen_test_mode", lambda x, m: x.clone(), "CPU")
_LIB.define("opgen_test_samples_raise(Tensor self) -> Tensor")
_LIB.impl("opgen_test_samples_raise", lambda x: x.clone(), "CPU")


class CustomSamplesTest(unittest.TestCase):
    """Note [Custom samples]: an operator whose samples check nothing is a
    skip that says what to add and where; a failing schema-made sample says
    it may be the sample's shape."""

    def setUp(self):
        ops = types.ModuleType("opgen_samples_pkg.ops")
        ops.REFERENCES = {
            "opgen_test_bias": _bias_check,
            "opgen_test_strict": lambda x, b: x + b,
            "opgen_test_mode": lambda x, m: x.clone(),
            "opgen_test_samples_raise": lambda x: x.clone(),
        }
        ops.SAMPLES = {"opgen_test_samples_raise": lambda dtype: [((torch.ones(2, dtype=dtype),), {})][1]}
        ops.LOCATIONS = {"opgen_test_bias": "backend.yaml:7:5", "opgen_test_strict": "backend.yaml:12:5"}
        sys.modules["opgen_samples_pkg"] = types.ModuleType("opgen_samples_pkg")
        sys.modules["opgen_samples_pkg.ops"] = ops
        self.results = {(r["op"], r["dtype"]): r for r in run("opgen_samples_pkg", "cpu")}

    def tearDown(self):
        del sys.modules["opgen_samples_pkg.ops"], sys.modules["opgen_samples_pkg"]

    def test_both_raising_is_compared_as_nothing(self):
        x = torch.randn(3, 4)
        self.assertEqual(compare_sample(_bias_check, _bias_check, (x, x), {}, "cpu"), ([], False))
        self.assertEqual(compare_sample(_bias_check, _bias_check, (x, torch.randn(4)), {}, "cpu"), ([], True))

    def test_nothing_compared_is_a_skip_naming_the_entry(self):
        r = self.results[("cpu::opgen_test_bias", "float32")]
        self.assertEqual(r["status"], "skip")
        self.assertEqual(len(r["problems"]), 1)
        self.assertTrue(r["problems"][0].startswith("nothing compared: every sample raised"), r)
        self.assertIn("add samples: at backend.yaml:7:5", r["problems"][0])

    def test_no_sample_from_the_schema_is_a_skip_saying_why(self):
        r = self.results[("cpu::opgen_test_mode", "float64")]
        self.assertEqual((r["status"], r["samples"]), ("skip", 0))
        self.assertTrue(r["problems"][0].startswith("no samples: argument mode is str"), r)
        self.assertIn("add samples: in its custom: entry", r["problems"][0])

    def test_samples_that_raise_fail_that_operator_only(self):
        r = self.results[("cpu::opgen_test_samples_raise", "float32")]
        self.assertEqual((r["status"], r["samples"]), ("fail", 0))
        self.assertEqual(r["problems"], ["its samples: raised IndexError for torch.float32: list index out of range"])
        self.assertEqual(self.results[("cpu::opgen_test_mode", "float64")]["status"], "skip")

    def test_a_failing_schema_sample_points_at_samples(self):
        r = self.results[("cpu::opgen_test_strict", "float32")]
        self.assertEqual(r["status"], "fail")
        self.assertTrue(r["problems"][0].startswith("sample 0: errors: the device raised"), r)
        self.assertTrue(r["problems"][-1].startswith("the samples were made from the schema"), r)
        self.assertIn("add samples: at backend.yaml:12:5", r["problems"][-1])


if __name__ == "__main__":
    unittest.main()
