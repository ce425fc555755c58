"""The PDD paper's figures against what pddplan predicts on examples/pdd-paper.yaml.

Source of every figure: the PDD technical report as restated in pdd-brief.md (sections 3-6).
Only the baseline's rate and the line's per-transfer latency are calibrated (the RTT comes
from the route; examples/reproduce_paper.py says how); every other figure is a prediction. Figures outside their tolerance are strict xfails
carrying the measured gap, so a model change that closes a gap shows up as an XPASS failure
and the mark is then removed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from pddplan import api

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def result():
    spec = importlib.util.spec_from_file_location(
        "reproduce_paper", ROOT / "examples/reproduce_paper.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.reproduce()


def test_the_calibrated_inputs_hold(result) -> None:
    # (a) the same-datacenter baseline needs the paper's 88 GPU-A at the scenario's rate
    assert result["same_dc_chips"] == 88
    # (b) the calibrated line reproduces the microbenchmark's mean of 185 ms for 4,649 KB with
    # the route's RTT (20 ms for 2,000 km), not an RTT fitted to it
    t = api.transfer("pdd-paper-line", payload_bytes=4_649_000).to_json()
    assert t["transfers"][0]["mean_s"] == pytest.approx(0.185, rel=0.01)
    from pddplan.io.loader import Registry

    reg = Registry.default()
    assert (
        reg.load("link", "pdd-paper-line").rtt_ms == reg.load("link", "wan-100g-cross-city").rtt_ms
    )


def test_the_scenarios_rate_is_the_calibration_scripts(tmp_path, monkeypatch) -> None:
    """examples/pdd-paper.yaml's ``rate_rps`` is what examples/calibrate_paper_rate.py prints
    (the highest rate, rounded down, at which the baseline needs the paper's 88 GPU-A), run from
    a directory that is not the checkout: a physics change that moves it fails here, and the
    scenario is calibrated again on purpose."""
    import yaml

    spec = importlib.util.spec_from_file_location(
        "calibrate_paper_rate", ROOT / "examples/calibrate_paper_rate.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.chdir(tmp_path)
    rate = mod.printable(mod.calibrate(mod.PAPER_SCENARIO, 88))
    doc = yaml.safe_load((ROOT / "examples/pdd-paper.yaml").read_text())
    assert rate == doc["rate_rps"]
    assert mod.baseline_chips(mod.PAPER_SCENARIO, rate) <= 88
    assert mod.baseline_chips(mod.PAPER_SCENARIO, rate + 10.0**-mod.DIGITS) > 88


def _within(value: float, paper: float, rel: float) -> bool:
    return abs(value / paper - 1.0) <= rel


# (figure, how to read it from the result, paper value, relative tolerance)
FIGURES = [
    ("unoptimized cross-DC TTFT P90", lambda r: r["unoptimized_ttft_s"]["p90"], 18.3, 0.30),
    ("unoptimized cross-DC TTFT P99", lambda r: r["unoptimized_ttft_s"]["p99"], 29.7, 0.30),
    ("RLD share of output tokens", lambda r: r["rld_output_token_share"], 0.062, 0.30),
    (
        "PDD BCR over the baseline",
        lambda r: 1 + r["cost_table"]["bcr_change_pct"] / 100,
        1.375,
        0.10,
    ),
]
# measured gaps of figures outside their tolerance (model, paper, why)
OUTSIDE = {
    "unoptimized cross-DC TTFT P90": "9.11 s vs 18.3 s (-50%): measured after the paper line kept "
    "the route's 20 ms RTT (per-transfer latency fitted to the hand-over microbenchmark instead "
    "of the RTT): a low-hit 12 GB transfer takes 7.4 s, not 12.9 s; with decode pools sized "
    "against slot waits and the rate at 1.9885 req/s, the prefill pool is lightly loaded, so "
    "fewer requests wait",
    "PDD BCR over the baseline": "1.217 vs 1.375 (-11.5%): measured after the routed experts "
    "were costed at each expert's own token count (issue 20): MoE decode steps got faster at "
    "small batches, which lowers both plans' decode chips (PDD 32 GPU-A + 40 GPU-B, the baseline "
    "88 GPU-A); the paper's chips are illustrative profiles, so the model's prefill stays cheap "
    "against decode and PDD moves most chips to the 20% dearer GPU-B",
}


@pytest.mark.parametrize(("name", "read", "paper", "rel"), FIGURES, ids=[f[0] for f in FIGURES])
def test_predicted_figure(result, name, read, paper, rel, request) -> None:
    if name in OUTSIDE:
        request.applymarker(pytest.mark.xfail(reason=OUTSIDE[name], strict=True))
    assert _within(read(result), paper, rel), f"{name}: {read(result):.4g} vs paper {paper}"


def test_pdd_beats_the_baseline_and_no_relay(result) -> None:
    # the paper's qualitative claim: PDD's BCR is above the same-datacenter baseline's
    assert result["cost_table"]["bcr_change_pct"] > 0
    # and relayed requests see a lower TTFT than the unoptimized cross-datacenter deployment
    assert result["pdd_ttft_change_pct"]["mean"] < 0
