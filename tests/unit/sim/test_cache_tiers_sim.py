"""The simulator loads prefix hits from the cache tiers through :func:`pddplan.timing.prefill_s`
and agrees with the closed forms (TTFT p50 and p90 within 10%) on plans built with tiers."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from pddplan import tiers, timing
from pddplan.io.loader import Registry, load_scenario
from pddplan.sim import SimConfig, SimPlan, simulate
from pddplan.sim.compare import closed_form_figures, comparison_rows
from pddplan.sim.engine import _unique_prefill_s, make_requests
from pddplan.solver import Solver, solve_scenario

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "cache-tiers.yaml"


def _at(capacity_gb: tuple[float, float]):
    rs = load_scenario(str(EXAMPLE), Registry.default())
    (hits,) = tiers.hit_rates_by_capacity(rs, [tiers.capacity_tokens(rs, capacity_gb)])
    return tiers.at_capacity(rs, capacity_gb, hits)


@pytest.mark.parametrize("read_scale", [1.0, 0.05])
def test_simulated_ttft_matches_closed_forms_with_tiers(read_scale: float) -> None:
    rs = _at((256.0, 4096.0))
    plan = solve_scenario(rs, baselines=False).plan
    pb = plan.problem
    assert pb.cache is not None
    if read_scale != 1.0:
        # a tier a hundred times slower: the load, not the compute, sets the prefill
        slow = tuple(
            dataclasses.replace(t, read_bytes_per_s=t.read_bytes_per_s * read_scale)
            for t in pb.cache.tiers
        )
        pb = dataclasses.replace(pb, cache=dataclasses.replace(pb.cache, tiers=slow))
        plan = Solver(pb).solve_rate(rs.scenario.rate_rps)
    sp = SimPlan.of(plan)
    req = make_requests(pb, sp, SimConfig(requests=20000, seed=0))
    inst = sp.roles["P"].instance
    want = timing.prefill_s(
        inst, req.uncached_tokens, req.cached_tokens, pb.chunk_size_tokens, pb.cache
    )
    np.testing.assert_allclose(_unique_prefill_s(pb, sp, req), want, rtol=1e-12)
    res = simulate(pb, sp, SimConfig(requests=20000, seed=0), requests=req)
    by = {r["metric"]: r for r in comparison_rows(closed_form_figures(pb, plan), res)}
    for metric in ("ttft_p50_s", "ttft_p90_s"):
        assert abs(by[metric]["gap_pct"]) <= 10.0, (metric, by[metric])
