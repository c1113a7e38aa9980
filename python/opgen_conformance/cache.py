"""Note [Sample cache]: being a pure function (Note [Sample determinism] in
samples.py), a task's sample list is also cached on disk (torch.save, one
file per overload, kind, dtype, seed and sample count) in a directory named
by the torch version and a hash of the code that makes samples -- samples.py
and every file of this package it imports, directly or not, so the sample
sources, probes.py and what they import (sample_modules) -- so a change to any
of them starts a fresh cache. A worker whose task is cached never imports
OpInfo (seconds) nor traces anything: retesting one operator after editing
its kernel starts in about the time it takes to import torch. A file whose
recorded task differs (a hash collision) or that does not load is
regenerated.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import os
from typing import Any

from .sample import derive_seed

_PACKAGE = os.path.dirname(os.path.abspath(__file__))


@functools.lru_cache(maxsize=None)
def sample_modules() -> tuple[str, ...]:
    """The package's files that make samples: samples.py and those it imports
    (lazy imports inside functions included), transitively, as sorted paths
    relative to the package; each package's __init__.py on the way counts."""
    found: set[str] = set()
    todo = ["samples.py"]
    while todo:
        rel = todo.pop()
        if rel in found:
            continue
        found.add(rel)
        with open(os.path.join(_PACKAGE, rel)) as f:
            tree = ast.parse(f.read(), rel)
        here = os.path.dirname(rel).split(os.sep) if os.path.dirname(rel) else []
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                parts = here[: len(here) - (node.level - 1)] + (node.module.split(".") if node.module else [])
                todo += _files_of(parts, [a.name for a in node.names])
    return tuple(sorted(found))


def _files_of(parts: list[str], names: list[str]) -> list[str]:
    """The files of `from <parts> import <names>` inside the package: the
    module (or package) itself, the __init__.py of every package on the way,
    and each name that is a module of its own."""
    files = [os.path.join(*parts[:i], "__init__.py") for i in range(len(parts) + 1)]
    files = [f for f in files if os.path.isfile(os.path.join(_PACKAGE, f))]
    if parts and os.path.isfile(os.path.join(_PACKAGE, *parts[:-1], parts[-1] + ".py")):
        files.append(os.path.join(*parts[:-1], parts[-1] + ".py"))
    for n in names:
        if os.path.isfile(os.path.join(_PACKAGE, *parts, n + ".py")):
            files.append(os.path.join(*parts, n + ".py"))
    return files


def samples_cache_dir(cache_dir: str) -> str:
    """Where Note [Sample cache] keeps sample lists for this torch and this code."""
    import torch

    h = hashlib.sha256()
    for rel in sample_modules():
        h.update(rel.encode() + b"\0")
        with open(os.path.join(_PACKAGE, rel), "rb") as f:
            h.update(f.read())
    return os.path.join(cache_dir, f"samples-{torch.__version__}-{h.hexdigest()[:12]}")


def sample_cache_file(samples_dir: str, task: dict) -> str:
    """The file of one task's sample list in Note [Sample cache]; `task` holds
    op, kind, dtype, seed and max_samples (and is stored with the samples)."""
    key = derive_seed(*(task[k] for k in ("op", "kind", "dtype", "seed", "max_samples")))
    return os.path.join(samples_dir, f"{key:08x}.pt")


def cached_sample_list(cache_dir: str, task: dict, dtype: Any, seed: int, max_samples: int) -> list:
    """The task's sample list, from the cache when an earlier worker (of this
    run or an earlier one) made it: the worker then needs neither OpInfo
    (seconds to import) nor the index nor tracing; else made and stored."""
    import torch

    from .samples import sample_list
    from .sources.opinfo import load_index

    what = {"op": task["op"], "kind": task["kind"], "dtype": task["dtype"], "seed": seed, "max_samples": max_samples}
    path = sample_cache_file(samples_cache_dir(cache_dir), what)
    try:
        cached = torch.load(path, weights_only=False)
        if cached.get("task") == what:
            return cached["samples"]
    except Exception:
        pass
    # The coordinator has the index ready before it hands out the first task.
    samples = sample_list(task["op"], task["kind"], dtype, seed, load_index(cache_dir), max_samples)
    _picklable_memory_formats()
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        torch.save({"task": what, "samples": samples}, tmp)
        os.replace(tmp, path)
    except Exception:
        # Not cached (a full disk, a value torch.save cannot write): the samples still serve this run.
        with contextlib.suppress(OSError):
            os.remove(tmp)
    return samples


def _memory_format(name: str) -> Any:
    import torch

    return getattr(torch, name)


def _picklable_memory_formats() -> None:
    """torch.save cannot write a torch.memory_format (torch 2.13: "cannot
    pickle 'module' object"), which samples of clone, empty_like, to and
    contiguous pass as `memory_format=`: without this their sample lists were
    never cached. Each is stored as its name and read back with getattr."""
    import copyreg

    import torch

    copyreg.pickle(torch.memory_format, lambda m: (_memory_format, (str(m).removeprefix("torch."),)))
