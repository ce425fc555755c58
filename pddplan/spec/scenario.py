"""A scenario resolved into typed specs: what the solver and the other questions start from.

The loader builds it (reading YAML, validating, applying overrides); nothing here reads files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pddplan.spec import Chip, Link, Model, Scenario, Workload


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


def role_chip_names(rs: ResolvedScenario, role: str) -> list[str]:
    """The chips a role may use, in the scenario's order (``*``: every chip it loaded)."""
    choice = getattr(rs.scenario.roles, role)
    if "*" in choice.chips:
        return sorted(rs.chips)
    return list(dict.fromkeys(choice.chips))
