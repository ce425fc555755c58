"""The fused-MoE derates of the chip profiles, recomputed from the measurement they cite.

Source: benchmarks/gpu_fused_moe.py run on one NVIDIA H200 (2026-12-04), its figures in
benchmarks/measured/fused-moe-h200.json (a fused-MoE call's kernels at three expert shapes, 1-128
tokens) and fused-moe-ksweep-h200.json (the gate-up grouped GEMM at one token, K = 512 to
16,384). The profiles' ``moe_routing_latency_us`` and ``gemm_k_block_latency_us`` are rounded
from these figures by the rules below; a profile that drifts from them, or a re-measurement that
moves them, fails here.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np
import pytest

from pddplan.io.loader import Registry

MEASURED = Path(__file__).resolve().parents[2] / "benchmarks" / "measured"
#: the kernels of a fused-MoE call that a dense FFN does not run
ROUTING_KERNELS = ("topk", "align", "sum")
#: decode sizes the routing figure is the median over [tokens]
DECODE_TOKENS_MAX = 32
K_BLOCK_ELEMENTS = 128


def _load(name: str) -> dict:
    return json.loads((MEASURED / name).read_text())


def routing_latency_us() -> float:
    """Median over the shapes and 1-32 tokens of the routing, alignment and sum kernels."""
    doc = _load("fused-moe-h200.json")
    values = [
        sum(row["kernels_cold_us"][k] for k in ROUTING_KERNELS)
        for shape in doc["fused_moe"].values()
        for row in shape["rows"]
        if row["tokens"] <= DECODE_TOKENS_MAX
    ]
    return statistics.median(values)


def k_block_fit_us() -> tuple[float, float, list[float]]:
    """Ordinary least squares of the gate-up GEMM's time (fastest config) on its K blocks:
    ``(intercept, slope, relative residuals)``."""
    rows = _load("fused-moe-ksweep-h200.json")["k_sweep"]["rows"]
    blocks = np.array([r["k"] / K_BLOCK_ELEMENTS for r in rows])
    times = np.array([min(c["gemm1_us"] for c in r["configs"].values()) for r in rows])
    a = np.vstack([np.ones_like(blocks), blocks]).T
    (intercept, slope), *_ = np.linalg.lstsq(a, times, rcond=None)
    return float(intercept), float(slope), list((a @ [intercept, slope] - times) / times)


def test_routing_latency_is_the_measured_median() -> None:
    assert routing_latency_us() == pytest.approx(8.6, abs=0.05)


def test_k_block_latency_is_the_sweep_slope() -> None:
    intercept, slope, residuals = k_block_fit_us()
    assert slope == pytest.approx(0.36, abs=0.005)
    assert 0.0 < intercept < 5.0
    assert max(abs(r) for r in residuals[1:]) < 0.05  # K >= 1,024: the K loop binds


@pytest.mark.parametrize("chip", sorted(Registry.default().index("chip")))
def test_profiles_carry_the_measured_values_or_none(chip: str) -> None:
    d = Registry.default().load("chip", chip).derates
    assert d.moe_routing_latency_us in (0.0, round(routing_latency_us(), 1))
    assert d.gemm_k_block_latency_us in (0.0, round(k_block_fit_us()[1], 2))
    assert (d.moe_routing_latency_us == 0.0) == (d.gemm_k_block_latency_us == 0.0)
