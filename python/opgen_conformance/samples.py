"""Which inputs each aten overload is called with: the sample list of one
task, put together from the sample sources.

  sources/opinfo.py    OpInfo samples traced on CPU: every call that reaches
                       the overload (for in-place and out= overloads, their
                       functional sibling, kinds.py) is a sample
  sources/handmade.py  valid calls written by hand where neither OpInfo nor
                       the schema makes them
  sources/schema.py    calls synthesized from the schema (0-d, empty,
                       non-contiguous and broadcast shapes; in-range dims),
                       adding what the traced ones lack (Note [Sample budget])
  sources/storage.py   tensors of uint16/32/64 and float8, which no task is
                       of, for the copies, fills, cat and comparisons
                       (Note [Storage-dtype samples])
  probes.py            samples made for one check each, derived from the
                       ordinary samples and following them

Note [Sample determinism]: the sample list of (overload, dtype, seed) is a pure
function of those three (and the torch version): every generator is seeded with
``derive_seed`` right before it runs, and samples are numbered in the order
they are produced. A result's (seed, sample) therefore reruns it alone, and a
worker that replaces a crashed one skips to sample k+1 by regenerating the list
(or reading it from Note [Sample cache] in cache.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

import torch

from .kinds import as_kind, out_dtypes_via_cpu, out_dtypes_via_functional
from .overloads import schema_of, target_of
from .probes import probes
from .sample import Sample, derive_seed, seed_cpu
from .sources.handmade import error_samples, handmade, ill_conditioned
from .sources.opinfo import trace_calls
from .sources.schema import synthesize, variants_of
from .sources.storage import storage_samples
from .tensors import DTYPE_NAMES


def made(name: str, dtype: torch.dtype) -> list[Sample]:
    """The samples made rather than traced: hand-made ones where the
    overload has them, else those synthesized from its schema; then the
    ill-conditioned ones of the statistics (Note [Ill-conditioned samples]),
    those in the storage dtypes (Note [Storage-dtype samples]) and the calls
    eager refuses that nothing else makes (Note [Error samples])."""
    found = handmade(name, dtype)
    made = found if found is not None else synthesize(name, dtype)
    return made + ill_conditioned(name, dtype) + storage_samples(name, dtype) + error_samples(name, dtype)


def _with_variants(traced: list[Sample], synth: list[Sample], max_samples: int) -> list[Sample]:
    """Note [Sample budget]: `max_samples` is a budget, and the synthesized
    variants (0-d, empty, non-contiguous, broadcast; 2-d when nothing was
    traced) that no traced sample already is always get a place in it: they
    take places from the traced samples down to half of the budget, and beyond
    that are added to it. Filling the budget with traced samples first would
    never reach them for any op OpInfo samples generously, and those are the
    inputs a vendor's kernel gets wrong (a broadcast read with the wrong
    stride passes every same-shape sample)."""
    half = (max_samples + 1) // 2
    keep = len(traced)
    while True:
        covered = set().union(*(variants_of(s) for s in traced[:keep]))
        missing = [s for s in synth if s.source.partition(":")[2] not in covered]
        if keep + len(missing) <= max_samples or keep <= half:
            return traced[:keep] + missing
        keep -= 1


def _traced(
    name: str, kind: str, target: str, dtype: torch.dtype, seed: int, index: dict, max_samples: int, per_opinfo: int
) -> list[Sample]:
    """OpInfo's calls as samples of `name`, at most `max_samples`: for an
    in-place or out= overload, calls of the overload itself first, then its
    functional sibling's (kinds.py)."""
    traced: list[Sample] = []
    if target != name:
        for src, a, k in trace_calls(index, name, dtype, seed, per_opinfo, max_samples):
            s = as_kind(name, kind, name, src, a, k, dtype)
            if s is not None:
                traced.append(s)
    if len(traced) < max_samples and (kind not in ("inplace", "out") or target != name):
        for src, a, k in trace_calls(index, target, dtype, seed, per_opinfo, max_samples - len(traced)):
            s = as_kind(name, kind, target, src, a, k, dtype)
            if s is not None:
                traced.append(s)
            if len(traced) >= max_samples:
                break
    return traced


def sample_list(
    name: str,
    kind: str,
    dtype: torch.dtype,
    seed: int,
    index: dict,
    max_samples: int,
    per_opinfo: int = 12,
) -> list[Sample]:
    """The ordered samples of one (overload, dtype): the ordinary samples, then
    the probes derived from them (probes.py); see Note [Sample determinism]."""
    try:
        schema_of(name)
    except Exception:
        return []
    target = target_of(name, kind)
    traced = _traced(name, kind, target, dtype, seed, index, max_samples, per_opinfo)
    seed_cpu(derive_seed(seed, name, DTYPE_NAMES.get(dtype, dtype), "schema"))
    traced = [_eager_runs(name, target, s) for s in traced]
    synth = [_eager_runs(name, target, s) for s in made(name, dtype)]
    for s in synth:
        if kind == "out" and s.out_names:
            dts = out_dtypes_via_functional(name, target, s.args, s.kwargs) if target != name else None
            if dts is None:
                dts = out_dtypes_via_cpu(name, s.args, s.kwargs, s.out_names, dtype)
            s.out_dtypes = dts if dts is not None else s.out_dtypes
    ordinary = _with_variants(traced, synth, max_samples)
    return ordinary + probes(name, kind, target, dtype, seed, index, ordinary)


# Note [Samples eager CPU crashes on]: a few argument combinations make eager
# CPU itself kill the process (a segfault, not an error), so there is nothing
# to compare a device with, and deriving probes or out= dtypes from such a
# sample kills the worker that generates them, losing the whole (overload,
# dtype). Such a sample is changed into the nearest one eager runs, per
# overload (the functional one and its out= form), each with the reason.
def _no_stats_training(s: Sample) -> Sample:
    # training=False without running stats: ATen's CPU kernel reads the
    # undefined running_mean/running_var (torch 2.13); train instead.
    if len(s.args) > 3 and s.args[3] is False:
        return replace(s, args=s.args[:3] + (True,) + s.args[4:])
    if s.kwargs.get("training") is False:
        return replace(s, kwargs={**s.kwargs, "training": True})
    return s


def _eval_needs_stats(s: Sample) -> Sample:
    # native_batch_norm(input, weight, bias, running_mean, running_var,
    # training, ...) with training=False and a running stat missing: ATen's
    # CPU kernel reads the undefined tensor (torch 2.13); train instead.
    args, kw = list(s.args), dict(s.kwargs)
    get = lambda i, k: args[i] if len(args) > i else kw.get(k)  # noqa: E731
    if get(5, "training") is False and (get(3, "running_mean") is None or get(4, "running_var") is None):
        if len(args) > 5:
            args[5] = True
        else:
            kw["training"] = True
        return replace(s, args=tuple(args), kwargs=kw)
    return s


_EAGER_CRASHES: dict[str, Callable[[Sample], Sample]] = {
    "_native_batch_norm_legit.no_stats": _no_stats_training,
    "_native_batch_norm_legit.no_stats_out": _no_stats_training,
    "native_batch_norm": _eval_needs_stats,
    "native_batch_norm.out": _eval_needs_stats,
}


def _eager_runs(name: str, target: str, s: Sample) -> Sample:
    fix = _EAGER_CRASHES.get(name) or _EAGER_CRASHES.get(target)
    return fix(s) if fix is not None else s
