"""The model runner (models.py, modelfile.py) on the fault device: a clean
run matches, a fault planted for one shape is found and named by the
first-divergence search, fallbacks fail the case, and model files with
mistakes are refused with the reason."""

import os
import tempfile
import unittest

import torch

from opgen_conformance.device import FaultDevice
from opgen_conformance.modelfile import ModelFileError, build, resolve, select
from opgen_conformance.models import Run, judge, replay, run_model_task, spread_of, ulp_draw

HERE = os.path.dirname(os.path.abspath(__file__))
SMALL = os.path.join(HERE, "fixtures", "models", "small.py")
FAULTS17 = os.path.join(HERE, "fixtures", "models", "faults17.py")


def run(case, faults=None, save_dir=None):
    return run_model_task(SMALL, case, FaultDevice(faults), save_dir, lambda _p: None)


class CleanRuns(unittest.TestCase):
    def test_every_check_passes_on_a_correct_device(self):
        for case in ("mlp", "cnn", "classifier", "step_fn"):
            with self.subTest(case=case):
                checks, info = run(case)
                self.assertEqual(checks["errors"][0], "pass")
                self.assertEqual(checks["values"][0], "pass", checks["values"])
                self.assertEqual(checks["gradients"][0], "pass", checks["gradients"])
                self.assertEqual(checks["fallback"][0], "pass")
                self.assertEqual(checks["step"][0], "pass" if case == "mlp" else "skip")
                self.assertNotIn("divergence", info)
                self.assertGreater(info["time_s"]["device"], 0)

    def test_ops_are_counted_per_phase(self):
        _checks, info = run("mlp")
        ops = info["ops"]
        self.assertGreaterEqual(ops["addmm"]["forward"], 2)  # two Linear layers
        self.assertGreaterEqual(ops["_softmax_backward_data"]["backward"], 1)
        self.assertEqual(ops["_softmax_backward_data"]["forward"], 0)
        self.assertTrue(any(o["step"] > 0 for o in ops.values()))  # SGD's foreach or per-tensor ops

    def test_dropout_is_off(self):
        # Dropout(0.5) in the MLP: a random mask on either side would not match
        checks, _info = run("mlp")
        self.assertEqual(checks["values"][0], "pass")


class PlantedFault(unittest.TestCase):
    def test_first_divergence_names_the_op_and_the_replay_reproduces_it(self):
        with tempfile.TemporaryDirectory() as d:
            checks, info = run("mlp", FAULTS17, d)
            self.assertEqual(checks["values"][0], "fail")
            self.assertEqual(checks["gradients"][0], "fail")
            self.assertIn("first divergent op: _softmax", checks["values"][1])
            div = info["divergence"]
            self.assertEqual(div["op"], "_softmax")
            self.assertEqual(div["phase"], "forward")
            self.assertEqual(div["inputs"], "float32[4, 17]")
            self.assertIsNotNone(div["eager_index"])
            ok, msg = replay(div["replay"], FaultDevice(FAULTS17))
            self.assertFalse(ok, msg)
            ok, _msg = replay(div["replay"], FaultDevice(None))
            self.assertTrue(ok)

    def test_a_case_of_other_shapes_is_untouched_but_fallback_fails(self):
        checks, info = run("cnn", FAULTS17)  # no softmax; its Linear is addmm, in FALLBACK
        self.assertEqual(checks["values"][0], "pass")
        self.assertEqual(checks["fallback"][0], "fail")
        self.assertIn("addmm", checks["fallback"][1])
        self.assertEqual(info["fallback"], {"addmm": 1})
        self.assertEqual(info["ops"]["addmm"]["served"], "fallback")


