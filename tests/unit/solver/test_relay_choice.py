"""Relay is a choice the search prices, and goodput is the fleet's highest rate within SLA."""

from __future__ import annotations

from pathlib import Path

import pytest

from pddplan.io.loader import Registry, load_scenario
from pddplan.solver import SAME_DC, baseline_at_rate, solve_scenario
from pddplan.solver.fleet import GOODPUT_RTOL, check_fleet, goodput_rps
from pddplan.solver.modes import solver_for

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = [None, *sorted(str(p) for p in (ROOT / "examples").glob("*.yaml"))]


def _name(s: str | None) -> str:
    return "default" if s is None else Path(s).stem


@pytest.fixture(scope="module", params=SCENARIOS, ids=_name)
def outcome(request):
    rs = load_scenario(request.param, Registry.default())
    return solve_scenario(rs)


def test_pdd_bcr_is_never_below_no_relay_at_the_same_rate(outcome) -> None:
    nr = [b for b in outcome.baselines if b.topology == "no-relay"]
    assert nr, "every scenario has a no-relay baseline"
    assert nr[0].rate_rps == pytest.approx(outcome.plan.rate_rps)
    assert outcome.plan.bcr_requests_per_usd >= nr[0].bcr_requests_per_usd * (1 - 1e-9)


def test_goodput_is_the_edge_of_the_fleets_feasible_rates(outcome) -> None:
    plan = outcome.plan
    solver = solver_for(plan)
    g = plan.goodput_rps
    assert g == pytest.approx(goodput_rps(solver, plan))
    assert g >= plan.rate_rps * (1 - 1e-9)  # a plan sized for its rate serves it
    assert check_fleet(solver, plan, g).meets_sla
    assert not check_fleet(solver, plan, g * (1 + 3 * GOODPUT_RTOL)).meets_sla


def test_a_baseline_that_misses_a_target_has_goodput_below_its_rate() -> None:
    # a TTFT p99 target of 1 s that the same-datacenter baseline's prefill alone cannot meet
    rs = load_scenario(
        "examples/pdd-paper.yaml",
        Registry.default(),
        {"sla": {"ttft_p50_s": 0.5, "ttft_p90_s": 0.8, "ttft_p99_s": 1.0}},
    )
    plan = baseline_at_rate(rs, SAME_DC, rs.scenario.rate_rps)
    if plan.meets_sla:
        pytest.skip("the baseline meets these targets; nothing to check")
    assert plan.goodput_rps < plan.rate_rps
    assert not check_fleet(solver_for(plan), plan, plan.rate_rps).meets_sla


def test_a_fast_cheap_line_makes_relay_not_pay_and_solve_says_so() -> None:
    # a line on which no transfer delays the first token (wide, short, many streams, large
    # windows): RLD only adds cost
    fast = {
        "bandwidth_gbit_per_s": 10000.0,
        "rtt_ms": 0.05,
        "streams_per_transfer": 64,
        "max_window_bytes": 1 << 30,
        # no price tier reaches 10 Tbit/s: keep the paper line's 100G price, flat
        "price_usd_per_month": 20_000.0,
    }
    line = load_scenario("examples/pdd-paper.yaml", Registry.default()).link.name
    # anomalous requests stay on the line, so that an RLD pool could only be there to relay (at
    # the recalibrated 2.3434 req/s, finishing them on RLD saves an MD instance: 152.2 against
    # 155.4 $/h, which is not relay)
    rs = load_scenario(
        "examples/pdd-paper.yaml",
        Registry.default(),
        {"overrides": {"links": {line: fast}}, "serving": {"anomalous_filter": False}},
    )
    out = solve_scenario(rs)
    assert out.plan.roles["RLD"] is None
    assert out.plan.routing.threshold == 0.0 and not out.plan.routing.relay_all
    (note,) = [n for n in out.notes if n.startswith("relay does not pay")]
    assert "the best plan with RLD costs" in note
