"""The topology form of each bundled two-datacenter scenario plans what `solve` plans."""

from __future__ import annotations

import pytest

from pddplan.api.scenario import load_scenario, registry
from pddplan.api.solve import solve, solve_result
from pddplan.results.topology import TopologyResult
from pddplan.topology import plan_topology, read_topology

TWO_SITE = [
    "default",
    "examples/pdd-paper.yaml",
    "examples/pdd-paper-b30.yaml",
    "examples/long-context.yaml",
]


@pytest.mark.parametrize("scenario", TWO_SITE)
def test_topology_form_plans_as_solve(scenario: str) -> None:
    ti = read_topology(scenario, registry(None))
    assert ti.two_site and len(ti.spec.sites) == 2 and len(ti.spec.lines) == 1
    tp = plan_topology(ti)
    ref_result = solve(load_scenario(scenario), baselines=False, verdict_check=False)
    ref = ref_result.plan
    (opt,) = tp.chosen
    got = opt.plan
    assert got.roles == ref.roles
    assert got.routing == ref.routing and got.handover == ref.handover
    assert got.cost_usd_per_hour == ref.cost_usd_per_hour
    assert tp.cost_usd_per_hour == ref.cost_usd_per_hour
    assert got.prefill.ttft_s == ref.prefill.ttft_s
    assert got.rate_rps == ref.rate_rps
    assert got.fleet_goodput_rps == ref.fleet_goodput_rps
    assert float(got.route.link_utilization) == float(ref.route.link_utilization)
    # the document `solve` prints, figure for figure; only where the plan has no relay does
    # `solve` add where relay would pay (relay_edges and its note), which the topology skips
    got_doc, ref_doc = solve_result(opt.outcome).to_json(), ref_result.to_json()
    skip = set() if ref.has_relay else {"relay_edges", "notes"}
    assert {k: v for k, v in got_doc.items() if k not in skip} == {
        k: v for k, v in ref_doc.items() if k not in skip
    }
    flows = TopologyResult(tp).flow_rows()
    assert flows[0]["cost_usd_per_hour"] == ref.cost_usd_per_hour
    assert flows[0]["ttft_p99_s"] == ref.prefill.ttft_s[2]
    # the one line down leaves the one source unserved
    (fail,) = tp.failures
    assert not fail.survives
