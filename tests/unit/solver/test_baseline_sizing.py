"""The same-datacenter baseline is sized (or says why), never left with hours of TTFT."""

from __future__ import annotations

import math

from pddplan.io.loader import Registry, load_scenario
from pddplan.solver.modes import baseline_at_rate
from pddplan.solver.problem import SAME_DC

DENSE_4K = {
    "model": "qwen3-32b",
    "workload": {
        "kind": "workload",
        "name": "fixed-4k",
        "source": "test",
        "input_tokens": {"fixed": 4000},
        "output_tokens": {"fixed": 256},
        "hit_rate": {"samples": [0.0]},
    },
    "roles": {
        "P": {"chips": ["h200-sxm"], "chips_per_instance": [2]},
        "RLD": {"chips": ["h200-sxm"], "chips_per_instance": [2]},
        "MD": {"chips": ["h200-sxm"], "chips_per_instance": [2]},
    },
    "baseline": {"chip": "h200-sxm", "chips_per_instance": 2},
    "sla": {"ttft_p50_s": 2, "ttft_p90_s": 2, "ttft_p99_s": 2, "tpot_ms": 50},
}


def _rs(patch: dict):
    return load_scenario("examples/pdd-paper.yaml", Registry.default(), patch)


def test_same_dc_baseline_at_46_rps_is_sized() -> None:
    """1 GB of KV per request at 46 req/s: the RDMA fabric is per NIC, not one shared line."""
    plan = baseline_at_rate(_rs(DENSE_4K), SAME_DC, 46.38)
    assert plan.meets_sla
    assert all(t < 2.0 for t in plan.prefill.ttft_s)
    assert plan.route.link_utilization == 0.0
    assert plan.goodput_rps >= 46.38 * (1 - 1e-3)


def test_unsizable_baseline_says_why() -> None:
    tight = {**DENSE_4K, "sla": {"ttft_p50_s": 0.01, "ttft_p90_s": 0.01, "ttft_p99_s": 0.01}}
    tight["sla"]["tpot_ms"] = 50
    plan = baseline_at_rate(_rs(tight), SAME_DC, 10.0)
    assert not plan.meets_sla
    assert plan.goodput_rps == 0.0
    assert any(b.startswith("SLA: ") and "TTFT" in b for b in plan.binding)
    assert all(math.isfinite(t) and t < 10 for t in plan.prefill.ttft_s)


def test_the_rld_for_anomalous_baseline_shares_pdds_physics_and_sizes_alike() -> None:
    """The baseline that keeps RLD for anomalous requests only is PDD's problem under the
    routing that relays nothing: one physics key (the topology's name is not physics), so it
    reuses what PDD's search computed, and its plan is the one it sizes on a memo of its own."""
    from pddplan.solver import Solver, build_problem
    from pddplan.solver.cache import SearchCache
    from pddplan.solver.modes import BASELINE_ROUTING, NO_RELAY_RLD
    from pddplan.solver.problem import NO_RELAY, PDD

    rs = load_scenario(None, Registry.default())
    pdd, nrr, nr = (build_problem(rs, t) for t in (PDD, NO_RELAY_RLD, NO_RELAY))
    assert pdd.physics_key() == nrr.physics_key()
    assert nr.physics_key() != pdd.physics_key()  # no RLD at all: other physics
    assert SAME_DC not in (PDD, NO_RELAY_RLD)
    nrr.routing = BASELINE_ROUTING[NO_RELAY_RLD.name]
    shared = SearchCache()
    rate = 2.0
    Solver(pdd, shared).solve_rate(rate)
    hits, misses = shared.hits, shared.misses
    after_pdd = Solver(nrr, shared).solve_rate(rate)
    alone_pb = build_problem(rs, NO_RELAY_RLD)
    alone_pb.routing = nrr.routing
    own = SearchCache()
    alone = Solver(alone_pb, own).solve_rate(rate)
    # what PDD's search computed is found, not computed again
    assert shared.misses - misses < own.misses
    assert shared.hits - hits > own.hits
    assert after_pdd.topology == alone.topology == NO_RELAY_RLD.name
    assert after_pdd.cost_usd_per_hour == alone.cost_usd_per_hour
    assert after_pdd.prefill.ttft_s == alone.prefill.ttft_s
    assert after_pdd.routing == alone.routing and after_pdd.handover == alone.handover
    assert {r: (v[0].physics_key, v[1]) if v else None for r, v in after_pdd.roles.items()} == {
        r: (v[0].physics_key, v[1]) if v else None for r, v in alone.roles.items()
    }


def test_capacity_false_raises_the_ttft_search_error_instead_of_sizing_for_capacity() -> None:
    """``capacity=False`` gives the error the TTFT search raised, where ``capacity=True`` (the
    default) sizes the baseline for capacity and names that error in its binding."""
    import pytest

    from pddplan.errors import InfeasibleError

    tight = {**DENSE_4K, "sla": {"ttft_p50_s": 0.01, "ttft_p90_s": 0.01, "ttft_p99_s": 0.01}}
    tight["sla"]["tpot_ms"] = 50
    rs = _rs(tight)
    sized = baseline_at_rate(rs, SAME_DC, 10.0)
    with pytest.raises(InfeasibleError) as exc:
        baseline_at_rate(rs, SAME_DC, 10.0, capacity=False)
    assert f"SLA: {exc.value}" in sized.binding


def test_without_baselines_the_plan_without_relay_is_not_sized_for_capacity() -> None:
    """A solve without baselines compares its plan with the plan without relay only where that
    one meets its SLA: on the default scenario, whose plan without relay misses TTFT at every
    count (its transfers over the line), no search sizes it for capacity, and the answer is the
    solve's with the baselines."""
    from pddplan.io.loader import Registry, load_scenario
    from pddplan.solver import answer
    from pddplan.solver.problem import NO_RELAY
    from pddplan.solver.search import Solver

    rs = load_scenario(None, Registry.default())
    searched: list[tuple[str, bool]] = []
    inner = Solver.candidate_rate

    def counting(self, *args, **kwargs):
        searched.append((self.pb.topology.name, self.pb.enforce_ttft))
        return inner(self, *args, **kwargs)

    Solver.candidate_rate = counting  # type: ignore[method-assign]
    try:
        bare = answer.solve_scenario(rs, baselines=False)
        bare_searches = list(searched)
        searched.clear()
        full = answer.solve_scenario(rs)
    finally:
        Solver.candidate_rate = inner  # type: ignore[method-assign]
    assert (NO_RELAY.name, True) in bare_searches
    assert (NO_RELAY.name, False) not in bare_searches  # never sized for capacity
    assert (NO_RELAY.name, False) in searched  # with the baselines it is (and reported)
    no_relay = next(b for b in full.baselines if b.topology == NO_RELAY.name)
    assert not no_relay.meets_sla  # so it could not have beaten the plan with relay
    assert bare.plan.cost_usd_per_hour == full.plan.cost_usd_per_hour
    assert bare.plan.roles == full.plan.roles and bare.plan.routing == full.plan.routing
    assert bare.plan.prefill.ttft_s == full.plan.prefill.ttft_s
