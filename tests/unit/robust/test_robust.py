"""``robust``: known answers (no uncertainty, one uncertain input), the count search against
check_fleet, reproducibility and bad distributions."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pddplan
from pddplan.errors import OptionError, ProfileError
from pddplan.robust.evaluate import (
    Setup,
    by_routing,
    config_instances,
    fleet_plan,
    requirements,
    sample_solver,
)
from pddplan.robust.inputs import collect_inputs, draw, sample_overrides
from pddplan.robust.search import cheapest_counts, enumerate_configs, point_config
from pddplan.solver import Solver, solve_scenario
from pddplan.solver.cache import SearchCache
from pddplan.solver.fleet import check_fleet, goodput_rps

ROOT = Path(__file__).resolve().parents[3]
PAPER = ROOT / "examples" / "pdd-paper.yaml"


def paper_with(tmp_path: Path, block: str) -> Path:
    """examples/pdd-paper.yaml with its uncertainty: block replaced by ``block``."""
    text = PAPER.read_text().split("# pddplan robust:")[0].rstrip()
    path = tmp_path / "scenario.yaml"
    path.write_text(text + "\n" + block.strip() + "\n")
    return path


def test_no_uncertainty_gives_solves_plan_with_probability_one(tmp_path: Path) -> None:
    path = paper_with(tmp_path, "uncertainty: {defaults: false}")
    res = pddplan.robust(path, samples=16, confidence=0.9, seed=3)
    solved = pddplan.solve(path, baselines=False).to_json()["plan"]
    doc = res.to_json()
    assert res.run.inputs == []
    assert doc["point_plan"]["sla_probability"] == 1.0
    assert doc["robust_plan"]["sla_probability"] == 1.0
    assert doc["robust_plan"]["cost_premium_over_point"] == pytest.approx(0.0, abs=1e-12)
    robust_plan = {k: v for k, v in doc["robust_plan"].items() if k in solved}
    assert robust_plan == solved


@pytest.mark.slow
def test_one_uncertain_input_matches_direct_computation(tmp_path: Path) -> None:
    lo, hi = 2.0, 3.0
    path = paper_with(
        tmp_path,
        f"uncertainty: {{defaults: false, inputs: {{rate_rps: {{uniform: {{low: {lo}, high: {hi}}}}}}}}}",
    )
    n = 400
    res = pddplan.robust(path, samples=n, confidence=0.9, seed=11)
    plan = res.point.plan
    # the fleet meets every target exactly up to its goodput: P(rate <= goodput)
    g = goodput_rps(pddplan.solver.modes.solver_for(plan), plan, rtol=1e-6)
    exact = min(max((g - lo) / (hi - lo), 0.0), 1.0)
    assert 0 < exact < 1
    # a Latin hypercube puts one draw in each 1/n stratum
    assert res.sla_probability == pytest.approx(exact, abs=1.0 / n + 1e-9)
    # the robust plan reaches the confidence on the same samples and costs at least as much
    assert res.run.robust is not None
    assert res.run.robust.probability >= 0.9
    assert res.robust_plan is not None
    assert res.robust_plan.plan.cost_usd_per_hour >= plan.cost_usd_per_hour
    assert res.sensitivity[0]["input"] == "rate_rps"


def test_requirements_agree_with_check_fleet() -> None:
    ls = pddplan.load_scenario(PAPER)
    rs = ls.resolved
    out = solve_scenario(rs, baselines=False)
    cfg = point_config(out.plan)
    inputs, _ = collect_inputs(rs)
    x = draw(inputs, 12, seed=5)
    setup = Setup(ls.source.doc, ls.source.registry, {}, out.plan.problem.topology, {}, "t-req")
    rng = np.random.default_rng(0)
    for i, ov in enumerate(sample_overrides(inputs, x)):
        solver, _rental = sample_solver(setup, i, ov)
        rate = float(ov["rate_rps"])
        needs = requirements(solver, cfg, rate)
        for _ in range(6):
            counts = tuple(
                int(b + d) for b, d in zip(cfg.base, rng.integers(0, 4, size=3), strict=True)
            )
            plan = fleet_plan(solver, cfg, counts, rate)  # type: ignore[arg-type]
            meets = plan is not None and check_fleet(solver, plan, rate).meets_sla
            covered = all(c >= n for c, n in zip(counts, needs, strict=True))
            assert meets == covered, (i, counts, needs)


def test_requirements_read_the_batched_values_as_their_own_calls() -> None:
    """:func:`by_routing` fills the memo with each route, TTFT offsets and decode load that
    :func:`requirements` computes call by call, to the bit, and the requirements are the same;
    on samples of pdd-paper, every configuration a robust run lists, both hand-over modes."""
    ls = pddplan.load_scenario(PAPER)
    rs = ls.resolved
    out = solve_scenario(rs, baselines=False)
    inputs, _ = collect_inputs(rs)
    x = draw(inputs, 6, seed=9)
    setup = Setup(ls.source.doc, ls.source.registry, {}, out.plan.problem.topology, {}, "t-batch")
    listed = enumerate_configs(Solver(out.plan.problem), out.plan.rate_rps, limit=10_000)
    configs = [pc.cfg for pc in listed]
    assert len({c.routing for c in configs}) > 2 and len({c.mode for c in configs}) == 2
    filled = 0
    for i, ov in enumerate(sample_overrides(inputs, x)):
        rate = float(ov["rate_rps"])
        pb = sample_solver(setup, i, ov)[0].pb
        batched, alone = Solver(pb, SearchCache()), Solver(pb, SearchCache())  # memos of their own
        by_routing(batched, configs, rate)
        for c in configs:  # filled by the batch, before any call of requirements
            route = batched.route(rate, c.routing)
            found = config_instances(batched, c)
            assert found is not None
            filled += batched._decode_key(route, found[1], c.mode) in batched.cache
        assert [requirements(batched, c, rate) for c in configs] == [
            requirements(alone, c, rate) for c in configs
        ]
        for c in configs:
            found = config_instances(batched, c)
            assert found is not None
            p, m, _ = found
            route = batched.route(rate, c.routing)
            fresh = alone.route(rate, c.routing)
            for name in ("relay", "on_decode_side", "wan_s", "rdma_s", "relay_wait_s"):
                assert np.array_equal(getattr(route, name), getattr(fresh, name)), name
            if route.link_utilization >= 1.0:
                continue
            mine, theirs = (
                batched.decode_load(route, m, c.mode),
                alone.decode_load(fresh, m, c.mode),
            )
            for a, b in zip(mine, theirs, strict=True):
                assert np.array_equal(a, b)
            for a, b in zip(
                batched.ttft_offsets(p, route), alone.ttft_offsets(p, fresh), strict=True
            ):
                assert np.array_equal(a, b)
    assert filled > 0


def _linear(counts: tuple[int, int, int]) -> float:
    return 10.0 * counts[0] + 1.0 * counts[1] + 4.0 * counts[2] + 5.0


def test_cheapest_counts_by_hand() -> None:
    needs = np.array([[1, 1, 2], [2, 1, 2], [1, 2, 3], [3, 1, 5], [1, 1, math.inf]])
    # 60%: 3 of 5 samples; P costs 10, RLD 1, MD 4, the line 5. By hand: P=1 covers samples
    # 0, 2, 4 but no MD count serves sample 4, so 3 are never covered with P=1; P=2, RLD=2
    # covers 0, 1, 2 with MD=3 (39 $/h); P=3 needs RLD=1 & MD=5 (56) or RLD=2 & MD=3 (49)
    ch = cheapest_counts(needs, _linear, 0.6)
    assert ch is not None
    assert ch.counts == (2, 2, 3)
    assert ch.expected_cost_usd_per_hour == 20 + 2 + 12 + 5
    assert ch.probability == pytest.approx(0.6)
    assert cheapest_counts(needs, _linear, 0.9) is None  # sample 4 never served
    # an inventory limit that rules the cheapest out
    ch2 = cheapest_counts(needs, _linear, 0.6, fits=lambda c: c[0] != 2)
    assert ch2 is not None and ch2.counts == (3, 2, 3)


@pytest.mark.parametrize("scenario", ["pdd-paper", "agent-diurnal"])
def test_configurations_evaluated_ahead_give_the_same_answer(
    scenario: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first pass evaluates the point plan's cost ties beside it (``run._speculated``):
    whichever configurations it takes ahead (none: every one in the second pass; all; every
    other one), each configuration's counts read are the same, in the same order, and so is
    the answer. agent-diurnal's configurations mostly cost more than the point plan's robust
    counts: those evaluated ahead are not read."""
    import importlib

    run = importlib.import_module("pddplan.robust.run")
    path = ROOT / "examples" / f"{scenario}.yaml"
    real_counts = run.cheapest_counts
    real_speculated = run._speculated

    def answer(policy: str) -> tuple[list[bytes], dict, list[int]]:
        read: list[bytes] = []
        taken: list[int] = []

        def counts(needs, *args, **kwargs):  # type: ignore[no-untyped-def]
            read.append(np.asarray(needs, dtype=float).tobytes())
            return real_counts(needs, *args, **kwargs)

        def speculated(pc0, pcs, headroom):  # type: ignore[no-untyped-def]
            ahead = {
                "default": real_speculated(pc0, pcs, headroom),
                "none": [],
                "all": list(pcs),
                "alternate": pcs[::2],
            }[policy]
            taken.append(len(ahead))
            return ahead

        monkeypatch.setattr(run, "cheapest_counts", counts)
        monkeypatch.setattr(run, "_speculated", speculated)
        res = pddplan.robust(path, samples=16, seed=5)
        return read, res.to_json(), taken

    base_read, base_json, _ = answer("none")
    assert len(base_read) >= 2, "the second pass read no configuration"
    for policy in ("default", "all", "alternate"):
        read, got, taken = answer(policy)
        assert taken and taken[0] > 0, f"{policy}: nothing was evaluated ahead"
        assert read == base_read, f"{policy}: a configuration's counts differ"
        assert got == base_json, f"{policy}: the answer differs"


