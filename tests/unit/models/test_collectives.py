"""Alpha-beta collectives: hand-computed values, scalar and array."""

from __future__ import annotations

import numpy as np
import pytest

from pddplan.models import collectives as col


def test_allreduce_ring_hand_value() -> None:
    # 8 ranks, 128 MiB, 450 GB/s, 10 us: 10e-6 + 2*7/8*134217728/450e9
    t = col.allreduce_time_s(134217728, 8, 450e9, 10e-6)
    assert float(t) == pytest.approx(10e-6 + 1.75 * 134217728 / 450e9)
    assert float(col.allreduce_time_s(1e9, 1, 450e9, 10e-6)) == 0.0


def test_allgather_is_half_an_allreduce_in_bandwidth() -> None:
    ar = col.allreduce_time_s(1e9, 4, 1e11, 0.0)
    ag = col.allgather_time_s(1e9, 4, 1e11, 0.0)
    assert float(ag) == pytest.approx(float(ar) / 2)


def test_alltoall_inside_one_node_uses_scaleup_only() -> None:
    # 8 ranks in one node: 1000 tokens x 7168 B x 8 copies x 7/8 over 150 GB/s
    t = col.alltoall_time_s(1000, 7168.0, 8, 8, 8, 150e9, 1.0, 0.0)
    assert float(t) == pytest.approx(1000 * 7168.0 * 8 * 7 / 8 / 150e9)


def test_alltoall_across_nodes_dedups_per_node() -> None:
    # 32 ranks in 4 nodes: NIC bytes = T b (G-1)(1-(1-1/G)^k)
    g = 4.0
    remote = (g - 1) * (1 - (1 - 1 / g) ** 8)
    t = col.alltoall_time_s(1000, 7168.0, 8, 32, 8, 1e15, 45e9, 20e-6)
    assert float(t) == pytest.approx(20e-6 + 1000 * 7168.0 * remote / 45e9)


def test_collectives_broadcast_over_arrays() -> None:
    m = np.array([1e6, 1e7, 1e8])
    out = col.allreduce_time_s(m, 8, 450e9, 5e-6)
    for i in range(3):
        assert out[i] == pytest.approx(float(col.allreduce_time_s(m[i], 8, 450e9, 5e-6)))
    ranks = np.array([1, 8, 16])
    a2a = col.alltoall_time_s(100, 1000.0, 8, ranks, 8, 1e11, 1e10, 1e-6)
    assert a2a[0] == 0.0 and a2a[2] > a2a[1] > 0.0


# ------------------------------------------------------------- DeepEP low-latency (decode)

#: DeepEP V1 README (docs/legacy.md), low-latency kernels on H800 with one 400 Gbit/s CX7 NIC
#: per GPU: 128 tokens per rank, 7168 hidden, top-8, FP8 dispatch and BF16 combine [us].
DEEPEP_LL_DISPATCH_US = {32: 155.0, 64: 173.0, 128: 192.0, 256: 194.0}
DEEPEP_LL_COMBINE_US = {32: 273.0, 64: 314.0, 128: 369.0, 256: 360.0}
NIC_BYTES_PER_S = 0.85 * 50e9  # the H800 profile's scale-out: 400 Gbit/s at 0.85
NVLINK_BYTES_PER_S = 0.78 * 200e9  # the H800 profile's scale-up, one direction


@pytest.mark.parametrize("ranks", [32, 64, 128, 256])
def test_low_latency_alltoall_reproduces_deepep_measurements(ranks: int) -> None:
    """With the chip profile's derates (not fitted to these), the pure-RDMA formula lands within
    10% of DeepEP's measured low-latency latencies at EP32-256."""
    fp8 = 7168.0 * (1.0 + 4.0 / 128.0)
    bf16 = 7168.0 * 2.0
    args = (8, ranks, 8, NVLINK_BYTES_PER_S, NIC_BYTES_PER_S, 20e-6)
    d = float(col.low_latency_alltoall_time_s(128, fp8, *args)) * 1e6
    c = float(col.low_latency_alltoall_time_s(128, bf16, *args)) * 1e6
    assert d == pytest.approx(DEEPEP_LL_DISPATCH_US[ranks], rel=0.10)
    assert c == pytest.approx(DEEPEP_LL_COMBINE_US[ranks], rel=0.10)


