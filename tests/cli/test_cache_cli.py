"""``pddplan cache``: its help example runs; a scenario without ``cache:`` is one clear line."""

from __future__ import annotations

import re
from pathlib import Path

from time_limits import run_pddplan

REPO = Path(__file__).resolve().parents[2]


def test_help_example_runs() -> None:
    text = run_pddplan("cache", "--help", cwd=REPO).stdout
    m = re.search(r"Example: pddplan (.+)", text)
    assert m, "no runnable example in `pddplan cache --help`"
    r = run_pddplan(*m.group(1).split(), "--format", "csv", cwd=REPO)
    assert r.returncode == 0, r.stderr
    header = r.stdout.splitlines()[0].split(",")
    assert {"mean_hit_rate", "cache_usd_per_hour", "bcr_requests_per_usd"} <= set(header)


def test_scenario_without_cache_section_is_one_line() -> None:
    r = run_pddplan("cache", "default", cwd=REPO)
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pddplan: error: ")
    assert "cache" in lines[0] and "Traceback" not in r.stderr
