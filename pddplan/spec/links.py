"""The link profile: a WAN line (TCP) or an RDMA fabric."""

import math
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    StrictBool,
    field_validator,
    model_serializer,
    model_validator,
)
from typing_extensions import Self

from pddplan.labels import plain
from pddplan.spec.base import Efficiency, Gbit, Source, Strict, Usd, empty_list


class PriceTier(Strict):
    """One size a carrier leases: a line of up to ``bandwidth_gbit_per_s`` for ``usd_per_month``."""

    bandwidth_gbit_per_s: Gbit = Field(description="the tier's line rate, one direction")
    usd_per_month: Usd = Field(description="lease price of a line of this tier per month")


class LinePrice(Strict):
    """How a leased line's price follows its bandwidth: tiers or a price per Gbit/s.

    Exactly one of ``tiers`` and ``usd_per_month_per_gbit_per_s`` is given. With tiers, a line
    pays the smallest tier at or above its bandwidth (lines are leased in these sizes); a
    bandwidth above the largest tier has no price. docs/links.md explains both forms.
    """

    tiers: list[PriceTier] = Field(
        default_factory=empty_list,
        description="sizes leased, by increasing bandwidth; a faster tier never costs less",
    )
    usd_per_month_per_gbit_per_s: Usd | None = Field(
        default=None, description="a price per Gbit/s of line rate and month"
    )
    source: Source

    @field_validator("tiers")
    @classmethod
    def _tiers_monotone(cls, tiers: list[PriceTier]) -> list[PriceTier]:
        for lo, hi in zip(tiers, tiers[1:], strict=False):
            if hi.bandwidth_gbit_per_s <= lo.bandwidth_gbit_per_s:
                raise ValueError(
                    "tiers must be listed by strictly increasing bandwidth_gbit_per_s "
                    f"({hi.bandwidth_gbit_per_s:g} after {lo.bandwidth_gbit_per_s:g})"
                )
            if hi.usd_per_month < lo.usd_per_month:
                raise ValueError(
                    "a faster tier must not cost less: usd_per_month non-decreasing with "
                    f"bandwidth ({hi.usd_per_month:g} at {hi.bandwidth_gbit_per_s:g} Gbit/s "
                    f"after {lo.usd_per_month:g} at {lo.bandwidth_gbit_per_s:g} Gbit/s)"
                )
        return tiers

    @model_validator(mode="after")
    def _one_form(self) -> Self:
        if bool(self.tiers) == (self.usd_per_month_per_gbit_per_s is not None):
            raise ValueError("give either tiers or usd_per_month_per_gbit_per_s (exactly one)")
        return self

    @property
    def max_bandwidth_gbit_per_s(self) -> float:
        """The largest bandwidth this model prices [Gbit/s] (the top tier; inf per Gbit/s)."""
        return self.tiers[-1].bandwidth_gbit_per_s if self.tiers else math.inf

    @property
    def basis(self) -> str:
        """What the price follows, in words: ``"its tiers"`` or ``"its price per Gbit/s"``."""
        return "its tiers" if self.tiers else "its price per Gbit/s"

    def usd_per_month(self, bandwidth_gbit_per_s: float) -> float:
        """Lease price of a line of ``bandwidth_gbit_per_s`` [USD/month].

        Raises
        ------
        ValueError
            Above the largest tier (no price is known there).
        """
        if self.usd_per_month_per_gbit_per_s is not None:
            return self.usd_per_month_per_gbit_per_s * bandwidth_gbit_per_s
        for tier in self.tiers:
            if bandwidth_gbit_per_s <= tier.bandwidth_gbit_per_s:
                return tier.usd_per_month
        top = self.tiers[-1].bandwidth_gbit_per_s
        raise ValueError(
            f"bandwidth_gbit_per_s {bandwidth_gbit_per_s:g} is above the largest price tier "
            f"({top:g} Gbit/s); keep it at most {top:g}, add a tier to price.tiers or give a "
            "flat price_usd_per_month"
        )


