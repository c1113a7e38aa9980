"""Note [Storage-dtype samples]: which overloads get samples in uint16/32/64
and float8, under which tasks, and that eager CPU takes or refuses each as
the note says (the refused ones feed the errors check)."""

import unittest
import warnings

import torch

from opgen_conformance.overloads import resolve_overload
from opgen_conformance.sample import empty_outs
from opgen_conformance.sources.storage import FLOAT8, STORAGE_DTYPES, UNSIGNED, storage_samples
from opgen_conformance.tensors import clone_tree


def storage_dtypes_in(s) -> set:
    flat = [*s.args, *s.kwargs.values()]
    flat += [v for a in s.args if isinstance(a, list) for v in a]
    found = {v.dtype for v in flat if isinstance(v, torch.Tensor)} | {v for v in flat if isinstance(v, torch.dtype)}
    return found & set(STORAGE_DTYPES)


def eager(name: str, s) -> BaseException | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            resolve_overload(name)(*clone_tree(s.args), **clone_tree(s.kwargs), **empty_outs(s))
    except Exception as e:  # noqa: BLE001
        return e
    return None


class StorageSamplesTest(unittest.TestCase):
    def test_every_storage_dtype_reaches_each_overload(self):
        for name in ("_to_copy", "copy_", "clone", "cat", "fill_.Scalar", "fill_.Tensor", "eq.Tensor", "ne.Scalar",
                     "lt.Tensor", "ge_.Scalar", "eq.Tensor_out", "cat.out"):
            seen = set().union(*(storage_dtypes_in(s) for s in storage_samples(name, torch.float32)))
            self.assertEqual(seen, set(STORAGE_DTYPES), name)

    def test_conversions_under_every_task_others_once(self):
        self.assertTrue(storage_samples("_to_copy", torch.int8))
        self.assertTrue(storage_samples("copy_", torch.bool))
        self.assertEqual(storage_samples("clone", torch.int8), [])
        self.assertEqual(storage_samples("eq.Tensor", torch.float64), [])
        self.assertEqual(storage_samples("add.Tensor", torch.float32), [])

    def test_eager_takes_and_refuses_as_the_note_says(self):
        torch.manual_seed(0)
        for name in ("_to_copy", "clone", "cat", "fill_.Scalar", "eq.Tensor", "ne.Scalar", "lt.Tensor"):
            for s in storage_samples(name, torch.float32):
                e = eager(name, s)
                variant = s.source.partition(":")[2]
                dts = storage_dtypes_in(s)
                if name == "lt.Tensor" and not variant.endswith("with-float32"):
                    self.assertIsInstance(e, NotImplementedError, variant)
                elif variant.endswith("with-float32") and dts & set(FLOAT8):
                    self.assertIsInstance(e, RuntimeError, variant)  # no promotion of float8
                elif variant.endswith("overflow") and "e8m0fnu" not in variant:  # e8m0fnu holds up to 2^127
                    self.assertIsInstance(e, RuntimeError, variant)
                else:
                    self.assertIsNone(e, f"{name} {variant}: {e}")
                if variant.endswith("with-float32") and dts & set(UNSIGNED):
                    self.assertIsNone(e, variant)


if __name__ == "__main__":
    unittest.main()
