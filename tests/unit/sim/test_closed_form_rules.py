"""The simulator's requests follow the closed forms' rules: the line is loaded with the bytes
each request sends to the decode pool, none for the anomalous requests RLD finishes
(``Problem.mean_wan_bytes``), and a request's cached prefix leaves its last token to prefill
(``cached_prefix_tokens``)."""

from __future__ import annotations

import numpy as np
import pytest

from pddplan import timing
from pddplan.io.loader import Registry, load_scenario
from pddplan.sim import SimConfig, SimPlan
from pddplan.sim.engine import line_load, make_requests
from pddplan.solver import Solver
from pddplan.solver.problem import PDD, build_problem


def test_simulated_line_load_is_the_closed_forms() -> None:
    reg = Registry.default()
    rs = load_scenario("pdd-paper", reg)
    pb = build_problem(rs, PDD)  # with the anomalous filter: RLD finishes those requests
    plan = Solver(pb).solve_rate(rs.scenario.rate_rps)
    assert pb.topology.anomalous_filter and pb.topology.cross_dc
    rate = plan.rate_rps
    req = make_requests(pb, SimPlan.of(plan), SimConfig(requests=200_000, seed=1))
    filtered = ~timing.on_decode_side(req.anomalous, pb.topology)
    # the workload has filtered anomalous requests, whose KV never crosses the line
    assert 0.01 < float(np.mean(filtered)) < 0.5
    got = line_load(pb, req, rate)
    want = timing.decode_link_utilization(pb.paths, rate, pb.mean_wan_bytes)
    # 200,000 requests drawn from the classes, jitter of mean 1: the sample mean of the bytes
    # is within 2% of the classes' weighted mean (its relative standard error is below 0.3%)
    assert got == pytest.approx(want, rel=0.02)
    # counting the anomalous requests' bytes (the rule it replaced) loads the line far more
    every = timing.wan_payload_bytes(req.input_tokens, req.hit_rate, pb.model.kv_bytes_per_token)
    every_load = timing.decode_link_utilization(
        pb.paths, rate, float(np.mean(np.asarray(every) * req.jitter))
    )
    assert every_load > 1.2 * want


def test_a_full_hit_still_prefills_its_last_token() -> None:
    # a trace's request may be all cached (cached_tokens == input_length): the closed forms
    # prefill its last token (min(floor(L h), L - 1)); the simulator did none (floor(L h))
    from pddplan.deployment.workloads import cached_prefix_tokens
    from pddplan.sim.requests import Requests

    rng = np.random.default_rng(3)
    n = 1000
    inputs = rng.integers(1, 100_000, size=n).astype(float)
    hits = np.concatenate([np.ones(10), rng.uniform(0.0, 1.0, size=n - 10)])
    req = Requests(
        arrival_s=np.arange(n, dtype=float),
        hit_rate=hits,
        input_tokens=inputs,
        output_tokens=np.ones(n),
        anomalous=np.zeros(n, dtype=bool),
        jitter=np.ones(n),
        class_index=np.full(n, -1),
    )
    np.testing.assert_array_equal(req.cached_tokens, cached_prefix_tokens(inputs, hits))
    np.testing.assert_array_equal(req.uncached_tokens[:10], np.ones(10))


def test_catch_up_converges_by_the_closed_forms_extend() -> None:
    # the simulator runs Catch-Up only where the closed forms' sizing does: MD's extend of T
    # tokens by the affine fit the hand-over reads (Instance.extend_affine), at TPOT steps. At a
    # TPOT between T e_affine(T) and T e_exact(T) the exact extend said it diverges.
    import dataclasses

    from pddplan.models import pipeline
    from pddplan.sim import engine
    from pddplan.sim import events as ev

    rs = load_scenario(None, Registry.default())
    pb = build_problem(rs, PDD)
    plan = Solver(pb).solve_rate(rs.scenario.rate_rps)
    sp = SimPlan.of(plan)
    req = make_requests(pb, sp, SimConfig(requests=2000, seed=0))
    pid = engine._pipelines(pb, sp, req)
    md = engine._decode_pool(engine.MD_POOL, sp.roles["MD"], 1e6, ev.EventQueue())
    t = pb.catch_up_threshold_tokens
    on = pid != engine.policies.P_RLD_ANOMALOUS
    ctx = float(np.mean((req.input_tokens + req.output_tokens / 2)[on]))
    e0, e1 = md.inst.extend_affine(ctx)
    affine, exact = e0 + e1 * t, md.extend_s(t, ctx)
    assert affine < exact  # the fit through 1 and 256 tokens lies below at T = 64
    for tpot in (0.99 * affine / t, (affine + exact) / 2 / t, 1.01 * exact / t):
        at = dataclasses.replace(pb, tpot_s=tpot)
        want = bool(pipeline.catch_up_gain(affine, t, tpot) > 0)
        assert engine._catch_up_ok(at, req, pid, md) == want
    assert engine._catch_up_ok(
        dataclasses.replace(pb, tpot_s=(affine + exact) / 2 / t), req, pid, md
    )
