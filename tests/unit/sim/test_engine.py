"""Tests of the simulation engine: hand-computed single requests, determinism, the prefill
queue against Pollaczek-Khinchine, the P-RLD runaway, plan files and the closed-form side."""

from __future__ import annotations

import dataclasses
import json
import math
import types

import numpy as np
import pytest

from pddplan import timing
from pddplan.api import solve_result
from pddplan.io.loader import Registry, bundled_profiles_dir, load_scenario
from pddplan.models import network, queueing
from pddplan.results import Report
from pddplan.results.simulate import simulate_report, stability_verdict
from pddplan.sim import SimConfig, SimPlan, simulate
from pddplan.sim.compare import (
    closed_form_figures,
    closed_form_plan,
    closed_form_regime_warning,
    comparison_rows,
    onset_spread,
    regime_warning_for_plan,
)
from pddplan.sim.plan import Role, plan_from_json
from pddplan.sim.policies import PIPELINE_NAMES
from pddplan.sim.requests import replay
from pddplan.solver import PDD, Solver, build_problem, solve_scenario


def _solve(patch=None):
    rs = load_scenario(None, Registry(dirs=[bundled_profiles_dir()]), patch)
    return solve_scenario(rs, baselines=False)


@pytest.fixture(scope="module")
def default():
    return _solve()


@pytest.fixture(scope="module")
def no_relay():
    # without relay the default SLA cannot be met (a low-hit transfer takes tens of seconds)
    sla = {"ttft_p50_s": 60, "ttft_p90_s": 120, "ttft_p99_s": 240, "tpot_ms": 50}
    return _solve({"serving": {"routing": "no-relay"}, "sla": sla})


@pytest.fixture(scope="module")
def filtered():
    """The default scenario solved with the anomalous filter on (RLD finishes anomalous
    requests); the PDD search may prefer a plan without it, so it is built explicitly."""
    rs = load_scenario(None, Registry(dirs=[bundled_profiles_dir()]))
    pb = build_problem(rs, PDD)
    assert pb.topology.anomalous_filter
    return types.SimpleNamespace(problem=pb, plan=Solver(pb).solve_rate(rs.scenario.rate_rps))


@pytest.fixture(scope="module")
def all_relay():
    return _solve({"serving": {"routing": "all-relay"}})


def one_request(pb, hit: float, input_tokens: float, output_tokens: float, anomalous=False):
    return replay(
        np.array([0.0]),
        np.array([hit]),
        np.array([input_tokens]),
        np.array([output_tokens]),
        0.0,
        np.random.default_rng(0),
        np.array([anomalous]),
    )


def test_pipelines_follow_the_timeline_s_relay_rule(filtered, all_relay) -> None:
    # one rule (timing.on_decode_side, timing.relays): a request of each class goes where the
    # planner's timeline sends its class, at every routing the search tries
    from pddplan.sim import engine

    for case in (filtered, all_relay):
        pb = case.problem
        c = pb.classes
        req = replay(
            np.zeros(len(c.hit_rate)),
            np.asarray(c.hit_rate, dtype=float),
            np.asarray(c.input_tokens, dtype=float),
            np.asarray(c.output_tokens, dtype=float),
            0.0,
            np.random.default_rng(0),
            np.asarray(c.anomalous, dtype=bool),
        )
        assert case.plan.roles.get("RLD") is not None
        for routing in pb.routings:
            sp = dataclasses.replace(SimPlan.of(case.plan), routing=routing)
            pid = engine._pipelines(pb, sp, req)
            route = Solver(pb).route(case.plan.rate_rps, routing)
            np.testing.assert_array_equal(pid == timing.P_RLD_MD, route.relay)
            np.testing.assert_array_equal(pid == timing.P_RLD_ANOMALOUS, ~pb.on_decode_side)


# ------------------------------------------------------------------------- single requests


def test_single_p_md_request_ttft_is_the_sum_of_its_stages(no_relay) -> None:
    pb, sp = no_relay.problem, SimPlan.of(no_relay.plan)
    req = one_request(pb, 0.95, 64_512.0, 16.0)
    res = simulate(pb, sp, SimConfig(warmup_fraction=0.0), requests=req)
    p = sp.roles["P"].instance
    md = sp.roles["MD"].instance
    cached = math.floor(64_512 * 0.95)
    pre = float(p.prefill_s(64_512.0 - cached, float(cached), pb.chunk_size_tokens))
    wan = float(
        timing.transfer_s(
            pb.wan, network.uncached_kv_bytes(64_512.0, 0.95, pb.model.kv_bytes_per_token)
        )
    )
    step = float(md.decode_step_s(1, 64_512.0))
    assert res.pipeline[0] == 0
    assert res.ttft_s[0] == pytest.approx(pre + wan + step, rel=2e-3)
    assert res.tpot_s[0] == pytest.approx(step, rel=2e-3)
    assert res.rld_tokens[0] == 0


