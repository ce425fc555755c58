"""The layout step's expert-parallel mechanisms: residual expert imbalance, DeepEP's low-latency
all-to-all in decode, the grouped-GEMM efficiency curve of the routed experts, and MLA's
weight-absorbed decode attention."""

from __future__ import annotations

import numpy as np
import pytest

from pddplan.deployment import Instance, Layout, model_numbers
from pddplan.io.loader import Registry
from pddplan.models import compute


@pytest.fixture(scope="module")
def reg() -> Registry:
    return Registry.default()


def _instance(reg: Registry, layout: Layout, chip: str = "h100-sxm", **derates) -> Instance:
    c = reg.load("chip", chip)
    if derates:
        c = c.model_copy(update={"derates": c.derates.model_copy(update=derates)})
    m = model_numbers(reg.load("model", "deepseek-v3"))
    return Instance(c, m, layout.chips, 0.9, layout)


# ---------------------------------------------------------------------- expert imbalance


def test_imbalance_is_one_for_one_rank() -> None:
    assert float(compute.expert_imbalance(100.0, 1, compute.EPLB_RESIDUAL_SKEW)) == 1.0


def test_imbalance_tends_to_the_skew_with_many_assignments() -> None:
    f = compute.expert_imbalance(np.array([1e2, 1e4, 1e8]), 64, 1.18)
    assert np.all(np.diff(f) < 0)
    assert f[-1] == pytest.approx(1.18, rel=1e-3)


def test_imbalance_grows_with_ranks_and_skew() -> None:
    f = compute.expert_imbalance(1000.0, np.array([2, 8, 72, 256]), 1.18)
    assert np.all(np.diff(f) > 0) and np.all(f > 1.18)
    assert float(compute.expert_imbalance(1000.0, 72, 1.3)) > float(
        compute.expert_imbalance(1000.0, 72, 1.18)
    )


def test_imbalance_is_capped_at_the_ranks() -> None:
    assert float(compute.expert_imbalance(1e-3, 4, 1.18)) == pytest.approx(4.0)


def test_balancer_off_is_slower_and_tp_ignores_the_skew(reg: Registry) -> None:
    n = np.array([256.0, 65536.0])
    args = (n, n, n * 2000.0, n * 2000.0)
    with_eplb = _instance(reg, Layout(1, 32, 32)).step_parts(*args)["total_s"]
    without = _instance(reg, Layout(1, 32, 32, balancer=False)).step_parts(*args)["total_s"]
    assert np.all(without > with_eplb)
    # pure tensor parallelism: every chip holds a slice of every expert, nothing to balance
    tp = _instance(reg, Layout(16)).step_parts(*args)["total_s"]
    tp_off = _instance(reg, Layout(16, balancer=False)).step_parts(*args)["total_s"]
    np.testing.assert_allclose(tp, tp_off)


def test_skew_slows_experts_and_all_to_all(reg: Registry, monkeypatch) -> None:
    n = np.array([4096.0])
    args = (n, n, n * 2000.0, n * 2000.0)
    monkeypatch.setattr(compute, "EPLB_RESIDUAL_SKEW", 1.0)
    even = _instance(reg, Layout(1, 32, 32)).step_parts(*args)
    monkeypatch.setattr(compute, "EPLB_RESIDUAL_SKEW", 1.18)
    skewed = _instance(reg, Layout(1, 32, 32)).step_parts(*args)
    assert skewed["communication_s"][0] > even["communication_s"][0]
    assert (
        skewed["compute_s"][0] + skewed["memory_s"][0] > even["compute_s"][0] + even["memory_s"][0]
    )


# ----------------------------------------------------------- low-latency all-to-all (decode)


