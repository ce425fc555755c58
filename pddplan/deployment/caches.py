"""Cache tiers bound to numbers: the capacity a P node holds in each tier, what it costs, and
how fast a hit is read back (docs/cache.md)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pddplan import units
from pddplan.models import cachetier


@dataclass(frozen=True)
class CacheTierNumbers:
    """One tier of a P node's prefix cache, in SI units."""

    profile: str
    capacity_bytes_per_node: float
    read_bytes_per_s: float
    usd_per_hour_per_node: float

    @classmethod
    def of(cls, spec, capacity_gb_per_node: float) -> CacheTierNumbers:
        """From a cache profile (:class:`~pddplan.spec.caches.Cache`) and a capacity [GB]."""
        return cls(
            profile=spec.name,
            capacity_bytes_per_node=units.gb_to_bytes(capacity_gb_per_node),
            read_bytes_per_s=units.gb_per_s_to_bytes_per_s(spec.read_gb_per_s),
            usd_per_hour_per_node=capacity_gb_per_node * spec.price.usd_per_gb_hour_amortized,
        )


@dataclass(frozen=True)
class CacheNumbers:
    """A P node's prefix cache over its tiers: where hits are loaded from and what it costs."""

    tiers: tuple[CacheTierNumbers, ...]
    kv_bytes_per_token: float  # [bytes] one replica, all layers
    layers: int
    #: [-] share of the hit bytes each tier serves, from the LRU replay (None: each tier's share
    #: of the capacity)
    hit_shares: tuple[float, ...] | None = None

    @property
    def capacity_bytes_per_node(self) -> float:
        return float(sum(t.capacity_bytes_per_node for t in self.tiers))

    @property
    def capacity_tokens_per_node(self) -> float:
        return self.capacity_bytes_per_node / self.kv_bytes_per_token

    @property
    def usd_per_hour_per_node(self) -> float:
        return float(sum(t.usd_per_hour_per_node for t in self.tiers))

    @property
    def shares(self) -> tuple[float, ...]:
        """Share of a hit each tier serves [-]: ``hit_shares`` from the replay, else each
        tier's part of the capacity (see docs/cache.md)."""
        if self.hit_shares is not None:
            return self.hit_shares
        total = self.capacity_bytes_per_node
        if total <= 0:
            return tuple(0.0 for _ in self.tiers)
        return tuple(t.capacity_bytes_per_node / total for t in self.tiers)

    def load_s(self, cached_tokens) -> np.ndarray:
        """Time to read the cached prefix of each request from the tiers [s]."""
        b = np.asarray(cached_tokens, dtype=float) * self.kv_bytes_per_token
        return np.asarray(
            cachetier.tier_load_s(b, self.shares, [t.read_bytes_per_s for t in self.tiers]),
            dtype=float,
        )


def cache_numbers(rs, model) -> CacheNumbers | None:
    """The cache tiers of a resolved scenario at its chosen capacities
    (``rs.cache_capacity_gb``), or None when none is chosen (hits free in HBM)."""
    cap = getattr(rs, "cache_capacity_gb", None)
    section = rs.scenario.cache
    if cap is None or section is None:
        return None
    tiers = tuple(
        CacheTierNumbers.of(rs.caches[t.profile], gb)
        for t, gb in zip(section.tiers, cap, strict=True)
    )
    shares = getattr(rs, "cache_hit_shares", None)
    return CacheNumbers(tiers, model.kv_bytes_per_token, model.layers, shares)
