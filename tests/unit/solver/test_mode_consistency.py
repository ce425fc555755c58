"""One question, one answer across the modes: a budget plan's goodput counts up to the
question's bound as the max-BCR plan's does (and so do the baselines they are compared with),
so no budget plan has a higher BCR than the plan of highest BCR."""

from __future__ import annotations

import pytest

import pddplan
from pddplan.solver import Solver


@pytest.mark.parametrize("budget_usd_per_hour", [176.0, 1000.0])
def test_no_budget_plan_beats_the_max_bcr_plan_on_bcr(budget_usd_per_hour: float) -> None:
    """With a budget above the cost of the fleet at the line's utilization cap, the budget
    plan's fleet meets every target past that cap (9.11 req/s against 8.81): its goodput read
    9.11 and its BCR 68.98, above the max-BCR plan's 68.52. Both now count goodput up to the
    bound (line capacity), the budget plan's reads 8.81 and its BCR 66.70."""
    budget = pddplan.solve(budget_usd_per_hour=budget_usd_per_hour, verdict_check=False)
    best = pddplan.solve(max_bcr=True, verdict_check=False)
    b, m = budget.outcome.plan, best.outcome.plan
    line = Solver(b.problem).line_rate_limit()
    assert b.bcr_requests_per_usd <= m.bcr_requests_per_usd * (1 + 1e-9)
    assert b.cost_usd_per_hour <= budget_usd_per_hour
    assert b.goodput_rps <= line * (1 + 1e-12)
    # the baselines, sized at the plan's rate, are counted the same way: their ratios compare
    # like with like
    for base in budget.outcome.baselines:
        assert base.goodput_rps <= line * (1 + 1e-12), base.topology


def test_a_goodput_counted_up_to_the_bound_says_what_the_fleet_meets() -> None:
    """The budget plan's fleet reports 8.81 req/s (counted up to the line's utilization cap)
    where a solve at a target rate reports the same fleet at 9.11: the budget answer's note
    gives the rate solve's goodput and BCR for it, so a reader of both sees one fleet."""
    budget = pddplan.solve(budget_usd_per_hour=1000.0, verdict_check=False, baselines=False)
    b = budget.outcome.plan
    at_rate = pddplan.solve(rate_rps=b.rate_rps, verdict_check=False, baselines=False)
    r = at_rate.outcome.plan
    assert r.chips_of() == b.chips_of() and r.cost_usd_per_hour == b.cost_usd_per_hour
    assert r.goodput_rps > b.goodput_rps  # the budget counted up to the bound
    (note,) = [n for n in budget.outcome.notes if n.startswith("goodput and BCR count")]
    assert f"up to {r.goodput_rps:.4g} req/s (BCR {r.bcr_requests_per_usd:.4g} req/$)" in note
    assert not any(n.startswith("goodput and BCR count") for n in at_rate.outcome.notes)


def test_a_baseline_that_is_the_plans_fleet_has_its_goodput_in_the_exact_modes() -> None:
    """At --max-bcr --max-rate 5 the no-relay-rld baseline is the plan's very fleet: it read
    goodput 4.8983 (to the rate mode's 1e-3) against the plan's 4.8987 (the walk's 1e-7), and
    a BCR ratio of 1.0001; counted as the walk counts, it is the same fleet at the same BCR."""
    out = pddplan.solve(max_bcr=True, max_rate_rps=5.0, verdict_check=False).outcome
    same = [b for b in out.baselines if b.chips_of() == out.plan.chips_of()]
    assert same, [b.topology for b in out.baselines]
    for b in same:
        assert b.cost_usd_per_hour == out.plan.cost_usd_per_hour
        assert b.goodput_rps == out.plan.goodput_rps
        assert b.bcr_requests_per_usd == out.plan.bcr_requests_per_usd
