"""Note [Identity under inference mode]: an in-place or out= overload returns
the very tensor the schema aliases (``-> Tensor(a!)``), and the runner sees
what the kernel returned because it calls the device under inference mode.
Each return is judged by its alias set, so an op with two outs names the one
it got wrong; another tensor over the right memory only warns."""

import os
import tempfile
import textwrap
import unittest

import torch

from opgen_conformance.device import FaultDevice

from .test_fault_matrix import failing, run_all

PLANTS = textwrap.dedent(
    """
    def alias_of_self(func, args, kwargs):
        # right values in self, but a new tensor object over self's memory
        out = func(*args, **kwargs)
        return out.view(out.shape)

    def copy_of_self(func, args, kwargs):
        return func(*args, **kwargs).clone()

    def second_out_copied(func, args, kwargs):
        values, indices = func(*args, **kwargs)
        return values, indices.clone()

    FAULTS = {
        "mul_.Tensor": alias_of_self,
        "sub_.Tensor": copy_of_self,
        "max.dim_max": second_out_copied,
    }
    """
)


class IdentityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        fd, cls.faults = tempfile.mkstemp(suffix=".py")
        with os.fdopen(fd, "w") as f:
            f.write(PLANTS)

    @classmethod
    def tearDownClass(cls):
        os.unlink(cls.faults)

    def test_the_fault_device_hides_the_plants_outside_inference_mode(self):
        # not a vacuous check: autograd would return self, as on a real backend
        dev = FaultDevice(self.faults)
        x, y = dev.to_device((torch.rand(3), torch.rand(3)))
        self.assertIs(dev.call("sub_.Tensor", torch.ops.aten.sub_.Tensor, (x, y), {}), x)
        with torch.inference_mode():
            self.assertIs(dev.call("sub_.Tensor", torch.ops.aten.sub_.Tensor, (x, y), {}), x)
            x, y = dev.to_device((torch.rand(3), torch.rand(3)))
            got = dev.call("mul_.Tensor", torch.ops.aten.mul_.Tensor, (x, y), {})
            self.assertIsNot(got, x)
            self.assertEqual(got.data_ptr(), x.data_ptr())

    def test_a_copy_of_self_fails_inplace(self):
        bad = failing(run_all(FaultDevice(self.faults), "sub_.Tensor"))
        self.assertEqual(list(bad), ["inplace"], bad)
        self.assertTrue(all("returned a new tensor instead of self" in m for _s, _src, m in bad["inplace"]), bad)

    def test_another_tensor_over_self_warns(self):
        found = run_all(FaultDevice(self.faults), "mul_.Tensor")
        self.assertEqual(failing(found), {})
        warned = [m for st, _src, m in found["inplace"] if st == "warn"]
        self.assertTrue(warned, found["inplace"])
        self.assertTrue(all("returned another tensor over self's memory, not self itself" in m for m in warned))

    def test_two_outs_each_judged_by_its_alias(self):
        bad = failing(run_all(FaultDevice(self.faults), "max.dim_max"))
        self.assertEqual(list(bad), ["out"], bad)
        msgs = [m for _s, _src, m in bad["out"]]
        self.assertTrue(all("returned a new tensor instead of 'max_values'" in m for m in msgs), msgs)
        self.assertFalse(any("instead of 'max'" in m for m in msgs), msgs)

    def test_healthy_device_passes(self):
        for op in ("mul_.Tensor", "sub_.Tensor", "max.dim_max"):
            with self.subTest(op=op):
                found = run_all(FaultDevice(None), op)
                self.assertEqual(failing(found), {})
                check = "out" if op == "max.dim_max" else "inplace"
                self.assertEqual({st for st, _src, _m in found[check]}, {"pass"}, found[check])


if __name__ == "__main__":
    unittest.main()