def test_seed_reproduces(tmp_path: Path) -> None:
    a = pddplan.robust(PAPER, samples=40, seed=7).to_json()
    b = pddplan.robust(PAPER, samples=40, seed=7).to_json()
    c = pddplan.robust(PAPER, samples=40, seed=8).to_json()
    assert a == b
    assert (
        a["point_plan"]["bcr_requests_per_usd_distribution"]
        != (c["point_plan"]["bcr_requests_per_usd_distribution"])
    )


def test_paper_block_samples_the_briefs_ranges() -> None:
    ls = pddplan.load_scenario(PAPER)
    inputs, skipped = collect_inputs(ls.resolved)
    by = {i.path: i for i in inputs}
    price = by["chips.gpu-b.price_usd_per_hour"].dist.uniform
    assert price is not None and (price.low, price.high) == (2.4, 2.6)
    share = by["workload.anomalous.share"].dist.uniform
    assert share is not None and (share.low, share.high) == (0.03, 0.04)
    assert "revenue.cached_input_price_fraction" in by
    assert {"rate_rps", "workload.hit_rate.shift", "link.loss_rate"} <= set(by)
    # the paper line's RTT is the route's (an estimate of the route length), no longer fitted;
    # its per-transfer latency was fitted to the hand-over microbenchmark: not an estimate
    assert "link.rtt_ms" in by
    assert "link.per_transfer_latency_ms" not in by
    # efficiencies never go above 1
    for i in inputs:
        if i.kind == "efficiency":
            x = draw([i], 200, seed=0)
            assert x.max() <= 1.0
    assert any(s.path == "link.max_window_bytes" for s in skipped)


