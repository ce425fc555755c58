"""A scenario resolved into typed specs: what the solver and the other questions start from.

The loader builds it (reading YAML, validating, applying overrides); nothing here reads files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pddplan.spec import Chip, Link, Model, Scenario, Workload
from pddplan.spec.caches import Cache


@dataclass(frozen=True)
class ResolvedScenario:
    """A scenario with every profile it names loaded and overrides applied."""

    scenario: Scenario
    file: str
    model: Model
    workload: Workload
    link: Link
    rdma: Link
    chips: Mapping[str, Chip]
    #: the cache profiles the scenario's ``cache.tiers`` name (empty without ``cache:``)
    caches: Mapping[str, Cache] = field(default_factory=dict)
    #: [GB] per tier, the capacity per P node a plan is built at (None: no cache tiers, hits
    #: free in HBM as without ``cache:``; ``pddplan cache`` sets it per option)
    cache_capacity_gb: tuple[float, ...] | None = None
    #: [-] per tier, the share of the hit bytes it serves (None: its share of the capacity)
    cache_hit_shares: tuple[float, ...] | None = None


def role_chip_names(rs: ResolvedScenario, role: str) -> list[str]:
    """The chips a role may use, in the scenario's order (``*``: every chip it loaded)."""
    choice = getattr(rs.scenario.roles, role)
    if "*" in choice.chips:
        return sorted(rs.chips)
    return list(dict.fromkeys(choice.chips))
