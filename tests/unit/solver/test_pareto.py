"""The pareto frontier's rules: dominance over (cost, goodput, TTFT p99), the rate grid, which
points take part, and the cost per million tokens (on the same basis as BCR)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from pddplan.api.scenario import load
from pddplan.errors import InfeasibleError, OptionError
from pddplan.solver import pareto_frontier, solve_scenario
from pddplan.solver.pareto import ParetoPoint, dominates, mark, non_dominated, rate_grid
from pddplan.solver.token_cost import cost_usd_per_mtok, mean_tokens


def test_dominance_needs_no_worse_on_all_and_better_on_one() -> None:
    base = (100.0, 2.0, 10.0)  # cost [$/h], goodput [req/s], TTFT p99 [s]
    assert dominates((90.0, 2.0, 10.0), base)  # cheaper
    assert dominates((100.0, 2.5, 10.0), base)  # more goodput
    assert dominates((100.0, 2.0, 9.0), base)  # lower p99
    assert not dominates(base, base)  # equal: neither
    assert not dominates((90.0, 1.5, 10.0), base)  # cheaper but less goodput: a trade-off
    assert not dominates((90.0, 2.0, 11.0), base)  # cheaper but slower
    # a cost above by less than the tie tolerance counts as equal: more goodput still wins
    assert dominates((100.0 * (1 + 1e-12), 2.5, 10.0), base)
    assert not dominates((100.0 * (1 + 1e-6), 2.5, 10.0), base)


def test_non_dominated_keeps_the_trade_offs() -> None:
    pts = [
        (100.0, 2.0, 10.0),  # on: the cheapest
        (150.0, 3.0, 10.0),  # on: more goodput
        (150.0, 2.5, 10.0),  # off: the one above has more goodput for the same cost
        (200.0, 3.0, 5.0),  # on: the lowest p99
        (210.0, 3.0, 5.0),  # off: dearer for the same
    ]
    assert non_dominated(pts) == [True, True, False, True, False]


def test_rate_grid_is_even_and_includes_both_ends() -> None:
    g = rate_grid(1.0, 4.0, 4)
    assert g == [1.0, 2.0, 3.0, 4.0]
    assert rate_grid(0.5, 0.75, 2) == [0.5, 0.75]
    with pytest.raises(OptionError, match="points"):
        rate_grid(1.0, 2.0, 1)


class _Plan:
    """Just the figures :func:`mark` reads."""

    def __init__(self, cost: float, goodput: float, p99: float, meets: bool = True) -> None:
        self.cost_usd_per_hour = cost
        self.goodput_rps = goodput
        self.prefill = type("P", (), {"ttft_s": (1.0, 2.0, p99)})()
        self.meets_sla = meets


def test_mark_names_the_baseline_that_dominates_and_skips_sla_misses() -> None:
    pts = [
        ParetoPoint("pdd", 1.0, _Plan(100, 2.0, 10)),  # type: ignore[arg-type]
        ParetoPoint("same-dc", 1.0, _Plan(90, 2.2, 9)),  # type: ignore[arg-type]
        # cheaper and more goodput, but misses the SLA: dominates nothing, on no frontier
        ParetoPoint("no-relay", 1.0, _Plan(50, 3.0, 1, meets=False)),  # type: ignore[arg-type]
        ParetoPoint("pdd", 2.0, None, "no plan fits"),
    ]
    m = mark(pts)
    assert [p.on_frontier for p in m] == [True, True, False, False]
    assert [p.on_joint_frontier for p in m] == [False, True, False, False]
    assert m[0].dominated_by == "same-dc at 1 req/s"
    assert m[1].dominated_by == "" and m[2].dominated_by == ""


@pytest.fixture(scope="module")
def long_context():  # noqa: ANN201
    return load("long-context", None, None).resolved


def test_cost_per_mtok_is_bcr_on_tokens(long_context) -> None:  # noqa: ANN001
    """$/Mtok = cost / (goodput x mean tokens x 3600) x 1e6 = 1e6 / (BCR x mean tokens)."""
    plan = solve_scenario(long_context, baselines=False).plan
    mean_in, mean_out = mean_tokens(plan)
    c = plan.problem.classes
    assert mean_in == pytest.approx(float(np.average(c.input_tokens, weights=c.weight)))
    assert mean_in > mean_out > 0  # long-context: 256K-token prompts, 64-token answers
    cost_in, cost_out = cost_usd_per_mtok(plan)
    hand = plan.cost_usd_per_hour / (plan.goodput_rps * 3600 * mean_in) * 1e6
    assert cost_in == pytest.approx(hand, rel=1e-12)
    assert cost_in == pytest.approx(1e6 / (plan.bcr_requests_per_usd * mean_in), rel=1e-12)
    assert cost_out == pytest.approx(cost_in * mean_in / mean_out, rel=1e-12)
    # a plan that serves nothing within the SLA has no cost per token (never inf)
    assert cost_usd_per_mtok(replace(plan, fleet_goodput_rps=0.0)) == (None, None)


def test_frontier_points_are_solve_plans_and_a_grid_above_the_line_is_marked(
    long_context,  # noqa: ANN001
) -> None:
    f = pareto_frontier(long_context, points=3, max_rate_rps=0.4, baselines=False)
    assert f.rates_rps == pytest.approx((0.4 / 3, (0.4 / 3 + 0.4) / 2, 0.4))
    pdd = [p for p in f.points if p.topology == "pdd"]
    assert pdd[-1].plan is None and "line" in pdd[-1].reason  # 0.4 req/s: above the line
    assert any("no PDD plan fits at 2 of the 3 target rates (0.2667, 0.4" in n for n in f.notes)
    front = f.frontier()
    assert front and all(p.plan is not None and p.meets_sla for p in front)
    costs = [p.objectives[0] for p in front]
    assert costs == sorted(costs)
    assert all(math.isfinite(x) for p in front for x in p.objectives)


def test_no_feasible_plan_is_one_line_naming_the_grid(long_context) -> None:  # noqa: ANN001
    rs = load("long-context", {"sla.tpot_ms": 0.1}, None).resolved
    with pytest.raises(InfeasibleError) as info:
        pareto_frontier(rs, points=2, baselines=False)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith("pareto: no PDD plan meets the SLA at any of the 2 target rates")
    assert "scenario long-context" in msg and "TPOT" in msg
    with pytest.raises(OptionError, match="min_rate_rps must be below the grid's top"):
        pareto_frontier(long_context, points=2, min_rate_rps=5.0)


def test_the_answer_says_where_pdd_loses() -> None:
    from pddplan.results.pareto import ParetoResult
    from pddplan.solver.pareto import Frontier

    pts = mark(
        [
            ParetoPoint("pdd", 1.0, _Plan(100, 2.0, 10)),  # type: ignore[arg-type]
            ParetoPoint("pdd", 2.0, _Plan(150, 3.0, 10)),  # type: ignore[arg-type]
            ParetoPoint("same-dc", 1.0, _Plan(90, 2.2, 9)),  # type: ignore[arg-type]
            ParetoPoint("same-dc", 2.0, _Plan(200, 3.0, 12)),  # type: ignore[arg-type]
            ParetoPoint("no-relay", 1.0, _Plan(50, 0.0, 30, meets=False)),  # type: ignore[arg-type]
        ]
    )
    problem = type("Pb", (), {"ttft_targets_s": (5.0, 10.0, 20.0)})()
    f = Frontier("toy", problem, (1.0, 2.0), "line capacity", pts)  # type: ignore[arg-type]
    answer = ParetoResult(f).answer()
    assert answer[0].startswith(
        "Over 2 target rates from 1 to 2 req/s, the top being the line capacity, PDD's"
    )
    assert "PDD's frontier holds 2 of its 2 plans: from 100 $/h for 2 req/s" in answer[0]
    assert answer[1].startswith("Against same-dc: PDD loses at 1 plan of its frontier (1 of 2)")
    assert answer[2].startswith("Against no-relay: it meets the SLA at none of the 1 rates")
