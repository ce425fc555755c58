"""Request traces: hit-rate distributions, prefix-cache capacity curves, workload profiles.

``pddplan hitrate`` is the command; this package is its library:

- :func:`replay_trace` streams a Mooncake-style JSONL trace (or a per-request CSV) through
  prefix caches (unbounded, and exact LRU at any number of capacities) and returns per-request
  arrays (:class:`TraceReplay`);
- :func:`analyze` applies the warm-up window and computes histograms, lengths, arrival rate and
  the anomalous share (:class:`TraceAnalysis`);
- :func:`capacity_curve` does both and returns the :class:`CapacityCurve` (arrays
  ``capacity_tokens``, ``mean_hit_rate``, ``share_above_95``, ``histograms``, optional
  ``samples``), which :meth:`CapacityCurve.to_csv` and :meth:`CapacityCurve.from_csv` store;
- :func:`workload_document` / :func:`write_workload` turn an analysis into a workload profile.

The cache model is described in :mod:`pddplan.trace.cache`.
"""

from __future__ import annotations

from pddplan.trace.analysis import TraceAnalysis, analyze, capacity_curve
from pddplan.trace.cache import ReferenceLru, prefix_hits
from pddplan.trace.replay import (
    UNBOUNDED,
    TraceReplay,
    parse_capacities,
    parse_capacity,
    replay_trace,
)
from pddplan.trace.stats import DEFAULT_EDGES, CapacityCurve, curve_from_hits
from pddplan.trace.workload import workload_document, workload_yaml, write_workload

__all__ = [
    "DEFAULT_EDGES",
    "UNBOUNDED",
    "CapacityCurve",
    "ReferenceLru",
    "TraceAnalysis",
    "TraceReplay",
    "analyze",
    "capacity_curve",
    "curve_from_hits",
    "parse_capacities",
    "parse_capacity",
    "prefix_hits",
    "replay_trace",
    "workload_document",
    "workload_yaml",
    "write_workload",
]
