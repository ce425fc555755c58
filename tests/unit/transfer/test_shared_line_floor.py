"""Transfers sharing a line never finish sooner than the line can carry them.

Slow start used to end at the bandwidth-delay product of a transfer's own rate ceiling
whatever the load, its bytes kept off the shared line: 1,000 transfers of 29 MB on a
10 Gbit/s line (1.175 GB/s of goodput) took 8.1 s each on average, with 14.7 GB sent "off
the line" in 0.14 s, where carrying 29 GB takes at least 29e9 / 1.175e9 = 24.7 s. Slow start
now ends at the bandwidth-delay product of the rate the line leaves the transfer,
``min(r_cap, C (1 - rho))`` (:func:`pddplan.models.network.rate_left_bytes_per_s`).
"""

from __future__ import annotations

import numpy as np
import pytest

from pddplan import timing
from pddplan.deployment import LinkNumbers
from pddplan.io.loader import Registry
from pddplan.models import network
from pddplan.transfer import transfer_times


@pytest.mark.parametrize("concurrent", [1, 2, 10, 100, 1000])
@pytest.mark.parametrize("payload_bytes", [1e6, 29e6, 1e9])
def test_mean_time_is_at_least_the_lines_floor(concurrent: int, payload_bytes: float) -> None:
    """N transfers of x bytes started together: the last ends no sooner than ``N x / C``, and
    processor sharing gives each about that; the mean is at least the floor, within rounding."""
    link = LinkNumbers.of(Registry.default().load("link", "wan-10g-cross-city"))
    p = transfer_times(link, [payload_bytes], concurrent).points[0]
    floor_s = concurrent * payload_bytes / link.goodput_bytes_per_s
    assert p.mean_s >= floor_s * (1 - 1e-9), (p.mean_s, floor_s)
    # the rounds shown are those the lead holds
    assert p.lead_s == pytest.approx(
        (link.handshake_rtts + p.slow_start_rounds) * link.rtt_s + link.per_transfer_latency_s
    )


def test_idle_line_is_unchanged_and_a_full_line_sends_nothing_off_it() -> None:
    c, cap = 1e10, 2e8
    assert network.rate_left_bytes_per_s(cap, c, 0.0) == cap
    assert network.rate_left_bytes_per_s(cap, c, 0.99) == pytest.approx(1e8)
    assert network.rate_left_bytes_per_s(cap, c, 1.0) == 0.0
    kw = dict(goodput_bytes_per_s=c, rtt_s=0.02, initial_window_bytes=14_480.0)
    idle = network.transfer_phases(4_649_000.0, **kw)
    full = network.transfer_phases(4_649_000.0, **kw, utilization=1.0)
    assert float(full[1]) == 4_649_000.0  # every byte on the line
    assert float(idle[1]) < float(full[1])


def test_closed_form_time_rises_with_the_load_as_the_share_falls() -> None:
    link = LinkNumbers.of(Registry.default().load("link", "wan-10g-cross-city"))
    loads = np.linspace(0.0, 0.95, 20)
    t = [float(timing.transfer_s(link, 29e6, float(u))) for u in loads]
    assert all(b >= a for a, b in zip(t, t[1:], strict=False)), t
