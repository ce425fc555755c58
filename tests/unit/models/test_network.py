"""Unit tests of pddplan.models.network: uncached KV, TCP transfer phases, jitter, hand-over."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pddplan.models import network


def test_uncached_kv_bytes() -> None:
    # 1,000 tokens at 90% hit, 100 B/token: 1000 * 0.1 * 100 = 10,000 B
    assert network.uncached_kv_bytes(1000, 0.9, 100.0) == pytest.approx(10_000.0)
    assert network.uncached_kv_bytes(1000, 1.0, 100.0) == 0.0
    assert network.uncached_kv_bytes(1000, 0.0, 100.0) == 100_000.0


def test_uncached_kv_bytes_array() -> None:
    h = np.array([0.0, 0.5, 0.9, 0.99, 1.0])
    out = network.uncached_kv_bytes(64_512, h, 35_136.0)
    np.testing.assert_allclose(out, [network.uncached_kv_bytes(64_512, x, 35_136.0) for x in h])
    # 64,512 * 0.5 * 35,136 = 1,133,346,816 B
    assert out[1] == pytest.approx(1_133_346_816.0)
    assert np.all(np.diff(out) < 0)


def test_link_goodput() -> None:
    # 100 Gbit/s = 12.5e9 B/s at 0.8 -> 1e10 B/s (the 10 GB/s of wan-100g-cross-city)
    assert network.link_goodput_bytes_per_s(12.5e9, 0.8) == pytest.approx(1e10)
    np.testing.assert_allclose(
        network.link_goodput_bytes_per_s(np.array([1.25e9, 12.5e9]), 0.8), [1e9, 1e10]
    )


# A 100 Gbit/s-class line of 10 GB/s goodput at 20 ms RTT, Linux defaults: IW10 x 1448 B =
# 14,480 B, a 4 MiB window (4,194,304 B / 0.02 s = 209,715,200 B/s per stream).
C = 1e10
RTT = 0.02
IW = 14_480.0
WMAX = 4_194_304.0
TCP = {
    "rtt_s": RTT,
    "initial_window_bytes": IW,
    "max_window_bytes": WMAX,
    "mss_bytes": 1448.0,
}


def test_mathis_ceiling_by_hand() -> None:
    # 1448 B / 0.02 s * sqrt(1.5) / sqrt(1e-6) = 72,400 * 1.2247449 * 1000 = 88,671,529 B/s
    assert network.mathis_bytes_per_s(1448.0, 0.02, 1e-6) == pytest.approx(88_671_529.0, rel=1e-7)
    assert math.isinf(network.mathis_bytes_per_s(1448.0, 0.02, 0.0))
    out = network.mathis_bytes_per_s(1448.0, 0.02, np.array([1e-6, 1e-4, 0.0]))
    np.testing.assert_allclose(out[:2], [88_671_529.0, 8_867_152.9], rtol=1e-7)
    assert math.isinf(out[2])


def test_stream_ceiling_is_the_lower_of_window_and_loss() -> None:
    # window 209,715,200 B/s; loss 1e-6 -> 88,671,529 B/s binds; loss 1e-8 -> 886.7 MB/s, window binds
    assert network.stream_ceiling_bytes_per_s(RTT, WMAX, 1448.0, 1e-6) == pytest.approx(
        88_671_529.0, rel=1e-7
    )
    assert network.stream_ceiling_bytes_per_s(RTT, WMAX, 1448.0, 1e-8) == pytest.approx(
        209_715_200.0
    )


def test_streams_help_up_to_the_line() -> None:
    caps = network.transfer_rate_cap_bytes_per_s(
        1e9, RTT, WMAX, 1448.0, 1e-6, np.array([1.0, 4.0, 11.0, 12.0, 64.0])
    )
    # n x 88,671,529 B/s until the 1 GB/s line: 11 streams 975.4 MB/s, 12 would be 1.064 GB/s
    np.testing.assert_allclose(
        caps, [88_671_529.0, 354_686_116.0, 975_386_819.0, 1e9, 1e9], rtol=1e-7
    )
    assert np.all(np.diff(caps) >= 0)


def test_slow_start_rounds_by_hand() -> None:
    # BDP 4,194,304 B = 289.7 initial windows: K = ceil(log2 289.7) = 9 window-limited rounds
    rounds, sent = network.slow_start_rounds(
        np.array([0.0, 14_480.0, 14_481.0, 4_649_000.0, 3e9]), IW, 209_715_200.0, RTT
    )
    # 14,480 B fits the first window: 0 rounds; one byte more waits one round (14,480 B sent);
    # 4,649,000 B / 14,480 = 321.06 windows -> ends in round 8 (0-based): 8 rounds, 255 windows;
    # 3 GB outlasts slow start: K = 9 rounds, 511 windows = 7,399,280 B
    np.testing.assert_array_equal(rounds, [0, 0, 1, 8, 9])
    np.testing.assert_allclose(sent, [0, 0, 14_480.0, 3_692_400.0, 7_399_280.0])
    # no slow start (RDMA, or a warm window): nothing waits
    assert network.slow_start_rounds(1e9, np.inf, 1e10, RTT) == (0.0, 0.0)


def test_transfer_phases_by_hand() -> None:
    lead, line, cap, tail = network.transfer_phases(4_649_000.0, goodput_bytes_per_s=C, **TCP)
    assert lead == pytest.approx(8 * RTT)
    assert line == pytest.approx(956_600.0)
    assert cap == pytest.approx(209_715_200.0)
    assert tail == pytest.approx(RTT / 2)
    # 0.16 + 956,600 / 209,715,200 + 0.01 = 0.1745614 s on an idle line (50x slower than x / C)
    t = network.transfer_time_s(4_649_000.0, C, **TCP)
    assert t == pytest.approx(0.16 + 956_600.0 / 209_715_200.0 + 0.01)
    assert t > 4_649_000.0 / C
    # a cold connection adds its handshake round trip; a fixed latency adds itself
    cold = network.transfer_time_s(4_649_000.0, C, handshake_rtts=1.0, latency_s=0.003, **TCP)
    assert cold == pytest.approx(t + RTT + 0.003)


def test_transfer_time_3gb_by_hand() -> None:
    # 9 rounds (0.18 s) + (3e9 - 7,399,280) / 209,715,200 (14.2698 s) + 0.01 s
    t = network.transfer_time_s(3e9, C, **TCP)
    assert t == pytest.approx(0.18 + (3e9 - 7_399_280.0) / 209_715_200.0 + 0.01)


def test_transfer_without_tcp_is_the_old_line_model() -> None:
    # no slow start, no window: lead 0, all bytes at C; 1 GB / 10 GB/s + 0.01 = 0.11 s
    assert network.transfer_time_s(1e9, C, rtt_s=RTT) == pytest.approx(0.11)
    # rho = 0.5 halves the free rate: 0.2 + 0.01
    assert network.transfer_time_s(1e9, C, 0.5, rtt_s=RTT) == pytest.approx(0.21)
    assert math.isinf(network.transfer_time_s(1e9, C, 1.0, rtt_s=RTT))


def test_per_flow_ceiling_binds_before_processor_sharing() -> None:
    # a 209.7 MB/s transfer on a 10 GB/s line: at rho = 0.5 the free 5 GB/s is still above its
    # ceiling, so the load does not slow it
    idle = network.transfer_time_s(3e9, C, 0.0, **TCP)
    assert network.transfer_time_s(3e9, C, 0.5, **TCP) == pytest.approx(idle)
    # at rho = 0.99 the free 100 MB/s is below the ceiling and binds; slow start ends at its
    # bandwidth-delay product, 2 MB: 8 rounds, 14,480 x 255 = 3,692,400 B
    busy = network.transfer_time_s(3e9, C, 0.99, **TCP)
    assert busy == pytest.approx(0.16 + (3e9 - 3_692_400.0) / 1e8 + 0.01)


def test_transfer_monotone_in_payload_and_array_matches_scalar() -> None:
    x = np.concatenate([[0.0], np.geomspace(1.0, 1e10, 400)])
    rho = 0.3
    out = network.transfer_time_s(x, C, rho, **TCP)
    assert np.all(np.diff(out) >= 0)
    for i in (0, 50, 200, 399):
        assert out[i] == pytest.approx(float(network.transfer_time_s(x[i], C, rho, **TCP)))
    # an empty payload still pays the propagation
    assert out[0] == pytest.approx(RTT / 2)


def test_link_utilization() -> None:
    # 10 req/s * 100 MB / 10 GB/s = 0.1
    assert network.link_utilization(10.0, 1e8, 1e10) == pytest.approx(0.1)
    np.testing.assert_allclose(
        network.link_utilization(np.array([10.0, 50.0]), 1e8, 1e10), [0.1, 0.5]
    )


@pytest.mark.parametrize("cv", [0.1, 0.3, 0.5, 1.0, 2.0])
def test_jitter_median_of_mean_one_lognormal(cv: float) -> None:
    # sigma^2 = ln(1 + cv^2); the median of a mean-one lognormal is exp(-sigma^2 / 2)
    sigma2 = math.log(1 + cv**2)
    assert network.jitter_quantile(0.5, cv) == pytest.approx(math.exp(-sigma2 / 2))
    # cv = 0.5: 1 / sqrt(1.25) = 0.894427
    if cv == 0.5:
        assert network.jitter_quantile(0.5, cv) == pytest.approx(0.894427, rel=1e-6)


def test_jitter_quantile_p99_and_array() -> None:
    # cv 0.5: sigma = sqrt(ln 1.25) = 0.472381; q(0.99) = exp(-0.111572 + 0.472381 * 2.326348)
    sigma = math.sqrt(math.log(1.25))
    expected = math.exp(-(sigma**2) / 2 + sigma * 2.3263478740408408)
    assert network.jitter_quantile(0.99, 0.5) == pytest.approx(expected, rel=1e-9)
    p = np.array([0.01, 0.5, 0.9, 0.99])
    out = network.jitter_quantile(p, 0.5)
    np.testing.assert_allclose(out, [network.jitter_quantile(x, 0.5) for x in p])
    assert np.all(np.diff(out) > 0)
    # no jitter: every quantile is 1
    np.testing.assert_allclose(network.jitter_quantile(p, 0.0), 1.0)


def test_jitter_points() -> None:
    f, w = network.jitter_points(0.0)
    np.testing.assert_array_equal(f, [1.0])
    np.testing.assert_array_equal(w, [1.0])
    f, w = network.jitter_points(0.5, points=9)
    assert len(f) == len(w) == 9
    assert w.sum() == pytest.approx(1.0)
    assert f[4] == pytest.approx(network.jitter_quantile(0.5, 0.5))  # middle point is the median
    # an equal-probability discretization of a mean-one factor keeps the mean near 1
    assert float(np.sum(f * w)) == pytest.approx(1.0, rel=0.03)


def test_handover_payload_bytes() -> None:
    # 100 token IDs at 16 B each plus a 64 B header = 1,664 B
    assert network.handover_payload_bytes(100, 16.0, 64.0) == 1664.0
    assert network.handover_payload_bytes(100, 16.0) == 1600.0
    np.testing.assert_array_equal(
        network.handover_payload_bytes(np.array([0.0, 64.0, 100.0]), 16.0), [0, 1024, 1600]
    )


def _masked_line_time_s(line_bytes, cap, goodput, utilization=0.0):
    """shared_line_time_s's general (masked) form, the reference of its plain division."""
    free = goodput * max(1.0 - utilization, 0.0) if utilization < 1.0 else 0.0
    rate = np.minimum(np.asarray(cap, dtype=float), free)
    x = np.asarray(line_bytes, dtype=float)
    out = np.full(np.broadcast(x, rate).shape, np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(x, rate, out=out, where=rate > 0)
    np.copyto(out, 0.0, where=~(x > 0))
    return out


def test_shared_line_time_plain_division_gives_the_masked_form_s_times() -> None:
    """Where every rate is positive and finite the time is a plain division: the same bits
    as the masked form, at every load, for payload arrays and scalars, zero and infinite
    payloads included; a zero, infinite or NaN rate still takes the masked form."""
    rng = np.random.default_rng(5)
    x = np.concatenate([10 ** rng.uniform(0, 11, 300), [0.0, np.inf, -1.0]])
    cap = 10 ** rng.uniform(6, 10, x.size)
    for util in (0.0, 0.3, 0.9, 0.999999):
        got = network.shared_line_time_s(x, cap, 1.25e9, util)
        want = _masked_line_time_s(x, cap, 1.25e9, util)
        assert got.tobytes() == want.tobytes()
        one = network.shared_line_time_s(3.0e9, 2.0e8, 1.25e9, util)
        assert isinstance(one, np.ndarray) and one.shape == ()
        assert one.tobytes() == _masked_line_time_s(3.0e9, 2.0e8, 1.25e9, util).tobytes()
    # a saturated line (no free rate): never ends, but an empty payload takes no time
    sat = network.shared_line_time_s(np.array([1e6, 0.0]), 1e9, 1.25e9, 1.0)
    assert sat.tolist() == [np.inf, 0.0]
    for bad_cap in (np.array([0.0, 1e9]), np.array([np.inf, 1e9]), np.array([np.nan, 1e9])):
        got = network.shared_line_time_s(np.array([1e6, 2e6]), bad_cap, np.inf, 0.0)
        want = _masked_line_time_s(np.array([1e6, 2e6]), bad_cap, np.inf, 0.0)
        assert got.tobytes() == want.tobytes()
