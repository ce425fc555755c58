"""Property tests of the pure models: linearity, monotonicity, scalar/array agreement.

Comparisons of two model evaluations allow a relative slack of 1e-12 (floating-point rounding
of sums whose terms are reordered); the quantile search allows its documented resolution.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pddplan.deployment import Instance, Layout, model_numbers
from pddplan.io.loader import Registry
from pddplan.models import memory, network, queueing

REL = 1e-12

tokens = st.integers(min_value=0, max_value=200_000)
pos_tokens = st.integers(min_value=1, max_value=200_000)
kv_per_token = st.floats(min_value=1.0, max_value=1e6, allow_nan=False)
factors = st.floats(min_value=1.0, max_value=100.0, allow_nan=False)
fractions = st.floats(min_value=0.0, max_value=0.99, allow_nan=False)


#: Bundled chips and models the step-model properties are drawn over (dense and MoE, GPUs and
#: NPUs, FP8 and BF16 weights).
CHIPS = ("h100-sxm", "h20", "mi300x", "ascend-910b", "gpu-a")
MODELS = ("deepseek-v3", "qwen3-235b-a22b", "mixtral-8x7b", "qwen3-32b", "llama-3.1-70b")
LAYOUTS = (
    Layout(4),
    Layout(8),
    Layout(8, expert_parallel=8),
    Layout(2, 4, 8),
    Layout(8, expert_parallel=8, overlap=True),
    Layout(8, expert_parallel=8, balancer=False),
)


@functools.cache
def _registry() -> Registry:
    return Registry.default()


@functools.cache
def _chip(name: str) -> Any:
    return _registry().load("chip", name)


@functools.cache
def _model(name: str) -> Any:
    return model_numbers(_registry().load("model", name))


@st.composite
def instances(draw) -> tuple[Any, str, Layout]:
    """(chip profile, model name, layout) of a bundled chip and model, on a layout that runs
    the model (:meth:`~pddplan.deployment.Layout.problems` empty)."""
    model = draw(st.sampled_from(MODELS))
    ok = [lay for lay in LAYOUTS if not lay.problems(_model(model))]
    assume(ok)
    return _chip(draw(st.sampled_from(CHIPS))), model, draw(st.sampled_from(ok))


def _instance(chip: Any, model: str, layout: Layout) -> Instance:
    return Instance(chip, _model(model), layout.chips, 0.9, layout)


def _scaled(chip: Any, group: str, fields: tuple[str, ...], f: float) -> Any:
    """``chip`` with its ``group``'s ``fields`` (those set) multiplied by ``f``."""
    g = getattr(chip, group)
    update = {k: getattr(g, k) * f for k in fields if getattr(g, k) is not None}
    return chip.model_copy(update={group: g.model_copy(update=update)})


def _faster_compute(chip: Any, f: float) -> Any:
    return _scaled(chip, "datasheet", ("bf16_tflops", "fp8_tflops", "fp4_tflops"), f)


def _faster_memory(chip: Any, f: float) -> Any:
    return _scaled(chip, "datasheet", ("memory_bandwidth_tb_per_s",), f)


chunks = st.sampled_from([256, 512, 2048, 8192, 16384])


def _prefill(u, p, c, inst: tuple[Any, str, Layout]):
    return _instance(*inst).prefill_s(u, p, c)


def _decode(b, ctx, inst: tuple[Any, str, Layout]):
    return _instance(*inst).decode_step_s(b, ctx)


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


# the product's step model (an instance of a bundled chip and model on a layout,
# pddplan.models.compute.layout_step_parts_s through pddplan.deployment.Instance)


@settings(deadline=None, max_examples=80)
@given(tokens, tokens, tokens, chunks, instances())
def test_prefill_never_falls_as_uncached_tokens_grow(u1, u2, p, c, inst) -> None:
    lo, hi = sorted((u1, u2))
    assert _le(_prefill(lo, p, c, inst), _prefill(hi, p, c, inst))


@settings(deadline=None, max_examples=60)
@given(pos_tokens, tokens, chunks, instances(), factors)
def test_prefill_never_rises_with_more_compute(u, p, c, inst, f) -> None:
    chip, model, layout = inst
    faster = (_faster_compute(chip, f), model, layout)
    assert _le(_prefill(u, p, c, faster), _prefill(u, p, c, inst))


@settings(deadline=None, max_examples=60)
@given(pos_tokens, tokens, chunks, instances(), factors)
def test_prefill_never_rises_with_more_memory_bandwidth(u, p, c, inst, f) -> None:
    chip, model, layout = inst
    faster = (_faster_memory(chip, f), model, layout)
    assert _le(_prefill(u, p, c, faster), _prefill(u, p, c, inst))


@settings(deadline=None, max_examples=40)
@given(st.lists(tokens, min_size=1, max_size=6), tokens, chunks, instances())
def test_prefill_scalar_and_array_agree(us, p, c, inst) -> None:
    arr = _prefill(np.array(us, dtype=float), p, c, inst)
    for i, u in enumerate(us):
        assert math.isclose(float(arr[i]), float(_prefill(u, p, c, inst)), rel_tol=1e-12)


# ------------------------------------------------------------------------------------- decode


@settings(deadline=None)
@given(st.integers(1, 4096), st.integers(1, 4096), st.integers(1, 200_000), instances())
def test_decode_step_non_decreasing_in_batch(b1, b2, ctx, inst) -> None:
    lo, hi = sorted((b1, b2))
    assert _le(_decode(lo, ctx, inst), _decode(hi, ctx, inst))


@settings(deadline=None)
@given(st.integers(1, 4096), st.integers(0, 200_000), st.integers(0, 200_000), instances())
def test_decode_step_non_decreasing_in_context(b, c1, c2, inst) -> None:
    lo, hi = sorted((c1, c2))
    assert _le(_decode(b, lo, inst), _decode(b, hi, inst))


@settings(deadline=None)
@given(st.lists(st.integers(1, 4096), min_size=1, max_size=6), st.integers(0, 200_000), instances())
def test_decode_scalar_and_array_agree(bs, ctx, inst) -> None:
    arr = _decode(np.array(bs, dtype=float), ctx, inst)
    for i, b in enumerate(bs):
        assert math.isclose(float(arr[i]), float(_decode(b, ctx, inst)), rel_tol=1e-12)


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
