"""Compiled mode (``opgen-backend test --compile``): every device call of a
sample goes through ``torch.compile(fn, backend="inductor")`` instead of
straight to the overload, and the same checks judge it against eager CPU.

Note [Compiled mode]: ``CompiledDevice`` wraps the device under test and
replaces only its ``call``: ``fn`` calls the overload with the sample's
arguments, compiled with ``dynamic=False`` so that each (overload, dtype,
sample shape) is one compile, Dynamo's own guards telling the shapes apart.
Dynamo is reset at the start of each task (``begin_task``): its caches hang
off the code object of ``fn``, which every overload shares, and a long run
would otherwise hit the recompile limit and silently run eager (the limit
is raised for the task's samples and made an error, so it can never run
eager unnoticed). Gradients go through the same compiled ``fn`` (AOTAutograd
compiles the backward at the first ``backward``).

What a compiled call can do besides returning:
- raise the op's own error, found while Dynamo runs the graph on fake
  tensors: Dynamo wraps it in ``TorchRuntimeError``, which is unwrapped here
  (its ``__context__``) so that error parity compares eager's class with the
  op's, not with Dynamo's wrapper;
- fail to compile (``BackendCompilerFailed``, ``InductorError``, a C++
  compile error): ``CompileFailed``, whose ``line`` is the first line of the
  innermost exception that names the cause (for a C++ compile error, the
  compiler's first ``error:`` line). checks.py makes it the sample's
  ``compile`` verdict, status ``compile-failed``, when eager CPU returns a
  result; where eager refuses the call too, the inner exception is judged
  by error parity as any device error;
- be refused by Dynamo (``Unsupported``, e.g. its fake-tensor run of the
  op raising where the real kernel does not): compile-failed too;
- break the graph: Dynamo runs what it cannot trace eagerly; the ``compile``
  check warns with the break's reason (``counters["graph_break"]``), since
  the op then ran uncompiled.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any, Callable

import torch

from .compare import Verdict


def setup_environment(results: str) -> None:
    """Before torch is imported: fresh codegen on every run (no FX graph
    cache), one C++ compile cache per run (identical kernel sources compile
    once across the run's workers), and one compile thread per worker."""
    os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"
    os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "0"
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", results + ".inductor-cache")
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"


class CompileFailed(Exception):
    """Inductor could not compile the call; ``line`` says why, ``inner`` is
    the innermost exception."""

    def __init__(self, line: str, inner: BaseException) -> None:
        super().__init__(line)
        self.line = line
        self.inner = inner


def _innermost(e: BaseException) -> BaseException:
    """Through BackendCompilerFailed/InductorError (``inner_exception``) and
    LoweringException (the lowering's own error is its ``__cause__``)."""
    from torch._dynamo.exc import BackendCompilerFailed

    seen = 0
    while seen < 10:
        seen += 1
        if isinstance(e, BackendCompilerFailed) and getattr(e, "inner_exception", None) is not None:
            e = e.inner_exception
            continue
        if type(e).__name__ == "LoweringException" and e.__cause__ is not None:
            e = e.__cause__
            continue
        break
    return e


_COMPILER_ERROR = re.compile(r"error:\s*(.*)")


def first_line(e: BaseException) -> str:
    """The first line of the innermost exception's message that names the
    cause: for a C++ compile error the compiler's first ``error:`` line,
    else the message's first non-empty line, prefixed by its class."""
    inner = _innermost(e)
    text = str(inner)
    if type(inner).__name__ == "CppCompileError":
        m = _COMPILER_ERROR.search(getattr(inner, "output", "") or text)
        if m:
            return f"CppCompileError: {m.group(1).strip()}"[:500]
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if lines:
        return f"{type(inner).__name__}: {lines[0]}"[:500]
    # a bare assert: where it stands names the cause
    tb = inner.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return type(inner).__name__
    path = tb.tb_frame.f_code.co_filename
    cut = path.rfind("torch/")
    where = path[cut:] if cut >= 0 else os.path.basename(path)
    return f"{type(inner).__name__} at {where}:{tb.tb_lineno} in {tb.tb_frame.f_code.co_name}"[:500]


def _is_compile_failure(e: BaseException) -> bool:
    """Inductor failed (BackendCompilerFailed, a C++ compile error), or Dynamo
    could not trace the call and said so instead of breaking the graph
    (Unsupported), or the recompile limit was hit."""
    from torch._dynamo.exc import BackendCompilerFailed, Unsupported

    return isinstance(e, (BackendCompilerFailed, Unsupported)) or type(e).__name__ in (
        "CppCompileError",
        "FailOnRecompileLimitHit",
    )


def presized(outs: dict) -> dict:
    """Empty out= tensors of the shapes, strides and dtypes eager CPU's call
    left in its own: compiled, out= is judged on writing them, not on
    resizing empty ones (Dynamo graph-breaks on most resizes, and Inductor
    fails to lower others), which the out_nonempty probe still covers."""

    def one(t: Any) -> Any:
        if isinstance(t, torch.Tensor):
            return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype)
        if isinstance(t, (list, tuple)):
            return type(t)(one(v) for v in t)
        return t

    return {k: one(v) for k, v in outs.items()}


