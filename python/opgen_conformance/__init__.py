"""Conformance runner for opgen-backend devices.

Compares every operator a PrivateUse1 backend registers against eager CPU
PyTorch. Layout:

- ``samples``  -- which inputs each aten overload is called with (OpInfo samples
  traced on CPU with a TorchDispatchMode, plus samples synthesized from the schema)
- ``checks``   -- one sample in, one verdict per check out (values, dtype, ...)
- ``device``   -- how the device under test is reached (a real torch_<device>
  package, or CPU with injected faults for the runner's own tests)
- ``worker``   -- a persistent process that imports torch once and runs tasks
- ``pool``     -- the coordinator: worker pool, watchdog, JSONL stream, resume

The TypeScript driver (src/conformance) starts ``python -m opgen_conformance run``
and turns the JSONL it writes into reports.
"""

PROTOCOL_VERSION = 1
