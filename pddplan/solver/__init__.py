"""Search for plans: chips, instance sizes, counts, routing and hand-over mode.

One job per module:

- :mod:`~pddplan.solver.problem`: the typed problem built from a resolved scenario;
- :mod:`~pddplan.solver.sizing`: prefill (queueing, TTFT) and decode (MD, RLD) sizing;
- :mod:`~pddplan.solver.search`: the exact enumeration with its pruning;
- :mod:`~pddplan.solver.fleet`: a fixed fleet evaluated at any rate (goodput);
- :mod:`~pddplan.solver.modes`: rate, budget and max-BCR modes and the baselines;
- :mod:`~pddplan.solver.answer`: a scenario's question answered (plan, baselines, notes);
- :mod:`~pddplan.solver.cache`: the memo of price-independent pieces;
- :mod:`~pddplan.solver.pareto`: the frontier of plans over cost, goodput and TTFT p99;
- :mod:`~pddplan.solver.token_cost`: a plan's cost per million input and output tokens.

The request-timing physics lives in :mod:`pddplan.timing`; the solver only sizes and searches.
The frontier's names load on first use: a solve does not import :mod:`~pddplan.solver.pareto`.
"""

from typing import TYPE_CHECKING, Any

from pddplan.solver.answer import DEFAULT_RATE_CEILING_RPS, Outcome, solve_scenario
from pddplan.solver.cache import DEFAULT_CACHE, SearchCache
from pddplan.solver.modes import (
    baseline_at_rate,
    ratio,
    solve_budget,
    solve_max_bcr,
)
from pddplan.solver.plan import DecodeSizing, Plan, PrefillSizing, Route
from pddplan.solver.problem import (
    HANDOVER_MODES,
    NO_RELAY,
    PDD,
    PERCENTILES,
    ROLES,
    SAME_DC,
    Problem,
    Topology,
    build_problem,
    check_options,
)
from pddplan.solver.search import Solver

if TYPE_CHECKING:
    from pddplan.solver.pareto import Frontier, ParetoPoint, pareto_frontier

#: Names exported from here that load their module on first use.
_LAZY = {"Frontier": "pareto", "ParetoPoint": "pareto", "pareto_frontier": "pareto"}


def __getattr__(name: str) -> Any:
    source = _LAZY.get(name)
    if source is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{source}"), name)


__all__ = [
    "DEFAULT_CACHE",
    "DEFAULT_RATE_CEILING_RPS",
    "HANDOVER_MODES",
    "NO_RELAY",
    "PDD",
    "PERCENTILES",
    "ROLES",
    "SAME_DC",
    "DecodeSizing",
    "Frontier",
    "Outcome",
    "ParetoPoint",
    "Plan",
    "PrefillSizing",
    "Problem",
    "Progress",
    "Route",
    "SearchCache",
    "Solver",
    "Topology",
    "baseline_at_rate",
    "build_problem",
    "check_options",
    "pareto_frontier",
    "ratio",
    "solve_budget",
    "solve_max_bcr",
    "solve_scenario",
]
