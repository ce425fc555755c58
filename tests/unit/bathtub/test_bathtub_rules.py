"""The bathtub reads the solver's rules: each re-provisioned point is the solve's own answer at
that hit rate (its goodput, so its BCR, and the plan's cache), and a request's marginal decode
time is the one the plan sized its pools for (``timing.decode_split``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from pddplan import tiers, timing, units
from pddplan.bathtub import _unit_prices, analyze, marginal_costs
from pddplan.io.loader import Registry, load_scenario
from pddplan.solver import Solver
from pddplan.timing import Routing

CACHE_TIERS = Path(__file__).resolve().parents[3] / "examples" / "cache-tiers.yaml"


def _at_hit(rs, h: float):  # type: ignore[no-untyped-def]
    dist = rs.workload.hit_rate.model_copy(
        update={
            "bins": None,
            "beta": None,
            "samples": [h],
            "shift": 0.0,
            "scale": 1.0,
            "mix_weight": 0.0,
            "mix_with": None,
        }
    )
    return replace(rs, workload=rs.workload.model_copy(update={"hit_rate": dist}))


@pytest.mark.parametrize("scenario", [None, str(CACHE_TIERS)])
def test_reprovisioned_points_are_the_solves_answers(scenario: str | None) -> None:
    rs = load_scenario(scenario, Registry.default())
    res = analyze(rs, step=0.25)
    sized = res.outcome.scenario or rs  # the cache capacity the plan was sized at
    checked = 0
    for p in res.points:
        if p.reprovisioned_rate_rps is None or p.hit_rate not in (0.0, 0.5, 1.0):
            continue
        plan = tiers.solve(
            _at_hit(sized, p.hit_rate), rate_rps=p.reprovisioned_rate_rps, baselines=False
        ).plan
        assert p.reprovisioned_cost_usd_per_hour == plan.cost_usd_per_hour
        # BCR at the fleet's goodput, as solve reports it (not at the rate it was sized for)
        assert p.reprovisioned_bcr_requests_per_usd == plan.bcr_requests_per_usd
        assert plan.goodput_rps > plan.rate_rps
        checked += 1
    assert checked == 3


def test_a_requests_decode_time_is_what_the_plan_sized_its_pools_for() -> None:
    rs = load_scenario(None, Registry.default())
    out = tiers.solve(rs, baselines=False)
    plan, pb = out.plan, out.problem
    solver = Solver(pb)
    assert plan.roles["RLD"] is not None
    l_in, l_out = 64_512.0, 1024.0
    h = np.array([0.0, 0.3, 0.6, 0.9])
    cost, pre, _ = marginal_costs(plan, solver, l_in, l_out, h)
    unit = _unit_prices(plan, pb)
    tl = timing.timeline(
        pb.paths,
        plan.routing,
        np.full(4, l_in),
        h,
        np.full(4, l_out),
        np.ones(4, dtype=bool),
        plan.route.link_utilization,
    )
    assert plan.routing != Routing.none() and bool(tl.relay[0])  # a low-hit request is relayed
    e0, e1 = plan.roles["MD"][0].extend_affine(solver.md_context_tokens())
    split = timing.decode_split(pb.paths, tl, np.full(4, l_out), plan.handover, e0, e1)
    hour = units.SECONDS_PER_HOUR
    md_b = plan.decode["MD"].batch_per_instance
    rld_b = plan.decode["RLD"].batch_per_instance
    line = tl.wan_bytes / pb.wan.goodput_bytes_per_s * pb.wan.price_usd_per_hour / hour
    want = (
        pre * unit["P"] / hour
        + line
        + split.md_busy_s / md_b * unit["MD"] / hour
        + split.rld_busy_s / rld_b * unit["RLD"] / hour
    )
    np.testing.assert_allclose(cost, want, rtol=1e-12)
    # MD is sized for every output token of a relayed request (RLD's are not credited)
    md_part = cost - pre * unit["P"] / hour - line - split.rld_busy_s / rld_b * unit["RLD"] / hour
    assert np.all(md_part >= l_out * pb.tpot_s / md_b * unit["MD"] / hour * (1 - 1e-12))


def test_a_p_instance_is_priced_with_its_nodes_cache() -> None:
    rs = load_scenario(str(CACHE_TIERS), Registry.default())
    out = tiers.solve(rs, baselines=False)
    plan, pb = out.plan, out.problem
    assert pb.cache is not None and pb.cache_cost_usd_per_hour(1) > 0
    inst, _n = plan.roles["P"]
    assert _unit_prices(plan, pb)["P"] == pytest.approx(
        inst.price_usd_per_hour + pb.cache_cost_usd_per_hour(1), rel=1e-15
    )
