"""The budget walk passes over stretches of the rate axis where a bound proves every fleet
there to have less goodput than a fleet within the budget (``modes._BudgetSkip``): a few
searches first find such a fleet, then the walk passes over the early steps. It returns the
plan of the walk that visits every step, field for field, in fewer searches, and the bound
holds on every fleet it passed over.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import NamedTuple

import pytest

from pddplan.errors import InfeasibleError
from pddplan.solver import modes
from tests.same_plan import assert_same
from tests.walk_search import Counted, record_stretches, search_of


class _Case(NamedTuple):
    """A budget solve the two walks are compared on."""

    scenario: str
    overrides: dict
    budget_usd_per_hour: float
    passes_over: bool


#: (scenario, overrides, budget [USD/h], whether the walk passes over steps): the paper's
#: scenario at the budget of the speed goal's row; at 200 $/h, where the fleet found at the end
#: of the first stretch may be the plan (its cost's goodput bound reaches the probed one), so
#: the walk passes over the stretch's first half only; at a budget its whole walk fits (the
#: first probe, at the ceiling, fits); a line capped at 0.99 with L40S RLD, where the least
#: cost falls near the line's capacity; at a budget under twice the walk's first cost floor
#: (no probe: the walk visits every step).
CASES = [
    _Case("examples/pdd-paper.yaml", {}, 176.0, True),
    _Case("examples/pdd-paper.yaml", {}, 200.0, True),
    _Case("examples/pdd-paper.yaml", {}, 500.0, True),
    _Case(
        "examples/pdd-paper.yaml",
        {"serving.link_utilization_cap": 0.99, "roles.RLD.chips": ["l40s"]},
        780.0,
        True,
    ),
    _Case("examples/pdd-paper.yaml", {}, 100.0, False),
]


def _fleet(plan: modes.Plan) -> tuple:
    """What names a plan's fleet: its cost, routing, hand-over, and each role's instance kind,
    count and decode batch."""
    roles = {
        role: (inst.chip.name, inst.tensor_parallel, inst.lay.label, n)
        for role, (inst, n) in ((r, v) for r, v in plan.roles.items() if v is not None)
    }
    batches = {r: d.batch_per_instance for r, d in plan.decode.items() if d is not None}
    return (plan.cost_usd_per_hour, plan.routing, plan.handover, roles, batches)


def _answer(search, budget: float, hi: float) -> tuple[modes.Plan, list[str], int]:
    stopped: list[str] = []
    falls: list[tuple[modes.Plan, modes.Plan]] = []
    plan = modes.solve_budget(search, budget, hi, stopped, falls)
    return plan, stopped, len(falls)


def _no_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk without a probed bound: nothing known within the budget until walked, and
    the most goodput walked so far never reaches past the walk's own rate (every step)."""
    monkeypatch.setattr(modes._BudgetSkip, "_probe", lambda self: 0.0)
    monkeypatch.setattr(modes._BudgetSkip, "resume_rate", lambda self, rate: rate)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_the_walk_that_passes_over_steps_returns_the_full_walks_plan(
    case: _Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Field for field the plan of the walk that visits every step (its step ends are on the
    grid of ``modes._on_grid``, so a step reached by another path ends at the same rate), the
    same reason the walk stopped and the same falls of the least cost seen. Fewer searches
    where it passes over steps, the same number where it does not probe."""
    scenario, overrides, budget, passes_over = case
    search, hi = search_of(scenario, overrides)
    fast = Counted(search)
    got, got_stopped, got_falls = _answer(fast, budget, hi)
    _no_probe(monkeypatch)
    full = Counted(search_of(scenario, overrides)[0])
    want, want_stopped, want_falls = _answer(full, budget, hi)
    assert_same(got, want)  # by value: the two searches' routes need not be the same arrays
    assert got.problem == want.problem
    assert (got_stopped, got_falls) == (want_stopped, want_falls)
    if passes_over:
        assert fast.rates < full.rates, (fast.rates, full.rates)
    else:
        assert fast.rates == full.rates


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in CASES if c.passes_over])
def test_every_fleet_passed_over_has_less_goodput_than_the_bound_then(
    case: _Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each stretch ``[rate, x)`` the walk passed over, with the bound ``B`` it had then (the
    most goodput within the budget, walked or probed, less
    :data:`~pddplan.solver.modes.RESUME_RTOL`): every fleet of the full walk whose step starts
    there and ends by ``x`` has a goodput (counted up to the ceiling) of at most ``B``, which
    the plan's exceeds beyond a tie. At least one stretch holds a fleet."""
    scenario, overrides, budget, _ = case
    search, hi = search_of(scenario, overrides)
    stretches = record_stretches(monkeypatch, modes._BudgetSkip)
    plan = modes.solve_budget(search, budget, hi)
    assert stretches
    walked = [
        (p, modes._with_step(p)[1])
        for p in modes.walk_fleets(search_of(scenario, overrides)[0], hi)
    ]
    inside = 0
    for rate, x, bound in stretches:
        assert bound < plan.goodput_rps * (1 - modes._TIE)
        for p, end in walked:
            if rate <= p.rate_rps < x and end <= x:
                inside += 1
                assert min(p.goodput_rps, hi) <= bound, (rate, x, p.rate_rps)
    assert inside > 0


def test_a_probe_that_outranks_every_fleet_walked_makes_the_walk_visit_every_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the bound a stretch was passed over below is not under the plan's goodput (a
    probe whose fleet the walk does not visit, here a probed goodput of the ceiling itself),
    the walk is done again step by step, and its plan is the full walk's, field for field."""
    search, hi = search_of("examples/pdd-paper.yaml", {})
    monkeypatch.setattr(modes._BudgetSkip, "_probe", lambda self: self.hi_rate)
    rewalked = Counted(search)
    got, _, _ = _answer(rewalked, 176.0, hi)
    _no_probe(monkeypatch)
    full = Counted(search_of("examples/pdd-paper.yaml", {})[0])
    want, _, _ = _answer(full, 176.0, hi)
    assert _fleet(got) == _fleet(want)
    assert (got.goodput_rps, got.rate_rps) == (want.goodput_rps, want.rate_rps)
    assert rewalked.rates > full.rates  # the walk that passed over, then every step