def test_single_relayed_request_starts_on_rld_and_finishes_on_md(all_relay) -> None:
    pb, sp = all_relay.problem, SimPlan.of(all_relay.plan)
    # h = 0.9: MD's copy (6.45K tokens of KV) lands after ~6 s, well inside 4,096 tokens
    req = one_request(pb, 0.9, 64_512.0, 4096.0)
    res = simulate(pb, sp, SimConfig(warmup_fraction=0.0, handover="one-shot"), requests=req)
    pre = float(
        sp.roles["P"].instance.prefill_s(
            64_512.0 - math.floor(64_512 * 0.9), math.floor(64_512 * 0.9), pb.chunk_size_tokens
        )
    )
    rdma = float(timing.rdma_copy_s(pb.rdma, 64_512.0, pb.model.kv_bytes_per_token))
    rld = sp.rld
    assert rld is not None
    step = float(rld.instance.decode_step_s(1, 64_512.0))
    assert res.pipeline[0] == 1
    assert res.ttft_s[0] == pytest.approx(pre + rdma + step, rel=2e-3)
    assert 0 < res.rld_tokens[0] < 4096
    assert math.isfinite(res.done_s[0]) and res.stall_s[0] > 0


def test_anomalous_request_runs_on_rld_without_the_line(filtered) -> None:
    pb, sp = filtered.problem, SimPlan.of(filtered.plan)
    req = one_request(pb, 0.0, 120_000.0, 200.0, anomalous=True)
    res = simulate(pb, sp, SimConfig(warmup_fraction=0.0), requests=req)
    assert res.pipeline[0] == 2
    assert res.rld_tokens[0] == 200
    assert res.series["line_busy_s"][-1] == 0.0


# ------------------------------------------------------------------------------- runs


def test_same_seed_same_run_other_seed_other_run(default) -> None:
    pb, sp = default.problem, SimPlan.of(default.plan)
    a = simulate(pb, sp, SimConfig(requests=1500, seed=3))
    b = simulate(pb, sp, SimConfig(requests=1500, seed=3))
    c = simulate(pb, sp, SimConfig(requests=1500, seed=4))
    assert np.array_equal(a.ttft_s, b.ttft_s)
    assert a.figures == b.figures
    assert not np.array_equal(a.ttft_s, c.ttft_s)


def test_prefill_wait_matches_pollaczek_khinchine(default) -> None:
    """One prefill instance is an M/G/1 queue: mean wait ``lambda E[S^2] / (2 (1 - rho))``.

    At utilization 0.3, 20,000 requests put the simulated mean within 10% (seeds 0-5 landed
    within 4%).
    """
    pb, solved = default.problem, SimPlan.of(default.plan)
    # the M/G/1 case, built explicitly: one prefill instance of the solved kind, whatever the
    # solver sized the pool to
    p = solved.roles["P"]
    sp = dataclasses.replace(solved, roles={**solved.roles, "P": Role(p.instance, 1, 0)})
    pre = Solver(pb).prefill_s(sp.roles["P"].instance)
    w = pb.classes.weight
    es, es2 = float(np.sum(w * pre)), float(np.sum(w * pre**2))
    rate = 0.3 / es
    res = simulate(pb, sp, SimConfig(requests=20_000, seed=0, rate_rps=rate))
    assert res.figures["prefill_mean_wait_s"] == pytest.approx(
        rate * es2 / (2 * (1 - 0.3)), rel=0.10
    )
    assert res.figures["prefill_utilization"] == pytest.approx(0.3, rel=0.05)


def test_p_rld_policy_runs_away_while_allowed_stays_stable(all_relay) -> None:
    pb, sp = all_relay.problem, SimPlan.of(all_relay.plan)
    ok = simulate(pb, sp, SimConfig(requests=3000, seed=1, policy="allowed"))
    bad = simulate(pb, sp, SimConfig(requests=3000, seed=1, policy="p-rld"))
    assert stability_verdict(ok) == "stable"
    assert abs(ok.figures["rld_occupancy_slope_per_s"]) < 0.01
    assert ok.figures["rld_offered_load"] < 1.0
    assert stability_verdict(bad).startswith("RLD overloaded")
    assert bad.figures["rld_offered_load"] > 2.0
    assert bad.figures["rld_occupancy_slope_per_s"] > 0.5  # requests per second of backlog
    assert bad.figures["rld_occupancy_final"] > 100 * ok.figures["rld_occupancy_max"]


