"""Property tests of the pure models: linearity, monotonicity, scalar/array agreement.

Comparisons of two model evaluations allow a relative slack of 1e-12 (floating-point rounding
of sums whose terms are reordered); the quantile search allows its documented resolution.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pddplan.models import compute, memory, network, queueing

REL = 1e-12

tokens = st.integers(min_value=0, max_value=200_000)
pos_tokens = st.integers(min_value=1, max_value=200_000)
kv_per_token = st.floats(min_value=1.0, max_value=1e6, allow_nan=False)
factors = st.floats(min_value=1.0, max_value=100.0, allow_nan=False)
fractions = st.floats(min_value=0.0, max_value=0.99, allow_nan=False)


@st.composite
def step_params(draw) -> dict[str, float]:
    """A plausible instance: 1-16 chips, 50-5000 TFLOPS, 0.5-8 TB/s, 0-10 ms overhead."""
    return dict(
        linear_flops_per_token=draw(st.floats(1e9, 2e12)),
        attention_flops_per_pair=draw(st.floats(0.0, 1e7)),
        tensor_parallel=draw(st.sampled_from([1, 2, 4, 8, 16])),
        peak_flops_per_s=draw(st.floats(5e13, 5e15)),
        compute_efficiency=draw(st.floats(0.3, 1.0)),
        half_saturation_tokens=draw(st.floats(1.0, 512.0)),
        memory_bytes_per_s=draw(st.floats(5e11, 8e12)),
        memory_efficiency=draw(st.floats(0.3, 1.0)),
        comm_bytes_per_token=draw(st.floats(0.0, 1e6)),
        scaleup_bytes_per_s_bidir=draw(st.floats(6e10, 2e12)),
        scaleup_efficiency=draw(st.floats(0.3, 1.0)),
        overhead_s=draw(st.floats(0.0, 1e-2)),
    )


weights_per_chip = st.floats(min_value=1e8, max_value=2e11)
chunks = st.sampled_from([256, 512, 2048, 8192, 16384])


def _prefill(u, p, c, step, w, k):
    return compute.prefill_time_s(
        u, p, c, kv_bytes_per_token_per_chip=k, weight_read_bytes_per_chip=w, **step
    )


def _decode(b, ctx, step, w, k, experts=0, top_k=0, expert_bytes=0.0, seq=0.0):
    return compute.decode_step_time_s(
        b,
        ctx,
        dense_weight_bytes_per_chip=w,
        expert_bytes_per_chip=expert_bytes,
        experts=experts,
        top_k=top_k,
        kv_bytes_per_token_per_chip=k,
        kv_bytes_per_sequence_per_chip=seq,
        **step,
    )


def _le(a, b) -> bool:
    return float(a) <= float(b) * (1 + REL) + 1e-300


# ------------------------------------------------------------------------------------- memory


@given(tokens, tokens, kv_per_token, st.floats(0.0, 1e8))
def test_kv_bytes_linear_in_tokens(a: int, b: int, k: float, s: float) -> None:
    f = memory.kv_bytes_per_sequence
    # per-token part: n k exactly; the per-sequence constant s is paid once, not per token
    assert f(a + b, k, 0.0) == np.float64(a + b) * k
    assert math.isclose(f(a + b, k, s) - s, (a + b) * k, rel_tol=1e-12, abs_tol=1e-6)
    assert math.isclose(f(a + b, k, s), f(a, k, s) + f(b, k, s) - s, rel_tol=1e-12, abs_tol=1e-6)


@given(tokens, st.floats(0.0, 1.0), kv_per_token)
def test_uncached_kv_linear_in_tokens(n: int, h: float, k: float) -> None:
    one = network.uncached_kv_bytes(1, h, k)
    assert math.isclose(network.uncached_kv_bytes(n, h, k), n * one, rel_tol=1e-12, abs_tol=1e-9)
    assert network.uncached_kv_bytes(n, h, k) <= n * k * (1 + REL)


@given(
    st.integers(1, 128),
    st.sampled_from([1, 2, 4, 8, 16, 32, 64]),
)
def test_gqa_replication_at_least_one(kv_heads: int, tp: int) -> None:
    r = memory.gqa_kv_replication(kv_heads, tp)
    assert r >= 1.0
    assert r <= tp  # never more copies than ranks
    if tp <= kv_heads and kv_heads % tp == 0:
        assert r == 1.0


@given(pos_tokens, pos_tokens, kv_per_token, st.floats(0.0, 1e8))
def test_max_batch_in_memory_non_increasing_in_context(
    c1: int, c2: int, k: float, s: float
) -> None:
    lo, hi = sorted((c1, c2))
    b_lo = memory.max_batch_in_memory(lo, 80e9, 8, 0.9, 30e9, k, s)
    b_hi = memory.max_batch_in_memory(hi, 80e9, 8, 0.9, 30e9, k, s)
    assert b_hi <= b_lo
    assert b_lo >= 0 and b_lo == math.floor(b_lo)


# ------------------------------------------------------------------------------------ prefill


@settings(deadline=None, max_examples=80)
@given(tokens, tokens, tokens, chunks, step_params(), weights_per_chip, kv_per_token)
def test_prefill_never_falls_as_uncached_tokens_grow(u1, u2, p, c, step, w, k) -> None:
    lo, hi = sorted((u1, u2))
    assert _le(_prefill(lo, p, c, step, w, k), _prefill(hi, p, c, step, w, k))


@settings(deadline=None, max_examples=60)
@given(pos_tokens, tokens, chunks, step_params(), weights_per_chip, kv_per_token, factors)
def test_prefill_never_rises_with_more_compute(u, p, c, step, w, k, f) -> None:
    faster = dict(step, peak_flops_per_s=step["peak_flops_per_s"] * f)
    assert _le(_prefill(u, p, c, faster, w, k), _prefill(u, p, c, step, w, k))


@settings(deadline=None, max_examples=60)
@given(pos_tokens, tokens, chunks, step_params(), weights_per_chip, kv_per_token, factors)
def test_prefill_never_rises_with_more_memory_bandwidth(u, p, c, step, w, k, f) -> None:
    faster = dict(step, memory_bytes_per_s=step["memory_bytes_per_s"] * f)
    assert _le(_prefill(u, p, c, faster, w, k), _prefill(u, p, c, step, w, k))


@settings(deadline=None, max_examples=40)
@given(
    st.lists(tokens, min_size=1, max_size=6),
    tokens,
    chunks,
    step_params(),
    weights_per_chip,
    kv_per_token,
)
def test_prefill_scalar_and_array_agree(us, p, c, step, w, k) -> None:
    arr = _prefill(np.array(us, dtype=float), p, c, step, w, k)
    for i, u in enumerate(us):
        assert math.isclose(float(arr[i]), float(_prefill(u, p, c, step, w, k)), rel_tol=1e-12)


# ------------------------------------------------------------------------------------- decode

moe = st.sampled_from([(0, 0), (8, 2), (64, 6), (256, 8), (384, 6)])


@settings(deadline=None)
@given(
    st.integers(1, 4096),
    st.integers(1, 4096),
    st.integers(1, 200_000),
    step_params(),
    weights_per_chip,
    kv_per_token,
    moe,
    st.floats(0.0, 1e8),
)
def test_decode_step_non_decreasing_in_batch(b1, b2, ctx, step, w, k, ek, seq) -> None:
    lo, hi = sorted((b1, b2))
    e, topk = ek
    t_lo = _decode(lo, ctx, step, w, k, e, topk, 1e7, seq)
    t_hi = _decode(hi, ctx, step, w, k, e, topk, 1e7, seq)
    assert _le(t_lo, t_hi)


@settings(deadline=None)
@given(
    st.integers(1, 4096),
    st.integers(0, 200_000),
    st.integers(0, 200_000),
    step_params(),
    weights_per_chip,
    kv_per_token,
    moe,
)
def test_decode_step_non_decreasing_in_context(b, c1, c2, step, w, k, ek) -> None:
    lo, hi = sorted((c1, c2))
    e, topk = ek
    assert _le(_decode(b, lo, step, w, k, e, topk, 1e7), _decode(b, hi, step, w, k, e, topk, 1e7))


@settings(deadline=None)
@given(
    st.lists(st.integers(1, 4096), min_size=1, max_size=6),
    st.integers(0, 200_000),
    step_params(),
    weights_per_chip,
    kv_per_token,
    moe,
)
def test_decode_scalar_and_array_agree(bs, ctx, step, w, k, ek) -> None:
    e, topk = ek
    arr = _decode(np.array(bs, dtype=float), ctx, step, w, k, e, topk, 1e7)
    for i, b in enumerate(bs):
        assert math.isclose(
            float(arr[i]), float(_decode(b, ctx, step, w, k, e, topk, 1e7)), rel_tol=1e-12
        )


# ------------------------------------------------------------------------------------ network

payloads = st.floats(min_value=0.0, max_value=1e12)
goodputs = st.floats(min_value=1e8, max_value=1e11)
rtts = st.floats(min_value=0.0, max_value=0.2)
tcp_params = st.fixed_dictionaries(
    {
        "initial_window_bytes": st.sampled_from([np.inf, 1448.0, 14_480.0, 144_800.0]),
        "max_window_bytes": st.floats(1e3, 2.0**30),
        "mss_bytes": st.sampled_from([536.0, 1448.0, 8948.0]),
        "loss_rate": st.sampled_from([0.0, 1e-8, 1e-6, 1e-3]),
        "streams": st.integers(1, 64),
        "handshake_rtts": st.sampled_from([0.0, 1.0, 2.0]),
    }
)


def _t(x, c, rho, rtt, params):
    return network.transfer_time_s(x, c, rho, rtt_s=rtt, **params)


@given(payloads, goodputs, factors, rtts, tcp_params, fractions)
def test_transfer_time_never_rises_with_bandwidth(x, c, f, rtt, params, rho) -> None:
    assert _le(_t(x, c * f, rho, rtt, params), _t(x, c, rho, rtt, params))


@given(payloads, goodputs, rtts, tcp_params, fractions, fractions)
def test_transfer_time_never_falls_with_utilization(x, c, rtt, params, r1, r2) -> None:
    lo, hi = sorted((r1, r2))
    assert _le(_t(x, c, lo, rtt, params), _t(x, c, hi, rtt, params))


@given(payloads, payloads, goodputs, rtts, tcp_params, fractions)
def test_transfer_time_never_falls_with_payload(x1, x2, c, rtt, params, rho) -> None:
    lo, hi = sorted((x1, x2))
    assert _le(_t(lo, c, rho, rtt, params), _t(hi, c, rho, rtt, params))


@given(payloads, goodputs, st.floats(1e-4, 0.2), tcp_params)
def test_more_streams_never_slow_a_transfer(x, c, rtt, params) -> None:
    more = dict(params, streams=params["streams"] + 1)
    assert _le(_t(x, c, 0.0, rtt, more), _t(x, c, 0.0, rtt, params))


@given(st.lists(payloads, min_size=1, max_size=6), goodputs, rtts, tcp_params, fractions)
def test_transfer_scalar_and_array_agree(xs, c, rtt, params, rho) -> None:
    arr = _t(np.array(xs), c, rho, rtt, params)
    for i, x in enumerate(xs):
        assert math.isclose(float(arr[i]), float(_t(x, c, rho, rtt, params)), rel_tol=1e-12)


@given(st.floats(0.001, 0.999), st.floats(0.001, 0.999), st.floats(0.0, 3.0))
def test_jitter_quantile_monotone_in_p(p1, p2, cv) -> None:
    lo, hi = sorted((p1, p2))
    assert _le(network.jitter_quantile(lo, cv), network.jitter_quantile(hi, cv))


# ----------------------------------------------------------------------------------- queueing


@given(
    st.integers(1, 200),
    st.floats(0.0, 1.0, exclude_max=True),
    st.floats(0.0, 1.0, exclude_max=True),
)
def test_erlang_c_is_a_probability_and_grows_with_load(c: int, r1: float, r2: float) -> None:
    lo, hi = sorted((r1, r2))
    p = queueing.erlang_c(c, lo * c)
    assert 0.0 <= p <= 1.0
    assert queueing.erlang_c(c, hi * c) >= p - 1e-12


offsets = st.lists(st.floats(0.0, 100.0), min_size=1, max_size=8)


@settings(deadline=None, max_examples=150, report_multiple_bugs=False)
@given(
    offsets,
    st.data(),
    st.floats(0.0, 0.95),
    st.floats(0.05, 20.0),
    st.floats(0.01, 0.999),
    st.floats(0.01, 0.999),
)
def test_mixture_quantile_monotone_in_p(d, data, pw, theta, p1, p2) -> None:
    w = data.draw(st.lists(st.floats(0.01, 1.0), min_size=len(d), max_size=len(d)))
    lo, hi = sorted((p1, p2))
    q_lo = queueing.mixture_quantile(lo, d, w, pw, theta)
    q_hi = queueing.mixture_quantile(hi, d, w, pw, theta)
    # the search resolves to (max d - min d + tail length) / 128^2; allow twice that
    tol = 2.0 * (max(d) - min(d) + math.log(1000.0) / theta) / 128**2
    assert math.isfinite(q_lo) and math.isfinite(q_hi)
    assert q_lo <= q_hi + tol
    assert min(d) - tol <= q_lo
    # it is a quantile: the CDF reaches p there
    assert float(queueing.mixture_cdf(q_lo + tol, d, w, pw, theta)) >= lo - 1e-9


@given(offsets, st.data(), st.floats(0.01, 1.0), st.floats(0.01, 1.0))
def test_weighted_quantile_monotone_and_in_support(d, data, p1, p2) -> None:
    w = data.draw(st.lists(st.floats(0.01, 1.0), min_size=len(d), max_size=len(d)))
    lo, hi = sorted((p1, p2))
    q_lo = queueing.mixture_quantile(lo, d, w)
    q_hi = queueing.mixture_quantile(hi, d, w)
    assert q_lo <= q_hi
    assert q_lo in d and q_hi in d


@given(offsets, st.data(), st.floats(0.0, 0.95), st.floats(0.05, 20.0), st.floats(0.0, 200.0))
def test_mixture_cdf_is_a_cdf(d, data, pw, theta, t) -> None:
    w = data.draw(st.lists(st.floats(0.01, 1.0), min_size=len(d), max_size=len(d)))
    f = float(queueing.mixture_cdf(t, d, w, pw, theta))
    assume(not math.isnan(f))
    assert -1e-12 <= f <= 1 + 1e-12
    assert f <= float(queueing.mixture_cdf(t + 1.0, d, w, pw, theta)) + 1e-12
