"""The model zoo (opgen_conformance/zoo.py): its cases load through the model
file loader, every builder returns the documented keys with dropout off and
the attention implementation it names, two tiny cases run forward and
backward on CPU with float64 agreeing with float32, and without transformers
the file still lists its cases and a builder says what to install."""

import os
import subprocess
import sys
import unittest

import pytest
import torch

pytest.importorskip("transformers")

from opgen_conformance import modelfile  # noqa: E402

FAMILIES = {
    "decoder, learned positions": {"gpt2", "opt"},
    "decoder, rotary": {"llama", "qwen2", "qwen3", "mistral", "phi", "gemma"},
    "mixture of experts": {"mixtral", "qwen2_moe"},
    "state space": {"mamba"},
    "BERT-style encoder": {"bert", "roberta", "albert", "electra"},
    "disentangled attention": {"deberta_v2"},
    "encoder-decoder": {"t5", "bart", "marian"},
    "speech": {"wav2vec2", "whisper"},
    "vision, global attention": {"vit", "deit"},
    "vision, windowed attention": {"swin"},
    "convnet, batch norm": {"resnet"},
    "convnet, layer norm": {"convnext"},
}


def _tensors(x):
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (tuple, list)):
        for y in x:
            yield from _tensors(y)
    elif isinstance(x, dict):
        for y in x.values():
            yield from _tensors(y)


def _run(case: dict, dtype: torch.dtype):
    module, inputs, kwargs = case["module"], case["inputs"], case["kwargs"]
    if dtype == torch.float64:
        module = module.double()
        cast = lambda t: t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t  # noqa: E731
        inputs = tuple(cast(t) for t in inputs)
        kwargs = {k: cast(v) for k, v in kwargs.items()}
    module.train(case["train"])
    loss = case["loss"](module(*inputs, **kwargs))
    loss.backward()
    grads = {n: p.grad for n, p in module.named_parameters() if p.requires_grad}
    return loss.detach(), grads


class ZooTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cases = modelfile.load(modelfile.ZOO)
        spec = __import__("importlib").util.spec_from_file_location("_zoo_under_test", modelfile.ZOO)
        cls.zoo = __import__("importlib").util.module_from_spec(spec)
        spec.loader.exec_module(cls.zoo)

    def test_at_least_twenty_architectures_in_every_family(self):
        self.assertGreaterEqual(len(self.cases), 24)
        for family, names in FAMILIES.items():
            self.assertTrue(names <= set(self.cases), f"{family}: missing {sorted(names - set(self.cases))}")

    def test_builders_return_the_documented_keys(self):
        for name in self.cases:
            with self.subTest(case=name):
                case = modelfile.build(modelfile.ZOO, name)  # raises on keys outside the format
                module = case["module"]
                self.assertTrue(module.training or not case["train"])
                tensors = list(_tensors((case["inputs"], case["kwargs"])))
                self.assertTrue(case["inputs"] and all(isinstance(t, torch.Tensor) for t in case["inputs"]))
                for t in tensors:
                    self.assertEqual(t.device.type, "cpu")
                    if t.is_floating_point():
                        self.assertEqual(t.dtype, torch.float32)
                self.assertTrue(all(p.dtype == torch.float32 for p in module.parameters()))
                # Dropout off: in modules and in the config values functional dropout reads.
                for m in module.modules():
                    if isinstance(m, torch.nn.modules.dropout._DropoutNd):
                        self.assertEqual(m.p, 0.0, f"{name}: {m}")
                for key, value in vars(module.config).items():
                    if any(s in key for s in self.zoo._STOCHASTIC_KEYS) and isinstance(value, float):
                        self.assertEqual(value, 0.0, f"{name}: config.{key}")
                if name in self.zoo.ATTENTION:
                    self.assertEqual(module.config._attn_implementation, self.zoo.ATTENTION[name])
                if "labels" in case["kwargs"] or "start_positions" in case["kwargs"]:
                    self.assertIsNotNone(case["loss"], f"{name}: labels given but no loss callable")

    def test_two_cases_run_forward_and_backward_in_float32_and_float64(self):
        for name in ("gpt2", "convnext"):  # resnet is ill-conditioned on purpose (N*H*W = 2)
            with self.subTest(case=name):
                loss32, g32 = _run(modelfile.build(modelfile.ZOO, name), torch.float32)
                loss64, g64 = _run(modelfile.build(modelfile.ZOO, name), torch.float64)
                self.assertTrue(torch.isfinite(loss32))
                self.assertTrue(all(g is not None for g in g32.values()), f"{name}: a parameter got no gradient")
                # gpt2 computes its loss in float32 even in a float64 model (logits.float()).
                torch.testing.assert_close(loss32.double(), loss64.double(), rtol=1e-5, atol=0)
                scale = max(g.abs().max().item() for g in g64.values())
                for k in g64:
                    torch.testing.assert_close(g32[k].double(), g64[k], rtol=1e-3, atol=1e-5 * scale, msg=f"{name}: {k}")

    def test_without_transformers_the_names_still_list_and_builders_say_what_to_install(self):
        code = (
            "import sys, importlib.util; sys.modules['transformers'] = None\n"
            f"spec = importlib.util.spec_from_file_location('z', {modelfile.ZOO!r})\n"
            "z = importlib.util.module_from_spec(spec); spec.loader.exec_module(z)\n"
            "print(len(z.CASES))\n"
            "try:\n    z.CASES['llama']()\nexcept ImportError as e:\n    print(e)\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ}, check=True)
        count, message = out.stdout.splitlines()[:2]
        self.assertEqual(int(count), len(self.cases))
        self.assertIn("pip install transformers==5.24.0", message)


if __name__ == "__main__":
    unittest.main()
