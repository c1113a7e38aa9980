"""The fault matrix: each planted fault (fixtures/faults.py) is blamed on its
own check and on no other, over its op's whole sample list (ordinary samples
and probes), CPU playing a two-device device (Note [Fault device]); the same
ops on a healthy device, int -> float ops among them, fail nothing."""

import unittest

import torch

from opgen_conformance.checks import CHECKS, Runner
from opgen_conformance.compare import DEFAULT_TOL, compare
from opgen_conformance.device import FaultDevice
from opgen_conformance.overloads import op_info
from opgen_conformance.samples import sample_list
from opgen_conformance.tensors import DTYPES

from .helpers import CORRECT, FAULTS, empty_index

# The budget the e2e tests and the pool tests run with: small enough that
# filling it with traced samples first would never reach the broadcast variant.
MAX_SAMPLES = 3

MATRIX = [
    ("raises on valid inputs", "lt.Tensor", "errors"),
    ("wrong value", "add.Tensor", "values"),
    ("wrong shape", "eq.Tensor", "shape"),
    ("wrong dtype", "abs", "dtype"),
    ("in-place returning a new tensor", "mul_.Tensor", "inplace"),
    ("out= ignoring out", "sub.out", "out"),
    ("view that copies", "t", "view"),
    ("silent CPU fallback", "cos", "fallback"),
    ("view op served by the CPU fallback", "unfold", "fallback"),
    ("wrong gradient", "tanh", "gradients"),
    ("NaN dropped", "maximum", "extremes"),
    ("-0.0 turned into +0.0", "floor", "extremes"),
    ("subnormal inputs read as zero", "sqrt", "extremes"),
    ("subnormal results flushed to zero", "expm1", "extremes"),
    ("result on the current device, not the inputs'", "div.Tensor", "device_index"),
    ("result always on device 1", "remainder.Tensor", "device"),
    ("writes an input it may only read", "sub.Tensor", "mutation"),
    ("non-empty out of the wrong shape not resized", "add.out", "out_nonempty"),
    ("non-contiguous out written as contiguous", "div.out", "out_nonempty"),
    ("accepts mismatched shapes", "atan2", "invalid_inputs"),
    ("raises RuntimeError where eager raises IndexError", "sum.dim_IntList", "invalid_inputs"),
    ("in-place returning a copy (autograd hides it)", "div_.Tensor", "inplace"),
    ("out= returning a copy (autograd hides it)", "mul.out", "out"),
    ("wrong on broadcast inputs only", "fmod.Tensor", "values"),
    ("foreach out= leaving the list's last tensor unwritten", "_foreach_sqrt.out", "out"),
    ("batch norm variance in one pass, E[x^2] - E[x]^2 in float32", "native_batch_norm", "values"),
]

# Ops whose result dtype is not their input dtype, and the correct kernels
# that are not eager's bit for bit (fixtures/correct.py).
HEALTHY = [
    ("reciprocal", "int64"),  # an int -> float op 1 float32 ulp off
    ("reciprocal", "float32"),
    ("log1p", "float32"),  # 1 ulp off on subnormal results
    ("log1p", "float16"),
    ("bitwise_and.Tensor_out", "int64"),  # NotImplementedError where eager raises RuntimeError
    ("div.Tensor", "int64"),
    ("sqrt", "int32"),
    ("sigmoid", "int64"),
    ("atan2", "int16"),
    ("ne.Tensor", "float32"),
    ("add.Tensor", "float16"),
    ("mul.Tensor", "bfloat16"),
    ("maximum", "int64"),
    ("where.self", "float32"),
    ("sum.dim_IntList", "int64"),
    ("floor_divide", "int32"),
    ("remainder.Tensor", "uint8"),
    ("bitwise_and.Tensor", "int8"),
    ("clamp", "float64"),
    ("cat", "float32"),
    ("mul.out", "int64"),
    ("add_.Tensor", "float32"),
    ("_foreach_sqrt.out", "float32"),  # a list out (Note [List outs])
    # views: a write through each result reaches the base as on CPU
    ("diagonal", "float32"),
    ("expand", "int64"),
    ("unbind.int", "float32"),
    ("split.Tensor", "bool"),
    ("as_strided", "float32"),
    ("view.dtype", "float32"),
]

BAD = ("fail", "crash", "timeout")


def run_all(device, op, dtype="float32", index=None):
    """{check: [(status, sample source, message), ...]} over the op's samples."""
    info = op_info(op)
    dt = DTYPES[dtype]
    samples = sample_list(op, info["kind"], dt, 0, index or empty_index(), MAX_SAMPLES)
    runner = Runner(op, info["kind"], info["view"], dt, device, grad_samples=3)
    found = {}
    for k, s in enumerate(samples):
        for check, (status, msg) in runner.run(s, k).items():
            found.setdefault(check, []).append((status, s.source, msg))
    return found


def failing(found):
    return {c: [v for v in vs if v[0] in BAD] for c, vs in found.items() if any(v[0] in BAD for v in vs)}