@pytest.mark.parametrize(
    ("block", "key", "words"),
    [
        (
            "uncertainty: {inputs: {link.rtt_ms: {normal: {sd: -1}}}}",
            "uncertainty.inputs.link.rtt_ms.normal.sd",
            "greater than or equal to 0",
        ),
        (
            "uncertainty: {inputs: {rate_rps: {uniform: {low: 3, high: 2}}}}",
            "uncertainty.inputs.rate_rps.uniform",
            "bounds reversed",
        ),
        (
            "uncertainty: {inputs: {link.rtt_msec: {relative: {low: 0.9, high: 1.1}}}}",
            "uncertainty.inputs.link.rtt_msec",
            "did you mean 'link.rtt_ms'",
        ),
        (
            "uncertainty: {inputs: {link.efficiency: {uniform: {low: 0.5, high: 1.5}}}}",
            "uncertainty.inputs.link.efficiency",
            "1.5",
        ),
    ],
)
def test_bad_distribution_names_the_key(tmp_path: Path, block: str, key: str, words: str) -> None:
    path = paper_with(tmp_path, block)
    with pytest.raises(ProfileError) as err:
        pddplan.robust(path, samples=4)
    msg = str(err.value)
    assert key in msg and words in msg, msg
    r = subprocess.run(
        [sys.executable, "-m", "pddplan", "robust", str(path), "--samples", "4"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and key in r.stderr and "Traceback" not in r.stderr


def test_bad_options() -> None:
    with pytest.raises(OptionError, match="confidence"):
        pddplan.robust(PAPER, samples=4, confidence=1.0)
    with pytest.raises(OptionError, match="executor"):
        pddplan.robust(PAPER, samples=4, executor="ray")
    r = subprocess.run(
        [sys.executable, "-m", "pddplan", "robust", str(PAPER), "--confidence", "1.5"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 2 and "--confidence" in r.stderr and "Traceback" not in r.stderr


def test_missing_dask_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(OptionError) as err:
        pddplan.robust(PAPER, samples=4, executor="dask")
    assert "pip install 'pddplan[dask]'" in str(err.value)
    assert "\n" not in str(err.value)


def test_cli_json_and_help_example(tmp_path: Path) -> None:
    from pddplan.cli import robust_cmd

    line = next(x for x in (robust_cmd.robust_cmd.__doc__ or "").splitlines() if "Example:" in x)
    assert "pddplan robust pdd-paper --samples 200 --confidence 0.9" in line  # bundled name
    png = tmp_path / "t.png"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pddplan",
            "robust",
            str(PAPER),
            "--samples",
            "60",
            "--confidence",
            "0.9",
            "-f",
            "json",
            "--plot",
            str(png),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["schema_version"]
    assert 0 <= d["point_plan"]["sla_probability"] <= 1
    solve_keys = set(pddplan.solve(PAPER, baselines=False).to_json()["plan"])
    assert solve_keys <= set(d["robust_plan"])
    assert all(set(s) >= {"input", "index"} for s in d["sensitivity"])
    idx = [s["index"] for s in d["sensitivity"]]
    assert idx == sorted(idx, reverse=True)
    assert png.stat().st_size > 10_000


def test_premium_of_the_point_plan_itself_is_zero_not_rounding_noise() -> None:
    # at 1 req/s the robust plan is the point plan: its expected cost over the samples equals the
    # point plan's but for summation order (1 - 2.2e-16); the premium says 0, not 2.22e-16
    from pddplan.results.robust import PREMIUM_RTOL

    res = pddplan.robust(None, samples=60, rate_rps=1.0, seed=0)
    assert res.robust_plan is not None
    assert res.robust_plan.plan.chips_of() == res.point.plan.chips_of()
    run = res.run
    assert run.robust is not None
    raw = run.robust.expected_cost_usd_per_hour / float(np.nanmean(run.cost_usd_per_hour)) - 1
    assert abs(raw) <= PREMIUM_RTOL
    assert res.cost_premium == 0.0
    assert "+0% in expected cost" in " ".join(res.answer())
