"""The cache profile: one tier a prefix cache can live in (host DRAM, local NVMe, a remote
store over RDMA), its capacity per node, its bandwidth to the GPU and its price.

HBM is not a cache profile: what HBM holds after weights and the decode batch follows from the
chip and model profiles. docs/cache.md describes the kind.
"""

from typing import Annotated, Literal

from pydantic import Field, model_validator
from typing_extensions import Self

from pddplan import units
from pddplan.spec.base import Source, Strict, Usd, empty_list

#: [GB] The largest cache a node may hold (1 PB): a sanity bound, not a datasheet figure.
MAX_CACHE_GB_PER_NODE = 1e6
CacheGb = Annotated[float, Field(gt=0, le=MAX_CACHE_GB_PER_NODE)]
#: [GB/s] A tier's bandwidth to the GPU: above zero (a tier that cannot be read is no tier), at
#: most 100 TB/s.
CacheGbPerS = Annotated[float, Field(gt=0, le=1e5)]
TIERS = ("host-dram", "local-nvme", "remote-store")


class CachePrice(Strict):
    """What a GB of the tier costs: rented per GB-hour, or bought (capex per GB spread over
    ``amortization_years``, as chips are). Exactly one of the two."""

    usd_per_gb_hour: Usd | None = Field(default=None, description="rental per GB and hour")
    capex_usd_per_gb: Usd | None = Field(default=None, description="purchase price per GB")
    amortization_years: Annotated[float, Field(gt=0, le=50)] = Field(
        default=4.0, description="years over which a purchased GB's capex is spread"
    )
    source: Source

    @model_validator(mode="after")
    def _one_form(self) -> Self:
        if (self.usd_per_gb_hour is None) == (self.capex_usd_per_gb is None):
            raise ValueError("give either usd_per_gb_hour or capex_usd_per_gb (exactly one)")
        return self

    @property
    def usd_per_gb_hour_amortized(self) -> float:
        """[USD/(GB h)] the rental price, or the capex over the amortization period."""
        if self.usd_per_gb_hour is not None:
            return self.usd_per_gb_hour
        assert self.capex_usd_per_gb is not None
        return units.amortized_usd_per_hour(self.capex_usd_per_gb, self.amortization_years)


class Cache(Strict):
    kind: Literal["cache"] = "cache"
    name: str
    tier: Literal["host-dram", "local-nvme", "remote-store"]
    notes: str = ""
    max_capacity_gb_per_node: CacheGb = Field(
        description="the most this tier can hold per node (its installed memory or storage)"
    )
    read_gb_per_s: CacheGbPerS = Field(description="read bandwidth from the tier to the GPUs")
    write_gb_per_s: CacheGbPerS = Field(description="write bandwidth from the GPUs to the tier")
    price: CachePrice
    source: Source
    estimated: list[str] = Field(default_factory=empty_list)
