"""Checks, exercised CPU-against-CPU with faults injected into the "device"."""

import unittest

import torch

from opgen_conformance.checks import Runner
from opgen_conformance.compare import tolerance
from opgen_conformance.device import FaultDevice
from opgen_conformance.sample import Sample
from opgen_conformance.samples import sample_list

from .helpers import CORRECT, FAULTS, empty_index


def t(*shape, dtype=torch.float32):
    torch.manual_seed(0)
    return torch.randn(*shape).to(dtype)


class ChecksTest(unittest.TestCase):
    def setUp(self):
        self.healthy = FaultDevice(None)
        self.faulty = FaultDevice(FAULTS)

    def verdicts(self, op, kind, sample, faulty=True, view=False, dtype=torch.float32, k=0):
        dev = self.faulty if faulty else self.healthy
        return Runner(op, kind, view, dtype, dev, grad_samples=2).run(sample, k)

    def assertOnlyFails(self, r, check):
        bad = {c: v for c, v in r.items() if v[0] not in ("pass", "skip")}
        self.assertEqual(list(bad), [check], r)

    def test_healthy_op_passes_every_check(self):
        r = self.verdicts("add.Tensor", "functional", Sample((t(3, 4), t(3, 4)), {}, "x"), faulty=False)
        for c in ("errors", "values", "dtype", "shape", "device", "strides", "fallback", "gradients"):
            self.assertEqual(r[c][0], "pass", (c, r[c]))

    def test_wrong_value(self):
        r = self.verdicts("add.Tensor", "functional", Sample((t(3, 4), t(3, 4)), {}, "x"))
        self.assertOnlyFails(r, "values")
        self.assertIn("less accurate than eager CPU", r["values"][1])

    def test_wrong_dtype_is_not_a_value_failure(self):
        r = self.verdicts("abs", "functional", Sample((t(3, 4),), {}, "x"))
        self.assertOnlyFails(r, "dtype")
        self.assertIn("float64 != expected float32", r["dtype"][1])

    def test_inplace_returning_new_tensor(self):
        r = self.verdicts("mul_.Tensor", "inplace", Sample((t(3, 4), t(3, 4)), {}, "x"))
        self.assertOnlyFails(r, "inplace")
        self.assertIn("new tensor instead of self", r["inplace"][1])

    def test_healthy_inplace(self):
        r = self.verdicts("mul_.Tensor", "inplace", Sample((t(3, 4), t(3, 4)), {}, "x"), faulty=False)
        self.assertEqual(r["inplace"], ("pass", ""))

    def test_out_ignoring_out(self):
        s = Sample((t(3, 4), t(3, 4)), {}, "x", out_names=("out",), out_dtypes=(torch.float32,))
        r = self.verdicts("sub.out", "out", s)
        self.assertEqual(r["out"][0], "fail")
        self.assertIn("instead of 'out'", r["out"][1])
        self.assertIn("not resized", r["out"][1])

    def test_healthy_out_resizes(self):
        s = Sample((t(3, 4), t(3, 4)), {}, "x", out_names=("out",), out_dtypes=(torch.float32,))
        r = self.verdicts("sub.out", "out", s, faulty=False)
        self.assertEqual(r["out"], ("pass", ""))

    def test_view_that_copies(self):
        r = self.verdicts("t", "functional", Sample((t(3, 4),), {}, "x"), view=True)
        self.assertOnlyFails(r, "view")

    def test_healthy_view(self):
        r = self.verdicts("t", "functional", Sample((t(3, 4),), {}, "x"), view=True, faulty=False)
        self.assertEqual(r["view"], ("pass", ""))

    def test_view_of_the_wrong_elements_fails_the_write_through(self):
        # right storage, shape, strides and (on a constant input) values: only
        # the write through it differs (k=7: no gradients, which see the shift)
        r = self.verdicts("diagonal", "functional", Sample((torch.ones(3, 4),), {}, "x"), view=True, k=7)
        self.assertOnlyFails(r, "view")
        self.assertIn("output 0: a write through it left input 0 unlike CPU's", r["view"][1])
        healthy = self.verdicts("diagonal", "functional", Sample((torch.ones(3, 4),), {}, "x"), view=True, faulty=False)
        self.assertEqual(healthy["view"], ("pass", ""))

    def test_view_write_through_over_overlapping_and_list_views(self):
        # expand (stride 0), unfold (overlapping windows), unbind (a list of views)
        for op, args in (("expand", (t(3, 1), [3, 4])), ("unfold", (t(3, 5), 1, 3, 1)), ("unbind.int", (t(3, 4), 1))):
            with self.subTest(op=op):
                r = self.verdicts(op, "functional", Sample(args, {}, "x"), view=True, faulty=False)
                self.assertEqual(r["view"], ("pass", ""))

    def test_view_op_on_the_fallback_fails_with_what_it_breaks(self):
        r = self.verdicts("unfold", "functional", Sample((t(3, 5), 1, 3, 1), {}, "x"), view=True)
        self.assertOnlyFails(r, "fallback")
        self.assertIn("view ops reached the CPU fallback, which returns a copy", r["fallback"][1])
        self.assertIn("aten::unfold x1", r["fallback"][1])

    def test_fallback(self):
        r = self.verdicts("cos", "functional", Sample((t(3, 4),), {}, "x"))
        self.assertOnlyFails(r, "fallback")

    def test_wrong_gradient(self):
        r = self.verdicts("tanh", "functional", Sample((t(3, 4),), {}, "x"))
        self.assertOnlyFails(r, "gradients")

    def test_gradients_only_on_first_sample_indices(self):
        r = self.verdicts("tanh", "functional", Sample((t(3, 4),), {}, "x"), k=7)
        self.assertNotIn("gradients", r)

    def test_error_parity_both_raise(self):
        r = self.verdicts("add.Tensor", "functional", Sample((t(3, 4), t(5, 6)), {}, "x"), faulty=False)
        self.assertEqual(r, {"errors": ("pass", "")})

    def test_error_parity_device_raises(self):
        dev = FaultDevice(None)
        dev.faults["relu"] = lambda f, a, k: (_ for _ in ()).throw(RuntimeError("not implemented"))
        r = Runner("relu", "functional", False, torch.float32, dev, grad_samples=2).run(Sample((t(3),), {}, "x"))
        self.assertEqual(r["errors"][0], "fail")
        self.assertIn("device raised RuntimeError", r["errors"][1])

    def test_error_parity_cpu_raises_device_not(self):
        dev = FaultDevice(None)
        dev.faults["add.Tensor"] = lambda f, a, k: torch.zeros(3)
        r = Runner("add.Tensor", "functional", False, torch.float32, dev, grad_samples=2).run(Sample((t(3, 4), t(5, 6)), {}, "x"))
        self.assertEqual(r["errors"][0], "fail")
        self.assertIn("CPU raises", r["errors"][1])

    def test_error_parity_other_class_fails_on_an_error_sample(self):
        # Note [Error parity]: eager's index_put_ with no index raises RuntimeError; an IndexError is caught by other code
        dev = FaultDevice(None)
        dev.faults["add.Tensor"] = lambda f, a, k: (_ for _ in ()).throw(IndexError("at least one index must be provided"))
        runner = Runner("add.Tensor", "functional", False, torch.float32, dev, grad_samples=2)
        r = runner.run(Sample((t(3, 4), t(5, 6)), {}, "x", meta={"error_sample": True}))
        self.assertEqual(r["errors"][0], "fail")
        self.assertIn("device raised IndexError: at least one index must be provided; CPU raises RuntimeError", r["errors"][1])
        # on an ordinary sample both refuse, the other class is a warning (eager's class may be an accident there)
        r = runner.run(Sample((t(3, 4), t(5, 6)), {}, "x"))
        self.assertEqual(r["errors"][0], "warn")
        self.assertIn("device raised IndexError", r["errors"][1])

    def test_error_parity_subclass_passes(self):
        dev = FaultDevice(None)
        dev.faults["add.Tensor"] = lambda f, a, k: (_ for _ in ()).throw(NotImplementedError("other words"))
        r = Runner("add.Tensor", "functional", False, torch.float32, dev, grad_samples=2).run(Sample((t(3, 4), t(5, 6)), {}, "x"))
        self.assertEqual(r, {"errors": ("pass", "")})

    def test_error_parity_message_only_where_the_sample_names_it(self):
        dev = FaultDevice(None)
        dev.faults["add.Tensor"] = lambda f, a, k: (_ for _ in ()).throw(RuntimeError("sizes differ"))
        runner = Runner("add.Tensor", "functional", False, torch.float32, dev, grad_samples=2)
        args = (t(3, 4), t(5, 6))
        self.assertEqual(runner.run(Sample(args, {}, "x")), {"errors": ("pass", "")})
        named = runner.run(Sample(args, {}, "x", meta={"error_regex": "must match the size of tensor b"}))
        self.assertEqual(named["errors"][0], "fail")
        self.assertIn("not matching 'must match the size of tensor b'", named["errors"][1])
        healthy = Runner("add.Tensor", "functional", False, torch.float32, FaultDevice(None), grad_samples=2)
        self.assertEqual(healthy.run(Sample(args, {}, "x", meta={"error_regex": "must match the size of tensor b"})),
                         {"errors": ("pass", "")})

    def test_out_of_memory_is_a_crash(self):
        dev = FaultDevice(None)
        dev.faults["relu"] = lambda f, a, k: (_ for _ in ()).throw(RuntimeError("device out of memory"))
        r = Runner("relu", "functional", False, torch.float32, dev, grad_samples=2).run(Sample((t(3),), {}, "x"))
        self.assertEqual(r["values"][0], "crash")

    def test_reference_out_of_memory_is_a_skip_not_the_devices_fault(self):
        # Note [Worker memory limit]: the limit counts eager CPU's allocations too.
        runner = Runner("relu", "functional", False, torch.float32, FaultDevice(None), grad_samples=2)

        def oom(*_a, **_k):
            raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 1073741824 bytes.")

        runner.calls.op = oom
        r = runner.run(Sample((t(3),), {}, "x"))
        self.assertEqual(r["errors"][0], "skip")
        self.assertIn("CPU reference ran out of memory", r["errors"][1])
        self.assertNotIn("values", r)

    def test_strides_are_a_warning(self):
        dev = FaultDevice(None)
        dev.faults["relu"] = lambda f, a, k: f(*a, **k).t().contiguous().t()
        r = Runner("relu", "functional", False, torch.float32, dev, grad_samples=2).run(Sample((t(3, 4),), {}, "x"))
        self.assertEqual(r["strides"][0], "warn")
        self.assertEqual(r["values"][0], "pass")

    def test_nondeterministic_values_skipped(self):
        r = self.verdicts("empty_like", "functional", Sample((t(3, 4),), {}, "x"), faulty=False)
        self.assertEqual(r["values"][0], "skip")
        self.assertEqual(r["shape"][0], "pass")

    def test_fallback_of_a_sibling_overload_fails_others_warn(self):
        from opgen_conformance.checks import fallback_verdict

        self.assertEqual(fallback_verdict("cos", {"aten::cos.out": 1})[0], "fail")
        self.assertEqual(fallback_verdict("add_.Tensor", {"aten::add.out": 2})[0], "fail")
        self.assertEqual(fallback_verdict("addmm", {"aten::mm": 1}), ("warn", "called operators that ran on the CPU fallback: aten::mm x1"))
        self.assertEqual(fallback_verdict("relu", {"aten::relu": 0}), ("pass", ""))
        # Note [Core overloads through their decomposition]: whatever fell back warns, own sibling included
        self.assertEqual(
            fallback_verdict("var.dim", {"aten::var.correction": 1}, decomposed=True),
            ("warn", "decomposes into operators served by the CPU fallback: aten::var.correction x1"),
        )
        self.assertEqual(fallback_verdict("var.dim", {"aten::var.correction": 1})[0], "fail")
        self.assertEqual(fallback_verdict("var.dim", {}, decomposed=True), ("pass", ""))

    def test_a_view_op_on_the_fallback_fails_wherever_it_is(self):
        from opgen_conformance.checks import fallback_verdict, is_view_key

        # another op on the fallback warns, but not a view op (nor an in-place view op)
        for key in ("aten::unfold", "aten::split.Tensor", "aten::transpose_", "aten::as_strided"):
            with self.subTest(key=key):
                self.assertTrue(is_view_key(key))
                st, msg = fallback_verdict("addmm", {key: 1})
                self.assertEqual(st, "fail")
                self.assertTrue(msg.endswith("a view op must be native on the device: " + key + " x1"), msg)
        # out= and in-place returns (Tensor(a!)) are no views
        for key in ("aten::add.out", "aten::add_.Tensor", "aten::mm", "aten::no_such_op", "refdev::fused_x"):
            with self.subTest(key=key):
                self.assertFalse(is_view_key(key))

    def test_invalid_inputs_accept_a_subclass_of_eagers_exception(self):
        # eager: RuntimeError from its out dtype check; the kernel: NotImplementedError for the float input
        a, b = torch.arange(12).reshape(3, 4), torch.arange(12).reshape(3, 4)
        base = Sample((a, b), {}, "x", out_names=("out",), out_dtypes=(torch.int64,))
        probe = Sample((a, b.float()), {}, "x~dtype", ("out",), (torch.int64,), "invalid_inputs", {"base": base})
        runner = Runner("bitwise_and.Tensor_out", "out", False, torch.int64, FaultDevice(CORRECT), grad_samples=2)
        self.assertEqual(runner.run(probe), {"invalid_inputs": ("pass", "")})
        # not the other way round: code catching eager's NotImplementedError misses a RuntimeError
        dev = FaultDevice(None)
        dev.faults["bitwise_and.Tensor"] = lambda f, a, k: (_ for _ in ()).throw(RuntimeError("no"))
        probe = Sample((a, b.float()), {}, "x~dtype", check="invalid_inputs", meta={"base": Sample((a, b), {}, "x")})
        runner = Runner("bitwise_and.Tensor", "functional", False, torch.int64, dev, grad_samples=2)
        self.assertEqual(runner.run(probe)["invalid_inputs"][0], "skip")  # the device raises on the base too
        dev.faults["bitwise_and.Tensor"] = lambda f, a, k: f(*a, **k) if not a[1].is_floating_point() else (_ for _ in ()).throw(RuntimeError("no"))
        status, msg = Runner("bitwise_and.Tensor", "functional", False, torch.int64, dev, grad_samples=2).run(probe)["invalid_inputs"]
        self.assertEqual(status, "fail")
        self.assertIn("raised RuntimeError: no; CPU raises NotImplementedError", msg)

    def test_out_nonempty_needs_eager_to_agree_with_itself(self):
        # eager's gelu.out leaves a non-contiguous out unwritten; a device that writes it is not wrong
        real = torch.ops.aten.sub.out

        def eager(*args, out):
            return out if not out.is_contiguous() else real(*args, out=out)

        dev = FaultDevice(None)
        dev.faults["sub.out"] = lambda f, a, k: real(*a, **k)
        runner = Runner("sub.out", "out", False, torch.float32, dev, grad_samples=2)
        runner.calls.op = eager
        probes = [s for s in sample_list("sub.out", "out", torch.float32, 0, empty_index(), 3) if s.check == "out_nonempty"]
        verdicts = {s.meta["layout"]: runner.run(s)["out_nonempty"] for s in probes}
        self.assertEqual(verdicts["wrong-shape"], ("pass", ""))
        self.assertEqual(verdicts["noncontig"], ("skip", "eager CPU writes a non-contiguous out other than an empty one: no reference"))

    def test_tolerance_overrides(self):
        self.assertEqual(tolerance("add.Tensor", torch.float16, []), (1e-3, 1e-5))
        ov = [{"op": "add*", "rtol": 0.1}, {"op": "add.Tensor", "dtype": "float16", "atol": 0.5}]
        self.assertEqual(tolerance("add.Tensor", torch.float16, ov), (0.1, 0.5))
        self.assertEqual(tolerance("add.Tensor", torch.float32, ov), (0.1, 1e-5))
        self.assertEqual(tolerance("mul.Tensor", torch.int64, ov), (0.0, 0.0))


