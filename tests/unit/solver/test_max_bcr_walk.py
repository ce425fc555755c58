"""The max-BCR walk passes over stretches of the rate axis where a bound proves every fleet
there below the best BCR so far (``modes._BcrSkip``): it returns the plan of the walk that
visits every step, in fewer searches, and the bound holds on every fleet it passed over.
"""

from __future__ import annotations

import math

import pytest

from pddplan.solver import modes
from pddplan.solver import search as search_module
from pddplan.units import SECONDS_PER_HOUR
from tests.same_plan import assert_same
from tests.walk_search import Counted, record_stretches, search_of

#: (scenario, overrides, whether the walk passes over steps): the default scenario; a line
#: capped at 0.99 with L40S RLD, where the least cost falls near the line's capacity; a model
#: and catalog of its own, whose walk of 8 steps finds a fleet that may be the plan at the end
#: of the one stretch it could pass over, and so walks it step by step.
CASES = [
    ("examples/pdd-paper.yaml", {}, True),
    (
        "examples/pdd-paper.yaml",
        {"serving.link_utilization_cap": 0.99, "roles.RLD.chips": ["l40s"]},
        True,
    ),
    ("examples/long-context.yaml", {}, False),
]


def _full_walk(search: modes.PlanSearch, hi: float) -> list[tuple[modes.Plan, float]]:
    """Every fleet of the walk that visits every step, with its step's end ``e(F)``."""
    return [(plan, modes._with_step(plan)[1]) for plan in modes.walk_fleets(search, hi)]


