"""A command's process ends without the interpreter's teardown (pddplan.cli.run, _end_process),
and still ends as the ordinary exit would: its exit functions run, its output is flushed, its
status is SystemExit's, and a thread still running is waited for."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
    )


def test_exit_functions_run_and_buffered_output_is_written() -> None:
    """An exit function runs (the disk caches' writes are exit functions), and what is left in
    stdout's buffer, unflushed, is written, then the status is the one given."""
    r = _run(
        "import atexit, sys\n"
        "from pddplan.cli import _end_process\n"
        "atexit.register(lambda: print('exit function ran'))\n"
        "sys.stdout.write('unflushed, ')\n"
        "_end_process(3)\n"
    )
    assert r.returncode == 3, r.stderr
    assert r.stdout == "unflushed, exit function ran\n"


@pytest.mark.parametrize(("code", "status", "err"), [(None, 0, ""), ("boom", 1, "boom\n")])
def test_the_status_is_systemexits(code: str | None, status: int, err: str) -> None:
    """``SystemExit(None)`` ends with 0, ``SystemExit("text")`` prints the text on stderr and
    ends with 1, as the interpreter does."""
    r = _run(f"from pddplan.cli import _end_process\n_end_process({code!r})\n")
    assert r.returncode == status
    assert r.stderr == err


def test_a_running_thread_is_waited_for() -> None:
    """With a thread besides the main one still running, the process exits the ordinary way,
    which waits for it (a pool's thread is not cut off)."""
    r = _run(
        "import threading, time\n"
        "from pddplan.cli import _end_process\n"
        "def late():\n"
        "    time.sleep(0.2)\n"
        "    print('thread finished', flush=True)\n"
        "threading.Thread(target=late).start()\n"
        "_end_process(4)\n"
    )
    assert r.returncode == 4
    assert r.stdout == "thread finished\n"


def test_a_solve_process_writes_its_caches_and_answers_as_main_does(tmp_path: Path) -> None:
    """``python -m pddplan solve`` (:func:`pddplan.cli.run`) writes the physics tables on disk
    at its end, and prints what :func:`pddplan.cli.main` prints in process."""
    cache = tmp_path / "cache"
    args = ["solve", "pdd-paper", "-f", "json", "--no-verdict-check"]
    r = subprocess.run(
        [sys.executable, "-m", "pddplan", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PDDPLAN_CACHE_DIR": str(cache)},
    )
    assert r.returncode == 0, r.stderr
    assert any(p.name.startswith("physics-") for p in cache.rglob("*")), sorted(cache.rglob("*"))
    probe = (
        "import sys\n"
        "from pddplan.cli import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
    )
    same = _run(probe, PDDPLAN_CACHE_DIR="off")
    assert same.returncode == 0, same.stderr
    assert same.stdout == r.stdout
