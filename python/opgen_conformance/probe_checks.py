"""The checks that run on probes (probes.py): extremes, device_index,
invalid_inputs and out_nonempty, each judging a sample made for it, and only
where the device gets the ordinary sample the probe derives from right
(Note [One fault, one check]).
"""

from __future__ import annotations

from typing import Callable

from .calls import Calls, Wide
from .compiled import presized
from .compare import MAX_MSG, Verdict, is_oom, on_cpu, out_pairs, short, tensors_in
from .sample import Sample


class ProbeChecks:
    """The probe checks of one (overload, dtype), by check name."""

    def __init__(self, calls: Calls) -> None:
        self.calls = calls
        # probes' bases, judged once per task: id -> (base, why it fails or None)
        self.bases: dict[int, tuple[Sample, str | None]] = {}
        self.by_check: dict[str, Callable[[Sample], Verdict]] = {
            "extremes": self.extremes,
            "device_index": self.device_index,
            "invalid_inputs": self.invalid_inputs,
            "out_nonempty": self.out_nonempty,
        }

    def _base_fails(self, s: Sample) -> str | None:
        """Note [One fault, one check]: a probe is judged only when the device
        gets its ordinary base sample right (no error, the same results and
        out tensors as CPU). A kernel that is wrong everywhere then fails the
        ordinary checks only, instead of every probe too, and each probe's
        failure means what its check says. The probes of a task share few
        bases; each is judged once (the verdict is deterministic, so a worker
        that resumes mid-task and judges it again agrees)."""
        base = s.meta["base"]
        if id(base) not in self.bases:
            self.bases[id(base)] = (base, self._judge_base(base, s.check))
        return self.bases[id(base)][1]

    def _judge_base(self, base: Sample, check: str) -> str | None:
        ref = self.calls.run_reference(base)
        compiled = getattr(self.calls.dev, "compiled", False) and ref.error is None
        # Note [Compiled mode]: out= tensors of eager's result shape, as the ordinary sample's
        dev = self.calls.run_device(base, check, outs=presized(ref.outs) if compiled else None)
        if dev.error is not None:
            return f"the device raises on the sample this one derives from ({short(dev.error)}; see errors)"
        wide = Wide(self.calls, base)  # Note [Precision rule], as the values check judges the base
        wrong = self.calls.differences(ref.result, dev.result, wide=wide.result)
        if self.calls.kind == "out":
            wrong += self.calls.differences(list(ref.outs.values()), list(dev.outs.values()), wide=wide.flat_out)
        if wrong and not self.calls.nondet:
            return f"the device gets the sample this one derives from wrong ({wrong[0]}; see values)"
        return None

    def extremes(self, s: Sample) -> Verdict:
        """The results, compared as values does and then by the rules of
        Note [Extreme values tolerance]."""
        why = self._base_fails(s)
        if why is not None:
            return ("skip", why)
        ref = self.calls.run_reference(s)
        dev = self.calls.run_device(s, "extremes")
        if ref.error is not None:
            return ("skip", f"CPU raises on these values ({short(ref.error)})")
        if dev.error is not None:
            return ("fail", f"device raised {short(dev.error)}; CPU returns a result")
        problems = self.calls.differences(ref.result, dev.result, specials=True)
        return ("fail", "; ".join(problems)[:MAX_MSG]) if problems else ("pass", "")

    def device_index(self, s: Sample) -> Verdict:
        """The sample on device 1 while device 0 is current: a kernel that
        allocates on the current device, or runs there, or leaves device 1
        current, passes every sample on device 0. Its results are compared
        with the same sample's on device 0 (values compares those with CPU)."""
        n = self.calls.dev.device_count()
        if n < 2:
            return ("skip", f"the device has {n} device; this check needs 2")
        zero = self.calls.run_device(s, "device_index")
        if zero.error is not None:
            return ("skip", f"the device raises on this sample ({short(zero.error)}; see errors)")
        one = self.calls.run_device(s, "device_index", index=1)
        problems: list[str] = []
        current = self.calls.dev.current_index()
        if current != 0:
            problems.append(f"the call left device {current} current, not 0")
            self.calls.dev.set_current(0)
        if one.error is not None:
            problems.append(f"raised {short(one.error)} with inputs on device 1")
            return ("fail", "; ".join(problems))
        for i, t in enumerate(tensors_in(one.result)):
            if t.device.type == self.calls.dev.device.type and self.calls.dev.index_of(t) != 1:
                problems.append(f"output {i} on device {self.calls.dev.index_of(t)}, inputs on device 1")
        if not self.calls.nondet:
            problems += [f"differs from device 0: {p}" for p in self.calls.differences(on_cpu(zero.result), one.result)]
        return ("fail", "; ".join(problems)[:MAX_MSG]) if problems else ("pass", "")

    def invalid_inputs(self, s: Sample) -> Verdict:
        """The device must refuse what eager CPU refuses, with an exception
        that code catching eager's catches: of its class or a subclass (eager
        checks the out dtype and raises RuntimeError where a kernel that
        checks its inputs first raises NotImplementedError, one of those)."""
        why = self._base_fails(s)
        if why is not None:
            return ("skip", why)
        ref = self.calls.run_reference(s)
        if ref.error is None or is_oom(ref.error):
            return ("skip", "CPU does not refuse these inputs")
        dev = self.calls.run_device(s, "invalid_inputs")
        if dev.error is None:
            return ("fail", f"returned a result; CPU raises {short(ref.error)}")
        if is_oom(dev.error):
            return ("crash", f"out of memory on the device (or over --worker-memory): {short(dev.error)}")
        if not isinstance(dev.error, type(ref.error)):
            return ("fail", f"raised {short(dev.error)}; CPU raises {short(ref.error)}")
        return ("pass", "")

    def out_nonempty(self, s: Sample) -> Verdict:
        """Whether out= returns `out` is the out check's; this one judges what
        ends up in an out that was not empty. Eager is the reference only
        where it agrees with itself: its gelu.out leaves a non-contiguous out
        unwritten, and what it writes into an empty out is the answer."""
        if getattr(self.calls.dev, "compiled", False) and s.meta["layout"] == "wrong-shape":
            # Note [Compiled mode]: resizing a wrongly shaped out= is eager's deprecated
            # behaviour; Dynamo breaks the graph for it or Inductor cannot lower it
            return ("skip", "compiled mode: a wrongly shaped out= is not resized by compiled code")
        why = self._base_fails(s)
        if why is not None:
            return ("skip", why)
        layout = {"wrong-shape": "wrongly shaped out", "noncontig": "non-contiguous out"}[s.meta["layout"]]
        ref = self.calls.run_reference(s, s.meta["outs"])
        if ref.error is not None:
            return ("skip", f"CPU raises with a {layout} ({short(ref.error)})")
        empty = self.calls.run_reference(s.meta["base"])
        if not self.calls.nondet and self.calls.differences(list(empty.outs.values()), list(ref.outs.values())):
            return ("skip", f"eager CPU writes a {layout} other than an empty one: no reference")
        dev = self.calls.run_device(s, "out_nonempty", outs=s.meta["outs"])
        if dev.error is not None:
            return ("fail", f"{layout}: device raised {short(dev.error)}; CPU writes it")
        problems: list[str] = []
        wide = Wide(self.calls, s.meta["base"])  # Note [Precision rule]: what the out must hold
        for n, ct, dt in out_pairs(ref.outs, dev.outs):
            problems += self.calls.out_problems(f"{layout} ", n, ct, dt, lambda n=n: wide.out(n))
        return ("fail", "; ".join(problems)[:MAX_MSG]) if problems else ("pass", "")
