"""A command's process raises the cyclic collector's first threshold (pddplan.cli.GC_THRESHOLD)
before its imports, so that its start is not traversed again and again."""

from __future__ import annotations

import subprocess
import sys

from pddplan.cli import GC_THRESHOLD

PROBE = """\
import gc, sys
runs = []
gc.callbacks.append(lambda phase, info: runs.append(info["generation"]) if phase == "start" else 0)
import pddplan.cli
sys.argv = ["pddplan", "--help"]
try:
    pddplan.cli.main()
except SystemExit:
    pass
print(gc.get_threshold()[0], len(runs), file=sys.stderr)
"""


def test_the_cli_raises_the_first_threshold_before_its_imports() -> None:
    r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    threshold, collections = map(int, r.stderr.split()[-2:])
    assert threshold == GC_THRESHOLD > 700
    assert collections == 0  # --help's start ran no collection
