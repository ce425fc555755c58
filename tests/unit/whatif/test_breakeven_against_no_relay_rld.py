"""``breakeven --against no-relay-rld``: the baseline solve most often weighs PDD against (no
relay, RLD for anomalous requests only) could not be named (--against took same-dc and
no-relay). Its ratios are solve's; a scenario without that baseline says what it needs."""

from __future__ import annotations

import pytest

import pddplan


def test_ratios_are_solves() -> None:
    res = pddplan.breakeven(against="no-relay-rld", lo=2.0, hi=3.0)
    solved = pddplan.solve(overrides={"chips.gpu-b.price_usd_per_hour": 2.0}, verdict_check=False)
    base = next(b for b in solved.baselines if b.topology == "no-relay-rld")
    expected = solved.plan.bcr_requests_per_usd / base.bcr_requests_per_usd
    assert res.bcr_ratio_at_lo == pytest.approx(expected, rel=1e-12)


def test_a_scenario_without_it_says_what_it_needs() -> None:
    with pytest.raises(pddplan.UsageError, match="needs anomalous requests that RLD finishes"):
        pddplan.breakeven(against="no-relay-rld", overrides={"workload.anomalous.share": 0.0})
