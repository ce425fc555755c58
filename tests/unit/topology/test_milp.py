"""The MILP's plan is the cheapest over the same options, found by exhaustive enumeration, on
small generated topologies (3 sites, 2-3 lines, 2 sources), sized by the plan builder."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pddplan.api.scenario import registry
from pddplan.errors import InfeasibleError
from pddplan.topology import market_of, plan_topology, read_topology
from pddplan.topology.milp import choose, fits, total_cost
from pddplan.topology.pipelines import size_options

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
    return {
        "kind": "scenario",
        "name": "generated",
        "model": "qwen3-235b-a22b",
        "share_levels": 2,
        "sites": sites,
        "lines": lines,
        "traffic": traffic,
    }


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
    max_examples=4,
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
    market = market_of(ti)
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