def _unwrap(e: BaseException) -> BaseException:
    """The exception to report for a failed compiled call."""
    from torch._dynamo.exc import TorchRuntimeError

    if _is_compile_failure(e):
        return CompileFailed(first_line(e), _innermost(e))
    if isinstance(e, TorchRuntimeError) and e.__context__ is not None:
        # the op's own error on fake tensors (raise ... from None keeps it as the context),
        # unless that is Dynamo giving up on the call
        ctx = e.__context__
        return CompileFailed(first_line(ctx), _innermost(ctx)) if _is_compile_failure(ctx) else ctx
    return e


def failure_verdict(dev: Any, err: BaseException) -> Verdict | None:
    """compile-failed for an error that is a compile failure (raised by
    ``call``, or by a backward AOTAutograd compiles lazily, outside it);
    None for any other error or outside compiled mode."""
    if not getattr(dev, "compiled", False):
        return None
    if isinstance(err, CompileFailed):
        return ("compile-failed", err.line)
    if _is_compile_failure(err):
        failed = CompileFailed(first_line(err), _innermost(err))
        dev.failures.append(failed)
        return ("compile-failed", failed.line)
    return None


def _break_reasons() -> dict[str, int]:
    from torch._dynamo.utils import counters

    return dict(counters["graph_break"])


class CompiledDevice:
    """The device under test with every call compiled (Note [Compiled mode]);
    everything else is the wrapped device's."""

    compiled = True

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self._fns: dict[Any, Callable[..., Any]] = {}
        # what happened during the current sample (begin_sample resets it)
        self.failures: list[CompileFailed] = []
        self.breaks: dict[str, int] = {}
        for name in ("torch._dynamo", "torch._inductor", "torch._subclasses.fake_tensor", "torch.fx.experimental"):
            logging.getLogger(name).setLevel(logging.CRITICAL)

    @staticmethod
    def warm_up() -> None:
        """Inductor's first compile in a process imports it, probes the
        machine's vector ISA and starts the C++ compiler: tens of seconds on
        a loaded machine, which the first sample's timeout must not pay. So
        a worker compiles once at startup (under the startup timeout), on
        CPU: a broken device must cost its samples, not every worker."""
        try:
            fn = torch.compile(lambda x: torch.relu(x * 2 + 1), backend="inductor", dynamic=False)
            fn(torch.randn(64))
        except Exception:
            pass
        import torch._dynamo

        torch._dynamo.reset()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def begin_task(self) -> None:
        import torch._dynamo

        torch._dynamo.reset()
        self._fns.clear()
        cfg = torch._dynamo.config
        cfg.recompile_limit = 512
        cfg.accumulated_recompile_limit = 4096
        cfg.fail_on_recompile_limit_hit = True

    def begin_sample(self) -> None:
        self.failures = []
        self.breaks = {}

    def _fn(self, func: Any) -> Callable[..., Any]:
        fn = self._fns.get(func)
        if fn is None:

            def call(*args: Any, **kwargs: Any) -> Any:
                return func(*args, **kwargs)

            fn = torch.compile(call, backend="inductor", dynamic=False)
            # the fault device reads the schema of what it calls (device.py _autograd_returns)
            fn._schema = func._schema  # type: ignore[attr-defined]
            self._fns[func] = fn
        return fn

    def break_counts(self) -> dict[str, int]:
        return _break_reasons()

    def note_breaks(self, before: dict[str, int]) -> None:
        """The graph breaks since ``before`` (break_counts()) go to this sample's."""
        for reason, n in _break_reasons().items():
            grew = n - before.get(reason, 0)
            if grew > 0:
                self.breaks[reason] = self.breaks.get(reason, 0) + grew

    def call(self, name: str, func: Callable, args: tuple, kwargs: dict) -> Any:
        fn = self._fn(func)
        before = _break_reasons()
        try:
            return self.inner.call(name, fn, args, kwargs)
        except Exception as e:
            err = _unwrap(e)
            if isinstance(err, CompileFailed):
                self.failures.append(err)
            if err is e:
                raise
            raise err from None
        finally:
            self.note_breaks(before)


def compile_verdict(dev: CompiledDevice) -> Verdict:
    """The sample's ``compile`` check: compile-failed with Inductor's first
    line, warn on graph breaks (the first reason's first line, with the
    count), else pass."""
    if dev.failures:
        return ("compile-failed", dev.failures[0].line)
    if dev.breaks:
        total = sum(dev.breaks.values())
        first = next(iter(dev.breaks)).strip().splitlines()[0]
        return ("warn", f"{total} graph break(s), the op ran eagerly there: {first}"[:500])
    return ("pass", "")