@pytest.mark.slow
def test_a_fleet_that_may_be_the_plan_is_needed() -> None:
    """``_BudgetSkip.needs`` on every fleet of the full walk at 200 $/h, with the probed bound:
    each within the budget whose goodput reaches the bound is needed (the walk goes back for
    a stretch that ends in its step); each above the budget is needed exactly where a cheaper
    fleet within the budget could reach the bound (its goodput is at most the budget's goodput
    bound there); the cheap early ones, whose cost bounds their goodput below it, are not."""
    search, hi = search_of("examples/pdd-paper.yaml", {})
    limit = 200.0 * (1 + 1e-12)
    skip = modes._BudgetSkip(search, limit, hi)
    bound = skip._bound()
    assert bound > 0.0
    seen = {"reaches": 0, "over": 0, "below": 0}
    for p in modes.walk_fleets(search_of("examples/pdd-paper.yaml", {})[0], hi):
        g = min(p.goodput_rps, hi)
        if p.cost_usd_per_hour > limit:
            within = min(search.goodput_bound_for_cost(limit, p.rate_rps), hi)
            assert skip.needs(p) == (within >= bound), p.rate_rps
            seen["over"] += 1
        elif g >= bound:
            assert skip.needs(p), p.rate_rps
            seen["reaches"] += 1
        elif not skip.needs(p):
            seen["below"] += 1
        if search.cost_floor(p.rate_rps) > limit:
            break
    assert min(seen.values()) > 0, seen


@dataclasses.dataclass(frozen=True)
class _Fleet:
    """A fleet of the synthetic staircase below: what the walk reads of a plan."""

    name: str
    rate_rps: float
    cost_usd_per_hour: float
    fleet_goodput_rps: float | None = None

    @property
    def goodput_rps(self) -> float:
        return self.rate_rps if self.fleet_goodput_rps is None else self.fleet_goodput_rps

    @property
    def prefill(self) -> SimpleNamespace:
        return SimpleNamespace(ttft_s=(1.0, 1.0, 1.0))


