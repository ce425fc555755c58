"""Tensor-parallel all-reduce against published nccl-tests / rccl-tests measurements.

Model: :func:`pddplan.models.collectives.allreduce_time_s` with each chip profile's scale-up
numbers (one-way datasheet bandwidth x ``scaleup_efficiency``, ``scaleup_latency_us``,
``scaleup_step_latency_us``), one node, ``ranks`` GPUs.

Sources and setups
------------------
- MI300X, 8 GPUs: AMD Instinct MI300X acceptance-testing guide (ROCm documentation,
  "Performance benchmarking", RCCL Allreduce example output): ``all_reduce_perf -b 8 -e 8G -f 2
  -g 8`` (rccl-tests, one process, float sum), out-of-place times. The profile's three scale-up
  numbers were read off the same run's two ends (the <= 64 KiB plateau, the 8 and 64 MiB bulk
  intercepts, the 8 GiB bus bandwidth); the rows below are the sizes in between and above, not
  used to set them (8 MiB and 64 MiB, used for the step latency, are left out).
- Large-message bus bandwidth, 8 GPUs in one node (the time is ``2 (n-1)/n m / busbw``):
  H200: NVIDIA/nccl-tests issue #272 (8x H200, NCCL 2.20.3, ``-b 64k -e 4G -f 2 -g 1``, srun 8
  ranks), peak busbw 475 GB/s at 4 GiB; H100: NVIDIA/nccl-tests issue #290, NVIDIA's reply
  (AddyLaddy): a single-node 476 GB/s is "in the expected range for H100" (NVLink SHARP); A100:
  NVIDIA/nccl-tests issue #175 (8x A100 SXM, ``-b 8 -e 4G -f 2 -g 8``) 232.54 GB/s; B200:
  NVIDIA/nccl issue #1807 (8x B200, NCCL 2.27.1) "830+" GB/s; H800: NVIDIA/nccl issue #1374
  (8x H800) 215 GB/s. Taken at 4 GiB, where nccl-tests reaches its peak.

No public 4-GPU table was found for these chips: 4-rank rows are missing (a gap, see the slice
report), as are small- and mid-message rows for the NVIDIA chips.

Tolerance: 25% on the time.
"""

from __future__ import annotations

import pytest

from pddplan import units
from pddplan.io.loader import Registry
from pddplan.models.collectives import allreduce_time_s

TOLERANCE = 0.25
MIB = 1 << 20

#: (message bytes, measured out-of-place time [us]): rccl-tests on 8 MI300X (see above).
MI300X_8GPU_US = [
    (1 * MIB, 58.47),
    (2 * MIB, 59.86),
    (4 * MIB, 90.74),
    (16 * MIB, 169.7),
    (32 * MIB, 257.6),
    (128 * MIB, 801.8),
    (1024 * MIB, 6003.9),
]

#: (chip profile, measured 8-GPU bus bandwidth at large messages [GB/s]) (see above).
LARGE_MESSAGE_BUSBW_GB_PER_S = [
    ("h200-sxm", 475.0),
    ("h100-sxm", 476.0),
    ("a100-80g-sxm", 232.54),
    ("b200", 830.0),
    pytest.param(
        "h800-sxm",
        215.0,
        marks=pytest.mark.xfail(
            strict=True,
            reason="known gap: the H800 profile's 0.78 scale-up efficiency comes from DeepEP's "
            "all-to-all (156 GB/s); NCCL's NVLink SHARP all-reduce reaches 215 GB/s busbw",
        ),
    ),
]


@pytest.fixture(scope="module")
def reg() -> Registry:
    return Registry.default()


def _model_us(reg: Registry, chip: str, message_bytes: float, ranks: int) -> float:
    c = reg.load("chip", chip)
    d = c.derates
    beta = (
        units.gb_per_s_to_bytes_per_s(c.datasheet.scaleup_bandwidth_gb_per_s)
        / 2.0
        * d.scaleup_efficiency
    )
    t = allreduce_time_s(
        message_bytes, ranks, beta, d.scaleup_latency_us * 1e-6, d.scaleup_step_latency_us * 1e-6
    )
    return float(t) * 1e6


@pytest.mark.parametrize(("message_bytes", "measured_us"), MI300X_8GPU_US)
def test_mi300x_8gpu_allreduce_matches_rccl_tests(
    reg: Registry, message_bytes: int, measured_us: float
) -> None:
    assert _model_us(reg, "mi300x", message_bytes, 8) == pytest.approx(measured_us, rel=TOLERANCE)


@pytest.mark.parametrize(("chip", "busbw_gb_per_s"), LARGE_MESSAGE_BUSBW_GB_PER_S)
def test_large_message_allreduce_matches_nccl_tests_busbw(
    reg: Registry, chip: str, busbw_gb_per_s: float
) -> None:
    m = 4096 * MIB
    measured_us = 2.0 * 7.0 / 8.0 * m / (busbw_gb_per_s * 1e9) * 1e6
    assert _model_us(reg, chip, m, 8) == pytest.approx(measured_us, rel=TOLERANCE)
