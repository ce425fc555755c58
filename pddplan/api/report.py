"""``plan_report``: everything a procurement report shows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pddplan.api.bathtub import bathtub
from pddplan.api.command_options import ReportOptions
from pddplan.api.options import validate
from pddplan.api.scenario import (
    Overrides,
    Profiles,
    ScenarioLike,
    inventory_on_topology,
    load,
    with_inventory,
)
from pddplan.api.solve import solve
from pddplan.api.whatif import sweep

if TYPE_CHECKING:
    from pddplan.io.loader import ResolvedScenario
    from pddplan.results import PlanReportResult
    from pddplan.results.topology import TopologyResult

_D = ReportOptions()


def plan_report(
    scenario: ScenarioLike = None,
    *,
    overrides: Overrides = None,
    profiles: Profiles = None,
    rate_rps: float | None = _D.rate_rps,
    max_chips: Mapping[str, int] | None = None,
    own: Mapping[str, int] | None = None,
    bandwidths_gbit_per_s: Sequence[float] | None = _D.bandwidths_gbit_per_s,
    hit_rate_shifts: Sequence[float] = _D.hit_rate_shifts,
) -> PlanReportResult | TopologyResult:
    """Everything a procurement report shows (:class:`~pddplan.results.planreport.
    PlanReportResult`): the plan with its classes and baselines, the bathtub on it, a line
    bandwidth x hit-rate shift sweep (default bandwidths: a quarter, half, the scenario's and
    twice it, those the line's price model prices), the assumptions with their sources (estimates flagged) and the warnings.

    Given a topology file (``sites:``), the topology planner's plan
    (:func:`pddplan.api.topology.topology`, ``overrides`` on the file's keys): its flows, sites,
    lines and failures tables, and its picture on the page; the options of a two-site plan
    (``rate_rps``, ``max_chips``, ``own``, bandwidths, hit-rate shifts) do not apply to it.
    """
    from pddplan.api.whatif import topology_source
    from pddplan.results.planreport import BANDWIDTH_PATH, SHIFT_PATH
    from pddplan.results.planreport import PlanReportResult as Result

    if topology_source(scenario, profiles) is not None:
        from pddplan.api.topology import topology
        from pddplan.errors import OptionError

        given = {
            "rate_rps": rate_rps is not None,
            "max_chips": bool(max_chips),
            "own": bool(own),
            "bandwidths_gbit_per_s": bandwidths_gbit_per_s is not None,
            "hit_rate_shifts": tuple(hit_rate_shifts) != tuple(_D.hit_rate_shifts),
        }
        for name, on in given.items():
            if on and name in ("own", "max_chips"):
                raise inventory_on_topology(name)
            if on:
                raise OptionError(
                    name, "applies to a two-site scenario, not a topology file (sites:)"
                )
        return topology(str(scenario), overrides=overrides, profiles=profiles)

    sol = solve(
        scenario,
        overrides=overrides,
        profiles=profiles,
        rate_rps=rate_rps,
        max_chips=max_chips,
        own=own,
        explain=True,
    )
    o = validate(
        ReportOptions,
        rate_rps=rate_rps,
        bandwidths_gbit_per_s=bandwidths_gbit_per_s,
        hit_rate_shifts=hit_rate_shifts,
    )
    ls, _limits = with_inventory(load(scenario, overrides, profiles), max_chips, own)
    if o.rate_rps is not None:
        ls = ls.with_overrides({"rate_rps": o.rate_rps})
    bt = bathtub(ls, reprovision=False)
    bw = ls.link.bandwidth_gbit_per_s
    top = ls.resolved.link.priced_up_to_gbit_per_s  # a line has no price above its top tier
    bws = list(
        o.bandwidths_gbit_per_s
        or [round(bw * f, 3) for f in (0.25, 0.5, 1.0, 2.0) if bw * f <= top]
    )
    sw = sweep(ls, [(BANDWIDTH_PATH, bws), (SHIFT_PATH, list(o.hit_rate_shifts))])
    warns = [*sol.warnings, *sol.report().notes]
    bad = len(sw.points) - sw.feasible_points
    if bad:
        warns.append(
            f"{bad} of {len(sw.points)} sweep points have no plan (the line or TTFT binds): see "
            "the binding column"
        )
    chips = set(sol.plan.chips_of()) | {c for b in sol.baselines for c in b.chips_of()}
    return Result(sol, bt, sw, assumption_rows(ls.resolved, chips), warns)


def assumption_rows(rs: ResolvedScenario, chips: set[str]) -> list[dict[str, Any]]:
    """One row per sourced group of numbers the plan rests on (profiles of the model, the
    workload, the links and the chips in ``chips``, and the scenario's revenue): its values,
    its source and which of them are estimates (:func:`pddplan.spec.sources.source_rows`)."""
    from pddplan.spec.sources import source_rows

    rows = source_rows(f"model {rs.model.name}", rs.model)
    rows += source_rows(f"workload {rs.workload.name}", rs.workload)
    rows += source_rows(f"link {rs.link.name}", rs.link)
    rows += source_rows(f"rdma {rs.rdma.name}", rs.rdma)
    for name in sorted(chips):
        if name in rs.chips:
            rows += source_rows(f"chip {name}", rs.chips[name])
    if rs.scenario.revenue is not None:
        rows += source_rows(f"scenario {rs.scenario.name}", rs.scenario.revenue, "revenue")
    return rows
