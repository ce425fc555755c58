"""The layout step's expert-parallel mechanisms: residual expert imbalance, DeepEP's low-latency
all-to-all in decode, the grouped-GEMM efficiency curve of the routed experts, and MLA's
weight-absorbed decode attention."""

from __future__ import annotations

import dataclasses

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


# ------------------------------------------------------------- the step's terms, one by one

SHAPE = compute.ModelShape(
    dense_flops_per_token=2e9,
    lm_head_flops_per_token=1e9,
    dense_weight_bytes=8e9,
    expert_flops_per_token=1e8,
    expert_weight_bytes=4e8,
    experts=64,
    top_k=4,
    moe_layers=10,
    layers=12,
    hidden_size=4096,
    attention_flops_per_pair=1e6,
)
LAY = compute.LayoutNumbers(
    chips=8,
    attention_tp=2,
    expert_parallel=8,
    ranks_per_node=8,
    linear_peak_flops_per_s=1e15,
    linear_efficiency=0.8,
    half_saturation_tokens=100.0,
    expert_efficiency=0.6,
    expert_half_saturation_tokens=200.0,
    attention_peak_flops_per_s=1e15,
    attention_efficiency=0.5,
    memory_bytes_per_s=2e12,
    activation_bytes=2.0,
    dispatch_bytes_per_element=1.0,
    combine_bytes_per_element=2.0,
    scaleup_bytes_per_s=4e11,
    scaleout_bytes_per_s=5e10,
    scaleup_latency_s=1e-5,
    scaleout_latency_s=2e-5,
    expert_skew=1.0,
    layer_latency_s=1e-5,
    step_overhead_s=1e-3,
)


def test_dense_gemm_hand_computed() -> None:
    # 4 attention groups of t = 2: 400 tokens -> 100 per group, eta = 0.8 * 100 / 200 = 0.4
    c, m = compute.dense_gemm_s(400.0, 4.0, SHAPE, LAY)
    assert float(c) == pytest.approx((100 * 2e9 + 1 * 1e9) / (2 * 1e15 * 0.4))
    assert m == pytest.approx(8e9 / 2 / 2e12)


def test_attention_hand_computed() -> None:
    c, m = compute.attention_s(4e6, 1e9, SHAPE, LAY)
    assert float(c) == pytest.approx(4e6 * 1e6 / (8 * 1e15 * 0.5))
    assert float(m) == pytest.approx(1e9 / 2e12)


def test_routed_experts_hand_computed() -> None:
    # 1600 tokens x top-4 over 64 experts: 100 per expert, eta_e = 0.6 * 100 / 300 = 0.2
    c, m = compute.routed_expert_s(1600.0, 1.5, SHAPE, LAY)
    assert float(c) == pytest.approx(1.5 * 1600 * 4 * 1e8 / (8 * 1e15 * 0.2))
    touched = 64 * (1 - (1 - 4 / 64) ** 1600)
    assert float(m) == pytest.approx(touched * 4e8 / 8 / 2e12)
    dense = dataclasses.replace(SHAPE, experts=0, top_k=0)
    c0, m0 = compute.routed_expert_s(np.array([1.0, 2.0]), 1.0, dense, LAY)
    np.testing.assert_array_equal(c0, [0.0, 0.0])
    np.testing.assert_array_equal(m0, [0.0, 0.0])


def test_roofline_split_counts_each_group_where_it_is_bound() -> None:
    c, m = compute.roofline_split((np.array([3.0, 1.0]), 2.0), (1.0, np.array([0.5, 4.0])))
    np.testing.assert_array_equal(c, [4.0, 0.0])
    np.testing.assert_array_equal(m, [0.0, 6.0])


def test_roofline_split_of_scalars_is_the_arrays_split() -> None:
    # scalars take a path without arrays: each value and the order of the sums are the arrays'
    rng = np.random.default_rng(7)
    groups = [(float(c), float(m)) for c, m in rng.uniform(0.0, 1.0, (4, 2))]
    groups += [(0.25, 0.25), (np.float64(0.5), np.asarray(0.125)), (np.nan, 1.0)]
    as_arrays = [(np.array([c]), np.array([m])) for c, m in groups]
    for k in range(2, len(groups) + 1):
        c, m = compute.roofline_split(*groups[:k])
        ca, ma = compute.roofline_split(*as_arrays[:k])
        assert isinstance(c, np.float64) and isinstance(m, np.float64)
        assert c.tobytes() == ca[0].tobytes() and m.tobytes() == ma[0].tobytes()