def test_catch_up_hands_over_in_rounds(all_relay) -> None:
    pb, sp = all_relay.problem, SimPlan.of(all_relay.plan)
    one = simulate(pb, sp, SimConfig(requests=1500, seed=2, handover="one-shot"))
    cu = simulate(pb, sp, SimConfig(requests=1500, seed=2, handover="catch-up"))
    assert cu.handover == "catch-up"
    if cu.figures["catch_up_converges"]:
        # RLD keeps relaying during the rounds: it makes more of the tokens
        assert cu.figures["rld_output_token_share"] >= one.figures["rld_output_token_share"]
    assert np.all(np.isfinite(cu.done_s))


def test_workload_sampling_and_all_requests_finish(filtered) -> None:
    rs = load_scenario(None, Registry(dirs=[bundled_profiles_dir()]))
    pb, sp = filtered.problem, SimPlan.of(filtered.plan)
    res = simulate(
        pb, sp, SimConfig(requests=1000, seed=5, sample="workload"), workload=rs.workload
    )
    assert np.all(np.isfinite(res.done_s))
    assert 0.0 < res.figures["pipeline:P-RLD (anomalous):share"] < 0.1


# ---------------------------------------------------------------------- plan and closed form


def test_plan_json_round_trip(default) -> None:
    rep: Report = solve_result(default).report()
    doc = json.loads(json.dumps(rep.json_document(), default=float))
    sp = plan_from_json(doc, default.problem)
    want = SimPlan.of(default.plan)
    for role in ("P", "RLD", "MD"):
        got_r, want_r = sp.roles.get(role), want.roles.get(role)
        assert (got_r is None) == (want_r is None)
        if got_r is not None and want_r is not None:
            assert got_r.instance is want_r.instance
            assert (got_r.instances, got_r.batch_per_instance) == (
                want_r.instances,
                want_r.batch_per_instance,
            )
    assert sp.routing == want.routing


@pytest.mark.parametrize("bad", [1e300, True, None, "nope", "-"])
def test_plan_json_handover_must_be_a_mode(default, bad) -> None:
    """A plan's hand-over is one of the modes (a plan with RLD hands over; "-" only without
    one): anything else is one error naming plan.handover, not a silent default (fuzz)."""
    from pddplan.errors import ProfileError

    rep: Report = solve_result(default).report()
    doc = json.loads(json.dumps(rep.json_document(), default=float))
    assert doc["plan"]["roles"]["RLD"] is not None
    doc["plan"]["handover"] = bad
    with pytest.raises(ProfileError, match="plan.handover"):
        plan_from_json(doc, default.problem, "plan.json")


def test_closed_form_plan_recomputes_the_solvers_figures(default) -> None:
    pb = default.problem
    sp = dataclasses.replace(SimPlan.of(default.plan), plan=None)
    cp = closed_form_plan(pb, sp, default.plan.rate_rps)
    assert cp.prefill.ttft_s == pytest.approx(default.plan.prefill.ttft_s, rel=1e-9)
    assert cp.route.link_utilization == pytest.approx(default.plan.route.link_utilization)
    assert cp.rld_output_token_share == pytest.approx(default.plan.rld_output_token_share)


def test_comparison_rows_and_report(default) -> None:
    pb, sp = default.problem, SimPlan.of(default.plan)
    res = simulate(pb, sp, SimConfig(requests=2000, seed=1))
    rows = comparison_rows(closed_form_figures(pb, default.plan), res)
    by = {r["metric"]: r for r in rows}
    assert by["ttft_p50_s"]["closed_form"] == pytest.approx(default.plan.prefill.ttft_s[0])
    assert by["link_utilization"]["gap_pct"] == pytest.approx(
        100 * (res.figures["link_utilization"] / default.plan.route.link_utilization - 1)
    )
    # like with like: the simulated byte load against the closed forms' (rate x mean payload /
    # goodput), the share of time the line is busy apart, with no closed form beside it
    assert abs(by["link_utilization"]["gap_pct"]) < 20.0
    busy = by["line_busy_fraction"]
    assert math.isnan(busy["closed_form"]) and busy["flag"] == ""
    # flows capped below the line's capacity keep it busy longer than its byte load
    assert busy["simulated"] > by["link_utilization"]["simulated"]
    # every pipeline the run used has its own TTFT rows
    for pid in np.unique(res.pipeline):
        assert f"{PIPELINE_NAMES[int(pid)]} ttft_p99_s" in by
    rep = simulate_report(res, rows, "default", "test")
    doc = rep.json_document()
    assert doc["schema_version"] and doc["comparison"] and doc["series"]["rld_occupancy"]


