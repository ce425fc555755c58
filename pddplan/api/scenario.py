"""Scenario resolution shared by every command that takes a scenario.

A scenario is a bundled name, a file path, ``None`` (the bundled default) or a
:class:`LoadedScenario`; ``overrides`` are validated as the same values in the file would be;
``max_chips`` and ``own`` (chip name -> chips) are checked here once for every command: whole
numbers, chip names of the catalog (with a did-you-mean) and, for ``max_chips``, chips the
scenario uses.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pddplan.errors import OptionError

if TYPE_CHECKING:
    from pddplan.io.loader import Registry, ResolvedScenario
    from pddplan.io.overrides import ScenarioSource
    from pddplan.spec import Chip, Link, Model, Scenario, Workload

PathLike = str | os.PathLike[str]
Profiles = Sequence[PathLike] | PathLike | None  # one directory, or several
Overrides = Mapping[str, Any] | None
ChipCounts = Mapping[str, int] | None


class PddplanWarning(UserWarning):
    """A diagnostic of the library (the CLI prints these on stderr)."""


def library_warning(msg: str) -> None:
    """Warn with a :class:`PddplanWarning` (the default ``warn`` of the commands)."""
    warnings.warn(msg, PddplanWarning, stacklevel=3)


@dataclass(frozen=True)
class LoadedScenario:
    """A scenario with its profiles loaded and its overrides validated.

    Keeps the parsed document, so that further overrides (:meth:`with_overrides`, or the
    ``overrides`` of any API function) are validated from memory, as the file with them would be.
    Its specs are frozen; editing them with ``model_copy(update=...)`` validates the update.
    """

    source: ScenarioSource
    overrides: Mapping[str, Any]
    resolved: ResolvedScenario = field(repr=False)

    @property
    def name(self) -> str:
        return self.resolved.scenario.name

    @property
    def file(self) -> str:
        return self.resolved.file

    @property
    def spec(self) -> Scenario:
        return self.resolved.scenario

    @property
    def model(self) -> Model:
        return self.resolved.model

    @property
    def workload(self) -> Workload:
        return self.resolved.workload

    @property
    def link(self) -> Link:
        return self.resolved.link

    @property
    def rdma(self) -> Link:
        return self.resolved.rdma

    @property
    def chips(self) -> Mapping[str, Chip]:
        return self.resolved.chips

    @property
    def registry(self) -> Registry:
        return self.source.registry

    def with_overrides(self, overrides: Overrides) -> LoadedScenario:
        """This scenario with more overrides (later ones win), validated."""
        from pddplan.io.overrides import copy_overrides

        if not overrides:
            return self
        merged = {**self.overrides, **copy_overrides(overrides)}
        return LoadedScenario(self.source, merged, self.source.resolve(merged))


def registry(profiles: Profiles) -> Registry:
    """The search path with ``profiles`` first: a sequence of directories, or one directory
    (a string is one path, not a sequence of one-letter ones)."""
    from pddplan.io.loader import Registry

    if isinstance(profiles, str | os.PathLike):
        profiles = [profiles]
    return Registry.default([Path(p) for p in profiles or ()])


def load_scenario(
    name_or_path: PathLike | None = None,
    *,
    overrides: Overrides = None,
    profiles: Profiles = None,
) -> LoadedScenario:
    """Load a scenario (bundled name or YAML file; None: the bundled default).

    Parameters
    ----------
    name_or_path : a bundled scenario's name or a scenario file.
    overrides : ``{"dotted.path": value}``, validated as the same values in the file would be.
    profiles : extra profile directories, searched before ``PDDPLAN_PROFILES`` and the bundled
        profiles (the CLI's ``--profiles``).
    """
    from pddplan.io.overrides import ScenarioSource, copy_overrides

    src = ScenarioSource.open(
        None if name_or_path is None else str(name_or_path), registry(profiles)
    )
    ov = copy_overrides(overrides)
    return LoadedScenario(src, ov, src.resolve(ov))


ScenarioLike = PathLike | LoadedScenario | None


def load(scenario: ScenarioLike, overrides: Overrides, profiles: Profiles) -> LoadedScenario:
    """``scenario`` loaded (or, loaded already, with ``overrides`` added)."""
    if isinstance(scenario, LoadedScenario):
        if profiles:
            raise OptionError(
                "profiles", "applies when a scenario is loaded; pass them to load_scenario"
            )
        return scenario.with_overrides(overrides)
    return load_scenario(scenario, overrides=overrides, profiles=profiles)


def chip_limits(
    ls: LoadedScenario, max_chips: ChipCounts = None, own: ChipCounts = None
) -> tuple[dict[str, int], dict[str, int]]:
    """``max_chips`` and ``own`` checked against the scenario: ``(limits, owned)``.

    Raises
    ------
    OptionError : a count that is not a whole number (at least 1 for ``max_chips``), a chip
        the catalog lacks (with a did-you-mean), a ``max_chips`` chip the scenario does not use.
    """
    limits = chip_counts("max_chips", max_chips, ls, least=1)
    unknown = [c for c in limits if c not in ls.chips]
    if unknown:
        raise OptionError(
            "max_chips", f"names chips the scenario does not use: {', '.join(unknown)}"
        )
    return limits, chip_counts("own", own, ls, least=0)


def inventory_on_topology(option: str) -> OptionError:
    """The error of ``own`` or ``max_chips`` (``option``) given for a topology file, whose
    sites carry their chips themselves (one message for every command)."""
    return OptionError(
        option,
        "applies to a two-site scenario; a topology file gives each site's chips: "
        "sites.NAME.chips.CHIP.owned and .rent_limit",
    )


def with_inventory(
    ls: LoadedScenario, max_chips: ChipCounts = None, own: ChipCounts = None
) -> tuple[LoadedScenario, dict[str, int]]:
    """``ls`` with ``max_chips`` and ``own`` checked (:func:`chip_limits`) and put into the
    scenario (``limits.max_chips``, ``inventory.owned``), so that the baselines obey them too;
    and the chip limits."""
    limits, owned = chip_limits(ls, max_chips, own)
    inventory = {f"limits.max_chips.{k}": v for k, v in limits.items()}
    inventory.update({f"inventory.owned.{k}": v for k, v in owned.items()})
    return (ls.with_overrides(inventory) if inventory else ls), limits


def chip_counts(
    option: str, counts: Mapping[str, int] | None, ls: LoadedScenario, *, least: int
) -> dict[str, int]:
    """``counts`` checked: whole numbers of at least ``least``, chip names of the catalog (an
    unknown name gets a did-you-mean: ``h100`` -> ``h100-sxm``)."""
    from pddplan.errors import NotFoundError

    out: dict[str, int] = {}
    if counts is not None and not isinstance(counts, Mapping):
        raise OptionError(
            option,
            f"expects a mapping of chip to count ({{'gpu-a': 8}}), not a {type(counts).__name__}",
        )
    catalog = list(ls.registry.index("chip"))
    for name, n in (counts or {}).items():
        if isinstance(n, bool) or not isinstance(n, int) or n < least:
            kind = "a positive" if least > 0 else "a"
            raise OptionError(
                option, f"expects CHIP=N with N {kind} whole number, not {name}={n!r}"
            )
        if name not in catalog:  # the registry's words, as the scenario's own keys get them
            try:
                ls.registry.path("chip", name)
            except NotFoundError as exc:
                raise OptionError(option, f"{name}={n}: {exc}") from None
        out[name] = n
    return out


#: Relative difference below which a workload's trace rate and the scenario's rate are the same
#: (the written workload rounds its rate to six decimals).
TRACE_RATE_RTOL = 1e-6


def trace_rate_note(scenario: LoadedScenario | ResolvedScenario) -> str | None:
    """One line when the scenario's workload records the rate of the trace it was made from
    (``rate_rps``, as ``pddplan hitrate`` writes it) and the scenario plans for another rate (or,
    without ``rate_rps``, for the plan of highest BCR): both rates, and how to plan for the
    trace's. None when the workload records no rate or the rates agree.

    The scenario's ``rate_rps`` is what the planner serves; the workload's is only a record.
    """
    import math

    rs = scenario.resolved if isinstance(scenario, LoadedScenario) else scenario
    trace_rps = rs.workload.rate_rps
    if trace_rps is None:
        return None
    rate_rps = rs.scenario.rate_rps
    use = f"to plan for the trace's rate: --set rate_rps={trace_rps:.10g}"
    what = f"workload {rs.workload.name} was recorded at {trace_rps:.4g} req/s (its trace's rate)"
    if rate_rps is None:
        return f"{what} but the scenario has no rate_rps: the plan of highest BCR is sought; {use}"
    if math.isclose(rate_rps, trace_rps, rel_tol=TRACE_RATE_RTOL):
        return None
    return f"{what} but the scenario's rate, {rate_rps:.4g} req/s, is planned for; {use}"
