"""The MILP's plan is the cheapest over the same options, found by exhaustive enumeration, on
small generated topologies (3 sites, 2-3 lines, 2 sources), sized by the plan builder; with and
without resilience, and with partial failures (a line losing a share of its bandwidth, a site
a share of its chips) in the N-1 set or not."""

from __future__ import annotations

import copy
import itertools
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pddplan.api.scenario import registry
from pddplan.errors import InfeasibleError
from pddplan.topology import market_for, plan_topology, read_topology
from pddplan.topology.failures import partial_cases, touches
from pddplan.topology.milp import (
    choose,
    failure_cases,
    fits,
    kept_level,
    served_levels,
    served_rps,
    total_cost,
)
from pddplan.topology.pipelines import size_options, top_level

SLA = {"ttft_p50_s": 5.0, "ttft_p90_s": 10.0, "ttft_p99_s": 20.0, "tpot_ms": 50.0}
ALL_ROLES = {"P": {"chips": ["gpu-a"]}, "RLD": {"chips": ["gpu-a"]}, "MD": {"chips": ["gpu-a"]}}
LINKS = ["wan-100g-same-city", "wan-25g-cross-city"]


@st.composite
def topologies(draw: Any) -> dict[str, Any]:
    names = ["a", "b", "c"]
    pairs = [("a", "b"), ("b", "c"), ("a", "c")]
    n_lines = draw(st.integers(2, 3))
    sites = []
    for s in names:
        gpu_b_md = {"MD": {"chips": ["gpu-b"]}}
        roles = ALL_ROLES if s != "c" or draw(st.booleans()) else gpu_b_md
        owned = draw(st.integers(0, 16))
        limit = draw(st.sampled_from([None, 24, 64]))
        chip = "gpu-a" if "P" in roles else "gpu-b"
        inv: dict[str, Any] = {"owned": owned, "owned_usd_per_chip_hour": 0.5}
        if limit is not None:
            inv["rent_limit"] = limit
        sites.append({"name": s, "roles": roles, "chips": {chip: inv}})
    lines = [
        {
            "sites": list(p),
            "link": draw(st.sampled_from(LINKS)),
            "route_km": draw(st.sampled_from([50.0, 800.0])),
            "max_count": draw(st.integers(1, 2)),
        }
        for p in pairs[:n_lines]
    ]
    traffic = [
        {
            "name": f"s{i}",
            "entry": entry,
            "rate_rps": draw(st.sampled_from([0.3, 0.8])),
            "workload": "agent-64k",
            "sla": SLA,
        }
        for i, entry in enumerate(["a", "b"])
    ]
    doc: dict[str, Any] = {
        "kind": "scenario",
        "name": "generated",
        "model": "qwen3-235b-a22b",
        "share_levels": 2,
        "sites": sites,
        "lines": lines,
        "traffic": traffic,
    }
    resilience: dict[str, float] = {}
    bw = draw(st.sampled_from([None, 0.5, 0.9]))
    chips = draw(st.sampled_from([None, 0.25, 0.5, 1.0]))
    if bw is not None:
        resilience["line_bandwidth_loss_share"] = bw
    if chips is not None:
        resilience["site_chip_loss_share"] = chips
    if resilience:
        doc["resilience"] = resilience
    return doc


def brute_force(options: list[Any], market: Any, resilient: bool) -> float:
    by_pipe: dict[str, list[int]] = {}
    for i, o in enumerate(options):
        by_pipe.setdefault(o.pipeline, []).append(i)
    best = math.inf
    for pick in itertools.product(*([None, *v] for v in by_pipe.values())):
        chosen = [i for i in pick if i is not None]
        if fits(options, chosen, market, resilient):
            best = min(best, total_cost(options, chosen, market))
    return best


@settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(doc=topologies(), resilient=st.booleans())
def test_milp_equals_enumeration(
    tmp_path_factory: Any, doc: dict[str, Any], resilient: bool
) -> None:
    path = Path(tmp_path_factory.mktemp("topo")) / "t.yaml"
    path.write_text(yaml.safe_dump(doc))
    ti = read_topology(str(path), registry(None))
    opts = size_options(ti)
    market = market_for(ti, opts.options)
    want = brute_force(opts.options, market, resilient)
    try:
        got = choose(opts.options, market, resilient=resilient)
    except InfeasibleError:
        assert want == math.inf
        return
    assert math.isclose(got.cost_usd_per_hour, want, rel_tol=1e-9, abs_tol=1e-9)
    assert fits(opts.options, got.chosen, market, resilient)
    plan = plan_topology(ti, resilient=resilient, options=opts)
    if resilient:
        assert all(f.survives for f in plan.failures)
        assert plan.plain_cost_usd_per_hour is not None
        assert plan.plain_cost_usd_per_hour <= plan.cost_usd_per_hour + 1e-9


PARTIAL = [
    {"line_bandwidth_loss_share": 0.6},
    {"site_chip_loss_share": 0.5},
    {"line_bandwidth_loss_share": 0.95, "site_chip_loss_share": 0.25},
]


@pytest.mark.parametrize("resilience", PARTIAL, ids=lambda r: "+".join(sorted(r)))
def test_partial_failures_equal_enumeration(
    small_doc: dict[str, Any], tmp_path: Path, resilience: dict[str, float]
) -> None:
    # the small topology (conftest): prefill at a, decode at b or c; its resilient plan over
    # the partial failures too is the cheapest that enumeration finds, and survives each
    small_doc["resilience"] = resilience
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(small_doc))
    ti = read_topology(str(path), registry(None))
    opts = size_options(ti)
    market = market_for(ti, opts.options)
    n_sites, n_lines = len(small_doc["sites"]), len(small_doc["lines"])
    kinds = [c.kind for c in failure_cases(market)]
    assert kinds.count("line") == n_lines
    assert kinds.count("line bandwidth") == (
        n_lines if "line_bandwidth_loss_share" in resilience else 0
    )
    assert kinds.count("site chips") == (n_sites if "site_chip_loss_share" in resilience else 0)
    for resilient in (False, True):
        want = brute_force(opts.options, market, resilient)
        plan = plan_topology(ti, resilient=resilient, options=opts)
        assert math.isclose(plan.cost_usd_per_hour, want, rel_tol=1e-9)
        assert len(plan.failures) == len(kinds)
        if resilient:
            assert all(f.survives for f in plan.failures), [f.breaks for f in plan.failures]


def test_kept_levels_by_loss(small_doc: dict[str, Any], tmp_path: Path) -> None:
    # a larger loss never leaves an option more share levels; a site losing all its chips
    # leaves every option there none; options untouched by a failure keep their level
    kept: dict[float, dict[tuple[Any, ...], int]] = {}
    for share in (0.3, 0.6, 1.0):
        doc = copy.deepcopy(small_doc)
        doc["resilience"] = {"site_chip_loss_share": share}
        if share < 1.0:
            doc["resilience"]["line_bandwidth_loss_share"] = share
        path = tmp_path / f"t{share}.yaml"
        path.write_text(yaml.safe_dump(doc))
        ti = read_topology(str(path), registry(None))
        opts = size_options(ti)
        assert max(o.level for o in opts.options) == top_level(ti)
        kept[share] = {}
        for c in partial_cases(ti, opts.options):
            for o in opts.options:
                lv = kept_level(c, o)
                assert 0 <= lv <= o.level
                if not touches(c, o):
                    assert lv == o.level
                if c.kind == "site chips" and share == 1.0 and touches(c, o):
                    assert lv == 0
                kept[share][(c.kind, c.where, o.pipeline, o.level, o.lines, o.chips)] = lv
    # the same option under the same kind of failure at a larger loss keeps no more
    for key, lv in kept[0.6].items():
        if key in kept[0.3]:
            assert lv <= kept[0.3][key]


