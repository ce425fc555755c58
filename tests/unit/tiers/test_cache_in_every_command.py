"""Every command that plans a scenario with ``cache:`` tiers sizes its cache as ``solve`` does
(:func:`pddplan.tiers.solve`, the one home that ``solve``, ``sweep`` and the others call).

Before, only ``solve`` and ``sweep`` did: ``topology`` and ``horizon`` planned the example with
the workload's hit rates as written and no cache (155.397 $/h against ``solve``'s 155.425 on
cache-tiers; a horizon slot at 2 req/s cost 155.397 $/h where ``solve --rate 2`` costs
208.645 with a 4 TB remote-store tier), and ``pareto``, ``bathtub``, ``simulate``, ``robust``
and ``breakeven`` solved the same way. ``horizon``'s totals also left out the cache's cost.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

import pddplan

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The cache-tiers example on four capacity options (0 or 256 GB of host DRAM, 0 or 4 TB
    of remote store, which costs enough to move a plan), owned chips sunk at an opex, and a
    two-slot day for ``horizon``."""
    doc = yaml.safe_load((REPO / "examples" / "cache-tiers.yaml").read_text())
    doc["cache"]["tiers"][0]["capacity_gb_per_node"] = [0, 256]
    doc["cache"]["tiers"][1] = {"profile": "remote-store", "capacity_gb_per_node": [0, 4096]}
    doc["inventory"] = {"owned_cost": "sunk", "opex_usd_per_chip_hour": 0.25}
    doc["load"] = {"day_rate_rps": [1.0, 2.0], "slot_minutes": 720}
    path = tmp_path_factory.mktemp("cache") / "cache-few.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _solve(scenario: str, rate: float | None = None) -> pddplan.SolveResult:
    res = pddplan.solve(scenario, rate_rps=rate, verdict_check=False, baselines=False)
    assert res.cache is not None and res.cache["cache_usd_per_hour"] > 0
    return res


def test_topology_plans_the_cache_solve_plans(scenario: str) -> None:
    res = _solve(scenario)
    doc = pddplan.topology(scenario).to_json()
    assert doc["cost_usd_per_hour"] == pytest.approx(res.cost_usd_per_hour, rel=1e-12)


@pytest.mark.slow
def test_horizon_slots_and_totals_count_the_cache(scenario: str) -> None:
    doc = pddplan.horizon(scenario).to_json()
    by_rate = {s["rate_rps"]: s["plan_cost_usd_per_hour"] for s in doc["slots"]}
    for rate in (1.0, 2.0):
        own = {"gpu-a": 32, "gpu-b": 32}  # the chosen inventory covers the peak: no rent
        res = pddplan.solve(scenario, rate_rps=rate, own=own, verdict_check=False, baselines=False)
        assert by_rate[rate] == pytest.approx(res.cost_usd_per_hour, rel=1e-12)
    chosen = doc["strategies"][0]
    assert chosen["cache_usd"] > 0
    parts = chosen["owned_usd"] + chosen["rented_usd"] + chosen["line_usd"] + chosen["cache_usd"]
    assert chosen["horizon_cost_usd"] == pytest.approx(parts, rel=1e-12)


def test_pareto_and_simulate_plan_the_cache(scenario: str) -> None:
    res = _solve(scenario, rate=2.0)
    frontier = pddplan.pareto(scenario, points=2, min_rate_rps=1.0, max_rate_rps=2.0).frontier
    at_2 = [p for p in frontier.points if p.topology == "pdd" and p.rate_rps == 2.0]
    assert at_2 and at_2[0].plan is not None
    assert at_2[0].plan.cost_usd_per_hour == pytest.approx(res.cost_usd_per_hour, rel=1e-12)
    assert at_2[0].plan.cache_cost_usd_per_hour > 0
    # the plan simulate solves now: its closed forms are solve's TTFT at the cache chosen
    sim = pddplan.simulate(scenario, rate_rps=2.0, requests=300)
    closed = sim.closed_form.scalars
    got = (closed["ttft_p50_s"], closed["ttft_p90_s"], closed["ttft_p99_s"])
    assert got == pytest.approx(res.plan.prefill.ttft_s, rel=1e-12)


def test_robust_prices_a_fleet_with_its_cache(scenario: str) -> None:
    """``robust`` prices each configuration's counts with the samples' prices
    (:class:`~pddplan.robust.evaluate.SamplePrices`): the P nodes' cache is part of that cost,
    as it is of the plan builder's (it was left out: expected costs and the premium were short
    by the cache's cost)."""
    from pddplan.robust.evaluate import SamplePrices
    from pddplan.robust.search import point_config

    plan = _solve(scenario).plan
    pb, cfg = plan.problem, point_config(plan)
    rental = {
        inst.chip.name: inst.chip.price.rental_usd_per_hour
        for role in ("P", "RLD", "MD")
        for inst in pb.options[role]
    }
    prices = SamplePrices(
        rental, pb.pricing, pb.line_cost_usd_per_hour, pb.cache_cost_usd_per_hour(1)
    )
    assert plan.cache_cost_usd_per_hour > 0
    cost = prices.fleet_cost_usd_per_hour(cfg, cfg.base)
    assert cost == pytest.approx(plan.cost_usd_per_hour, rel=1e-12)
    run = pddplan.robust(scenario, samples=8, seed=0).run
    assert run.point.cache is not None  # the point was sized as solve sizes it
    assert run.point.plan.cost_usd_per_hour == pytest.approx(plan.cost_usd_per_hour, rel=1e-12)


def test_solve_plan_table_rows_add_up_to_the_cost(scenario: str) -> None:
    """The plan table has a ``cache`` row: its rows add up to the plan's cost (the 4 TB
    remote-store tier's 53 $/h was in the cost and in no row)."""
    res = pddplan.solve(
        scenario,
        overrides={
            "cache.tiers.1.capacity_gb_per_node": 4096,
            "cache.tiers.0.capacity_gb_per_node": 0,
        },
        verdict_check=False,
    )
    rows = res.rows("plan")
    cache = [r for r in rows if r["role"] == "cache"]
    assert len(cache) == 1 and cache[0]["cost_usd_per_hour"] > 50
    total = sum(r["cost_usd_per_hour"] for r in rows)
    assert total == pytest.approx(res.cost_usd_per_hour, rel=1e-12)


def test_hit_rate_shift_moves_a_cache_sized_plan() -> None:
    """``workload.hit_rate.shift`` is a what-if on the hit rates with ``cache:`` tiers too: the
    sized capacity's trace hit rates were put in place of the workload's and dropped the shift,
    so cache-tiers gave the same goodput (2.12109375 req/s) at shifts 0, 0.01 and 0.05 while
    its verdict said PDD's win over no-relay-rld flips at a shift of 0.0077."""
    path = str(REPO / "examples" / "cache-tiers.yaml")
    good = [
        pddplan.solve(
            path, overrides={"workload.hit_rate.shift": x}, verdict_check=False, baselines=False
        ).plan
        for x in (0.0, 0.05)
    ]
    means = [
        float(np.average(p.problem.classes.hit_rate, weights=p.problem.classes.weight))
        for p in good
    ]
    # the shift moves every class up by 0.05, clipped at a hit rate of 1 (most of this trace's
    # mass sits above 0.9): the mean rises, by less than 0.05
    assert means[0] + 0.01 < means[1] < means[0] + 0.05
    assert good[1].goodput_rps > good[0].goodput_rps