@pytest.mark.slow
@pytest.mark.parametrize(("scenario", "overrides", "passes_over"), CASES)
def test_the_walk_that_passes_over_steps_returns_the_full_walks_plan(
    scenario: str, overrides: dict, passes_over: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Field for field the plan of the walk that visits every step; in fewer searches where
    it passes over steps, else in at most two more (the fleet at the ceiling, and the one
    found at the end of a stretch it then walked step by step)."""
    search, hi = search_of(scenario, overrides)
    fast = Counted(search)
    got = modes.solve_max_bcr(fast, hi)
    monkeypatch.setattr(modes._BcrSkip, "resume_rate", lambda self, rate: rate)
    full = Counted(search_of(scenario, overrides)[0])
    want = modes.solve_max_bcr(full, hi)
    assert_same(got, want)  # by value: the two searches' routes need not be the same arrays
    assert got.problem == want.problem
    if passes_over:
        assert fast.rates < full.rates
    else:
        assert fast.rates <= full.rates + 2


@pytest.mark.slow
@pytest.mark.parametrize(("scenario", "overrides", "passes_over"), CASES)
def test_every_fleet_passed_over_is_below_the_best_bcr_then(
    scenario: str, overrides: dict, passes_over: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each stretch ``[rate, x)`` the walk passed over, with the bound ``B`` it had then (the
    best BCR so far or the ceiling fleet's, less :data:`~pddplan.solver.modes.RESUME_RTOL`):
    every fleet of the full walk whose step starts there and ends by ``x`` has a BCR of at most
    ``B`` (goodput counted up to the ceiling). Where the walk passes over steps, at least one
    stretch holds a fleet."""
    search, hi = search_of(scenario, overrides)
    stretches = record_stretches(monkeypatch, modes._BcrSkip)
    modes.solve_max_bcr(search, hi)
    assert stretches or not passes_over
    walked = _full_walk(search_of(scenario, overrides)[0], hi)
    inside = 0
    for rate, x, best in stretches:
        for plan, end in walked:
            if rate <= plan.rate_rps < x and end <= x:
                inside += 1
                bcr = min(plan.goodput_rps, hi) * SECONDS_PER_HOUR / plan.cost_usd_per_hour
                assert bcr <= best, (rate, x, plan.rate_rps)
    assert inside > 0 or not passes_over


@pytest.mark.slow
@pytest.mark.parametrize(("scenario", "overrides", "passes_over"), CASES)
def test_a_steps_end_and_a_fleets_cost_bound_its_goodput(
    scenario: str, overrides: dict, passes_over: bool
) -> None:
    """The two goodput bounds are right about every fleet the walk visits: a fleet whose step
    ends at ``e`` has a goodput ``g`` with ``step_end_for_goodput(g) <= e`` (else a fleet of
    goodput ``g`` would end by a rate that is said to bound its goodput below ``g``), and
    ``g`` is at most ``goodput_bound_for_cost`` of its cost; where the step ends at the
    prefill pool's cap, the goodput is above the end."""
    search, hi = search_of(scenario, overrides)
    walked = _full_walk(search, hi)
    above = 0
    for plan, end in walked:
        g = plan.goodput_rps
        assert search.step_end_for_goodput(g) <= end * (1 + 1e-9), (plan.rate_rps, g, end)
        assert g <= search.goodput_bound_for_cost(plan.cost_usd_per_hour, plan.rate_rps)
        # what a passed-over stretch's bound rests on (``_BcrSkip.resume_rate``): a fleet
        # costs at least the floor at its own rate, and the floor of any goodput below its own
        assert search.cost_floor(plan.rate_rps) <= plan.cost_usd_per_hour, plan.rate_rps
        assert search.cost_floor_for_goodput(g * (1 - 1e-9)) <= plan.cost_usd_per_hour, g
        above += g > end * (1 + 1e-6)
    # the bound's prefill and line terms are exercised, not only the goodput's own end
    assert above > 0 or not passes_over


def test_the_cost_floor_counts_the_rld_instance_every_route_of_a_variant_has() -> None:
    """Where RLD finishes the anomalous requests (the anomalous filter), every route of that
    variant has an RLD instance, so its cost floor counts one at the least unit price, as the
    search's lower bound does for such a route; without the filter it counts none. Each
    floor stays at or below the cost of every plan its variant sizes, from 0.25 to 4 req/s."""
    search, _ = search_of("examples/pdd-paper.yaml", {})
    by_filter = {s.pb.topology.anomalous_filter: s for s in search.solvers}
    assert set(by_filter) == {True, False}
    for filtered, s in by_filter.items():
        pb = s.pb
        rld_least = min(pb.unit_lb_usd_per_hour(r) for r in pb.options["RLD"])
        for rate in (0.25, 0.5, 1.0, 2.0, 4.0):
            p_lb, md_lb = s._pool_lower_bounds(rate)
            bare = p_lb + md_lb + pb.line_cost_usd_per_hour
            assert s.cost_floor(rate) == pytest.approx(bare + rld_least * filtered, rel=1e-12)
            plan = s.candidate_rate(rate)
            assert s.cost_floor(rate) <= plan.cost_usd_per_hour, (filtered, rate)
            assert s.lower_bound(rate, plan.route) <= plan.cost_usd_per_hour


#: (scenario, overrides) whose every walked fleet the goodput floor is checked on: the default
#: scenario, with no anomalous requests (no RLD term unless TTFT asks for relay), with the
#: filter off, a 25 Gbit/s line, the B30 catalog, a diurnal agent workload, cache tiers and long
#: contexts.
FLOOR_CASES = [
    ("examples/pdd-paper.yaml", {}),
    ("examples/pdd-paper.yaml", {"workload.anomalous.share": 0}),
    ("examples/pdd-paper.yaml", {"serving.anomalous_filter": False}),
    ("examples/pdd-paper.yaml", {"link.bandwidth_gbit_per_s": 25}),
    ("examples/pdd-paper-b30.yaml", {}),
    ("examples/agent-diurnal.yaml", {}),
    ("examples/cache-tiers.yaml", {}),
    ("examples/long-context.yaml", {}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("scenario", "overrides"), FLOOR_CASES)
def test_the_goodput_floor_and_each_of_its_terms_hold_on_every_fleet_walked(
    scenario: str, overrides: dict
) -> None:
    """``Solver.cost_floor_for_goodput`` (what the max-BCR walk's bounds rest on) is at most
    the cost of every fleet of the full walk at just below its goodput ``g``, on the fleet's
    own variant, and so is each of its terms: the prefill count that meets TTFT with the
    least offsets at ``g``, the MD count at ``g``, and the RLD instance where a fleet without
    RLD could not meet TTFT. Each term is checked where the fleet's own count binds."""
    search, hi = search_of(scenario, overrides)
    walked = list(modes.walk_fleets(search, hi))
    assert len(walked) >= 5, len(walked)
    tight = {"P": 0, "MD": 0, "all": 0}
    for plan in walked:
        s = next(v for v in search.solvers if v.pb is plan.problem)
        g = plan.fleet_goodput_rps * (1 - 1e-9)
        floor = s.cost_floor_for_goodput(g)
        assert floor <= plan.cost_usd_per_hour * (1 + 1e-12), (plan.rate_rps, g, floor)
        p_inst, n_p = plan.roles["P"]
        n_ttft = s._ttft_floor_count(p_inst, g)
        assert n_ttft <= n_p, (plan.rate_rps, g, n_ttft, n_p)
        md_inst, n_md = plan.roles["MD"]
        md_floor = s._md_lower_bound(g * (1 - search_module.FLOOR_CHECK_RTOL))
        assert md_floor <= n_md * s.pb.unit_lb_usd_per_hour(md_inst) * (1 + 1e-12)
        if plan.roles.get("RLD") is None:
            assert s._meets_ttft_unrelayed(p_inst), plan.rate_rps
        tight["P"] += n_ttft == n_p
        tight["MD"] += md_floor == n_md * s.pb.unit_lb_usd_per_hour(md_inst)
        tight["all"] += math.isclose(floor, plan.cost_usd_per_hour, rel_tol=1e-12)
    # the floor is not vacuous: its terms meet some fleet's own counts
    assert tight["P"] + tight["MD"] > 0, tight
