"""Single failures of a topology plan (N-1): where the traffic goes and which target breaks.

The N-1 set (:func:`pddplan.topology.milp.failure_cases`) is every ``lines:`` entry down with all
its leased lines (one fibre cut takes a route) and, when the topology states them
(``resilience:``), every line losing ``line_bandwidth_loss_share`` of its bandwidth and every
site losing ``site_chip_loss_share`` of its chips. A partial failure degrades the fleets of the
options it touches (:func:`degraded_fleet`): a line's bundles keep ``1 - share`` of their
bandwidth; each pool at a site keeps ``floor((1 - share) n)`` of its ``n`` instances (the loss
spread over the pools, each rounded up to whole instances). Such an option still serves the
share levels at which the degraded fleet passes the fleet check
(:func:`pddplan.solver.fleet.check_fleet`); that is what the MILP counts on under the failure
(``FailureCase.kept_levels``, :func:`partial_cases`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pddplan.topology.milp import FailureCase, FailureKind, Market, failure_cases, kept_level
from pddplan.topology.pipelines import Option

if TYPE_CHECKING:
    from pddplan.topology.inputs import TopologyInput

#: [-] Slack on a pool's kept instances, ``floor((1 - share) n + slack)``, so that a share that
#: is a whole number of instances is not rounded down by floating point.
INSTANCE_SLACK = 1e-9


@dataclass(frozen=True)
class Failure:
    """One single failure: per source the share it loses, where it goes, what breaks."""

    where: str  # the line's or the site's name
    #: source -> (share lost, share moved to other pipelines, share left unserved)
    sources: dict[str, tuple[float, float, float]]
    #: pipeline -> its rate after the failure [req/s] (pipelines that take more traffic)
    moved_to: dict[str, float]
    #: what breaks: one line per pipeline pushed past its fleet, or per source left unserved
    breaks: list[str]
    kind: FailureKind = "line"
    loss_share: float = 1.0
    #: pipeline -> (rate [req/s], degraded plan, its problem): the pipelines the failure
    #: degrades, at their rates after it (what ``--simulate`` runs for them)
    degraded: dict[str, tuple[float, Any, Any]] | None = None

    @property
    def survives(self) -> bool:
        return not self.breaks

    @property
    def line(self) -> str:
        """The failed line's name (a site's for a site failure)."""
        return self.where

    @property
    def label(self) -> str:
        return FailureCase(self.kind, self.where, self.loss_share).label


def degraded_fleet(o: Option, case: FailureCase) -> tuple[Any, Any] | None:
    """``o``'s plan and problem under ``case`` (its fleet as bought, degraded); None when a pool
    it uses is lost whole. ``case`` must touch ``o`` (:func:`touches`)."""
    plan, pb = o.plan, o.plan.problem
    if case.kind == "line bandwidth":
        keep = 1.0 - case.loss_share
        wan = replace(
            pb.wan,
            bandwidth_gbit_per_s=pb.wan.bandwidth_gbit_per_s * keep,
            goodput_bytes_per_s=pb.wan.goodput_bytes_per_s * keep,
        )
        return plan, replace(pb, wan=wan)
    site = case.where
    p_site, m_site = o.pipeline.split(":", 1)[1].split("->")
    roles = dict(plan.roles)
    for role, v in plan.roles.items():
        if v is None or v[1] == 0:
            continue
        if (m_site if role == "MD" else p_site) != site:
            continue
        inst, n = v
        kept = math.floor((1.0 - case.loss_share) * n + INSTANCE_SLACK)
        if kept == 0:
            return None
        roles[role] = (inst, kept)
    return replace(plan, roles=roles), pb


def touches(case: FailureCase, o: Option) -> bool:
    """Whether ``case`` degrades option ``o``."""
    if case.kind in ("line", "line bandwidth"):
        return o.line == case.where
    return any(s == case.where for s, _c, _n in o.chips)


def fleet_meets(fleet: tuple[Any, Any], rate_rps: float) -> Any:
    """The fleet check (:func:`pddplan.solver.fleet.check_fleet`) of a (plan, problem) at
    ``rate_rps``: the one test of a fixed fleet a topology applies (failures, ``robust``)."""
    from pddplan.solver.fleet import check_fleet
    from pddplan.solver.search import Solver

    plan, pb = fleet
    return check_fleet(Solver(pb), plan, rate_rps)


def partial_cases(ti: TopologyInput, options: list[Option]) -> tuple[FailureCase, ...]:
    """The topology's partial failures (``resilience:``), each with the share levels every option
    it touches still serves within the SLA: the highest level ``j <= level`` at which the
    degraded fleet passes the fleet check at ``j / share_levels`` of its source's rate."""
    res = ti.spec.resilience
    if res is None:
        return ()
    cases: list[FailureCase] = []
    if res.line_bandwidth_loss_share is not None:
        for ln in sorted(x.label for x in ti.spec.lines):
            cases.append(FailureCase("line bandwidth", ln, res.line_bandwidth_loss_share))
    if res.site_chip_loss_share is not None:
        for s in sorted(x.name for x in ti.spec.sites):
            cases.append(FailureCase("site chips", s, res.site_chip_loss_share))
    rates = {t.name: t.rate_rps for t in ti.spec.traffic}
    levels = ti.spec.share_levels
    out: list[FailureCase] = []
    for case in cases:
        kept: dict[int, int] = {}
        for o in options:
            if not touches(case, o):
                continue
            fleet = degraded_fleet(o, case)
            kept[o.index] = 0
            if fleet is None:
                continue
            for j in range(o.level, 0, -1):
                if fleet_meets(fleet, rates[o.source] * j / levels).meets_sla:
                    kept[o.index] = j
                    break
        out.append(replace(case, kept_levels=kept))
    return tuple(out)


