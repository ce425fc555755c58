"""The result of ``hitrate``: a trace's hit-rate distributions, lengths, rate and capacity curve."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pddplan.results.base import Report, Result

if TYPE_CHECKING:
    from pddplan.trace.analysis import TraceAnalysis
    from pddplan.trace.stats import CapacityCurve


@dataclass(frozen=True)
class HitrateResult(Result):
    """A trace replayed through prefix caches, with its report built from the analysis.

    Attributes
    ----------
    analysis : the trace analysis (replay, statistics, capacity curve).
    workload_file, curve_file : files written (None when not asked for).
    built : the sections and JSON document, computed when the result was built.
    """

    analysis: TraceAnalysis
    workload_file: str | None
    curve_file: str | None
    built: Report

    @property
    def curve(self) -> CapacityCurve:
        return self.analysis.curve

    @property
    def rate_rps(self) -> float | None:
        """[req/s] the trace's arrival rate (None without timestamps)."""
        return self.analysis.stats.rate_rps

    def report(self) -> Report:
        return copy.deepcopy(self.built)
