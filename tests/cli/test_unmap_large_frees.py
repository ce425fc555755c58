"""The commands that replay a trace return their large freed arrays to the system
(:func:`pddplan.cli.common.unmap_large_frees`): glibc's malloc otherwise serves a few-MB array
from its heap once a larger one has been freed, and keeps its pages resident after it is
freed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = """
import os, sys
import numpy as np
if sys.argv[1] == "unmap":
    from pddplan.cli import common
    common.unmap_large_frees()
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
a = np.ones(8 << 17)  # 8 MB, mapped and freed: glibc's threshold rises to it by default
del a
before = rss()
b = np.ones(6 << 17)  # 6 MB, every page written, then freed
del b
print(rss() - before)
"""


def _glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")
    except (AttributeError, ValueError, OSError):
        return False


def _resident_after_free(mode: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip())


@pytest.mark.skipif(not _glibc() or not os.path.exists("/proc/self/statm"), reason="glibc, Linux")
def test_a_freed_array_of_a_few_mb_leaves_the_process() -> None:
    """Without the setting a freed 6 MB array stays resident (the probe shows what it guards
    against); with it, the pages go back to the system when the array is freed."""
    kept = _resident_after_free("default")
    assert kept >= 5 << 20, kept
    assert _resident_after_free("unmap") < 1 << 20


def test_the_trace_commands_set_it_before_they_replay() -> None:
    """``hitrate`` and ``cache`` call it before their API call (the parser processes, forked
    later, inherit it)."""
    from pathlib import Path

    import pddplan.cli

    here = Path(pddplan.cli.__file__).parent
    for name, call in (("hitrate_cmd.py", "api.hitrate("), ("cache_cmd.py", "api.cache(")):
        text = (here / name).read_text()
        assert "common.unmap_large_frees()" in text, name
        assert text.index("common.unmap_large_frees()") < text.index(call), name


def test_it_sets_glibc_s_threshold_and_nothing_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """With glibc it sets ``M_MMAP_THRESHOLD`` (-3) to :data:`MMAP_THRESHOLD_BYTES`; with
    another C library, or none named, it loads none."""
    import ctypes

    from pddplan.cli import common

    calls: list[tuple[int, int]] = []

    class Libc:
        def mallopt(self, param: int, value: int) -> int:
            calls.append((param, value))
            return 1

    monkeypatch.setattr(ctypes, "CDLL", lambda name: Libc())
    monkeypatch.setattr(os, "confstr", lambda name: "glibc 2.36")
    common.unmap_large_frees()
    assert calls == [(-3, common.MMAP_THRESHOLD_BYTES)]

    def fails(name: str) -> str:
        raise ValueError(name)

    for confstr in (lambda name: None, lambda name: "musl 1.2.4", fails):
        monkeypatch.setattr(os, "confstr", confstr)
        common.unmap_large_frees()
    assert calls == [(-3, common.MMAP_THRESHOLD_BYTES)]
