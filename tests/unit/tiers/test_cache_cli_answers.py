"""``cache`` answers as ``solve`` does where no capacity option fits (exit 3 with each reason,
where it printed a table of failures and exited 0), and names its own options in a usage
error ("give one of --rate and --max-bcr", not the API's ``rate_rps`` and ``max_bcr``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from time_limits import run_pddplan

import pddplan

REPO = Path(__file__).resolve().parents[3]
SCENARIO = str(REPO / "examples" / "cache-tiers.yaml")
FEW = {"cache.tiers.0.capacity_gb_per_node": [0, 256], "cache.tiers.1.capacity_gb_per_node": [0]}


def test_no_option_fits_is_infeasible_with_each_reason() -> None:
    with pytest.raises(pddplan.InfeasibleError) as err:
        pddplan.cache(SCENARIO, overrides=FEW, rate_rps=100.0)
    assert err.value.exit_code == 3
    msg = str(err.value)
    assert "no capacity option of the scenario's cache: tiers (2 compared)" in msg
    assert "line would run above its utilization cap" in msg
    # solve on the same question says the same
    with pytest.raises(pddplan.InfeasibleError) as same:
        pddplan.solve(SCENARIO, overrides=FEW, rate_rps=100.0, verdict_check=False)
    assert str(same.value) == msg


def test_usage_error_names_the_command_line_options() -> None:
    r = run_pddplan("cache", SCENARIO, "--rate", "1", "--max-bcr", cwd=REPO)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == "pddplan: error: give one of --rate and --max-bcr"


def test_a_scenario_without_a_baseline_section_says_so() -> None:
    """cache-tiers has no ``baseline:``: the one-datacenter baseline was dropped without a word
    (no sentence, no row, no note)."""
    from pddplan.solver.answer import NO_SAME_DC

    res = pddplan.solve(SCENARIO, overrides=FEW, verdict_check=False)
    assert [b.topology for b in res.baselines if b.topology == "same-dc"] == []
    assert NO_SAME_DC in res.outcome.notes
    with_base = pddplan.solve(verdict_check=False)  # the default names its baseline chips
    assert NO_SAME_DC not in with_base.outcome.notes
