"""The link profile: a WAN line (TCP) or an RDMA fabric."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, model_validator

from pddplan.spec.base import Efficiency, Gbit, Source, Strict, Usd


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
    price_usd_per_month: Usd = 0.0
    source: Source
    estimated: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _estimated_keys_exist(self) -> Link:
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
                raise ValueError(f"estimated names unknown key {key!r}; allowed: {sorted(keys)}")
        return self
