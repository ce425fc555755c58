"""Property: every plan the solver returns meets every SLA by the model."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pddplan.errors import InfeasibleError
from pddplan.io.loader import Registry, load_scenario
from pddplan.solver import Solver, build_problem


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rate=st.floats(min_value=0.05, max_value=8.0),
    p50=st.floats(min_value=0.5, max_value=10.0),
    spread=st.floats(min_value=1.0, max_value=5.0),
    tpot_ms=st.floats(min_value=20.0, max_value=120.0),
    link=st.sampled_from(["wan-10g-cross-city", "wan-25g-cross-country", "wan-100g-cross-city"]),
)
def test_every_returned_plan_meets_the_sla(rate, p50, spread, tpot_ms, link) -> None:
    sla = {
        "ttft_p50_s": p50,
        "ttft_p90_s": p50 * spread,
        "ttft_p99_s": p50 * spread * 2,
        "tpot_ms": tpot_ms,
    }
    rs = load_scenario("examples/pdd-paper.yaml", Registry.default(), {"sla": sla, "link": link})
    pb = build_problem(rs)
    s = Solver(pb)
    try:
        plan = s.solve_rate(rate)
    except InfeasibleError as exc:
        assert exc.binding  # an infeasible answer always names what binds
        return
    p, n_p = plan.roles["P"]
    offs, wts, _ = s.ttft_offsets(p, plan.route)
    q, _, util = s.ttft_at(p, n_p, rate, offs, wts)
    for qi, ti in zip(q, pb.ttft_targets_s, strict=True):
        assert qi <= ti * (1 + 1e-9)
    assert util <= pb.prefill_utilization_cap + 1e-12
    assert plan.route.link_utilization <= pb.link_utilization_cap
    for role in ("MD", "RLD"):
        d = plan.decode.get(role)
        if d is not None and d.instances:
            assert d.batch_per_instance >= 1
            roles = plan.roles[role]
            assert roles is not None
            inst = roles[0]
            assert float(
                inst.decode_step_s(d.batch_per_instance, d.context_tokens)
            ) <= pb.tpot_s * (1 + 1e-9)
            assert d.instances * d.batch_per_instance >= d.concurrency - 1e-9
    assert plan.meets_sla
    assert np.isfinite(plan.cost_usd_per_hour)
