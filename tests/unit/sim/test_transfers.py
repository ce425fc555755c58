"""The simulator's transfer path against the closed form: slow start, per-flow ceilings,
processor sharing (issue 11: the simulator must reproduce more than processor sharing)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pddplan import timing
from pddplan.deployment import LinkNumbers
from pddplan.io.loader import Registry
from pddplan.sim.transfers import simulate_transfers

# 10 GB/s goodput, 20 ms RTT, IW10 x 1448 B, 4 MiB window: 209,715,200 B/s per transfer
LINK = LinkNumbers(
    name="test-line",
    bandwidth_gbit_per_s=80.0,
    goodput_bytes_per_s=1e10,
    rtt_s=0.02,
    setup_rtts=1.0,
    jitter_cv=0.0,
    price_usd_per_hour=0.0,
    max_window_bytes=4_194_304.0,
)
CAP = 209_715_200.0


@pytest.mark.parametrize("name", ["wan-100g-cross-city", "wan-10g-cross-country", "rdma-400g"])
@pytest.mark.parametrize("payload", [1e3, 4_649_000.0, 1e8, 3e9])
def test_idle_line_closed_form_and_simulation_agree(name: str, payload: float) -> None:
    link = LinkNumbers.of(Registry.default().load("link", name))
    sim = float(simulate_transfers(link, [payload])[0])
    closed = float(timing.transfer_s(link, payload))
    assert sim == pytest.approx(closed, rel=0.05)
    assert sim == pytest.approx(closed, rel=1e-9)  # same phases: in fact exact


def test_single_transfer_is_slower_than_the_line() -> None:
    # 4,649,000 B: 8 slow-start rounds (0.16 s) + 956,600 B at the cap + 10 ms = 0.17456 s,
    # against 0.4649 ms at the line's 10 GB/s
    t = float(simulate_transfers(LINK, [4_649_000.0])[0])
    assert t == pytest.approx(0.16 + 956_600.0 / CAP + 0.01)
    assert t > 100 * 4_649_000.0 / LINK.goodput_bytes_per_s


def test_slow_start_rounds_in_the_simulator() -> None:
    # one initial window (14,480 B) needs no round trip; twice it waits one (and sends the rest
    # at the cap); three windows' worth ends in round 1 as well
    t = simulate_transfers(LINK, [14_480.0, 28_960.0, 43_440.0])
    np.testing.assert_allclose(
        t, [14_480.0 / CAP + 0.01, 0.02 + 14_480.0 / CAP + 0.01, 0.02 + 28_960.0 / CAP + 0.01]
    )


def test_two_capped_transfers_do_not_slow_each_other() -> None:
    # each is capped at 209.7 MB/s, far below C / 2 = 5 GB/s
    alone = float(simulate_transfers(LINK, [1e9])[0])
    both = simulate_transfers(LINK, [1e9, 1e9])
    np.testing.assert_allclose(both, [alone, alone])


def test_many_transfers_share_the_line() -> None:
    # 100 transfers of 1 GB on a 10 GB/s line: C / 100 = 100 MB/s < the 209.7 MB/s cap, so
    # processor sharing binds. Slow start ends at the bandwidth-delay product of the 100 MB/s
    # each gets (2 MB): 8 rounds (14,480 B x 2^7 = 1.85 MB < 2 MB), 14,480 x 255 = 3,692,400 B
    # sent in them, then (1e9 - 3,692,400) B at 100 MB/s each. (At the cap's 4.19 MB it was 9
    # rounds and 7,399,280 B, each transfer's as if alone, 740 MB off the line in all.)
    t = simulate_transfers(LINK, [1e9] * 100, utilization=0.99)
    expected = 0.16 + (1e9 - 3_692_400.0) / 1e8 + 0.01
    np.testing.assert_allclose(t, expected, rtol=1e-9)
    # the closed form gives the same with rho = 1 - 1/100 (C (1 - rho) = C / 100)
    assert float(timing.transfer_s(LINK, 1e9, 0.99)) == pytest.approx(expected)


def test_more_streams_lift_the_cap_in_both_models() -> None:
    four = dataclasses.replace(LINK, streams_per_transfer=4)
    # 4 x 209.7 MB/s; slow start from 4 initial windows (57,920 B), K = 9 rounds again
    sim = float(simulate_transfers(four, [3e9])[0])
    assert sim == pytest.approx(float(timing.transfer_s(four, 3e9)))
    assert sim == pytest.approx(0.18 + (3e9 - 57_920.0 * 511) / (4 * CAP) + 0.01)
    assert sim < float(simulate_transfers(LINK, [3e9])[0]) / 3.5


def test_cold_connection_pays_the_handshake() -> None:
    cold = dataclasses.replace(LINK, connection_reuse=False)
    warm_t = float(simulate_transfers(LINK, [1e6])[0])
    assert float(simulate_transfers(cold, [1e6])[0]) == pytest.approx(warm_t + 0.02)
    # a warm connection that keeps its window (no restart after idle) skips slow start
    kept = dataclasses.replace(LINK, slow_start_after_idle=False)
    assert float(timing.transfer_s(kept, 1e6)) == pytest.approx(1e6 / CAP + 0.01)
