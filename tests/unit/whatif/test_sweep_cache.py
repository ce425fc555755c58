"""``sweep`` over cache capacities and cache prices: a point with one fixed capacity per tier
is the plan ``pddplan cache`` builds at that capacity; a cache profile's price is an override
path; a point with a list of capacities is sized by solve's rule (the least cost of them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import pddplan

REPO = Path(__file__).resolve().parents[3]
SCENARIO = str(REPO / "examples" / "cache-tiers.yaml")
KEYS = ("cost_usd_per_hour", "cache_usd_per_hour", "chips", "p_instances", "rate_rps")


def _option(res: Any, dram_gb: float, nvme_gb: float) -> dict[str, Any]:
    (row,) = [
        r
        for r in res.options
        if (r["host-dram_gb_per_node"], r["local-nvme_gb_per_node"]) == (dram_gb, nvme_gb)
    ]
    return row


def test_a_point_at_one_fixed_capacity_is_the_plan_cache_builds_there() -> None:
    axes = {"cache.tiers.0.capacity_gb_per_node": [64.0, 256.0]}
    sw = pddplan.sweep(
        SCENARIO,
        axes,
        overrides={"cache.tiers.1.capacity_gb_per_node": 4096.0},
        baselines=False,
    )
    study = pddplan.cache(SCENARIO)
    rows = sw.rows()
    assert len(rows) == 2
    for row in rows:
        dram = row["cache.tiers.0.capacity_gb_per_node"]
        ref = _option(study, dram, 4096.0)
        assert row["feasible"] and ref["cost_usd_per_hour"] is not None
        assert row["cost_usd_per_hour"] == ref["cost_usd_per_hour"]
        assert row["cache_usd_per_hour"] == ref["cache_usd_per_hour"]
        assert row["cache_host-dram_gb_per_node"] == dram
        assert row["cache_mean_hit_rate"] == ref["mean_hit_rate"]


def test_a_cache_price_is_an_override_path() -> None:
    """Doubling the host DRAM's capex doubles the cache's cost at a fixed capacity (the plan's
    fleet is the same: the cache is a small share of the cost here)."""
    fixed = {
        "cache.tiers.0.capacity_gb_per_node": 256.0,
        "cache.tiers.1.capacity_gb_per_node": 0.0,
    }
    base = pddplan.cache(SCENARIO, overrides=fixed).chosen
    twice = pddplan.cache(
        SCENARIO, overrides={**fixed, "caches.host-dram.price.capex_usd_per_gb": 10.0}
    ).chosen
    assert base is not None and twice is not None
    assert twice["chips"] == base["chips"]
    assert twice["cache_usd_per_hour"] == pytest.approx(2 * base["cache_usd_per_hour"], rel=1e-12)


def test_bad_cache_paths_are_one_clear_error() -> None:
    with pytest.raises(pddplan.OverrideError, match="cache.tiers.5.capacity_gb_per_node"):
        pddplan.cache(SCENARIO, overrides={"cache.tiers.5.capacity_gb_per_node": 1.0})
    with pytest.raises(pddplan.OverrideError, match="greater than or equal to 0|>= 0|allowed"):
        pddplan.cache(SCENARIO, overrides={"caches.host-dram.price.capex_usd_per_gb": -1.0})