def test_no_resilience_block_keeps_the_option_set(
    small_doc: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(small_doc))
    ti = read_topology(str(path), registry(None))
    opts = size_options(ti)
    assert top_level(ti) == small_doc["share_levels"]
    assert market_for(ti, opts.options).partial_failures == ()
    assert {c.kind for c in failure_cases(market_for(ti, opts.options))} == {"line"}


def brute_force_goodput(
    options: list[Any], market: Any, resilient: bool, rates: dict[str, float]
) -> list[tuple[float, float]]:
    """(served requests/s, cost) of every choice that meets the goodput modes' constraints
    (at most one option a pipeline, lines, chips; a source may be served in part)."""
    by_pipe: dict[str, list[int]] = {}
    for i, o in enumerate(options):
        by_pipe.setdefault(o.pipeline, []).append(i)
    out = []
    for pick in itertools.product(*([None, *v] for v in by_pipe.values())):
        chosen = [i for i in pick if i is not None]
        if fits(options, chosen, market, resilient, serve_all=False):
            served = served_levels(options, chosen, market, resilient)
            g = served_rps(served, rates, market.share_levels)
            out.append((g, total_cost(options, chosen, market)))
    return out


@settings(
    max_examples=5,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    doc=topologies(),
    resilient=st.booleans(),
    budget=st.sampled_from([40.0, 90.0, 200.0]),
)
def test_goodput_modes_equal_enumeration(
    tmp_path_factory: Any, doc: dict[str, Any], resilient: bool, budget: float
) -> None:
    """Most goodput within a budget (then the least cost for it) and the highest goodput per
    dollar: the MILP (Dinkelbach's iteration for the ratio) against every choice."""
    path = Path(tmp_path_factory.mktemp("topo")) / "t.yaml"
    path.write_text(yaml.safe_dump(doc))
    ti = read_topology(str(path), registry(None))
    opts = size_options(ti)
    market = market_for(ti, opts.options)
    rates = {t.name: t.rate_rps for t in ti.spec.traffic}
    every = brute_force_goodput(opts.options, market, resilient, rates)
    within = [(g, c) for g, c in every if c <= budget * (1 + 1e-12) and g > 0]
    try:
        got = choose(
            opts.options,
            market,
            resilient=resilient,
            mode="budget",
            budget_usd_per_hour=budget,
            rates=rates,
        )
    except InfeasibleError:
        assert not within
    else:
        g_best = max(g for g, _ in within)
        c_best = min(c for g, c in within if g >= g_best * (1 - 1e-9))
        g_got = served_rps(got.served_levels, rates, market.share_levels)
        assert math.isclose(g_got, g_best, rel_tol=1e-9)
        assert math.isclose(got.cost_usd_per_hour, c_best, rel_tol=1e-9, abs_tol=1e-9)
        assert got.cost_usd_per_hour <= budget * (1 + 1e-9)
    ratios = [g / c for g, c in every if g > 0 and c > 0]
    if not ratios:  # nothing is served (under every failure, with resilient)
        with pytest.raises(InfeasibleError):
            choose(opts.options, market, resilient=resilient, mode="max-bcr", rates=rates)
        return
    got_bcr = choose(opts.options, market, resilient=resilient, mode="max-bcr", rates=rates)
    g = served_rps(got_bcr.served_levels, rates, market.share_levels)
    assert math.isclose(g / got_bcr.cost_usd_per_hour, max(ratios), rel_tol=1e-9)
    plan = plan_topology(ti, resilient=resilient, options=opts, mode="max-bcr")
    assert math.isclose(plan.served_bcr_requests_per_usd, max(ratios) * 3600.0, rel_tol=1e-9)
    assert math.isclose(plan.served_total_rps, g, rel_tol=1e-12)
