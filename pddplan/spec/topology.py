"""The topology of a many-datacenter scenario: sites, leased lines between them, traffic sources.

A topology file is a scenario file whose two-site keys (``link``, ``rdma``, ``roles``, ``sla``,
``workload``, ``rate_rps``) are replaced by ``sites:``, ``lines:`` and ``traffic:``
(docs/topology.md). The cross references (a line's sites, a source's sites, connectivity) are
checked by :func:`pddplan.topology.spec_checks`, which names the site, line or source at fault.
"""

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, model_validator
from typing_extensions import Self

from pddplan.spec.base import NonNegInt, PositiveUsd, Rate, Source, Strict, Usd
from pddplan.spec.scenario_spec import RoleChoice, Serving, Sla
from pddplan.spec.uncertainty import Uncertainty
from pddplan.spec.workloads import Workload

#: [-] Group index of standard single-mode fibre at 1550 nm (Corning SMF-28 datasheet: 1.4682;
#: ITU-T G.652 fibre), the figure pddplan's link profiles derive their RTT from.
FIBRE_GROUP_INDEX = 1.4682
#: [m/s] Speed of light in vacuum (SI definition).
SPEED_OF_LIGHT_M_PER_S = 299_792_458.0
#: [s/km] One-way propagation delay of a kilometre of fibre route: n / c (~4.9 us/km).
FIBRE_DELAY_S_PER_KM = FIBRE_GROUP_INDEX * 1000.0 / SPEED_OF_LIGHT_M_PER_S

RouteKm = Annotated[float, Field(ge=0, le=40_000, description="fibre route length, one way")]
RttMs = Annotated[float, Field(ge=0, le=10_000)]


def route_rtt_ms(route_km: float) -> float:
    """Round-trip propagation time of a fibre route [ms]: ``2 L n / c``
    (:data:`FIBRE_GROUP_INDEX`)."""
    return 2.0 * route_km * FIBRE_DELAY_S_PER_KM * 1000.0


class SiteChip(Strict):
    """A chip kind a site has or can get, and what it costs there."""

    owned: NonNegInt = Field(default=0, description="chips the site owns; used first")
    owned_usd_per_chip_hour: Usd = Field(
        default=0.0, description="what an owned chip costs per hour (opex, or amortized capex)"
    )
    rent_limit: NonNegInt | None = Field(
        default=None, description="chips that may be rented beyond the owned ones (none: no limit)"
    )
    rental_usd_per_hour: PositiveUsd | None = Field(
        default=None,
        description="the local rental price per chip, bounded as a chip profile's "
        "(none: the chip profile's)",
    )


class SiteRoles(Strict):
    """Which roles a site can host, with the chips and instance sizes searched for each."""

    P: RoleChoice | None = None
    RLD: RoleChoice | None = None
    MD: RoleChoice | None = None


class Site(Strict):
    name: Annotated[str, Field(min_length=1, max_length=100)]
    description: str = ""
    roles: SiteRoles
    chips: dict[str, SiteChip] = Field(
        default_factory=dict,
        description="chip profile name -> inventory and local price (absent: rented without "
        "limit at the chip profile's price)",
    )
    rdma: str = Field(default="rdma-400g", description="the site's RDMA fabric link profile")
    lat_deg: Annotated[float, Field(ge=-90, le=90)] | None = Field(
        default=None, description="latitude, for the picture only (`topology --plot`)"
    )
    lon_deg: Annotated[float, Field(ge=-180, le=180)] | None = Field(
        default=None, description="longitude, for the picture only (`topology --plot`)"
    )


#: The most lines one pair of sites may lease (``lines[].max_count``): the planner sizes each
#: pipeline over the line once for every count up to it (a solve each), so the count bounds the
#: work; 16 lines of 100 Gbit/s carry 1.6 Tbit/s, more than any request mix here needs.
MAX_LINES_PER_PAIR = 16