class Link(Strict):
    """A WAN line (TCP) or an RDMA fabric. docs/links.md explains every key and its source.

    The TCP keys (``initial_window_segments`` to ``slow_start_after_idle``) apply to ``wan``
    links only; an ``rdma`` link starts at its goodput (no slow start, no window ceiling).
    """

    kind: Literal["link"] = "link"
    name: str
    type: Literal["wan", "rdma"]
    notes: str = ""
    bandwidth_gbit_per_s: Gbit = Field(description="line rate, one direction, in Gbit/s")
    rtt_ms: Annotated[float, Field(ge=0, le=10_000)] = Field(
        description="round-trip time in ms (at most 10 s: a geostationary hop is ~0.6 s)"
    )
    efficiency: Efficiency = Field(
        description="goodput / line rate: protocol headers and framing only (slow start, "
        "windows and loss are modelled separately)"
    )
    jitter_cv: Annotated[float, Field(ge=0, le=10)] = Field(
        default=0.0, description="coefficient of variation of the payload factor (lognormal)"
    )
    setup_rtts: Annotated[float, Field(ge=0, le=10)] = Field(
        default=1.0,
        description="round trips of connection set-up before the first data byte on a cold "
        "connection (TCP handshake 1, RFC 9293; +1 for TLS 1.3); paid only without "
        "connection_reuse",
    )
    connection_reuse: StrictBool = Field(
        default=True,
        description="transfers use pooled, already-open connections (no set-up round trips)",
    )
    per_transfer_latency_ms: Annotated[float, Field(ge=0, le=10_000)] = Field(
        default=0.0,
        description="fixed time per transfer besides the round trips (posting work requests, "
        "completion), in ms",
    )
    initial_window_segments: Annotated[int, Field(ge=1, le=1000)] = Field(
        default=10, description="TCP initial congestion window in segments (RFC 6928: 10)"
    )
    mss_bytes: Annotated[int, Field(ge=536, le=65_495)] = Field(
        default=1448,
        description="TCP maximum segment size in bytes (1500-byte MTU minus IP, TCP and "
        "timestamp headers: 1448)",
    )
    max_window_bytes: Annotated[float, Field(ge=1_000, le=2**30)] = Field(
        default=4_194_304,
        description="largest window of one TCP stream in bytes (socket buffer ceiling; Linux "
        "tcp_wmem max 4 MiB; at most 2^30 with window scaling, RFC 7323)",
    )
    loss_rate: Annotated[float, Field(ge=0, lt=0.5)] = Field(
        default=0.0,
        description="TCP segment loss probability; sets the Mathis et al. 1997 ceiling "
        "MSS / RTT * sqrt(3/2) / sqrt(p) (0: no loss ceiling)",
    )
    streams_per_transfer: Annotated[int, Field(ge=1, le=1024)] = Field(
        default=1, description="parallel TCP streams one transfer is striped over"
    )
    slow_start_after_idle: StrictBool = Field(
        default=True,
        description="a pooled connection idle past its retransmission timeout restarts slow "
        "start (RFC 2861; Linux net.ipv4.tcp_slow_start_after_idle, default 1)",
    )
    price_usd_per_month: Usd = Field(
        default=0.0,
        description="lease price of the line per month; when given, a flat price whatever the "
        "bandwidth (a quote); when absent, the price model's price at bandwidth_gbit_per_s "
        "(0 without one: an RDMA fabric is part of the cluster)",
    )
    price: LinePrice | None = Field(
        default=None,
        description="how the lease price follows the bandwidth (tiers or per Gbit/s), with its "
        "source; used unless a flat price_usd_per_month is given",
    )
    source: Source
    estimated: list[str] = Field(default_factory=empty_list)

    @model_validator(mode="after")
    def _estimated_keys_exist(self) -> Self:
        keys = set(type(self).model_fields) - {
            "kind",
            "name",
            "type",
            "notes",
            "source",
            "estimated",
        }
        for key in self.estimated:
            if key not in keys:
                raise ValueError(
                    f"estimated names unknown key {key!r}; allowed: {plain(sorted(keys))}"
                )
        return self

    @model_validator(mode="after")
    def _price_at_bandwidth(self) -> Self:
        # The one home of a line's price: a given price_usd_per_month is flat; otherwise the
        # price model prices the line at its bandwidth (after any override of it).
        if self.price is not None and not self.flat_price:
            object.__setattr__(self, "price_usd_per_month", self.lease_usd_per_month())
        return self

    @property
    def priced_up_to_gbit_per_s(self) -> float:
        """The largest bandwidth this line has a price for [Gbit/s] (inf for a flat price or a
        price per Gbit/s)."""
        if self.price is None or self.flat_price:
            return math.inf
        return self.price.max_bandwidth_gbit_per_s

    @property
    def flat_price(self) -> bool:
        """Whether ``price_usd_per_month`` was given (a flat price), not priced by ``price``."""
        return "price_usd_per_month" in self.model_fields_set

    def lease_usd_per_month(self, bandwidth_gbit_per_s: float | None = None) -> float:
        """Lease price of this line at ``bandwidth_gbit_per_s`` (default: its own) [USD/month]:
        the flat ``price_usd_per_month`` when given, else the price model's."""
        if self.price is None or self.flat_price:
            return self.price_usd_per_month
        bw = self.bandwidth_gbit_per_s if bandwidth_gbit_per_s is None else bandwidth_gbit_per_s
        return self.price.usd_per_month(bw)

    @property
    def price_basis(self) -> str:
        """Where the line's price comes from, in words (``"its tiers"``, ``"a flat price"``)."""
        if self.price is None or self.flat_price:
            return "a flat price"
        return self.price.basis

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        # a price the model computed is not written back: reloaded, it would read as flat
        data = handler(self)
        if self.price is not None and not self.flat_price and isinstance(data, dict):
            data.pop("price_usd_per_month", None)
        return data
