"""``pareto`` on every bundled scenario: each frontier point, re-solved by ``solve`` at its target
rate, is the same plan (cost, goodput, TTFT p99, fleet), and so is each baseline beside it; no
point on a frontier is dominated; every number of the JSON document is a number (no inf)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

import pddplan
from pddplan.solver.pareto import dominates

SCENARIOS = [s["name"] for s in pddplan.list_profiles("scenarios").to_json()["scenarios"]]
REL = 1e-9  # the same computation: equal up to rounding


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL, abs_tol=1e-12)


def _numbers(doc: Any) -> list[Any]:
    if isinstance(doc, dict):
        return [x for v in doc.values() for x in _numbers(v)]
    if isinstance(doc, list):
        return [x for v in doc for x in _numbers(v)]
    return [doc]


def test_the_bundled_scenarios_are_all_here() -> None:
    assert {"default", "long-context", "pdd-paper", "pdd-paper-b30"} <= set(SCENARIOS)


@pytest.mark.parametrize("scenario", SCENARIOS)  # cache-tiers too: both size its cache
def test_each_frontier_point_is_what_solve_gives_at_its_rate(scenario: str) -> None:
    res = pddplan.pareto(scenario, points=3)
    front = res.frontier.frontier()
    assert front, f"{scenario}: an empty PDD frontier"
    for p in front:
        assert p.plan is not None
        s = pddplan.solve(scenario, rate_rps=p.rate_rps, verdict_check=False)
        plan = s.plan
        cost, goodput, p99 = p.objectives
        where = f"{scenario} at {p.rate_rps:.4g} req/s"
        assert _same(plan.cost_usd_per_hour, cost), where
        assert _same(plan.goodput_rps, goodput), where
        assert _same(float(plan.prefill.ttft_s[2]), p99), where
        assert _same(plan.bcr_requests_per_usd, p.plan.bcr_requests_per_usd), where
        assert plan.chips_of() == p.plan.chips_of(), where
        # the baselines at that rate are solve's too
        mine = {q.topology: q.plan for q in res.frontier.points if q.rate_rps == p.rate_rps}
        for b in s.baselines:
            assert b.topology in mine, where
            other = mine[b.topology]
            assert other is not None
            assert _same(b.cost_usd_per_hour, other.cost_usd_per_hour), (where, b.topology)
            assert _same(b.goodput_rps, other.goodput_rps), (where, b.topology)
    # no frontier point is dominated by a plan of its own topology that meets the SLA
    for q in res.frontier.points:
        if q.on_frontier:
            rivals = [o for o in res.frontier.points if o.topology == q.topology and o.meets_sla]
            assert not any(dominates(o.objectives, q.objectives) for o in rivals)
    doc = res.to_json()
    json.dumps(doc, allow_nan=False)  # no NaN or inf anywhere
    assert not any(isinstance(x, str) and x in ("inf", "-inf", "nan") for x in _numbers(doc))
    row = doc["frontier"][0]
    assert row["input_cost_usd_per_mtok"] > 0 and row["output_cost_usd_per_mtok"] > 0
