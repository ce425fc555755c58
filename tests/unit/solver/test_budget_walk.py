"""The budget walk passes over stretches of the rate axis where a bound proves every fleet
there to have less goodput than a fleet within the budget (``modes._BudgetSkip``): a few
searches first find such a fleet, then the walk passes over the early steps. It returns the
plan of the walk that visits every step (the same fleet, cost, routing and hand-over; the
rate it is found at and its goodput to the last bits, see ``solve_budget``), in fewer
searches, and the bound holds on every fleet it passed over.
"""

from __future__ import annotations

import pytest

from pddplan.api.scenario import load
from pddplan.solver import modes
from pddplan.solver.answer import _problems, scale_bound

#: (scenario, overrides, budget [USD/h], whether the walk passes over steps): the paper's
#: scenario at the budget of the speed goal's row; at 200 $/h, where the fleet found at the end
#: of the first stretch may be the plan (its cost's goodput bound reaches the probed one), so
#: the walk passes over the stretch's first half only; at a budget its whole walk fits (the
#: first probe, at the ceiling, fits); a line capped at 0.99 with L40S RLD, where the least
#: cost falls near the line's capacity; at a budget under twice the walk's first cost floor
#: (no probe: the walk visits every step).
CASES = [
    ("examples/pdd-paper.yaml", {}, 176.0, True),
    ("examples/pdd-paper.yaml", {}, 200.0, True),
    ("examples/pdd-paper.yaml", {}, 500.0, True),
    (
        "examples/pdd-paper.yaml",
        {"serving.link_utilization_cap": 0.99, "roles.RLD.chips": ["l40s"]},
        780.0,
        True,
    ),
    ("examples/pdd-paper.yaml", {}, 100.0, False),
]


def _search(scenario: str, overrides: dict) -> tuple[modes.PlanSearch, float]:
    rs = load(scenario, overrides, None).resolved
    search = modes.PlanSearch(_problems(rs, None))
    hi, _ = scale_bound(search.line_rate_limit(), rs.scenario.limits.max_rate_rps)
    return search, hi


class _Counted:
    """A search that counts the rates it is asked (one search of every variant each)."""

    def __init__(self, search: modes.PlanSearch) -> None:
        self.search, self.rates = search, 0

    def candidate_rate(self, rate, progress=None):
        self.rates += 1
        return self.search.candidate_rate(rate, progress)

    def __getattr__(self, name):
        return getattr(self.search, name)


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
@pytest.mark.parametrize(("scenario", "overrides", "budget", "passes_over"), CASES)
def test_the_walk_that_passes_over_steps_returns_the_full_walks_plan(
    scenario: str,
    overrides: dict,
    budget: float,
    passes_over: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same fleet, cost, routing and hand-over as the walk that visits every step, the
    same reason the walk stopped and the same falls of the least cost seen; its goodput, rate
    and TTFT within 1e-12 (the walk reaches the plan's step by another path). Fewer searches
    where it passes over steps, the same number where it does not probe."""
    search, hi = _search(scenario, overrides)
    fast = _Counted(search)
    got, got_stopped, got_falls = _answer(fast, budget, hi)
    _no_probe(monkeypatch)
    full = _Counted(_search(scenario, overrides)[0])
    want, want_stopped, want_falls = _answer(full, budget, hi)
    assert _fleet(got) == _fleet(want)
    assert got.problem == want.problem
    assert (got_stopped, got_falls) == (want_stopped, want_falls)
    assert got.goodput_rps == pytest.approx(want.goodput_rps, rel=1e-12)
    assert got.rate_rps == pytest.approx(want.rate_rps, rel=1e-12)
    assert got.prefill.ttft_s == pytest.approx(want.prefill.ttft_s, rel=1e-12)
    if passes_over:
        assert fast.rates < full.rates, (fast.rates, full.rates)
    else:
        assert fast.rates == full.rates


@pytest.mark.slow
@pytest.mark.parametrize(("scenario", "overrides", "budget", "passes_over"), CASES[:4])
def test_every_fleet_passed_over_has_less_goodput_than_the_bound_then(
    scenario: str,
    overrides: dict,
    budget: float,
    passes_over: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each stretch ``[rate, x)`` the walk passed over, with the bound ``B`` it had then (the
    most goodput within the budget, walked or probed, less
    :data:`~pddplan.solver.modes.RESUME_RTOL`): every fleet of the full walk whose step starts
    there and ends by ``x`` has a goodput (counted up to the ceiling) of at most ``B``, which
    the plan's exceeds beyond a tie. At least one stretch holds a fleet."""
    search, hi = _search(scenario, overrides)
    stretches: list[tuple[float, float, float]] = []
    resume = modes._BudgetSkip.resume_rate

    def recording(self, rate):
        x = resume(self, rate)
        if x > rate:
            stretches.append((rate, x, self._bound()))
        return x

    monkeypatch.setattr(modes._BudgetSkip, "resume_rate", recording)
    plan = modes.solve_budget(search, budget, hi)
    assert stretches
    walked = [
        (p, modes._with_step(p)[1]) for p in modes.walk_fleets(_search(scenario, overrides)[0], hi)
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
    search, hi = _search("examples/pdd-paper.yaml", {})
    monkeypatch.setattr(modes._BudgetSkip, "_probe", lambda self: self.hi_rate)
    rewalked = _Counted(search)
    got, _, _ = _answer(rewalked, 176.0, hi)
    _no_probe(monkeypatch)
    full = _Counted(_search("examples/pdd-paper.yaml", {})[0])
    want, _, _ = _answer(full, 176.0, hi)
    assert _fleet(got) == _fleet(want)
    assert (got.goodput_rps, got.rate_rps) == (want.goodput_rps, want.rate_rps)
    assert rewalked.rates > full.rates  # the walk that passed over, then every step


@pytest.mark.slow
def test_a_fleet_that_may_be_the_plan_is_needed() -> None:
    """``_BudgetSkip.needs`` on every fleet of the full walk at 200 $/h, with the probed bound:
    each within the budget whose goodput reaches the bound is needed (the walk goes back for
    a stretch that ends in its step), each above the budget is not, and the cheap early ones,
    whose cost bounds their goodput below it, are not either."""
    search, hi = _search("examples/pdd-paper.yaml", {})
    limit = 200.0 * (1 + 1e-12)
    skip = modes._BudgetSkip(search, limit, hi)
    bound = skip._bound()
    assert bound > 0.0
    seen = {"reaches": 0, "over": 0, "below": 0}
    for p in modes.walk_fleets(_search("examples/pdd-paper.yaml", {})[0], hi):
        g = min(p.goodput_rps, hi)
        if p.cost_usd_per_hour > limit:
            assert not skip.needs(p), p.rate_rps
            seen["over"] += 1
        elif g >= bound:
            assert skip.needs(p), p.rate_rps
            seen["reaches"] += 1
        elif not skip.needs(p):
            seen["below"] += 1
        if search.cost_floor(p.rate_rps) > limit:
            break
    assert min(seen.values()) > 0, seen