class FaultMatrixTest(unittest.TestCase):
    def test_each_fault_fails_its_own_check_only(self):
        for what, op, check in MATRIX:
            with self.subTest(what, op=op):
                bad = failing(run_all(FaultDevice(FAULTS), op))
                self.assertEqual(list(bad), [check], bad)

    def test_the_same_ops_pass_on_a_healthy_device(self):
        for _what, op, _check in MATRIX:
            with self.subTest(op=op):
                self.assertEqual(failing(run_all(FaultDevice(None), op)), {})

    def test_no_false_alarm_on_correct_kernels(self):
        correct = FaultDevice(CORRECT)
        for op, dtype in HEALTHY:
            with self.subTest(op=op, dtype=dtype):
                self.assertEqual(failing(run_all(correct, op, dtype)), {})

    def test_the_correct_kernels_differ_from_eager(self):
        # not a vacuous pass: the device's results are not eager's
        dev = FaultDevice(CORRECT)
        x = torch.arange(1, 50, dtype=torch.int64)
        got = dev.call("reciprocal", torch.ops.aten.reciprocal.default, (x,), {})
        self.assertFalse(torch.equal(got, torch.reciprocal(x)))
        fi = torch.finfo(torch.float32)
        x = torch.tensor([fi.tiny / 2, fi.tiny * fi.eps * 5])
        got = dev.call("log1p", torch.ops.aten.log1p.default, (x,), {})
        self.assertFalse(torch.equal(got, torch.log1p(x)))

    def test_broadcast_fault_is_found_on_the_broadcast_variant(self):
        bad = failing(run_all(FaultDevice(FAULTS), "fmod.Tensor"))
        self.assertEqual({src for _st, src, _m in bad["values"]}, {"schema:broadcast"})

    def test_precision_fault_passes_the_old_tolerances(self):
        # Note [Precision rule]: the one-pass variance fails values on the
        # ill-conditioned samples, and on one of them (two elements per
        # channel) assert_close against eager, the values check before the
        # rule, passes it: only the float64 judge sees it there.
        info = op_info("native_batch_norm")
        samples = sample_list("native_batch_norm", info["kind"], torch.float32, 0, empty_index(), MAX_SAMPLES)
        ill = [s for s in samples if s.source.startswith("schema:ill-")]
        self.assertEqual(len(ill), 4)
        dev = FaultDevice(FAULTS)
        runner = Runner("native_batch_norm", info["kind"], info["view"], torch.float32, dev, grad_samples=0)
        old_passes = []
        for s in ill:
            self.assertEqual(runner.run(s)["values"][0], "fail", s.source)
            cpu = runner.calls.run_reference(s).result
            got = runner.calls.run_device(s, "values").result
            if all(compare(g, c, *DEFAULT_TOL[torch.float32]) is None for g, c in zip(got, cpu)):
                old_passes.append(s.source)
        self.assertEqual(old_passes, ["schema:ill-few-per-channel"])

    def test_every_check_has_a_fault(self):
        # strides only ever warn; compile is judged in compiled mode only, and
        # tests/test_compiled.py plants its failure (a real compile error)
        self.assertEqual({c for _w, _o, c in MATRIX} | {"strides", "compile"}, set(CHECKS))

    def test_messages_say_what_is_wrong(self):
        want = {
            "maximum": "not close",
            "floor": "+0.0 where CPU gives -0.0",
            "sqrt": "not close",
            "expm1": "0 where CPU gives a nonzero value smaller than 1e-05",
            "div.Tensor": "output 0 on device 0, inputs on device 1",
            "remainder.Tensor": "on device 1, inputs on device 0",
            "sub.Tensor": "'other' was written by the call",
            "add.out": "wrongly shaped out 'out' not resized",
            "div.out": "non-contiguous out 'out' holds wrong values",
            "atan2": "returned a result; CPU raises RuntimeError",
            "sum.dim_IntList": "raised RuntimeError: Dimension out of range",
            "div_.Tensor": "returned a new tensor instead of self",
            "mul.out": "returned a new tensor instead of 'out'",
            "native_batch_norm": "less accurate than eager CPU: error against float64",
        }
        for what, op, check in MATRIX:
            if op not in want:
                continue
            with self.subTest(what, op=op):
                msgs = [m for _st, _src, m in failing(run_all(FaultDevice(FAULTS), op))[check]]
                self.assertTrue(any(want[op] in m for m in msgs), msgs)


class FaultDeviceTest(unittest.TestCase):
    """The fault device behaves like a real backend where the checks look."""

    def test_autograd_hides_what_an_inplace_kernel_returns(self):
        # Note [Identity under inference mode]: why the runner calls the device there
        dev = FaultDevice(FAULTS)
        x, y = dev.to_device((torch.rand(3), torch.rand(3) + 1))
        op = torch.ops.aten.div_.Tensor
        self.assertIs(dev.call("div_.Tensor", op, (x, y), {}), x)
        with torch.inference_mode():
            # tensors made outside keep ADInplaceOrView, whose kernel returns self
            self.assertIs(dev.call("div_.Tensor", op, (x, y), {}), x)
            a, b = dev.to_device((torch.rand(3), torch.rand(3) + 1))
            self.assertIsNot(dev.call("div_.Tensor", op, (a, b), {}), a)

    def test_new_tensors_are_on_the_inputs_device_unless_unguarded(self):
        dev = FaultDevice(FAULTS)
        a, b = dev.to_device((torch.rand(3), torch.rand(3) + 1), 1)
        self.assertEqual(dev.index_of(dev.call("mul.Tensor", torch.ops.aten.mul.Tensor, (a, b), {})), 1)
        self.assertEqual(dev.index_of(dev.call("div.Tensor", torch.ops.aten.div.Tensor, (a, b), {})), 0)
        self.assertEqual(dev.current_index(), 0)


if __name__ == "__main__":
    unittest.main()