def test_allreduces_per_layer_follow_the_layout() -> None:
    # e > 1: one all-reduce per layer over t = 2 ranks of 100 tokens x 4096 x 2 bytes
    one = 1e-5 + 2.0 * 1 / 2 * 100 * 4096 * 2.0 / 4e11
    assert float(compute.tensor_parallel_allreduce_s(400.0, SHAPE, LAY)) == pytest.approx(12 * one)
    tp = dataclasses.replace(LAY, expert_parallel=1)
    assert float(compute.tensor_parallel_allreduce_s(400.0, SHAPE, tp)) == pytest.approx(24 * one)
    solo = dataclasses.replace(LAY, attention_tp=1)
    assert float(compute.tensor_parallel_allreduce_s(400.0, SHAPE, solo)) == 0.0


def test_alltoall_only_under_expert_parallelism() -> None:
    n = np.array([64.0, 512.0])
    a2a = compute.expert_alltoall_s(n, 1.0, SHAPE, LAY)
    assert np.all(a2a > 0) and a2a[1] > a2a[0]
    tp = dataclasses.replace(LAY, expert_parallel=1)
    np.testing.assert_array_equal(compute.expert_alltoall_s(n, 1.0, SHAPE, tp), [0.0, 0.0])


def test_layout_step_broadcasts_and_adds_its_parts() -> None:
    n = np.array([16.0, 256.0, 4096.0])
    parts = compute.layout_step_parts_s(n, n, n * 1000.0, n * 1e5, SHAPE, LAY)
    for i in range(len(n)):
        one = compute.layout_step_parts_s(n[i], n[i], n[i] * 1000.0, n[i] * 1e5, SHAPE, LAY)
        assert float(one.total_s) == parts.total_s[i]
    np.testing.assert_array_equal(
        parts.total_s,
        parts.compute_s + parts.memory_s + parts.communication_s + parts.latency_s,
    )
    np.testing.assert_allclose(parts.latency_s, 12 * 1e-5 + 1e-3)


def test_two_batch_overlap_bounds() -> None:
    """Overlap never beats the ideal overlap of two half steps nor the measured gain, and
    leaves the latency floor alone."""
    n = np.array([256.0, 65536.0])
    args = (n, n, n * 1000.0, n * 1e5)
    plain = compute.layout_step_parts_s(*args, SHAPE, LAY)
    tbo = compute.layout_step_parts_s(*args, SHAPE, dataclasses.replace(LAY, overlap=True))
    work = plain.total_s - plain.latency_s
    assert np.all(tbo.total_s - tbo.latency_s >= work / (1.0 + LAY.overlap_gain) * (1 - 1e-12))
    np.testing.assert_array_equal(tbo.latency_s, plain.latency_s)


# ---------------------------------------------------------------------- one step, one value
@pytest.mark.parametrize(
    ("chip", "model"),
    [("gpu-a", "deepseek-v3"), ("gpu-b", "qwen3-235b-a22b"), ("h100-sxm", "qwen3-30b-a3b")],
)
def test_a_steps_time_is_the_same_however_many_steps_one_call_evaluates(
    reg: Registry, chip: str, model: str
) -> None:
    """A decode step and a chunked prefill evaluated on arrays give each element, bit for bit,
    what a call of its own gives: the batched searches (every routing at once, every chunk of a
    prefill in one step call, the batches of a TPOT search) read their values as their own
    calls would. With the models' uneven expert shares the experts touched were summed down a
    column of several steps, and some steps' last bits differed from their own call's."""
    inst = Instance(reg.load("chip", chip), model_numbers(reg.load("model", model)), 8)
    rng = np.random.default_rng(11)
    batches, contexts = rng.uniform(1.0, 64.0, 60), rng.uniform(500.0, 60_000.0, 60)
    together = inst.decode_step_s(batches, contexts).tolist()
    alone = [float(inst.decode_step_s(b, c)) for b, c in zip(batches, contexts, strict=True)]
    assert together == alone
    uncached, cached = rng.uniform(100.0, 9000.0, 12), rng.uniform(0.0, 50_000.0, 12)
    together = np.asarray(inst.prefill_s(uncached, cached, 2048)).tolist()
    alone = [float(inst.prefill_s(u, p, 2048)) for u, p in zip(uncached, cached, strict=True)]
    assert together == alone
