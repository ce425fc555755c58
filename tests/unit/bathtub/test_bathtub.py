"""Bathtub analysis: valleys come out of the model or not at all; singular points follow the
chunk arithmetic."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from pddplan.bathtub import analyze, revenue_usd
from pddplan.io.loader import Registry, load_scenario
from pddplan.spec import Revenue

REVENUE = {
    "uncached_input_usd_per_mtok": 0.6,
    "cached_input_price_fraction": 0.1,
    "output_usd_per_mtok": 2.4,
    "source": "test prices",
}

# A long-context, short-output workload on a dense GQA model: attention over the cached prefix
# makes prefill cost concave in the hit rate while revenue falls linearly, so the model should
# produce a bathtub.
LONG_CONTEXT = {
    "workload": {
        "kind": "workload",
        "name": "long",
        "source": "constructed for a test",
        "input_tokens": {"fixed": 262144},
        "output_tokens": {"fixed": 64},
        "hit_rate": {"beta": {"a": 2, "b": 2}},
    },
    "model": "llama-3.1-70b",
    # A tuned line (8 streams of 64 MiB windows: 8 x 3.36 GB/s, the line's 11.75 GB/s binds):
    # on the default single-stream 4 MiB-window line a low-hit 256K-token transfer takes tens of
    # seconds, RLD's wait for it makes low-hit requests the costliest, and the curve rises
    # steadily with the hit rate (no valley). This test is about prefill's concave cost.
    "overrides": {
        "links": {
            "wan-100g-cross-city": {"streams_per_transfer": 8, "max_window_bytes": 67_108_864}
        }
    },
    "roles": {
        "P": {"chips": ["h100-sxm"], "chips_per_instance": [8]},
        "RLD": {"chips": ["h100-sxm"], "chips_per_instance": [8]},
        "MD": {"chips": ["h200-sxm"], "chips_per_instance": [8]},
    },
    "baseline": {"chip": "h100-sxm"},
    "rate_rps": 0.05,
    "sla": {"ttft_p50_s": 60, "ttft_p90_s": 120, "ttft_p99_s": 240, "tpot_ms": 100},
    "revenue": REVENUE,
}


def test_revenue_by_hand() -> None:
    rv = Revenue(**REVENUE)
    # 1M input at h = 0.5: 0.5 * 0.6 + 0.5 * 0.1 * 0.6 = 0.33 USD; 1M output: 2.4 USD
    assert revenue_usd(rv, 1e6, 0.5, 1e6) == pytest.approx(0.33 + 2.4)


def test_long_context_scenario_has_a_valley() -> None:
    rs = load_scenario(None, Registry.default(), LONG_CONTEXT)
    res = analyze(rs, reprovision=False)
    assert res.metric == "revenue_per_cost"
    assert len(res.valleys) >= 1
    v = max(res.valleys, key=lambda v: v.depth_fraction)
    assert 0.0 < v.deepest_x < 1.0
    assert v.depth_fraction > 0.02
    # the valley lies below both rims by its depth
    ys = {p.hit_rate: p.revenue_per_cost for p in res.points}
    assert ys[v.left_peak_x] - v.deepest_y >= v.depth - 1e-12
    assert ys[v.right_peak_x] - v.deepest_y >= v.depth - 1e-12
    assert 0.0 < res.valley_traffic_share <= 1.0
    assert any("valley" in a for a in res.advice)


def test_a_scenario_without_a_valley_reports_a_reason() -> None:
    # cached input billed at the full price: revenue does not fall with the hit rate while the
    # cost does, so revenue per cost only rises (the default agent scenario, which bills cached
    # input at a fraction, has a shallow valley: README)
    rs = load_scenario(None, Registry.default(), {"revenue": {"cached_input_price_fraction": 1.0}})
    res = analyze(rs, reprovision=False)
    assert res.valleys == []
    assert "tolerance" in res.no_valley_reason or "monoton" in res.no_valley_reason


def test_default_agent_scenario_has_one_shallow_valley() -> None:
    res = analyze(load_scenario(None, Registry.default()), reprovision=False)
    assert len(res.valleys) == 1
    assert 0 < res.valleys[0].depth_fraction < 0.1


def _singular_points_follow_chunk_arithmetic(patch: dict | None) -> list[dict]:
    rs = load_scenario(None, Registry.default(), patch)
    res = analyze(rs, reprovision=False)
    l_in = round(res.input_tokens)
    c = res.chunk_size_tokens
    expected = sorted(1 - (k * c + 1) / l_in for k in range(1, (l_in - 1) // c + 1))
    got = sorted(s["hit_rate"] for s in res.singular)
    assert got == pytest.approx(expected, abs=1.0 / l_in)
    # the tail-chunk penalty itself: U = kC + 1 uncached tokens take one more step than U = kC,
    # for one token, so the prefill throughput falls just past every chunk boundary
    p_inst, _ = res.outcome.plan.roles["P"]
    for s in res.singular:
        assert s["tail_tokens"] == 1
        k = s["full_chunks"]
        u = np.array([k * c, k * c + 1.0])
        t = np.asarray(p_inst.prefill_s(u, l_in - u, c))
        assert u[1] / t[1] < u[0] / t[0]
    return res.singular


def test_singular_points_follow_chunk_arithmetic_dense() -> None:
    """On a dense model every step reads all the weights, so a 1-token tail costs as much as a
    tail of tens of tokens: the singular point is also below the grid point just under it."""
    for s in _singular_points_follow_chunk_arithmetic({"model": "llama-3.3-70b"}):
        assert s["throughput_drop"] > 0


def test_singular_points_follow_chunk_arithmetic_moe() -> None:
    """On an MoE model (the default scenario's Qwen3-235B-A22B) a step reads only the experts
    its tokens touch, ``E (1 - (1 - k/E)^n)``: a 1-token tail reads 8 of 128 experts, a tail of
    ~70 tokens nearly all of them. The grid point just below the singular point (a larger tail)
    can then be the slower one, so ``throughput_drop`` may take either sign there; the penalty
    against the chunk boundary (checked in the helper) holds."""
    sing = _singular_points_follow_chunk_arithmetic(None)
    assert all(np.isfinite(s["throughput_drop"]) for s in sing)


def test_valley_disappears_at_some_cached_price_or_says_none() -> None:
    rs = load_scenario(None, Registry.default(), LONG_CONTEXT)
    res = analyze(rs, reprovision=False)
    frac = res.price_fraction_without_valley
    assert frac is None or 0.0 <= frac <= 1.0


def test_cli_bathtub_json_and_plot(tmp_path) -> None:
    png = tmp_path / "bathtub.png"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pddplan",
            "bathtub",
            "--format",
            "json",
            "--no-reprovision",
            "--plot",
            str(png),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema_version"]
    assert isinstance(doc["valleys"], list)
    assert doc["valleys"] or doc["no_valley_reason"]
    assert len(doc["singular_points"]) >= 1
    assert png.stat().st_size > 10_000
    assert np.all(np.diff([p["hit_rate"] for p in doc["curve"]]) > 0)


def test_cli_bathtub_bad_plot_suffix_is_a_usage_error(tmp_path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "pddplan", "bathtub", "--plot", str(tmp_path / "x.txt")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_singular_points_move_with_chunk_size_and_input_length() -> None:
    from pddplan.bathtub import singular_moves

    rows = {(r["input_tokens"], r["chunk_size_tokens"]): r for r in singular_moves(64512, 8192)}
    # k C < L boundaries: floor((L - 1) / C) of them, C / L apart
    assert rows[(64512, 8192)]["singular_points"] == 7
    assert rows[(129024, 8192)]["singular_points"] == 15
    assert rows[(64512, 16384)]["singular_points"] == 3
    assert rows[(32256, 8192)]["spacing_hit_rate"] == pytest.approx(8192 / 32256)


def test_a_one_token_prompt_has_a_bathtub() -> None:
    # the singular-point table halves the prompt: round(0.5) = 0 tokens was a ValueError
    import pddplan

    relaxed = {f"sla.ttft_{p}_s": 86400 for p in ("p50", "p90", "p99")}
    res = pddplan.bathtub(
        "long-context", overrides={"workload.input_tokens.fixed": 1, **relaxed}, reprovision=False
    )
    moves = res.to_json()["singular_points_by_chunk_and_input"]
    assert {m["input_tokens"] for m in moves} == {1, 2}


def test_summary_states_both_views_when_only_the_reprovisioned_has_valleys() -> None:
    """Cached input at the full price: the marginal curve only rises (no valley), while the
    re-provisioned one steps where the best plan changes. The summary names each view with its
    own verdict, so the marginal 'no valley' cannot read as the verdict of both."""
    from pddplan.api import bathtub

    res = bathtub(None, overrides={"revenue.cached_input_price_fraction": 1.0})
    a = res.analysis
    assert a.valleys == [] and a.reprovisioned_valleys, "the case this test is about moved"
    rows = {r["figure"]: r["value"] for r in res.report().sections[0].rows}
    assert rows["marginal view"].startswith("no valley: ")
    n = len(a.reprovisioned_valleys)
    assert rows["re-provisioned view"].startswith(f"{n} valle")
    doc = res.report().payload
    assert doc["verdict"]["marginal"].startswith("marginal view")
    assert doc["verdict"]["reprovisioned"].startswith("re-provisioned view")
    assert 0 <= doc["reprovisioned_valleys_at_plan_steps"] <= n
    assert "_" not in rows["marginal view"]  # words, not keys


def test_bathtub_plot_draws_both_views_with_worded_axes(tmp_path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pddplan.api import bathtub
    from pddplan.report import plots

    res = bathtub(None)
    figs = []
    real_save = plots._save
    plots._save = lambda plt_, fig, path: (figs.append(fig), fig.savefig(path))  # type: ignore[assignment]
    try:
        plots.bathtub_plot(
            res.analysis, res.traffic_hit_rate, res.traffic_weight, tmp_path / "b.png"
        )
    finally:
        plots._save = real_save
    (fig,) = figs
    marginal, reprov, hist = fig.axes
    assert (tmp_path / "b.png").stat().st_size > 10_000
    ys = [p.reprovisioned_revenue_per_cost for p in res.analysis.points]
    drawn = reprov.get_lines()[0].get_ydata()
    assert np.allclose(drawn, np.array(ys, dtype=float), equal_nan=True)
    for ax in fig.axes:
        for label in (ax.get_xlabel(), ax.get_ylabel()):
            assert "[-]" not in label and "_" not in label
        legend = ax.get_legend()
        if legend is not None:
            lines = {ln.get_label() for ln in ax.get_lines()}
            texts = {t.get_text() for t in legend.get_texts()}
            assert lines <= texts
    assert "marginal view" in marginal.get_title()
    assert "re-provisioned view" in reprov.get_title()
    plt.close(fig)


def test_chunk_advice_times_the_plans_prefill_with_its_cache_loads() -> None:
    # the advice timed a prefill without loading its hits from the cache tiers: 0.348 s at
    # 8192 on cache-tiers, the same with a 10 GB/s NVMe, where the plan's prefill is 0.371 s
    # and 0.447 s (timing.prefill_s, the one home)
    import pddplan

    def at_8192(overrides: dict[str, object]) -> float:
        res = pddplan.bathtub("cache-tiers", reprovision=False, overrides=overrides)
        (row,) = [r for r in res.to_json()["chunk_sizes"] if r["chunk_size_tokens"] == 8192]
        return float(row["mean_prefill_s"])

    fast = at_8192({})
    slow = at_8192({"caches.local-nvme.read_gb_per_s": 10})
    assert slow > fast * 1.1