#: A staircase with a fall right after a stretch (name: cost [USD/h], valid from, step end,
#: goodput [req/s]). F and G cost the same; the search ranks G first from 3.55 req/s on, and G
#: ends its step later. H, cheaper, is the least cost from 3.6 on (its step ends at the prefill
#: cap, below its goodput 5.0); K, of H's cost, is ranked first from 3.62 on. The step-by-step
#: walk finds F at its step's start, then H at F's end: the plan at 55 $/h. The probes (from
#: 5 req/s, where the cost floor passes the budget) find K, goodput 4.2, at the highest rate
#: within the budget; the walk passes over to 0.85 of it, 3.57, where it finds G, above the
#: budget, and, did it not go back, would then find M, whose 4.6 req/s passes the probed 4.2.
_STAIRS = {
    "A1": (10.0, 0.0, 1.0, 1.0),
    "A2": (20.0, 0.0, 2.0, 2.0),
    "A3": (30.0, 0.0, 3.5, 3.5),
    "F": (70.0, 0.0, 3.6, 3.6),
    "G": (70.0, 0.0, 4.5, 4.5),
    "H": (50.0, 3.6, 4.2, 5.0),
    "K": (50.0, 3.6, 4.2, 4.2),
    "Q": (90.0, 0.0, 4.55, 4.55),
    "M": (54.0, 4.55, 4.6, 4.6),
    "N": (200.0, 4.6, 6.0, 6.0),
}


class _Stairs:
    """A RateSolver over :data:`_STAIRS`: the least-cost fleet valid at a rate, ties ranked
    as the table says; its bounds are exact (a cost's goodput bound is the most goodput of a
    fleet valid there at that cost or less)."""

    def candidate_rate(self, rate: float, progress=None) -> _Fleet:
        valid = [n for n, (_, a, b, _) in _STAIRS.items() if a <= rate < b]
        if not valid:
            raise InfeasibleError("nothing fits", binding="line utilization")
        least = min(_STAIRS[n][0] for n in valid)
        names = [n for n in valid if _STAIRS[n][0] == least]
        if names == ["F", "G"]:
            names = ["G" if rate >= 3.55 else "F"]
        if names == ["H", "K"]:
            names = ["K" if rate >= 3.62 else "H"]
        (name,) = names
        return _Fleet(name, rate, least)

    def finalized(self, plan: _Fleet) -> _Fleet:
        return plan

    def cost_floor(self, rate: float) -> float:
        return 200.0 if rate >= 5.0 else 10.0

    def step_end_for_goodput(self, goodput_rps: float) -> float:
        return 0.85 * goodput_rps

    def goodput_bound_for_cost(self, cost_usd_per_hour: float, rate: float) -> float:
        fits = [g for c, _, b, g in _STAIRS.values() if c <= cost_usd_per_hour and b > rate]
        return max(fits, default=rate)

    def cost_floor_for_goodput(self, goodput_rps: float) -> float:
        raise AssertionError("not asked by the budget walk")


def test_a_fall_after_a_stretch_whose_end_is_above_the_budget_is_walked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The walk that passes over steps returns the step-by-step walk's plan on a staircase
    where a stretch ends at a fleet above the budget (G) whose cost's fleets include one, ranked
    first at the step's start (F), that ends the step sooner, after which the least cost falls
    to a fleet within the budget (H) with more goodput than any other: the fleet above the
    budget is needed, since a cheaper one within it could be the plan, and the walk goes
    back."""
    monkeypatch.setattr(
        modes,
        "_with_step",
        lambda p: (
            dataclasses.replace(p, fleet_goodput_rps=_STAIRS[p.name][3]),
            _STAIRS[p.name][2],
        ),
    )
    got = modes.solve_budget(_Stairs(), 55.0, 6.0)
    _no_probe(monkeypatch)
    want = modes.solve_budget(_Stairs(), 55.0, 6.0)
    assert (got.name, want.name) == ("H", "H")
    assert got.goodput_rps == want.goodput_rps == 5.0