def test_low_latency_alltoall_hand_value() -> None:
    # 16 ranks in 2 nodes: every copy is sent, half of them to the other node's 8 ranks
    t = col.low_latency_alltoall_time_s(100, 1000.0, 8, 16, 8, 1e15, 1e10, 5e-6)
    assert float(t) == pytest.approx(5e-6 + 100 * 1000.0 * 8 * 8 / 16 / 1e10)
    assert float(col.low_latency_alltoall_time_s(100, 1000.0, 8, 1, 8, 1e11, 1e10, 5e-6)) == 0.0


def test_low_latency_sends_more_than_the_forwarding_kernels() -> None:
    """No per-node deduplication: never less than the normal kernels' NIC traffic."""
    ranks = np.array([16, 32, 72, 144, 256])
    ll = col.low_latency_alltoall_time_s(256, 7168.0, 8, ranks, 8, 1e15, 4e10, 0.0)
    normal = col.alltoall_time_s(256, 7168.0, 8, ranks, 8, 1e15, 4e10, 0.0)
    assert np.all(ll >= normal)
    assert np.all(np.diff(ll) > 0)  # a larger share of the experts is off-node


@pytest.mark.parametrize("fn", [col.alltoall_time_s, col.low_latency_alltoall_time_s])
def test_alltoall_load_factor_scales_the_bytes_not_the_latency(fn) -> None:
    base = float(fn(512, 7168.0, 8, 64, 8, 1.5e11, 4e10, 20e-6))
    hot = float(fn(512, 7168.0, 8, 64, 8, 1.5e11, 4e10, 20e-6, 1.3))
    assert hot - 20e-6 == pytest.approx(1.3 * (base - 20e-6))
    assert float(fn(512, 7168.0, 8, 64, 8, 1.5e11, 4e10, 20e-6, 1.0)) == pytest.approx(base)


# ------------------------------------------------------------- all-reduce protocols and steps


def test_allreduce_bulk_protocol_pays_a_latency_per_ring_step() -> None:
    # 8 ranks, 64 MiB: the bulk term alpha + 2*7*alpha_step + 1.75 m / beta beats LL
    m = 64.0 * 2**20
    t = col.allreduce_time_s(m, 8, 400e9, 10e-6, 3e-6)
    assert float(t) == pytest.approx(10e-6 + 14 * 3e-6 + 1.75 * m / 400e9)
    # 4 ranks pay 6 steps, not 14
    t4 = col.allreduce_time_s(m, 4, 400e9, 10e-6, 3e-6)
    assert float(t4) == pytest.approx(10e-6 + 6 * 3e-6 + 1.5 * m / 400e9)


def test_allreduce_small_messages_take_the_low_latency_protocol() -> None:
    # 16 KiB over 8 ranks: LL at half the bandwidth, no per-step latency
    m = 16384.0
    t = col.allreduce_time_s(m, 8, 400e9, 10e-6, 3e-6)
    f = col.LOW_LATENCY_BANDWIDTH_FRACTION
    assert float(t) == pytest.approx(10e-6 + 1.75 * m / (f * 400e9))
    assert float(t) < 10e-6 + 14 * 3e-6


def test_allreduce_without_step_latency_is_the_single_alpha_model() -> None:
    m = np.array([1e3, 1e6, 1e9])
    t = col.allreduce_time_s(m, 8, 400e9, 10e-6)
    np.testing.assert_allclose(t, 10e-6 + 1.75 * m / 400e9)


def test_ring_inside_one_node_runs_at_scaleup() -> None:
    bw = col.ring_link_bytes_per_s(np.array([2.0, 8.0]), 8, 405e9, 42.5e9)
    assert np.allclose(bw, 405e9)


def test_ring_across_nodes_runs_over_every_nic_of_a_node() -> None:
    # 16 ranks on two 8-GPU nodes, NVLink 405 GB/s, NIC 42.5 GB/s: a rank's NIC carries 1/8 of
    # its bus bytes, NVLink 7/8: max(0.875 / 405e9, 0.125 / 42.5e9) -> 8 x 42.5 = 340 GB/s,
    # not one NIC's 42.5 GB/s.
    bw = float(col.ring_link_bytes_per_s(16, 8, 405e9, 42.5e9))
    assert bw == pytest.approx(8 * 42.5e9)
    # a fast NIC leaves NVLink the bottleneck: 405e9 / (7/8)
    fast = float(col.ring_link_bytes_per_s(16, 8, 405e9, 400e9))
    assert fast == pytest.approx(405e9 / 0.875)
    # one rank per node: every hop crosses a NIC
    assert float(col.ring_link_bytes_per_s(4, 1, 405e9, 42.5e9)) == pytest.approx(42.5e9)
