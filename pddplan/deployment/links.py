"""Binds a link spec (WAN line or RDMA fabric) to the numbers the network models and timing take.

:class:`LinkNumbers` is the only form of a link the timing sees (SI units).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from pddplan import units
from pddplan.deployment.keys import hash_once
from pddplan.io.memo import IdentityMemo
from pddplan.models import network
from pddplan.spec import Link

#: Bytes of one handed-over token: int64 token ID + fp32 log-probability + int32 position.
#: An assumed wire layout (estimate); the brief measures ~1.5 KB for 100 tokens.
TOKEN_ID_BYTES_PER_TOKEN = 16.0


@hash_once
@dataclass(frozen=True)
class LinkNumbers:
    """A link (WAN line or RDMA fabric) in SI numbers: the only form the timing sees.

    ``tcp`` is False for an RDMA fabric: no slow start, no window or loss ceiling.
    """

    name: str
    bandwidth_gbit_per_s: float
    goodput_bytes_per_s: float
    rtt_s: float
    setup_rtts: float  # [-] set-up round trips on a cold connection
    jitter_cv: float
    price_usd_per_hour: float
    #: where the price comes from, in words ("its tiers", "its price per Gbit/s", "a flat price")
    price_basis: str = "a flat price"
    #: the profile marks the line's price an estimate (``price_usd_per_month`` in ``estimated``)
    price_estimated: bool = False
    #: the scenario overrides the profile's bandwidth (the price follows it unless flat)
    bandwidth_overridden: bool = False
    tcp: bool = True
    connection_reuse: bool = True
    slow_start_after_idle: bool = True
    per_transfer_latency_s: float = 0.0
    initial_window_segments: int = 10
    mss_bytes: float = 1448.0
    max_window_bytes: float = 4_194_304.0
    loss_rate: float = 0.0
    streams_per_transfer: int = 1

    @classmethod
    def of(
        cls, link: Link, bandwidth_scale: float = 1.0, bandwidth_overridden: bool = False
    ) -> LinkNumbers:
        """A link's numbers, its bandwidth scaled by ``bandwidth_scale`` and priced at it
        (memoized on the link object)."""
        return _BY_OBJECT.get(
            link,
            (cls, bandwidth_scale, bandwidth_overridden),
            lambda: cls._of(link, bandwidth_scale, bandwidth_overridden),
        )

    @classmethod
    def _of(cls, link: Link, bandwidth_scale: float, bandwidth_overridden: bool) -> LinkNumbers:
        bw = link.bandwidth_gbit_per_s * bandwidth_scale
        return cls(
            name=link.name,
            bandwidth_gbit_per_s=bw,
            goodput_bytes_per_s=float(
                network.link_goodput_bytes_per_s(
                    units.gbit_per_s_to_bytes_per_s(bw), link.efficiency
                )
            ),
            rtt_s=units.ms_to_s(link.rtt_ms),
            setup_rtts=link.setup_rtts,
            jitter_cv=link.jitter_cv,
            price_usd_per_hour=units.usd_per_month_to_usd_per_hour(link.lease_usd_per_month(bw)),
            price_basis=link.price_basis,
            price_estimated="price_usd_per_month" in link.estimated,
            bandwidth_overridden=bandwidth_overridden or bandwidth_scale != 1.0,
            tcp=link.type == "wan",
            connection_reuse=link.connection_reuse,
            slow_start_after_idle=link.slow_start_after_idle,
            per_transfer_latency_s=units.ms_to_s(link.per_transfer_latency_ms),
            initial_window_segments=link.initial_window_segments,
            mss_bytes=float(link.mss_bytes),
            max_window_bytes=float(link.max_window_bytes),
            loss_rate=link.loss_rate,
            streams_per_transfer=link.streams_per_transfer,
        )

    @property
    def label(self) -> str:
        """The line in a header: its name and bandwidth, and its price when the bandwidth is
        overridden (``wan-40g-cross-city at 25 Gbit/s (price from its tiers: 13.7 $/h)``)."""
        if not self.bandwidth_overridden:
            return f"{self.name} ({self.bandwidth_gbit_per_s:.4g} Gbit/s)"
        return (
            f"{self.name} at {self.bandwidth_gbit_per_s:.4g} Gbit/s (price from "
            f"{self.price_basis}: {self.price_usd_per_hour:.4g} $/h)"
        )

    @property
    def handshake_rtts(self) -> float:
        """Set-up round trips a transfer pays: none on a pooled connection [-]."""
        return 0.0 if self.connection_reuse else self.setup_rtts

    @property
    def slow_starts(self) -> bool:
        """Whether a transfer starts from the initial window.

        A TCP transfer slow-starts on a new connection, and on a pooled one when slow start
        after idle is on (the Linux default; transfers of one pair of hosts are seconds apart,
        well past the retransmission timeout, so the window has collapsed to the initial one).
        """
        return self.tcp and (not self.connection_reuse or self.slow_start_after_idle)

    @property
    def initial_window_bytes(self) -> float:
        """Initial window of all streams of one transfer [bytes] (``inf``: no slow start)."""
        if not self.slow_starts:
            return math.inf
        return float(self.streams_per_transfer * self.initial_window_segments * self.mss_bytes)

    def transfer_params(self) -> dict[str, float]:
        """Keyword arguments of :func:`pddplan.models.network.transfer_phases` for this link."""
        if not self.tcp:
            return {
                "goodput_bytes_per_s": self.goodput_bytes_per_s,
                "rtt_s": self.rtt_s,
                "handshake_rtts": self.handshake_rtts,
                "latency_s": self.per_transfer_latency_s,
            }
        return {
            "goodput_bytes_per_s": self.goodput_bytes_per_s,
            "rtt_s": self.rtt_s,
            "handshake_rtts": self.handshake_rtts,
            "latency_s": self.per_transfer_latency_s,
            "initial_window_bytes": self.initial_window_bytes,
            "max_window_bytes": self.max_window_bytes,
            "mss_bytes": self.mss_bytes,
            "loss_rate": self.loss_rate,
            "streams": float(self.streams_per_transfer),
        }

    @functools.cached_property  # read at every transfer's phases (a frozen object's figure)
    def rate_cap_bytes_per_s(self) -> float:
        """The most one transfer can take of the idle link [bytes/s]."""
        if not self.tcp:
            return self.goodput_bytes_per_s
        return float(
            network.transfer_rate_cap_bytes_per_s(
                self.goodput_bytes_per_s,
                self.rtt_s,
                self.max_window_bytes,
                self.mss_bytes,
                self.loss_rate,
                self.streams_per_transfer,
            )
        )

    @property
    def line_efficiency(self) -> float:
        """Goodput over line rate [-]."""
        return self.goodput_bytes_per_s / units.gbit_per_s_to_bytes_per_s(self.bandwidth_gbit_per_s)


_BY_OBJECT = IdentityMemo()
