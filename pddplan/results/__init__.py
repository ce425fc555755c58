"""Typed results, one per command, and the flat records every renderer works from.

Each result's figures are computed when :mod:`pddplan.api` builds it; ``rows()`` and
``sections()`` give the tables (CSV), ``to_json()`` the JSON document (with ``schema_version``),
``report()`` the :class:`Report` the renderers in :mod:`pddplan.report` format.
"""

from typing import TYPE_CHECKING

from pddplan.results.base import SCHEMA_VERSION, Report, Result, Row, Section, json_ready

if TYPE_CHECKING:
    from pddplan.results.bathtub import BathtubResult
    from pddplan.results.cache import CacheResult
    from pddplan.results.calibrate import CalibrateResult, LinkCalibrateResult
    from pddplan.results.hitrate import HitrateResult
    from pddplan.results.pareto import ParetoResult
    from pddplan.results.planreport import PlanReportResult
    from pddplan.results.robust import RobustResult
    from pddplan.results.simulate import SimulateResult
    from pddplan.results.solve import SolveResult
    from pddplan.results.whatif import BreakevenResult, ChipsRankResult, SweepResult

__all__ = [
    "SCHEMA_VERSION",
    "BathtubResult",
    "BreakevenResult",
    "CacheResult",
    "CalibrateResult",
    "LinkCalibrateResult",
    "ChipsRankResult",
    "PlanReportResult",
    "ParetoResult",
    "HitrateResult",
    "Report",
    "Result",
    "RobustResult",
    "Row",
    "Section",
    "SimulateResult",
    "SolveResult",
    "SweepResult",
    "json_ready",
]

_LAZY = {
    "SolveResult": "pddplan.results.solve",
    "BathtubResult": "pddplan.results.bathtub",
    "CacheResult": "pddplan.results.cache",
    "SweepResult": "pddplan.results.whatif",
    "BreakevenResult": "pddplan.results.whatif",
    "ChipsRankResult": "pddplan.results.whatif",
    "SimulateResult": "pddplan.results.simulate",
    "HitrateResult": "pddplan.results.hitrate",
    "CalibrateResult": "pddplan.results.calibrate",
    "LinkCalibrateResult": "pddplan.results.calibrate",
    "RobustResult": "pddplan.results.robust",
    "PlanReportResult": "pddplan.results.planreport",
    "ParetoResult": "pddplan.results.pareto",
}


def __getattr__(name: str) -> object:
    # the typed results load on first use, so that light importers (the CLI's --help) stay fast
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'pddplan.results' has no attribute {name!r}")
