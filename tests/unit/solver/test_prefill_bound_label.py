"""A prefill pool of one instance that its utilization cap would need less than one of is bound
by the least count, not by the cap: at 0.01 req/s the default scenario's P ran at 0.7% and
said "prefill capacity (utilization cap)"."""

from __future__ import annotations

import pddplan
from pddplan.solver.sizing import CAP_BOUND, ONE_INSTANCE_BOUND


def _plan(rate: float):  # type: ignore[no-untyped-def]
    return pddplan.solve(rate_rps=rate, verdict_check=False, baselines=False).plan


def test_low_rate_is_bound_by_one_instance() -> None:
    p = _plan(0.01).prefill
    assert p.instances == 1 and p.utilization < 0.01
    assert p.bound_by == ONE_INSTANCE_BOUND


def test_a_count_the_cap_sets_says_so() -> None:
    plan = _plan(8.0)
    p = plan.prefill
    assert p.instances > 1 and p.bound_by == CAP_BOUND
    # the cap binds: one instance fewer would run above it
    cap = plan.problem.prefill_utilization_cap
    assert p.utilization * p.instances / (p.instances - 1) > cap
