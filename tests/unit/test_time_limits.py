"""Tests of tests/time_limits.py: the CPU-time limits the suite uses instead of wall-clock ones."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
from time_limits import (
    TIME_SCALE_ENV,
    CpuTimeout,
    child_cpu_limit,
    cpu_limit_s,
    cpu_s,
    cpu_time_limit,
    time_scale,
)


def test_time_scale_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TIME_SCALE_ENV, raising=False)
    assert time_scale() == 1.0
    assert cpu_limit_s(10.0) == 10.0
    monkeypatch.setenv(TIME_SCALE_ENV, "2.5")
    assert cpu_limit_s(10.0) == 25.0
    monkeypatch.setenv(TIME_SCALE_ENV, " ")
    assert time_scale() == 1.0
    for bad in ("0", "-1", "nan"):
        monkeypatch.setenv(TIME_SCALE_ENV, bad)
        with pytest.raises(ValueError, match=TIME_SCALE_ENV):
            time_scale()


def test_cpu_time_limit_stops_a_busy_loop_and_not_a_sleep() -> None:
    before = signal.getsignal(signal.SIGPROF)
    t0 = cpu_s()
    with pytest.raises(CpuTimeout), cpu_time_limit(0.2):
        while True:
            pass
    # the profiling timer counts CPU in scheduler ticks (4 ms at 250 Hz), process_time() more
    # finely: allow one tick between the two clocks (a loaded machine once read 0.195 s)
    assert cpu_s() - t0 >= 0.2 - 0.01
    with cpu_time_limit(0.2):
        time.sleep(0.3)  # waiting uses no CPU time
    assert signal.getsignal(signal.SIGPROF) == before  # the handler is put back


def test_child_cpu_limit_stops_a_busy_child() -> None:
    r = subprocess.run(
        [sys.executable, "-c", "while True: pass"], preexec_fn=child_cpu_limit(1.0), check=False
    )
    assert r.returncode == -signal.SIGXCPU
    ok = subprocess.run([sys.executable, "-c", "pass"], preexec_fn=child_cpu_limit(1.0))
    assert ok.returncode == 0