class EagerSpread(unittest.TestCase):
    """Note [Eager's spread]: a case is judged again against the worst of
    eager's float32 draws; a device as far off as eager's draws passes, one
    further off still fails."""

    def test_a_draw_moves_each_parameter_by_at_most_one_ulp(self):
        torch.manual_seed(0)
        m = torch.nn.Linear(64, 64)
        d = ulp_draw(m, 3)
        for (_n, p), (_m, q) in zip(m.named_parameters(), d.named_parameters()):
            ulp = (torch.nextafter(p, torch.full_like(p, float("inf"))) - p).abs()
            moved = (q - p).abs()
            self.assertTrue(bool((moved <= ulp * 1.0000001).all()))
            self.assertTrue(bool((q > p).any()) and bool((q < p).any()) and bool((q == p).any()))
        self.assertTrue(torch.equal(ulp_draw(m, 3).weight, d.weight))  # seeded
        self.assertFalse(torch.equal(ulp_draw(m, 4).weight, d.weight))

    def test_the_spread_decides_only_where_the_single_draw_fails(self):
        ref = Run()
        ref.groups["values"] = [("out", torch.tensor([1.0], dtype=torch.float64))]
        eps = 1.2e-7  # about one float32 ulp at 1.0 (rtol 1.3e-6, atol 1e-5: ~0.009 tolerance units)

        def f32(x):
            r = Run()
            r.groups["values"] = [("out", torch.tensor([x], dtype=torch.float32))]
            return r

        cpu = f32(1.0 + 2 * eps)
        dev = f32(1.0 + 400 * eps)
        self.assertEqual(judge(dev, cpu, ref)["values"][0], "fail")
        draws = [f32(1.0 + 200 * eps), f32(1.0 - 50 * eps)]
        spread = spread_of(draws, ref)
        self.assertGreater(spread[("values", "out")], 0)
        self.assertEqual(judge(dev, cpu, ref, spread)["values"][0], "pass")
        far = f32(1.0 + 3000 * eps)
        verdict = judge(far, cpu, ref, spread)["values"]
        self.assertEqual(verdict[0], "fail")
        self.assertIn("over its float32 draws", verdict[1])


class ModelFiles(unittest.TestCase):
    def test_select_by_glob_in_file_order(self):
        self.assertEqual(select(SMALL, ["c*"]), ["cnn", "classifier"])
        self.assertEqual(select(SMALL, []), ["mlp", "cnn", "classifier", "step_fn", "broken"])

    def test_unknown_names_are_refused_with_the_cases_there_are(self):
        with self.assertRaisesRegex(ModelFileError, "no case matches nope; its cases are mlp, cnn"):
            select(SMALL, ["nope"])

    def test_spec_resolution(self):
        file, names = resolve(SMALL[:-3] + ":mlp,cnn")
        self.assertEqual((file, names), (SMALL, ["mlp", "cnn"]))
        self.assertTrue(resolve("zoo")[0].endswith("opgen_conformance/zoo.py"))

    def test_a_builder_with_a_wrong_key_is_refused(self):
        with self.assertRaisesRegex(ModelFileError, r"case broken: unknown key\(s\) input; allowed: module, inputs"):
            build(SMALL, "broken")
        with self.assertRaises(ModelFileError):  # the worker reports it as the case's errors check
            run("broken")

    def test_errors_in_a_model_file_name_its_line(self):
        with tempfile.TemporaryDirectory() as d:
            syn = os.path.join(d, "syn.py")
            with open(syn, "w") as f:
                f.write("import torch\nCASES = {\n")
            with self.assertRaisesRegex(ModelFileError, r"syn\.py:2:9: '\{' was never closed"):
                select(syn, [])
            bad = os.path.join(d, "bad.py")
            with open(bad, "w") as f:
                f.write("def b():\n    return 1 / 0\n\nCASES = {'b': b}\n")
            with self.assertRaisesRegex(ModelFileError, r"bad\.py:2:1: case b: its builder raised ZeroDivisionError"):
                build(bad, "b")

    def test_a_file_without_cases(self):
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write("X = 1\n")
        try:
            with self.assertRaisesRegex(ModelFileError, "defines no CASES dict"):
                select(f.name, [])
        finally:
            os.unlink(f.name)


if __name__ == "__main__":
    unittest.main()
