"""Conformance runner for opgen-backend devices.

Compares every operator a PrivateUse1 backend registers against eager CPU
PyTorch. Layout:

- ``samples``  -- which inputs each aten overload is called with: the sample
  sources put together, in order, within a budget
- ``sources/`` -- the sample sources: ``opinfo`` (OpInfo samples traced on CPU
  with a TorchDispatchMode, and the index of which OpInfo reaches what),
  ``handmade`` (calls written by hand), ``schema`` (synthesized from the schema)
- ``probes``   -- samples made for one check each (extreme values, device 1,
  invalid inputs, non-empty out=), derived from the ordinary ones
- ``cache``    -- sample lists cached on disk (Note [Sample cache])
- ``sample``, ``overloads``, ``kinds``, ``tensors`` -- what they all share: the
  Sample record, overloads by name and kind, a call of a functional overload as
  a sample of its in-place or out= sibling, layout-preserving copies and dtypes
- ``checks``   -- one sample in, one verdict per check out (values, dtype, ...);
  ``probe_checks`` and ``gradients`` are the checks of probes and of backward,
  ``calls`` runs a sample on CPU and the device, ``compare`` compares results,
  ``references`` stands in for the CPU kernels eager lacks
- ``device``   -- how the device under test is reached (a real torch_<device>
  package, or CPU with injected faults for the runner's own tests)
- ``worker``   -- a persistent process that imports torch once and runs tasks
- ``pool``     -- the coordinator: starts the parts below and runs the loop
  that passes the workers' messages between them
- ``scheduler`` -- which task a free worker runs next (resume, incidents)
- ``workers``  -- the worker processes: start, read, write, stop
- ``watchdog`` -- a dead or silent worker as a CRASH/TIMEOUT of its sample
- ``results``  -- the JSONL results stream the recorder writes, and reading it
  back to resume
- ``config``   -- the run config the TypeScript driver writes (Note [Run config contract])

The TypeScript driver (src/conformance) starts ``python -m opgen_conformance run``
and turns the JSONL it writes into reports.
"""

import os

# Note [No autoload]: `import torch` loads every device backend installed in
# this Python (torch's backend autoload: each opgen-made package declares a
# `torch.backends` entry point). Two PrivateUse1 backends cannot coexist (an
# opgen-made package refuses to load when another holds PrivateUse1, Note [One
# PrivateUse1 backend]; one made otherwise aborts the process: "multiple
# backend fallbacks for PrivateUse1"), and the runner tests exactly the
# package its manifest names, which RealDevice imports. Every entry point
# (run, worker, rerun, custom, ...) imports this package before torch, and
# the processes it starts inherit the switch.
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"

PROTOCOL_VERSION = 4

# The dtypes the runner knows, by their torch attribute names (tensors.DTYPES
# maps them to torch's): here so that the coordinator plans a run without
# importing torch.
KNOWN_DTYPES = (
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "int8",
    "uint8",
    "int16",
    "int32",
    "int64",
    "bool",
)

# Bump when the OpInfo index's format or content rules change (sources/opinfo.py).
INDEX_VERSION = 2


def index_file(cache_dir: str, torch_version: str) -> str:
    """The OpInfo index of one torch in the cache (sources.opinfo.load_index)."""
    return os.path.join(cache_dir, f"opinfo-index-{torch_version}-v{INDEX_VERSION}.json")
