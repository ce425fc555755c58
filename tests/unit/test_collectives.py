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


def test_overlap_takes_the_longer() -> None:
    assert float(col.overlapped_time_s(2.0, 1.0, True)) == 2.0
    assert float(col.overlapped_time_s(2.0, 1.0, False)) == 3.0