def plan_failures(
    ti: TopologyInput, chosen: list[Option], carried: dict[str, float], market: Market
) -> list[Failure]:
    """Each single failure of the N-1 set evaluated on a plan (:func:`evaluate_failure`)."""
    return [evaluate_failure(ti, chosen, carried, market, c) for c in failure_cases(market)]


def line_failures(
    ti: TopologyInput, chosen: list[Option], carried: dict[str, float], market: Market
) -> list[Failure]:
    """Each single whole-line failure of a plan (:func:`evaluate_failure`)."""
    return [
        evaluate_failure(ti, chosen, carried, market, FailureCase("line", ln))
        for ln in sorted(market.line_max)
    ]


def evaluate_failure(
    ti: TopologyInput,
    chosen: list[Option],
    carried: dict[str, float],
    market: Market,
    case: FailureCase,
) -> Failure:
    """One single failure of a plan. Each pipeline keeps what its fleet still serves within the
    SLA (all of its share when the failure does not touch it; none on a line down); the rest
    of its source's share moves to the source's other pipelines of the plan (not those on a
    line down or with a pool lost whole), first each up to what it still serves, then, if some is left, spread over them
    by their sized shares. Each pipeline pushed past what it still serves is checked there with
    the fleet check (:func:`pddplan.solver.fleet.check_fleet`, on its degraded fleet), which
    names the target that breaks. A source with no other pipeline leaves that share unserved."""
    rates = {t.name: t.rate_rps for t in ti.spec.traffic}
    levels = market.share_levels
    per_source: dict[str, tuple[float, float, float]] = {}
    moved: dict[str, float] = {}
    degraded: dict[str, tuple[float, Any, Any]] = {}
    breaks: list[str] = []
    for s in market.sources:
        mine = sorted((o for o in chosen if o.source == s), key=lambda o: o.pipeline)
        cap = {o.pipeline: kept_level(case, o) / levels for o in mine}
        fleets = {
            o.pipeline: degraded_fleet(o, case)
            for o in mine
            if case.kind != "line" and touches(case, o)
        }
        # down: on the line that fails, or a pool lost whole
        down = {o.pipeline for o in mine if case.kind == "line" and o.line == case.where}
        down |= {name for name, fleet in fleets.items() if fleet is None}
        share = {o.pipeline: min(carried[o.pipeline], cap[o.pipeline]) for o in mine}
        lost = sum(carried[o.pipeline] - share[o.pipeline] for o in mine)
        if lost <= 0:
            continue
        rest = [o for o in mine if o.pipeline not in down]
        left = lost
        for o in rest:
            take = min(cap[o.pipeline] - share[o.pipeline], left)
            if take > 1e-12:
                share[o.pipeline] += take
                left -= take
        if left > 1e-9 and rest:
            sized = sum(o.level for o in rest)
            for o in rest:
                share[o.pipeline] += left * o.level / sized
            left = 0.0
        unserved = max(left, 0.0)
        per_source[s] = (lost, lost - unserved, unserved)
        if unserved > 1e-9:
            breaks.append(f"{s}: {unserved * rates[s]:.4g} req/s unserved (no other pipeline)")
        for o in rest:
            rate = share[o.pipeline] * rates[s]
            fleet = fleets.get(o.pipeline) or (o.plan, o.plan.problem)
            if o.pipeline in fleets:
                degraded[o.pipeline] = (rate, *fleet)
            if share[o.pipeline] > carried[o.pipeline] + 1e-12:
                moved[o.pipeline] = rate
            if share[o.pipeline] <= cap[o.pipeline] + 1e-12:
                continue  # within what its fleet still serves
            fc = fleet_meets(fleet, rate)
            if not fc.meets_sla:
                breaks.append(f"{o.pipeline}: {_what_breaks(fc, fleet[1])} at {rate:.4g} req/s")
    return Failure(
        case.where,
        per_source,
        moved,
        breaks,
        kind=case.kind,
        loss_share=case.loss_share,
        degraded=degraded or None,
    )


def _what_breaks(fc: Any, pb: Any) -> str:
    from pddplan.solver.sla import TTFT_LABELS, missed_targets

    if fc.link_utilization >= 1.0:
        return "the line saturates"
    if not fc.meets_ttft:
        bad = [TTFT_LABELS[i] for i in missed_targets(fc.ttft_s, pb.ttft_targets_s)]
        return ", ".join(bad) or "TTFT"
    return "decode slots (TPOT)"
