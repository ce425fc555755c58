"""Fresh interpreters for the tests of what a start loads and keeps: one home for running a
snippet in new processes that share one cache directory (``PDDPLAN_CACHE_DIR``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def fresh_runs(
    code: str, cache: Path | str, runs: int = 1, *, check: bool = True
) -> list[subprocess.CompletedProcess[str]]:
    """``python -c code`` run ``runs`` times, one after the other, each in a new interpreter
    with the caches in ``cache`` (a path, or ``"off"``): the first run fills them, the next
    ones read them."""
    env = {**os.environ, "PDDPLAN_CACHE_DIR": str(cache)}
    return [
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=check, env=env
        )
        for _ in range(runs)
    ]
