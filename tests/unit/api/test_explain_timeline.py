"""`solve --explain`'s per-class TTFT is the solver's timeline, on every route.

Each class's mean TTFT is the prefill queue's mean wait, its prefill, and one decode step after
its KV lands on the side that decodes first: P-MD ``wan + step_MD``; P-RLD-MD ``min(rdma +
step_RLD, wan + step_MD)``; anomalous (finished on RLD) ``rdma + step_RLD``; one datacenter
(P-D) the RDMA transfer to the decode pool plus ``step_D``. The expected values below are
assembled by hand from the plan's own transfer times (without line jitter, where the mean
transfer is the transfer of the mean payload), not from the function under test.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import pddplan
from pddplan.api import solve_result
from pddplan.solver import Solver

NO_JITTER = {"link.jitter_cv": 0.0}


def _hand_ttft(out) -> tuple[np.ndarray, list[str]]:
    plan = out.plan
    solver = Solver(out.problem)
    tl = plan.route
    p_inst, n = plan.roles["P"]
    wait = solver.prefill_wait(p_inst, n, plan.rate_rps).mean_wait_s
    md_step, rld_step = solver.first_steps(plan)
    tpot = out.problem.tpot_s
    s_md = tpot if md_step is None else md_step
    s_rld = tpot if rld_step is None else rld_step
    pre = solver.prefill_s(p_inst)
    want, routes = [], []
    for k in range(len(pre)):
        if not tl.on_decode_side[k]:
            ready, route = tl.rdma_s[k] + s_rld, "P-RLD (anomalous)"
        elif tl.relay[k]:
            ready, route = min(tl.rdma_s[k] + s_rld, tl.wan_s[k] + s_md), "P-RLD-MD"
        else:
            ready = tl.wan_s[k] + s_md
            route = "P-MD" if out.problem.topology.cross_dc else "P-D"
        want.append(wait + pre[k] + ready)
        routes.append(route)
    return np.array(want), routes


@pytest.mark.parametrize(
    ("scenario", "routes"),
    [
        ("examples/pdd-paper.yaml", {"P-RLD-MD"}),
        ("default", {"P-MD", "P-RLD-MD", "P-RLD (anomalous)"}),
    ],
)
def test_explain_rows_are_the_timeline(scenario: str, routes: set[str]) -> None:
    res = pddplan.solve(scenario, overrides=NO_JITTER, explain=True)
    rows = res.to_json()["classes"]
    want, want_routes = _hand_ttft(res.outcome)
    assert {r["route"] for r in rows} == routes
    assert [r["route"] for r in rows] == want_routes
    got = np.array([r["ttft_mean_s"] for r in rows])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_anomalous_row_includes_its_rdma_copy() -> None:
    """The anomalous class's KV reaches RLD over RDMA before its first token (the default
    plan filters anomalous requests to RLD): a row without it would equal wait + prefill + one
    step."""
    res = pddplan.solve("default", explain=True)
    out = res.outcome
    solver = Solver(out.problem)
    p_inst, n = out.plan.roles["P"]
    wait = solver.prefill_wait(p_inst, n, out.plan.rate_rps).mean_wait_s
    rld_step = solver.first_steps(out.plan)[1]
    (row,) = [r for r in res.to_json()["classes"] if r["route"] == "P-RLD (anomalous)"]
    assert row["rdma_s"] > 0.1
    assert row["ttft_mean_s"] == pytest.approx(
        wait + row["prefill_s"] + row["rdma_s"] + rld_step, rel=1e-12
    )


def test_same_datacenter_rows() -> None:
    """The same-DC baseline's classes take P-D: the RDMA transfer to the decode pool."""
    res = pddplan.solve("examples/pdd-paper.yaml", explain=True)
    (same_dc,) = [b for b in res.outcome.baselines if b.topology == "same-dc"]
    out = replace(res.outcome, plan=same_dc, problem=same_dc.problem)
    rows = solve_result(out, explain=True).to_json()["classes"]
    want, want_routes = _hand_ttft(out)
    assert set(want_routes) == {"P-D"}
    assert [r["route"] for r in rows] == want_routes
    np.testing.assert_allclose([r["ttft_mean_s"] for r in rows], want, rtol=1e-12)
