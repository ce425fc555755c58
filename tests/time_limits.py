"""CPU-time limits for tests: never wall-clock time, which a loaded machine stretches.

Every limit is in CPU seconds of the process that does the work, multiplied by the environment
variable ``PDDPLAN_TEST_TIME_SCALE`` (default 1; raise it on a slow machine, or under coverage
or a debugger). A limit only catches a runaway computation: it is not a benchmark.

Importable from every test module (pytest puts ``tests/`` on ``sys.path`` for the top-level
conftest) and from ``benchmarks/fuzz.py``.
"""

from __future__ import annotations

import contextlib
import math
import os
import resource
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

#: The environment variable that scales every limit [-].
TIME_SCALE_ENV = "PDDPLAN_TEST_TIME_SCALE"


def time_scale() -> float:
    """``PDDPLAN_TEST_TIME_SCALE`` as a positive factor [-] (1 when unset or empty)."""
    text = os.environ.get(TIME_SCALE_ENV, "").strip()
    if not text:
        return 1.0
    scale = float(text)
    if not scale > 0:
        raise ValueError(f"{TIME_SCALE_ENV} must be a positive number, not {text!r}")
    return scale


def cpu_limit_s(seconds: float) -> float:
    """A limit of ``seconds`` CPU seconds, scaled by ``PDDPLAN_TEST_TIME_SCALE`` [s]."""
    return seconds * time_scale()


def cpu_s() -> float:
    """CPU time of this process, user and system, all threads [s] (:func:`time.process_time`)."""
    return time.process_time()


class CpuTimeout(BaseException):
    """Raised in the main thread when a :func:`cpu_time_limit` block runs out of CPU time.

    A BaseException, so that the code under test cannot swallow it in ``except Exception``.
    """


@contextlib.contextmanager
def cpu_time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`CpuTimeout` once the block has used ``seconds`` of this process's CPU.

    ``seconds`` is used as given (scale it with :func:`cpu_limit_s`). It counts user and system
    time of the whole process (``ITIMER_PROF``); time spent waiting does not count.
    """

    def handler(signum: int, frame: Any) -> None:
        raise CpuTimeout()

    old = signal.signal(signal.SIGPROF, handler)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)


def child_cpu_limit(seconds: float) -> Callable[[], None]:
    """A ``preexec_fn`` for :func:`subprocess.run` that caps the child's CPU time.

    The child gets ``ceil(seconds x PDDPLAN_TEST_TIME_SCALE)`` CPU seconds (``RLIMIT_CPU``);
    past them the kernel stops it with SIGXCPU, so its return code is ``-SIGXCPU``. No core
    file is written (``RLIMIT_CORE`` 0), and a lower hard limit already in place is kept.
    """
    soft = max(1, math.ceil(cpu_limit_s(seconds)))

    def apply() -> None:
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        # SIGXCPU at the soft limit; SIGKILL one second later, at the hard one
        new_hard = soft + 1 if hard == resource.RLIM_INFINITY else min(soft + 1, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (min(soft, new_hard), new_hard))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def run_pddplan(*args: str, cwd: Any = None, cpu_s: float = 120) -> Any:
    """``python -m pddplan ARGS`` in a fresh process under a CPU-time limit (not wall-clock),
    its output captured as text (a :class:`subprocess.CompletedProcess`)."""
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "pddplan", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        preexec_fn=child_cpu_limit(cpu_s),
    )
