"""A horizon whose load outgrows the inventory names the first slot in time without a plan.
It named the peak's slot ("month 13, day slot 19:00 (2.402 req/s)") where month 2 already has
none: a planner read a year of headroom that is not there."""

from __future__ import annotations

from pathlib import Path

import pytest

import pddplan

REPO = Path(__file__).resolve().parents[3]
DIURNAL = str(REPO / "examples" / "agent-diurnal.yaml")
LIMIT = {"h20": 40}


@pytest.mark.slow
def test_names_the_first_slot_in_time_without_a_plan() -> None:
    with pytest.raises(pddplan.InfeasibleError) as err:
        pddplan.horizon(DIURNAL, max_chips=LIMIT)
    msg = str(err.value)
    assert msg.startswith("load: month 2, day slot 19:00 (1.56 req/s), the first slot without")
    assert "up to 2.402 req/s in month 13" in msg
    # that slot has no plan, and month 1's peak (every earlier slot is at or below it) has one
    with pytest.raises(pddplan.InfeasibleError):
        pddplan.solve(DIURNAL, rate_rps=1.56, max_chips=LIMIT, verdict_check=False)
    growth = pddplan.horizon(DIURNAL).to_json()["growth"]
    month1_peak = growth[0]["peak_rate_rps"]
    assert month1_peak < 1.56
    ok = pddplan.solve(
        DIURNAL, rate_rps=month1_peak, max_chips=LIMIT, verdict_check=False, baselines=False
    )
    assert ok.plan.meets_sla
