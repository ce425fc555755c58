"""``topology``: the least-cost plan of a many-datacenter topology, and its line failures."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pddplan.api.scenario import PathLike, Profiles, registry

if TYPE_CHECKING:
    from pddplan.results.topology import TopologyResult


def topology(
    scenario: PathLike,
    *,
    resilient: bool = False,
    simulate: int | None = None,
    seed: int = 0,
    executor: str = "local",
    jobs: int = 1,
    scheduler: str | None = None,
    profiles: Profiles = None,
) -> TopologyResult:
    """Plan a topology (sites, lines, traffic sources; docs/topology.md), or a two-site scenario
    in its topology form (sites A and B, one line, one source at A).

    Every pipeline (source, P site, MD site) is sized by the plan builder at each share level
    and bundle of lines; a MILP (HiGHS) chooses the least-cost set within the sites' chips and
    the lines that may be leased. Each single line failure is then evaluated.

    Parameters
    ----------
    scenario : a topology or scenario file, or a bundled scenario's name.
    resilient : the cheapest plan that serves every source after any single line failure; the
        result also gives the cost of the plan that need not (the cost of resilience).

    Raises
    ------
    TopologyError : a line naming an unknown site, duplicate names, a disconnected topology,
        a source no site can serve within its SLA (exit 2).
    InfeasibleError : no choice serves every source within the chips and lines (exit 3).
    """
    from pddplan.executors import make_executor
    from pddplan.results.topology import TopologyResult
    from pddplan.topology import plan_topology, read_topology
    from pddplan.topology.pipelines import size_options
    from pddplan.topology.simulate import check_requests, simulate_topology

    if simulate is not None:
        check_requests(simulate)  # before anything is planned
    ex = make_executor(executor, jobs=jobs, scheduler=scheduler)  # checked before reading
    ti = read_topology(str(scenario), registry(profiles))
    with ex:
        opts = size_options(ti, ex)
    tp = plan_topology(ti, resilient=resilient, options=opts)
    if simulate is None:
        return TopologyResult(tp)

    return TopologyResult(tp, simulate_topology(tp, simulate, seed))
