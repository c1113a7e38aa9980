"""Model files: plain Python that defines ``CASES``, a dict from a case's name
to a builder that returns what to run (Note [Model case] below). This module
loads one, selects cases by name, and checks what a builder returns; the
runner (models.py) does the running.

Note [Model case]: a builder takes no arguments and is called after
``torch.manual_seed(0)``. It builds on CPU in float32 and returns a dict:

  module     torch.nn.Module (required)
  inputs     tuple of positional arguments (tensors, or nested tuples, lists
             and dicts of them)
  kwargs     dict of keyword arguments
  targets    tuple of tensors the loss compares with (labels), moved and cast
             as the inputs are
  loss       callable(output, *targets) -> scalar tensor; default: a fixed,
             seeded random projection of every floating tensor in the output
  optimizer  callable(params) -> torch.optim.Optimizer; one step is taken and
             the updated parameters are judged as well
  train      bool, default True (module.train()); dropout is switched off
  step       callable(module, *inputs, **kwargs) -> scalar loss, a training
             step used instead of forward + loss

``zoo`` names the model zoo shipped with the runner (zoo.py).
"""

from __future__ import annotations

import fnmatch
import importlib.util
import os
import sys
from typing import Any, Callable

ZOO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zoo.py")

CASE_KEYS = ("module", "inputs", "kwargs", "targets", "loss", "optimizer", "train", "step")


class ModelFileError(ValueError):
    """A model file or selection this runner cannot use; the message says why."""


def resolve(spec: str) -> tuple[str, list[str]]:
    """``FILE[:NAME[,NAME...]]`` -> (absolute file, name globs; empty: all).
    ``zoo`` is the shipped zoo."""
    file, _, names = spec.partition(":")
    if file == "zoo":
        file = ZOO
    if not file.endswith(".py") and os.path.isfile(file + ".py"):
        file += ".py"
    return os.path.abspath(file), [n for n in names.split(",") if n]


def load(file: str) -> dict[str, Callable[[], dict]]:
    """The file's CASES, imported as a module of its own."""
    if not os.path.isfile(file):
        raise ModelFileError(f"{file}: no such model file")
    name = "_opgen_model_" + os.path.splitext(os.path.basename(file))[0]
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except SyntaxError as e:
        raise ModelFileError(f"{file}:{e.lineno or 1}:{e.offset or 1}: {e.msg}") from None
    except Exception as e:
        raise ModelFileError(f"{where_in(file, e)}: importing it raised {type(e).__name__}: {e}") from None
    cases = getattr(mod, "CASES", None)
    if not isinstance(cases, dict) or not all(isinstance(k, str) and callable(v) for k, v in cases.items()):
        raise ModelFileError(f"{file}: defines no CASES dict of name -> builder (Note [Model case])")
    return cases


def where_in(file: str, e: BaseException) -> str:
    """``file:line:1`` of the innermost frame of ``e`` in ``file`` (``file`` when none is)."""
    import traceback

    frames = [f for f in traceback.extract_tb(e.__traceback__) if os.path.abspath(f.filename) == file]
    return f"{file}:{frames[-1].lineno}:1" if frames else file


def select(file: str, globs: list[str]) -> list[str]:
    """The case names of ``file`` that ``globs`` select, in the file's order;
    a glob that selects nothing is an error naming the cases there are."""
    names = list(load(file))
    if not globs:
        return names
    unmatched = [g for g in globs if not any(fnmatch.fnmatchcase(n, g) for n in names)]
    if unmatched:
        raise ModelFileError(
            f"{file}: no case matches {', '.join(unmatched)}; its cases are {', '.join(names) or '(none)'}"
        )
    return [n for n in names if any(fnmatch.fnmatchcase(n, g) for g in globs)]


def build(file: str, name: str) -> dict[str, Any]:
    """Runs case ``name``'s builder (seeded) and checks what it returned."""
    import torch

    builder = load(file)[name]
    torch.manual_seed(0)
    try:
        spec = builder()
    except Exception as e:
        raise ModelFileError(f"{where_in(file, e)}: case {name}: its builder raised {type(e).__name__}: {e}") from None
    where = f"{file}: case {name}"
    if not isinstance(spec, dict):
        raise ModelFileError(f"{where}: the builder returned {type(spec).__name__}, not a dict (Note [Model case])")
    unknown = sorted(k for k in spec if k not in CASE_KEYS)
    if unknown:
        raise ModelFileError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(CASE_KEYS)}")
    if not isinstance(spec.get("module"), torch.nn.Module):
        raise ModelFileError(f"{where}: 'module' must be a torch.nn.Module")
    inputs = spec.get("inputs", ())
    if not isinstance(inputs, (tuple, list)):
        raise ModelFileError(f"{where}: 'inputs' must be a tuple of positional arguments")
    kwargs = spec.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise ModelFileError(f"{where}: 'kwargs' must be a dict")
    targets = spec.get("targets", ())
    if not isinstance(targets, (tuple, list)):
        raise ModelFileError(f"{where}: 'targets' must be a tuple of tensors")
    for key in ("loss", "optimizer", "step"):
        if spec.get(key) is not None and not callable(spec[key]):
            raise ModelFileError(f"{where}: '{key}' must be callable")
    return {
        "module": spec["module"],
        "inputs": tuple(inputs),
        "kwargs": dict(kwargs),
        "targets": tuple(targets),
        "loss": spec.get("loss"),
        "optimizer": spec.get("optimizer"),
        "train": bool(spec.get("train", True)),
        "step": spec.get("step"),
    }