if __name__ == "__main__":
    unittest.main()


class PrecisionRuleTest(unittest.TestCase):
    """Note [Precision rule] (compare.precision_verdict), table-driven: the
    device's error against float64 at most K x eager's plus a one-ulp floor."""

    def test_verdicts(self):
        from opgen_conformance.compare import PRECISION_K, precision_verdict

        r = torch.tensor([1.0, -2.5, 1e-3, 0.0], dtype=torch.float64) / 3
        c = r.float()  # eager: correctly rounded
        ulp = lambda x, n=1: x + n * torch.finfo(torch.float32).eps * x.abs()  # noqa: E731
        cases = [
            ("eager's own value", c, True),
            ("one ulp off where eager is exact", ulp(c), True),
            ("a bad digit", c + 1e-6, False),
            ("NaN where eager is finite", torch.tensor([float("nan"), 0, 0, 0]) + c, False),
        ]
        for what, dev, ok in cases:
            with self.subTest(what):
                self.assertEqual(precision_verdict(dev, c, r)[0], ok, precision_verdict(dev, c, r)[1])
        # eager 1e-4 off in one element (a cancelling sum): K x that passes, more fails
        bad = c.clone()
        bad[0] += 1e-4
        near = c.clone()
        near[0] += (PRECISION_K - 0.5) * 1e-4
        far = c.clone()
        far[0] += (PRECISION_K + 1.5) * 1e-4
        self.assertTrue(precision_verdict(near, bad, r)[0])
        ok, why = precision_verdict(far, bad, r)
        self.assertFalse(ok)
        self.assertIn("less accurate than eager CPU", why)
        # eager's infinities and NaNs must be matched exactly
        ci = torch.tensor([float("inf"), float("nan")])
        ri = torch.tensor([float("inf"), float("nan")], dtype=torch.float64)
        self.assertTrue(precision_verdict(ci.clone(), ci, ri)[0])
        self.assertFalse(precision_verdict(torch.tensor([1e38, float("nan")]), ci, ri)[0])

    def test_float16_rounding_passes_on_the_floor(self):
        from opgen_conformance.compare import precision_verdict

        r = torch.linspace(-3, 3, 101, dtype=torch.float64)
        c = r.half()
        dev = torch.nextafter(c.float(), torch.full((101,), 10.0)).half()  # up to one ulp off eager
        self.assertTrue(precision_verdict(dev, c, r)[0])

    def test_shortcut_implies_the_rule(self):
        from opgen_conformance.compare import precision_floor, precision_verdict, within_rule_of_cpu

        torch.manual_seed(0)
        r = torch.randn(1000, dtype=torch.float64)
        c = r.float()
        rtol, atol = 1.3e-6, 1e-5
        f = precision_floor(torch.float32)
        dev = c + 0.9 * (f / 2) * (atol + rtol * c.abs()) * (torch.rand(1000) * 2 - 1)
        self.assertTrue(within_rule_of_cpu(dev, c, rtol, atol))
        self.assertTrue(precision_verdict(dev, c, r)[0])
        self.assertFalse(within_rule_of_cpu(c + 2 * f * atol, c, rtol, atol))