class Line(Strict):
    """Leased lines between two sites: one link profile, up to ``max_count`` of them."""

    name: Annotated[str, Field(min_length=1, max_length=200)] | None = Field(
        default=None, description="default: SITE_A-SITE_B"
    )
    sites: list[str] = Field(min_length=2, max_length=2, description="the two sites it joins")
    link: str = Field(description="link profile of one line (profiles/links)")
    link_numbers: dict[str, Any] = Field(
        default_factory=dict,
        description="the link profile's numbers replaced for this line (rtt_ms, "
        "bandwidth_gbit_per_s, price_usd_per_month, ...), validated as the profile's",
    )
    route_km: RouteKm | None = Field(
        default=None, description="fibre route length: sets rtt_ms = 2 x route_km x n / c"
    )
    route_source: Source | None = None
    max_count: Annotated[int, Field(ge=1, le=MAX_LINES_PER_PAIR)] = Field(
        default=1,
        description=f"how many such lines may be leased (at most {MAX_LINES_PER_PAIR}: the "
        "planner sizes every pipeline over the line once per count)",
    )

    @model_validator(mode="after")
    def _distinct(self) -> Self:
        if self.sites[0] == self.sites[1]:
            raise ValueError(f"a line joins two different sites, not {self.sites[0]} to itself")
        if self.route_km is not None and "rtt_ms" in self.link_numbers:
            raise ValueError("give route_km or link_numbers.rtt_ms, not both")
        return self

    @property
    def label(self) -> str:
        return self.name or f"{self.sites[0]}-{self.sites[1]}"


class Access(Strict):
    """How far a source's users are from a site: a measured RTT or a fibre route length."""

    rtt_ms: RttMs | None = None
    route_km: RouteKm | None = None

    @model_validator(mode="after")
    def _one(self) -> Self:
        if (self.rtt_ms is None) == (self.route_km is None):
            raise ValueError("give exactly one of rtt_ms and route_km")
        return self

    @property
    def rtt_s(self) -> float:
        ms = self.rtt_ms if self.rtt_ms is not None else route_rtt_ms(self.route_km or 0.0)
        return ms / 1000.0


class TrafficSource(Strict):
    name: Annotated[str, Field(min_length=1, max_length=100)]
    entry: str = Field(description="the site its users' requests enter at")
    rate_rps: Rate
    workload: Annotated[
        Annotated[str, Tag("Name")] | Annotated[Workload, Tag("Workload")],
        Discriminator(lambda v: "Workload" if isinstance(v, dict | Workload) else "Name"),
    ]
    sla: Sla
    access: dict[str, Access] = Field(
        default_factory=dict,
        description="site -> RTT from the entry (or route length); a source prefills only at "
        "its entry (RTT 0 unless given) and the sites listed",
    )
    access_source: Source | None = None

    def access_rtt_s(self, site: str) -> float:
        """RTT from the entry to ``site`` [s] (0 at the entry unless ``access`` gives one)."""
        a = self.access.get(site)
        return a.rtt_s if a is not None else 0.0


class Resilience(Strict):
    """Partial failures the N-1 set covers beyond whole lines down (docs/topology.md)."""

    line_bandwidth_loss_share: Annotated[float, Field(gt=0, lt=1)] | None = Field(
        default=None,
        description="a line may lose this share of its bandwidth (every leased line of it); "
        "below 1: a whole line down is always in the set",
    )
    site_chip_loss_share: Annotated[float, Field(gt=0, le=1)] | None = Field(
        default=None,
        description="a site may lose this share of its chips (each pool there loses that share "
        "of its instances, rounded up)",
    )
    source: Source | None = None


class TopologyScenario(Strict):
    """A topology file: the shared keys of a scenario plus the topology (docs/topology.md)."""

    kind: Literal["scenario"] = "scenario"
    name: str
    description: str = ""
    model: str
    serving: Serving = Field(default_factory=Serving)
    sites: list[Site] = Field(min_length=1)
    lines: list[Line] = Field(default_factory=list)
    traffic: list[TrafficSource] = Field(min_length=1)
    share_levels: Annotated[int, Field(ge=1, le=20)] = Field(
        default=4,
        description="a source's traffic is split over pipelines in steps of 1 / share_levels",
    )
    resilience: Resilience | None = Field(
        default=None,
        description="partial failures the N-1 set covers (absent: whole lines down only)",
    )
    overrides: dict[str, dict[str, dict[str, object]]] = Field(default_factory=dict)
    uncertainty: Uncertainty | None = Field(
        default=None,
        description="input distributions for `pddplan robust`, by PATH on the topology's keys "
        "(traffic.NAME.rate_rps, lines.NAME.link_numbers.KEY; docs/topology.md)",
    )
