"""Unit tests of pddplan.models.compute: GEMM efficiency, the chunked-prefill rule, batch search
and the layout step's parts."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pddplan.models import compute

# A toy step for the chunking rule (chunked_prefill_time_s takes any step): a 1e9-byte weight
# read at 5e11 B/s, 2e9 FLOP a token at 1e15 FLOP/s times a GEMM efficiency of n / (n + 100),
# 1e5 FLOP a (query, key) pair, a KV read of 1e4 B a token of context, 1e9 FLOP a logit token
# and a 1 ms fixed overhead.
KV_PER_TOKEN = 1e4  # bytes per context token
WEIGHTS = 1e9  # bytes


def toy_step(tokens, lm_head_tokens, pairs, context_tokens):
    n = np.asarray(tokens, dtype=float)
    compute_s = (
        n * 2e9 / (n / (n + 100.0)) + np.asarray(pairs) * 1e5 + lm_head_tokens * 1e9
    ) / 1e15
    memory_s = (WEIGHTS + np.asarray(context_tokens) * KV_PER_TOKEN) / 5e11
    return np.maximum(compute_s, memory_s) + 1e-3


# ------------------------------------------------------------------------------ gemm_efficiency


def test_gemm_efficiency_half_at_half_saturation() -> None:
    # eta(64) = 0.7 * 64 / (64 + 64) = 0.35
    assert compute.gemm_efficiency(64, 0.7, 64) == pytest.approx(0.35)
    # eta(8192) = 0.7 * 8192 / 8256 = 0.694574
    assert compute.gemm_efficiency(8192, 0.7, 64) == pytest.approx(0.7 * 8192 / 8256)
    assert compute.gemm_efficiency(0, 0.7, 64) == 0.0


def test_gemm_efficiency_array() -> None:
    n = np.array([1.0, 64.0, 1024.0, 1e9])
    out = compute.gemm_efficiency(n, 0.7, 64)
    np.testing.assert_allclose(out, [compute.gemm_efficiency(x, 0.7, 64) for x in n])
    assert np.all(np.diff(out) > 0)
    assert out[-1] == pytest.approx(0.7, rel=1e-6)


# ---------------------------------------------------------------------- chunked_prefill_time_s


def _step(tokens: float, context_before: float, lm: float = 0.0) -> float:
    """One chunk step of ``tokens`` new tokens after ``context_before`` tokens, by hand."""
    pairs = tokens * context_before + tokens * (tokens + 1) / 2  # causal sum
    return float(toy_step(tokens, lm, pairs, context_before + tokens))


def _prefill(u, p, c=8192):
    return compute.chunked_prefill_time_s(u, p, c, toy_step)


def test_prefill_chunks_and_tail() -> None:
    # U = 20,000 over P = 1,000 cached, C = 8,192: chunks of 8,192 at context 1,000 and 9,192,
    # then a tail of 20,000 - 2 * 8,192 = 3,616 tokens at context 17,384
    # the tail, the last chunk, computes the LM head's one token
    expected = _step(8192, 1000) + _step(8192, 9192) + _step(3616, 17_384, lm=1.0)
    assert _prefill(20_000, 1000) == pytest.approx(expected, rel=1e-12)


def test_prefill_exact_multiple_has_no_tail() -> None:
    # U = 16,384 = 2 * 8,192: two full chunks, no tail step
    # U = 16,384 = 2 * 8,192: two full chunks, no tail step; the second computes the LM head
    expected = _step(8192, 0) + _step(8192, 8192, lm=1.0)
    assert _prefill(16_384, 0) == pytest.approx(expected, rel=1e-12)
    # one more token adds a whole (1-token) step, which takes the LM head over: at least the
    # weight read + overhead
    extra = float(_prefill(16_385, 0) - _prefill(16_384, 0))
    want = _step(8192, 8192) - _step(8192, 8192, lm=1.0) + _step(1, 16_384, lm=1.0)
    assert extra == pytest.approx(want, rel=1e-9)
    assert _step(1, 16_384, lm=1.0) >= WEIGHTS / 5e11 + 1e-3


def test_prefill_single_partial_chunk() -> None:
    assert _prefill(500, 3000) == pytest.approx(_step(500, 3000, lm=1.0), rel=1e-12)


def test_prefill_zero_tokens_costs_nothing() -> None:
    assert _prefill(0, 5000) == 0.0


def test_prefill_tail_penalty_small_tail_is_inefficient() -> None:
    # per token, a 16-token tail costs far more than a full chunk (poor GEMM efficiency and a
    # full weight read): the brief's tail-chunk effect
    per_token_tail = _step(16, 8192) / 16
    per_token_full = _step(8192, 0) / 8192
    assert per_token_tail > 10 * per_token_full


def test_prefill_array_matches_scalar() -> None:
    u = np.array([0.0, 100.0, 8192.0, 16_384.0, 20_000.0, 50_000.0])
    p = np.array([0.0, 1000.0, 0.0, 5000.0, 1000.0, 64_000.0])
    out = _prefill(u, p)
    assert out.shape == u.shape
    for i in range(len(u)):
        assert out[i] == pytest.approx(float(_prefill(u[i], p[i])), rel=1e-12)
    # and with a scalar prefix broadcast against an array of U
    out2 = _prefill(u, 1000.0)
    for i in range(len(u)):
        assert out2[i] == pytest.approx(float(_prefill(u[i], 1000.0)), rel=1e-12)


def test_prefill_scalar_returns_scalar() -> None:
    assert np.ndim(_prefill(20_000, 1000)) == 0


# ----------------------------------------------------------------------- max_batch_at_step_time


def _linear_step(b):
    return 0.01 + 0.001 * np.asarray(b, dtype=float)


def test_max_batch_at_step_time() -> None:
    # 0.01 + 0.001 b <= 0.0205  <=>  b <= 10.5 -> 10
    assert compute.max_batch_at_step_time(_linear_step, 0.0205, 1000) == 10
    # capped by max_batch
    assert compute.max_batch_at_step_time(_linear_step, 0.0205, 5) == 5
    # b = 10 is the first miss for 0.0195 -> 9
    assert compute.max_batch_at_step_time(_linear_step, 0.0195, 1000) == 9


def test_max_batch_at_step_time_none_fit() -> None:
    assert compute.max_batch_at_step_time(_linear_step, 0.0105, 1000) == 0  # b=1 takes 0.011
    assert compute.max_batch_at_step_time(_linear_step, 1.0, 0) == 0


def test_max_batch_at_step_time_on_a_curved_step() -> None:
    def step(b):
        # weights and KV read, and GEMM efficiency rising with the batch: a curved step
        return toy_step(b, b, b * 8192.0, b * 8192.0)

    target = float(step(37.0))
    b = compute.max_batch_at_step_time(step, target, 4096)
    assert b >= 37
    assert step(float(b)) <= target
    assert b == 4096 or step(float(b + 1)) > target


# ------------------------------------------------------------- routed experts, per expert


def _moe_shape(shares=None) -> compute.ModelShape:
    return compute.ModelShape(
        dense_flops_per_token=0.0,
        lm_head_flops_per_token=0.0,
        dense_weight_bytes=0.0,
        expert_flops_per_token=1e9,
        expert_weight_bytes=1e8,
        experts=64,
        top_k=4,
        moe_layers=10,
        layers=10,
        hidden_size=1024,
        attention_flops_per_pair=0.0,
        expert_shares=shares,
    )


def _moe_layout(half=50.0) -> compute.LayoutNumbers:
    return compute.LayoutNumbers(
        chips=1,
        attention_tp=1,
        expert_parallel=1,
        ranks_per_node=1,
        linear_peak_flops_per_s=1e15,
        linear_efficiency=0.5,
        half_saturation_tokens=half,
        expert_efficiency=0.5,
        expert_half_saturation_tokens=half,
        attention_peak_flops_per_s=1e15,
        attention_efficiency=0.5,
        memory_bytes_per_s=1e12,
        activation_bytes=2.0,
        dispatch_bytes_per_element=1.0,
        combine_bytes_per_element=2.0,
        scaleup_bytes_per_s=1e11,
        scaleout_bytes_per_s=1e10,
        scaleup_latency_s=0.0,
        scaleout_latency_s=0.0,
        expert_skew=1.0,
        layer_latency_s=0.0,
        step_overhead_s=0.0,
    )


def test_routed_experts_one_token_runs_only_its_experts() -> None:
    # one token touches k = 4 experts, each a 1-token GEMM at eta(1) = 0.5 / 51: no extrapolation
    # of the curve to 4/64 token per expert over all 64 experts
    c, m = compute.routed_expert_s(1.0, 1.0, _moe_shape(), _moe_layout())
    per_expert_s = 1e9 / (1e15 * compute.gemm_efficiency(1.0, 0.5, 50.0))
    assert c == pytest.approx(4 * per_expert_s)
    assert m == pytest.approx(4 * 1e8 / 1e12)


def test_routed_experts_large_step_matches_mean_when_uniform() -> None:
    # every expert touched: sum_i x_i / eta(x_i) = (n k + h E) / eta_max, the mean's value
    n = 1e5
    c, m = compute.routed_expert_s(n, 1.0, _moe_shape(), _moe_layout())
    mean = n * 4 / 64
    assert c == pytest.approx(n * 4 * 1e9 / (1e15 * compute.gemm_efficiency(mean, 0.5, 50.0)))
    assert m == pytest.approx(64 * 1e8 / 1e12)


def test_routed_experts_skew_touches_fewer_experts_at_small_steps() -> None:
    from pddplan.models.architecture import expected_experts_touched, zipf_expert_shares

    shares = tuple(zipf_expert_shares(64, 1.0))
    assert sum(shares) == pytest.approx(1.0)
    assert shares[0] > shares[-1]
    n = np.array([1.0, 8.0, 64.0])
    skewed = expected_experts_touched(n, 64, 4, shares)
    uniform = expected_experts_touched(n, 64, 4)
    assert skewed[0] == pytest.approx(4.0)  # one token always touches k experts
    assert np.all(skewed[1:] < uniform[1:])
    _, m_skew = compute.routed_expert_s(8.0, 1.0, _moe_shape(shares), _moe_layout())
    _, m_uni = compute.routed_expert_s(8.0, 1.0, _moe_shape(), _moe_layout())
    assert m_skew < m_uni


def test_zipf_exponent_zero_is_uniform() -> None:
    from pddplan.models.architecture import expected_experts_touched, zipf_expert_shares

    shares = zipf_expert_shares(64, 0.0)
    n = np.array([3.0, 30.0])
    np.testing.assert_allclose(
        expected_experts_touched(n, 64, 4, shares), expected_experts_touched(n, 64, 4)
    )


# ------------------------------------------------ routed experts' activation traffic


def _sliced(chips: int, ep: int = 1):
    import dataclasses

    shape = dataclasses.replace(_moe_shape(), expert_intermediate_size=512)
    lay = dataclasses.replace(
        _moe_layout(),
        chips=chips,
        attention_tp=chips // ep if ep > 1 else chips,
        expert_parallel=ep,
    )
    return shape, lay


def test_expert_activation_bytes_by_hand() -> None:
    # one chip, 100 tokens x k=4: a = 400 assignments; h = 1024, I = 512, b_in 2, b_o 2
    shape, lay = _sliced(1)
    gemm, between = compute.expert_activation_bytes(100.0, 1.0, shape, lay)
    per_gemm = 1024 * (2 + 2) + 512 * (2 * 2 + 2)
    per_between = 512 * (2 * 2 + 2) + 1024 * 2
    assert gemm == pytest.approx(10 * 400 * per_gemm)
    assert between == pytest.approx(10 * (400 * per_between + 100 * 1024 * 2))


def test_tensor_parallel_slices_flops_not_the_hidden_rows() -> None:
    # TP8 cuts each rank's expert FLOPs 8 ways but every rank still reads and writes the whole
    # h-wide row of every assignment: the activation bytes fall by far less than 8
    shape, one = _sliced(1)
    _, eight = _sliced(8)
    c1, _ = compute.routed_expert_s(4096.0, 1.0, shape, one)
    c8, _ = compute.routed_expert_s(4096.0, 1.0, shape, eight)
    g1, b1 = compute.expert_activation_bytes(4096.0, 1.0, shape, one)
    g8, b8 = compute.expert_activation_bytes(4096.0, 1.0, shape, eight)
    assert c8 == pytest.approx(c1 / 8)
    assert (g8 + b8) > (g1 + b1) / 2


def test_expert_parallel_ranks_share_the_assignments() -> None:
    # EP over 8 ranks: each runs 1/8 of the assignments, whole experts (no slicing of I)
    shape, one = _sliced(1)
    _, ep8 = _sliced(8, ep=8)
    g1, _ = compute.expert_activation_bytes(4096.0, 1.0, shape, one)
    g8, _ = compute.expert_activation_bytes(4096.0, 1.0, shape, ep8)
    assert g8 == pytest.approx(g1 / 8)


def test_expert_elementwise_is_memory_bound_and_zero_without_width() -> None:
    shape, lay = _sliced(8)
    c, m = compute.expert_elementwise_s(2048.0, 1.0, shape, lay)
    assert c == 0.0 and m > 0.0
    c0, m0 = compute.expert_elementwise_s(2048.0, 1.0, _moe_shape(), lay)
    assert c0 == 0.0 and m0 == 0.0


# -------------------------------------------------- reduction depth of the experts' GEMMs


def test_gemm_depth_efficiency_by_hand_scalar_and_array() -> None:
    # d(K) = K / (K + K_half): half at K_half, 256 / (256 + 720) at TP8's down GEMM
    assert float(compute.gemm_depth_efficiency(720.0, 720.0)) == pytest.approx(0.5)
    d = compute.gemm_depth_efficiency(np.array([256.0, 7168.0]), 720.0)
    assert d == pytest.approx([256 / 976, 7168 / 7888])
    # no depth number: no effect at any depth
    assert compute.gemm_depth_efficiency(np.array([1.0, 1e5]), 0.0) == pytest.approx([1.0, 1.0])


def _deepseek_like(chips: int, ep: int = 1, half: float = 720.0, mem_half: float = 86.0):
    shape = dataclasses.replace(
        _moe_shape(), hidden_size=7168, expert_intermediate_size=2048, experts=256, top_k=8
    )
    lay = dataclasses.replace(
        _moe_layout(),
        chips=chips,
        attention_tp=chips // ep if ep > 1 else chips,
        expert_parallel=ep,
        expert_half_depth_elements=half,
        expert_memory_half_depth_elements=mem_half,
    )
    return shape, lay


def test_expert_depth_factors_are_one_at_the_curves_shapes() -> None:
    # whole experts (EP8 over 8 chips): gate-up K = 7168, down K = 2048, the curve's own shapes
    shape, lay = _deepseek_like(8, ep=8)
    c, m = compute.expert_depth_factors(shape, lay)
    assert c == pytest.approx(1.0)
    # the weight read is relative to the deep-K bandwidth: 2/3 / d(7168) + 1/3 / d(2048)
    assert m == pytest.approx(2 / 3 * (7168 + 86) / 7168 + 1 / 3 * (2048 + 86) / 2048)


def test_expert_depth_factors_by_hand_under_tensor_parallelism() -> None:
    # TP8 slices I = 2048 to 256: down GEMM K = 256
    shape, lay = _deepseek_like(8)
    c, m = compute.expert_depth_factors(shape, lay)
    ref = 2 / 3 * (7168 + 720) / 7168 + 1 / 3 * (2048 + 720) / 2048
    assert c == pytest.approx((2 / 3 * (7168 + 720) / 7168 + 1 / 3 * (256 + 720) / 256) / ref)
    assert m == pytest.approx(2 / 3 * (7168 + 86) / 7168 + 1 / 3 * (256 + 86) / 256)
    # slicing deeper costs more
    c16, m16 = compute.expert_depth_factors(*_deepseek_like(16))
    assert c16 > c > 1.0
    assert m16 > m > 1.0


def test_expert_depth_factors_without_depth_numbers_or_width() -> None:
    shape, lay = _deepseek_like(8, half=0.0, mem_half=0.0)
    assert compute.expert_depth_factors(shape, lay) == (1.0, 1.0)
    no_width = dataclasses.replace(shape, expert_intermediate_size=0)
    assert compute.expert_depth_factors(no_width, _deepseek_like(8)[1]) == (1.0, 1.0)


def test_depth_factors_memo_returns_the_computed_values() -> None:
    # memoized per (shape, layout) objects: the same values as the function computes, for
    # equal but distinct objects too, and a changed layout is not served the old values
    for fn in (compute.expert_depth_factors, compute._expert_weight_read_depths):
        shape, lay = _deepseek_like(8)
        assert fn(shape, lay) == fn.__wrapped__(shape, lay)  # type: ignore[attr-defined]
        assert fn(shape, lay) == fn.__wrapped__(shape, lay)  # type: ignore[attr-defined]
        other = dataclasses.replace(lay, expert_memory_half_depth_elements=300.0)
        assert fn(shape, other) == fn.__wrapped__(shape, other)  # type: ignore[attr-defined]
        assert fn(shape, other) != fn(shape, lay)
        copy = dataclasses.replace(lay)
        assert fn(shape, copy) == fn.__wrapped__(shape, lay)  # type: ignore[attr-defined]


def test_routed_experts_carry_the_depth_factors() -> None:
    shape, lay = _deepseek_like(8)
    flat = dataclasses.replace(lay, expert_half_depth_elements=0.0)
    flat = dataclasses.replace(flat, expert_memory_half_depth_elements=0.0)
    c, m = compute.routed_expert_s(np.array([1.0, 4096.0]), 1.0, shape, lay)
    c0, m0 = compute.routed_expert_s(np.array([1.0, 4096.0]), 1.0, shape, flat)
    fc, fm = compute.expert_depth_factors(shape, lay)
    assert c == pytest.approx(fc * c0)
    gemm_bytes, _ = compute.expert_activation_bytes(np.array([1.0, 4096.0]), 1.0, shape, lay)
    weights_s = m0 - gemm_bytes / lay.memory_bytes_per_s
    assert m == pytest.approx(fm * weights_s + gemm_bytes / lay.memory_bytes_per_s)
