"""Sanitizer reports as crash messages (``opgen-backend test --sanitize``).

Note [Sanitized workers]: under ``--sanitize`` opgen-backend starts the
runner, and so every worker, in the sanitizer environment
(src/scaffold/sanitize.ts sanitizerEnv: LD_PRELOAD of the runtimes,
ASAN_OPTIONS, UBSAN_OPTIONS with ``halt_on_error=1``, the sanitized build
first on PYTHONPATH), in the reports directory named by OPGEN_SANITIZER_LOGS
(also the working directory, so the project's in-tree package, the release
build, cannot shadow the sanitized one), each sanitizer writing its report
to ``<dir>/<sanitizer>.<pid>`` (``log_path``).
A finding ends the worker like a segfault would, so the sample is recorded
as a crash by the usual path (pool.py); this module only turns the dead
worker's report into the crash message: the error line and the first frames
of the stack, where a person starts reading.
"""

from __future__ import annotations

import os
import re

# "    #0 0x7f.. in refk_unary_float /p/csrc/kernels/cpu/Unary.cpp:42:7" (ASan, UBSan
# with print_stacktrace=1); frames without a function are printed "in <module>+0x..".
_FRAME = re.compile(r"^\s*#(\d+)\s+0x[0-9a-f]+\s+(?:in\s+)?(.*)$")
_ASAN = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer): (\S+(?: \S+)*?)(?: on (?:unknown )?address.*)?$")
_UBSAN = re.compile(r"^(\S+:\d+(?::\d+)?): runtime error: (.*)$")
_ACCESS = re.compile(r"^(READ|WRITE) of size (\d+)")

FRAMES = 4
LOGS_ENV = "OPGEN_SANITIZER_LOGS"


def report_files(log_dir: str | None, pid: int) -> list[str]:
    if not log_dir:
        return []
    found = []
    for prefix in ("asan", "ubsan"):
        p = os.path.join(log_dir, f"{prefix}.{pid}")
        if os.path.isfile(p):
            found.append(p)
    return found


def _short_frame(text: str) -> str:
    """'refk_x(float*) /abs/p/csrc/kernels/cpu/Unary.cpp:42:7' -> 'refk_x(float*) csrc/kernels/cpu/Unary.cpp:42';
    paths relative to the build directory (ccache's CCACHE_BASEDIR makes them so) alike."""
    text = text.strip()
    m = re.search(r"(?:^|\s)([^\s()]+?\.\w+):(\d+)(?::\d+)?$", text)
    if m:
        where = m.group(1)
        i = where.find("csrc/")
        where = where[i:] if i >= 0 and (i == 0 or where[i - 1] == "/") else os.path.basename(where)
        return f"{text[: m.start()].strip()} {where}:{m.group(2)}"
    return text


def summarize(text: str, frames: int = FRAMES) -> str | None:
    """One line for the report: what the sanitizer found and the first
    ``frames`` frames of its first stack; None when ``text`` holds no report."""
    lines = text.splitlines()
    head = None
    start = 0
    for i, line in enumerate(lines):
        m = _ASAN.search(line)
        if m:
            head = f"{m.group(1)}: {m.group(2)}"
            access = next((a for a in (_ACCESS.match(x.strip()) for x in lines[i + 1 : i + 4]) if a), None)
            if access:
                head += f" ({access.group(1)} of size {access.group(2)})"
            start = i + 1
            break
        m = _UBSAN.match(line.strip())
        if m:
            head = f"UndefinedBehaviorSanitizer: {m.group(2)} at {_short_frame(m.group(1)).strip()}"
            start = i + 1
            break
    if head is None:
        return None
    stack = []
    for line in lines[start:]:
        m = _FRAME.match(line)
        if m:
            stack.append(f"#{m.group(1)} {_short_frame(m.group(2))}")
            if len(stack) >= frames:
                break
        elif stack:
            break  # the first stack ended
    return head + ("; " + "; ".join(stack) if stack else "")


def crash_message(log_dir: str | None, pid: int) -> str | None:
    for path in report_files(log_dir, pid):
        try:
            with open(path, errors="replace") as f:
                text = f.read(1 << 20)
        except OSError:
            continue
        s = summarize(text)
        if s:
            return s
    return None