def test_decode_uses_the_low_latency_kernels(reg: Registry) -> None:
    inst = _instance(reg, Layout(1, 72, 72))
    b = np.array([72.0 * 64, 72.0 * 256])
    dec = inst.decode_parts(b, 2000.0)
    s = 1.0 + inst.model.draft_tokens
    normal = inst.step_parts(b * s, b * s, b * s * 2000.0, b * 2000.0)
    assert np.all(dec["communication_s"] > normal["communication_s"])
    assert np.all(np.diff(dec["total_s"]) > 0)


def test_low_latency_flag_leaves_tensor_parallel_alone(reg: Registry) -> None:
    inst = _instance(reg, Layout(8))
    b = np.array([16.0, 128.0])
    a = inst.step_parts(b, b, b * 1000.0, b * 1000.0)
    d = inst.step_parts(b, b, b * 1000.0, b * 1000.0, decode=True)
    np.testing.assert_allclose(a["total_s"], d["total_s"])


# ------------------------------------------------------------------ grouped-GEMM efficiency


def test_grouped_gemm_curve_matches_deepgemm(reg: Registry) -> None:
    """The H800 profile's grouped-GEMM curve against DeepGEMM's measured grouped FP8 GEMMs
    (DeepSeek-V3 expert shapes, FLOP-weighted up/gate and down), within 5%."""
    d = reg.load("chip", "h800-sxm").derates
    assert d.fp8_grouped_gemm_efficiency is not None
    assert d.fp8_grouped_gemm_half_saturation_tokens is not None
    measured = {256: (932, 815), 512: (1040, 916), 1024: (1233, 925), 4096: (1288, 1093)}
    for m, (up, down) in measured.items():
        eta = 3.0 / (2.0 / up + 1.0 / down) / 1979.0
        model = compute.gemm_efficiency(
            m, d.fp8_grouped_gemm_efficiency, d.fp8_grouped_gemm_half_saturation_tokens
        )
        assert float(model) == pytest.approx(eta, rel=0.05)


def test_grouped_gemm_curve_only_slows_the_experts(reg: Registry) -> None:
    n = np.array([4096.0, 131072.0])
    args = (n, n, n * 2000.0, n * 2000.0)
    lay = Layout(1, 32, 32)
    fast = _instance(
        reg, lay, fp8_grouped_gemm_efficiency=None, fp8_grouped_gemm_half_saturation_tokens=None
    ).step_parts(*args)
    slow = _instance(reg, lay).step_parts(*args)
    assert np.all(slow["compute_s"] + slow["memory_s"] >= fast["compute_s"] + fast["memory_s"])
    np.testing.assert_allclose(slow["communication_s"], fast["communication_s"])


# ---------------------------------------------------------------- MLA decode attention


def test_mla_decode_attention_counts_the_absorbed_form(reg: Registry) -> None:
    """FlashMLA's decode kernel: 2 H (576 + 512) FLOPs per (query, key) pair and layer for
    DeepSeek-V3 (H = 128), against prefill's unabsorbed 2 H (192 + 128)."""
    m = model_numbers(reg.load("model", "deepseek-v3"))
    assert m.attention_flops_per_pair == pytest.approx(61 * 2 * 128 * (192 + 128))
    assert m.decode_attention_flops_per_pair == pytest.approx(61 * 2 * 128 * (576 + 512))
    gqa = model_numbers(reg.load("model", "llama-3.3-70b"))
    assert gqa.decode_attention_flops_per_pair == 0.0


def test_absorbed_decode_attention_in_every_decode_step(reg: Registry) -> None:
    """Decode steps run MLA attention in the absorbed form (more compute) under every layout,
    tensor parallelism included; prefill steps keep the unabsorbed count."""
    args = (np.array([2048.0]), np.array([2048.0]), np.array([2048.0 * 4096]), np.array([0.0]))
    for layout in (Layout(1, 16, 16), Layout(8)):
        inst = _instance(reg, layout)
        dec = inst.step_parts(*args, decode=True)
        pre = inst.step_parts(*args)
        assert float(dec["compute_s"][0]) > float(pre["compute_s"][0])
