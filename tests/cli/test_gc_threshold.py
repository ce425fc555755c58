"""A command's process raises the cyclic collector's first threshold (pddplan.cli.GC_THRESHOLD)
before its imports, so that its start is not traversed again and again."""

from __future__ import annotations

import subprocess
import sys

from pddplan.cli import GC_THRESHOLD

PROBE = """\
import gc, sys
seen = []
set_threshold = gc.set_threshold
def spy(*args):
    seen.append(("typer" in sys.modules, "rich" in sys.modules, args[0]))
    set_threshold(*args)
gc.set_threshold = spy
import pddplan.cli
print(gc.get_threshold()[0], *seen[0] if seen else ("none",), file=sys.stderr)
"""


def test_the_cli_raises_the_first_threshold_before_its_imports() -> None:
    """The threshold is raised once ``pddplan.cli`` starts, before typer or rich is imported
    (a count of collections during ``--help`` depends on whether the modules' bytecode is
    cached, so the order is what is checked)."""
    r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    threshold, typer_loaded, rich_loaded, asked = r.stderr.split()[-4:]
    assert int(threshold) == int(asked) == GC_THRESHOLD > 700
    assert typer_loaded == "False" and rich_loaded == "False"
