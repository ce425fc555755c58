"""``solve`` on a scenario with ``cache:`` tiers sizes the cache with the tiers study
(:func:`pddplan.tiers.study`) in its own mode: its chosen capacity and cost equal ``pddplan
cache``'s choice and the best of an exhaustive loop over the options, each solved by ``solve``
at that one capacity; the CLI's JSON is the API's."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from time_limits import run_pddplan

import pddplan
from pddplan import tiers

REPO = Path(__file__).resolve().parents[3]
SCENARIO = str(REPO / "examples" / "cache-tiers.yaml")
#: the max-BCR case on two of the example's ten capacity options (each max-BCR solve walks
#: every fleet of the staircase: the ten options, three times over, take minutes of CPU)
FEW_OPTIONS = {
    "cache.tiers.0.capacity_gb_per_node": [0, 256],
    "cache.tiers.1.capacity_gb_per_node": [4096],
}


def _overrides(max_bcr: bool) -> dict | None:
    return FEW_OPTIONS if max_bcr else None


def _exhaustive(max_bcr: bool) -> list[tuple[tuple[float, ...], float, float]]:
    """Each capacity option's plan, solved by ``solve`` at that capacity alone:
    ``(capacity per tier [GB], cost [USD/h], BCR [req/USD])``; None where none meets the SLA."""
    ls = pddplan.load_scenario(SCENARIO, overrides=_overrides(max_bcr))
    st = tiers.study(ls.resolved, max_bcr=max_bcr)
    out = []
    for o in st.options:
        assert o.resolved is not None and o.resolved.cache_capacity_gb == o.capacity_gb_per_node
        try:
            r = pddplan.solve(
                replace(ls, resolved=o.resolved),
                max_bcr=max_bcr,
                baselines=False,
                verdict_check=False,
            )
        except pddplan.InfeasibleError:
            continue
        if r.plan.meets_sla:
            assert r.cache is None  # a capacity already set is solved as is
            out.append((o.capacity_gb_per_node, r.cost_usd_per_hour, r.bcr_requests_per_usd))
    return out


@pytest.mark.parametrize(
    "max_bcr", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["rate", "max-bcr"]
)
def test_solve_chooses_the_capacity_cache_chooses_and_the_exhaustive_best(max_bcr: bool) -> None:
    ov = _overrides(max_bcr)
    res = pddplan.solve(
        SCENARIO, max_bcr=max_bcr, baselines=False, verdict_check=False, overrides=ov
    )
    c = res.cache
    assert c is not None
    chosen = (c["host-dram_gb_per_node"], c["local-nvme_gb_per_node"])
    assert c["options_compared"] == len(
        tiers.capacity_options(pddplan.load_scenario(SCENARIO, overrides=ov).resolved)
    )
    assert res.plan.cache_cost_usd_per_hour == c["cache_usd_per_hour"]
    # pddplan cache chooses the same option, at the same cost
    cr = pddplan.cache(SCENARIO, max_bcr=max_bcr, overrides=ov).chosen
    assert cr is not None
    assert (cr["host-dram_gb_per_node"], cr["local-nvme_gb_per_node"]) == chosen
    assert cr["cost_usd_per_hour"] == res.cost_usd_per_hour
    # the best of every option solved on its own
    grid = _exhaustive(max_bcr)
    assert grid, "no option meets the SLA"
    if max_bcr:
        best = max(grid, key=lambda g: (g[2], -sum(g[0])))
        assert res.bcr_requests_per_usd == best[2]
    else:
        best = min(grid, key=lambda g: (g[1], sum(g[0])))
        assert res.cost_usd_per_hour == best[1]
    assert chosen == best[0]


def test_solve_cli_json_is_the_api_json() -> None:
    api = pddplan.solve(SCENARIO, verdict_check=False).to_json()
    r = run_pddplan("solve", SCENARIO, "--no-verdict-check", "-f", "json", cwd=REPO)
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)
    assert cli["cache"] == api["cache"]
    assert cli == json.loads(json.dumps(api))


def test_solve_says_when_no_capacity_option_meets_the_sla() -> None:
    """Every option too small: one error naming the cache options, no plan without the cache."""
    with pytest.raises(pddplan.InfeasibleError, match="no capacity option of the scenario's"):
        pddplan.solve(
            SCENARIO,
            overrides={"sla.ttft_p50_s": 0.001, "sla.ttft_p90_s": 0.002, "sla.ttft_p99_s": 0.003},
            baselines=False,
            verdict_check=False,
        )


def test_on_the_shipped_trace_solve_picks_the_cheapest_capacity(tmp_path: Path) -> None:
    """The issue's path on the shipped trace (tests/data/mooncake_excerpt.jsonl): its LRU
    replay gives the hit rates at each capacity (the capacity curve `hitrate --cache-tokens`
    prints), and `solve` picks the capacity whose plan is the cheapest of every option solved
    on its own."""
    import yaml

    from pddplan.io.loader import Registry, load_scenario
    from pddplan.solver import solve_scenario

    doc = yaml.safe_load(Path(SCENARIO).read_text())
    doc["cache"]["hit_rate"] = {"trace": str(REPO / "tests" / "data" / "mooncake_excerpt.jsonl")}
    grid = [0.0, 64.0, 1024.0]
    doc["cache"]["tiers"] = [{"profile": "host-dram", "capacity_gb_per_node": grid}]
    doc["rate_rps"] = 0.9
    path = tmp_path / "trace-cache.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = pddplan.solve(str(path), baselines=False, verdict_check=False)
    assert res.cache is not None
    rs = load_scenario(str(path), Registry.default())
    costs = []
    for gb in grid:
        tok = tiers.capacity_tokens(rs, (gb,))
        (hits,) = tiers.hit_rates_by_capacity(rs, [tok])
        try:
            plan = solve_scenario(tiers.at_capacity(rs, (gb,), hits), baselines=False).plan
        except pddplan.InfeasibleError:
            costs.append(float("inf"))
            continue
        costs.append(plan.cost_usd_per_hour if plan.meets_sla else float("inf"))
    best = min(range(len(grid)), key=lambda i: (costs[i], grid[i]))
    assert costs[best] < float("inf")
    assert res.cache["host-dram_gb_per_node"] == grid[best]
    assert res.cost_usd_per_hour == pytest.approx(costs[best], rel=1e-12)
