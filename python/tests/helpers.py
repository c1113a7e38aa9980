"""Shared helpers: an empty OpInfo index (schema-synthesized samples only, so
tests need not import OpInfo) and the fault file."""

import json
import os

import torch

from opgen_conformance import INDEX_VERSION

HERE = os.path.dirname(os.path.abspath(__file__))
FAULTS = os.path.join(HERE, "fixtures", "faults.py")
CORRECT = os.path.join(HERE, "fixtures", "correct.py")


def empty_index() -> dict:
    return {"version": INDEX_VERSION, "torch": torch.__version__, "opinfos": {}, "reach": {}}


def write_empty_index(cache_dir: str) -> str:
    os.makedirs(cache_dir, exist_ok=True)
    path = os.path.join(cache_dir, f"opinfo-index-{torch.__version__}-v{INDEX_VERSION}.json")
    with open(path, "w") as f:
        json.dump(empty_index(), f)
    return path
