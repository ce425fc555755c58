"""``pareto``: the frontier of plans over cost, goodput and TTFT p99, PDD against its baselines."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pddplan.api.command_options import ParetoOptions
from pddplan.api.options import validate
from pddplan.api.scenario import Overrides, Profiles, ScenarioLike, load, with_inventory
from pddplan.executors import Progress

if TYPE_CHECKING:
    from pddplan.results.pareto import ParetoResult

_D = ParetoOptions()


def pareto(
    scenario: ScenarioLike = None,
    *,
    overrides: Overrides = None,
    profiles: Profiles = None,
    points: int = _D.points,
    min_rate_rps: float | None = _D.min_rate_rps,
    max_rate_rps: float | None = _D.max_rate_rps,
    baselines: bool = _D.baselines,
    max_chips: Mapping[str, int] | None = None,
    own: Mapping[str, int] | None = None,
    progress: Progress | None = None,
) -> ParetoResult:
    """Solve PDD and its baselines at a grid of target rates and keep the plans that no other
    beats at once on cost [$/h], goodput [req/s] and TTFT p99 [s]
    (:func:`pddplan.solver.pareto.pareto_frontier`).

    Each point is what :func:`~pddplan.api.solve` returns at that rate (``solve(rate_rps=R)``):
    the same plan, cost and goodput, and the same baselines.

    Parameters
    ----------
    points : how many target rates, evenly spaced (capped by ``PDDPLAN_MAX_PARETO_POINTS``).
    min_rate_rps : [req/s] the lowest target rate (default: the highest over ``points``).
    max_rate_rps : [req/s] the highest target rate (default: the highest PDD's search goes
        to: the line at its utilization cap, the scenario's ``limits.max_rate_rps`` or the
        search ceiling).
    baselines : also size the baselines at every rate.
    max_chips : inventory limits, chip name -> chips (the baselines obey them too).
    own : chips owned, chip name -> chips (as for :func:`~pddplan.api.solve`).
    progress : called with (rates done, rates) as the grid goes.

    Raises
    ------
    OptionError : a bad option, ``min_rate_rps`` not below the grid's top, or more points
        than ``PDDPLAN_MAX_PARETO_POINTS`` allows.
    InfeasibleError : no PDD plan meets the SLA at any rate of the grid (exit 3).
    """
    o = validate(
        ParetoOptions,
        points=points,
        min_rate_rps=min_rate_rps,
        max_rate_rps=max_rate_rps,
        baselines=baselines,
    )
    from pddplan import limits as caps

    caps.PARETO_POINTS.check(o.points, "target rates", option="points")
    ls = load(scenario, overrides, profiles)
    ls, limits = with_inventory(ls, max_chips, own)
    from pddplan import tiers
    from pddplan.results.pareto import ParetoResult
    from pddplan.solver.pareto import pareto_frontier

    frontier = pareto_frontier(
        ls.resolved,
        max_chips=limits,
        progress=progress,
        solve=tiers.solve,
        ceiling=tiers.rate_ceiling,
        **o.model_dump(),
    )
    return ParetoResult(frontier)
