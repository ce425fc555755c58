"""``topology``: the least-cost plan of a many-datacenter topology, and its line failures."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pddplan.api.command_options import TopologyOptions
from pddplan.api.scenario import Overrides, PathLike, Profiles, registry

if TYPE_CHECKING:
    from pddplan.results.topology import TopologyResult
    from pddplan.topology.milp import Mode

_D = TopologyOptions()


def topology(
    scenario: PathLike,
    *,
    resilient: bool = _D.resilient,
    simulate: int | None = _D.simulate,
    seed: int = _D.seed,
    executor: str = _D.executor,
    jobs: int = _D.jobs,
    scheduler: str | None = _D.scheduler,
    overrides: Overrides = None,
    profiles: Profiles = None,
    budget_usd_per_hour: float | None = _D.budget_usd_per_hour,
    max_bcr: bool = _D.max_bcr,
) -> TopologyResult:
    """Plan a topology (sites, lines, traffic sources; docs/topology.md), or a two-site scenario
    in its topology form (sites A and B, one line, one source at A).

    Every pipeline (source, P site, MD site) is sized by the plan builder at each share level
    and bundle of lines; a MILP (HiGHS) chooses the least-cost set within the sites' chips and
    the lines that may be leased. Each single line failure is then evaluated.

    Parameters
    ----------
    scenario : a topology or scenario file, or a bundled scenario's name.
    resilient : the cheapest plan that serves every source after any single failure (a line
        down and the partial failures of the file's ``resilience:``); the result also gives
        the cost of the plan that need not (the cost of resilience).
    budget_usd_per_hour : the most traffic served within this budget [USD/h] instead of the
        least cost serving every source (a source may be served in part, in steps of its
        share levels; with ``resilient``, the traffic still served under every failure).
    max_bcr : the most traffic served per dollar instead (the same counting).
    overrides : ``{"dotted.path": value}`` on a topology file's keys (an entry of ``sites``,
        ``lines`` or ``traffic`` by name or index: ``traffic.north.rate_rps``), validated as
        the file with them would be (:func:`pddplan.io.overrides.topology_patch`).

    Raises
    ------
    TopologyError : a line naming an unknown site or no WAN link profile, duplicate names, a
        disconnected topology, a source rate its share levels split too fine (exit 1).
    InfeasibleError : a source no site can serve within its SLA, or no choice serves every
        source within the chips and lines (exit 3).
    """
    from pddplan.api.options import validate_args
    from pddplan.executors import make_executor
    from pddplan.results.topology import TopologyResult
    from pddplan.topology import plan_topology, read_topology
    from pddplan.topology.pipelines import size_options
    from pddplan.topology.simulate import check_requests, simulate_topology

    o = validate_args(TopologyOptions, locals())
    if o.simulate is not None:
        check_requests(o.simulate)  # before anything is planned
    mode = topology_mode(o.budget_usd_per_hour, o.max_bcr)
    ex = make_executor(o.executor, jobs=o.jobs, scheduler=o.scheduler)  # before reading
    reg = registry(profiles)
    if overrides:
        from pddplan.errors import OptionError
        from pddplan.io.overrides import copy_overrides
        from pddplan.topology.inputs import TopologySource

        src = TopologySource.open(str(scenario), reg)
        if src is None:
            raise OptionError(
                "overrides",
                ": a two-site scenario is planned in its topology form as written; PATHs change "
                "a topology file (sites:)",
            )
        ti = src.resolve(copy_overrides(overrides))
    else:
        ti = read_topology(str(scenario), reg)
    with ex:
        opts = size_options(ti, ex)
    tp = plan_topology(
        ti,
        resilient=o.resilient,
        options=opts,
        mode=mode,
        budget_usd_per_hour=o.budget_usd_per_hour,
    )
    if o.simulate is None:
        return TopologyResult(tp)

    return TopologyResult(tp, simulate_topology(tp, o.simulate, o.seed))


def topology_mode(budget_usd_per_hour: float | None, max_bcr: bool) -> Mode:
    """The planner's mode from the options: ``cost``, ``budget`` or ``max-bcr``; OptionError
    for both, or a budget that is not a positive finite number."""
    import math

    from pddplan.errors import OptionError, UsageError

    if budget_usd_per_hour is not None and max_bcr:
        raise UsageError("give one of budget_usd_per_hour and max_bcr")
    if budget_usd_per_hour is None:
        return "max-bcr" if max_bcr else "cost"
    if not (math.isfinite(budget_usd_per_hour) and budget_usd_per_hour > 0):
        raise OptionError(
            "budget_usd_per_hour", f"must be a positive number of $/h, not {budget_usd_per_hour!r}"
        )
    return "budget"
