"""Note [Compiled mode]: every device call of a sample through
torch.compile(backend="inductor"), judged by the same checks, with a compile
check of its own (compile-failed with Inductor's first error line; a graph
break warns). Run on the fault device (CPU, no faults), where Inductor
compiles real C++ kernels: these tests need a C++ compiler and take a few
seconds each."""

import os
import tempfile
import unittest
from types import SimpleNamespace

import torch

from opgen_conformance.checks import Runner
from opgen_conformance.compiled import CompiledDevice, CompileFailed, compile_verdict, first_line
from opgen_conformance.device import open_device
from opgen_conformance.sample import Sample


def _device(tmp: str) -> CompiledDevice:
    cfg = SimpleNamespace(compile=True, results=os.path.join(tmp, "r.jsonl"), device="cpu", package=None, faults=None)
    return open_device(cfg)


def _run(dev, op: str, dtype: torch.dtype, args: tuple, kind: str = "functional", outs: tuple = ()) -> dict:
    r = Runner(op, kind, False, dtype, dev, grad_samples=1)
    s = Sample(args=args, kwargs={}, source="test", out_names=outs, out_dtypes=tuple(dtype for _ in outs))
    return r.run(s, 0)


class TestCompiled(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.dev = _device(cls.tmp)

    def test_environment_is_fresh_codegen_and_a_shared_cpp_cache(self):
        self.assertEqual(os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"], "0")
        self.assertEqual(os.environ["TORCHINDUCTOR_COMPILE_THREADS"], "1")
        self.assertTrue(os.environ["TORCHINDUCTOR_CACHE_DIR"])
        self.assertTrue(self.dev.compiled)

    def test_a_compiled_op_passes_every_check_and_its_gradients(self):
        v = _run(self.dev, "mul.Tensor", torch.float32, (torch.randn(3, 4), torch.randn(3, 4)))
        self.assertEqual(v["compile"], ("pass", ""))
        for check in ("errors", "values", "dtype", "shape", "gradients"):
            self.assertEqual(v[check][0], "pass", (check, v[check]))

    def test_the_ops_own_error_is_unwrapped_for_error_parity(self):
        # Dynamo raises TorchRuntimeError from its fake-tensor run; parity compares the op's RuntimeError
        v = _run(self.dev, "add.Tensor", torch.float32, (torch.randn(3, 4), torch.randn(5, 4)))
        self.assertEqual(v["errors"], ("pass", ""))

    def test_a_graph_break_warns_with_its_reason(self):
        v = _run(self.dev, "nonzero", torch.float32, (torch.tensor([[0.0, 1.0], [2.0, 0.0]]),))
        self.assertEqual(v["compile"][0], "warn")
        self.assertIn("graph break", v["compile"][1])
        self.assertIn("Dynamic shape operator", v["compile"][1])
        self.assertEqual(v["values"][0], "pass")

    def test_a_compile_failure_is_its_own_status_with_inductors_first_line(self):
        # torch 2.13's Inductor cannot lower this out= overload into empty outs that need
        # resizing; eager CPU resizes them
        op = torch.ops.aten._weight_norm_interface_backward.out
        gen = torch.Generator().manual_seed(0)
        args = tuple(torch.randn(s, generator=gen) for s in ((6, 3, 5), (6, 3, 5), (6, 1, 1), (6, 1, 1))) + (0,)
        outs = lambda: {"out0": torch.empty(0), "out1": torch.empty(0)}  # noqa: E731
        op(*args, **outs())
        self.dev.begin_task()
        self.dev.begin_sample()
        with self.assertRaises(CompileFailed) as got:
            self.dev.call("_weight_norm_interface_backward.out", op, args, outs())
        self.assertEqual(got.exception.line, "RuntimeError: expand: the requested shape has too few dimensions!")
        status, line = compile_verdict(self.dev)
        self.assertEqual((status, line), ("compile-failed", got.exception.line))
        # the runner's own samples give out= tensors of eager's shape (presized): that compiles
        v = _run(self.dev, "_weight_norm_interface_backward.out", torch.float32, args, "out", ("out0", "out1"))
        self.assertEqual(v["compile"], ("pass", ""))
        self.assertEqual(v["out"][0], "pass", v["out"])


class TestFirstLine(unittest.TestCase):
    def test_the_innermost_cause_not_the_wrapper(self):
        from torch._dynamo.exc import BackendCompilerFailed

        inner = NotImplementedError("no lowering for aten.foo\nmore detail")
        e = BackendCompilerFailed(lambda: None, inner, None)
        self.assertEqual(first_line(e), "NotImplementedError: no lowering for aten.foo")

    def test_a_bare_assert_names_where_it_stands(self):
        def lowering():
            raise AssertionError()

        try:
            lowering()
        except AssertionError as e:
            line = first_line(e)
        self.assertRegex(line, r"^AssertionError at test_compiled\.py:\d+ in lowering$")


if __name__ == "__main__":
    unittest.main()