def test_regime_warning_is_pure_and_names_each_regime(default) -> None:
    assert closed_form_regime_warning(0.6, 0.3, 2.0) == []
    msgs = closed_form_regime_warning(
        0.9,
        0.5,
        0.4,
        relayed_share=0.1,
        rld_step_s=0.01,
        tpot_s=0.05,
        rld_wait_probability=0.2,
        md_wait_probability=0.4,
        md_mean_wait_s=2.0,
        prefill_wait_probability=0.48,
        onset_spread=(0.2, 0.02, 0.0),
    )
    assert len(msgs) == 6
    assert any("line utilization 0.50" in m for m in msgs)
    assert any("RLD decodes a step in 10 ms" in m for m in msgs)
    assert any("every MD slot taken with probability 0.40" in m for m in msgs)
    assert any("TTFT p50 sits at the onset" in m for m in msgs)
    # the onset rule: a percentile that moves by more than 10% within the wait probability's
    # error
    assert not any("onset" in m for m in closed_form_regime_warning(0.6, 0.3, 2.0, 0.0))
    on = closed_form_regime_warning(
        0.6, 0.3, 2.0, prefill_wait_probability=0.12, onset_spread=(0.01, 0.15, 0.09)
    )
    assert len(on) == 1 and "TTFT p90 sits" in on[0] and "up to 15%" in on[0]
    plan = default.plan
    assert plan.route.link_utilization < 0.35
    msgs = regime_warning_for_plan(default.problem, plan)
    assert not any("line utilization" in m for m in msgs)


def test_onset_spread_of_the_default_plan(default) -> None:
    # the default plan waits with probability 0.49: its p50 sits where the no-wait requests
    # give way to the waiting ones, so 0.03 on P(wait) moves it by more than 10%; p90 and p99
    # lie well inside the waiting requests' tail
    spread = onset_spread(default.problem, default.plan)
    assert spread[0] > 0.1 and spread[1] < 0.05 and spread[2] < 0.05
    msgs = regime_warning_for_plan(default.problem, default.plan)
    assert any("TTFT p50 sits at the onset" in m for m in msgs)
    # by hand: p50 at P(wait) +- 0.03, the plan's offsets and conditional wait
    solver = Solver(default.problem)
    p_inst, n = default.plan.roles["P"]
    wait = solver.prefill_wait(p_inst, n, default.plan.rate_rps)
    offs, wts, _ = solver.ttft_offsets(
        p_inst, default.plan.route, *solver.first_steps(default.plan)
    )
    lo, mid, hi = (
        queueing.mixture_quantile(0.5, offs, wts, pw, conditional=wait.conditional)
        for pw in (
            wait.wait_probability - 0.03,
            wait.wait_probability,
            wait.wait_probability + 0.03,
        )
    )
    assert spread[0] == pytest.approx((hi - lo) / (2 * mid))


def test_the_rld_step_warning_names_the_plans_working_step(default) -> None:
    # the warning's RLD step is the one the plan's first token and hand-over figures read
    # (Solver.first_steps: the pool's context, capped at TPOT), not a second estimate of it
    step = Solver(default.problem).first_steps(default.plan)[1]
    assert step is not None
    msgs = regime_warning_for_plan(default.problem, default.plan)
    assert any(f"RLD decodes a step in {step * 1e3:.3g} ms" in m for m in msgs), msgs


def test_md_slot_warning_on_a_full_md_pool() -> None:
    # chat at 19.5 req/s sized for capacity only (slot-wait cap 1): one MD instance runs near
    # its slot count, which collapses in the simulation (docs/simulate.md, the closed-form
    # grid); the warning names MD's slots. (At 20 req/s capacity sizing now takes two MD
    # instances.) The default cap (0.05) sizes MD so that the warning does not fire.
    out = _solve(
        {
            "workload": "chat",
            "rate_rps": 19.5,
            "serving": {"decode_slot_wait_probability_cap": 1.0},
        }
    )
    assert out.plan.roles["MD"][1] == 1
    msgs = regime_warning_for_plan(out.problem, out.plan)
    assert any("every MD slot taken" in m for m in msgs)
    sized = _solve({"workload": "chat", "rate_rps": 19.5})
    assert not any(
        "every MD slot taken" in m for m in regime_warning_for_plan(sized.problem, sized.plan)
    )


def test_regime_warning_on_a_slow_line() -> None:
    out = _solve({"link": "wan-10g-cross-city", "rate_rps": 0.6})
    msgs = regime_warning_for_plan(out.problem, out.plan)
    assert any("RLD decodes a step" in m for m in msgs)
    # the line warning needs long P-MD transfers as well as a busy line
    assert closed_form_regime_warning(0.5, 0.38, 2.0, pmd_max_transfer_s=0.2) == []
    assert closed_form_regime_warning(0.5, 0.38, 2.0, pmd_max_transfer_s=3.0)
    # above 0.4 it warns whatever the P-MD transfers (the 10G and chat-on-10G grid points)
    assert closed_form_regime_warning(0.5, 0.5, 2.0, pmd_max_transfer_s=0.2)
