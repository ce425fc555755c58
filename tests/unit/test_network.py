"""Unit tests of pddplan.models.network: uncached KV, transfer time, jitter, hand-over payload."""

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


def test_transfer_time_idle_link() -> None:
    # (2 setup RTTs + 0.5) * 20 ms + 1 GB / 10 GB/s = 0.05 + 0.1 = 0.15 s
    assert network.transfer_time_s(1e9, 1e10, 0.02, 2.0) == pytest.approx(0.15)


def test_transfer_time_processor_sharing_slowdown() -> None:
    # rho = 0.5 doubles the data term: (1 + 0.5) * 0.02 + 0.1 / (1 - 0.5) = 0.03 + 0.2 = 0.23 s
    assert network.transfer_time_s(1e9, 1e10, 0.02, 1.0, 0.5) == pytest.approx(0.23)
    # rho = 0.8: data term x5 -> 0.03 + 0.5
    assert network.transfer_time_s(1e9, 1e10, 0.02, 1.0, 0.8) == pytest.approx(0.53)


def test_transfer_time_saturated_link_is_infinite() -> None:
    assert math.isinf(network.transfer_time_s(1e9, 1e10, 0.02, 1.0, 1.0))
    assert math.isinf(network.transfer_time_s(1e9, 1e10, 0.02, 1.0, 1.5))


def test_transfer_time_array_matches_scalar() -> None:
    x = np.array([0.0, 1e6, 1e9, 5e9])
    rho = np.array([0.0, 0.3, 0.5, 0.9])
    out = network.transfer_time_s(x, 1e10, 0.02, 2.0, rho)
    for i in range(4):
        assert out[i] == pytest.approx(
            float(network.transfer_time_s(x[i], 1e10, 0.02, 2.0, rho[i]))
        )
    # an empty payload still pays the set-up and propagation: 2.5 * 0.02 = 0.05 s
    assert out[0] == pytest.approx(0.05)


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
