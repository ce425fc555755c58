"""Many-datacenter planning: pipelines sized by the plan builder, chosen by one MILP.

:func:`plan_topology` sizes every option of every pipeline (:mod:`.pipelines`), chooses the
least-cost set (:mod:`.milp`) and evaluates each single line failure (:func:`line_failures`).
docs/topology.md states the model and its assumptions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pddplan.errors import TopologyError
from pddplan.spec.topology import Line, Site, TrafficSource
from pddplan.topology.inputs import TopologyInput, check_topology, read_topology
from pddplan.topology.milp import ChipStock, Choice, Market, choose
from pddplan.topology.pipelines import Option, Options, Pipeline, size_options

__all__ = [
    "Failure",
    "TopologyInput",
    "TopologyPlan",
    "check_topology",
    "line_failures",
    "market_of",
    "plan_topology",
    "read_topology",
]


@dataclass(frozen=True)
class Failure:
    """One line down: per source the share it loses, where it goes, what breaks."""

    line: str
    #: source -> (share lost, share moved to other pipelines, share left unserved)
    sources: dict[str, tuple[float, float, float]]
    #: pipeline -> its rate after the failure [req/s] (pipelines that take more traffic)
    moved_to: dict[str, float]
    #: what breaks: one line per pipeline pushed past its fleet, or per source left unserved
    breaks: list[str]

    @property
    def survives(self) -> bool:
        return not self.breaks


@dataclass(frozen=True)
class TopologyPlan:
    spec_name: str
    share_levels: int
    resilient: bool
    options: list[Option]
    chosen: list[Option]
    carried_share: dict[str, float]  # pipeline -> share of its source it carries normally
    cost_usd_per_hour: float
    owned_used: dict[tuple[str, str], float]
    market: Market
    pipelines: dict[str, Pipeline]
    failures: list[Failure]
    sources: dict[str, TrafficSource]
    site_specs: list[Site]
    line_specs: list[Line]
    #: the cheapest plan without resilience, when this one is resilient [USD/h]
    plain_cost_usd_per_hour: float | None = None


def market_of(ti: TopologyInput) -> Market:
    """The sites' chip stocks and the lines' limits, from the topology."""
    stock: dict[tuple[str, str], ChipStock] = {}
    reg = ti.registry
    for s in ti.spec.sites:
        for chip, sc in s.chips.items():
            rental = sc.rental_usd_per_hour
            if rental is None:
                rental = reg.load("chip", chip).price.rental_usd_per_hour
            stock[(s.name, chip)] = ChipStock(
                sc.owned, sc.owned_usd_per_chip_hour, rental, sc.rent_limit
            )
    return Market(
        share_levels=ti.spec.share_levels,
        sources=tuple(t.name for t in ti.spec.traffic),
        line_max={ln.label: ln.max_count for ln in ti.spec.lines},
        stock=stock,
    )


def _check_servable(ti: TopologyInput, opts: Options) -> None:
    """A source whose pipelines cannot add up to its whole rate: TopologyError naming it."""
    levels = ti.spec.share_levels
    for i, t in enumerate(ti.spec.traffic):
        best: dict[str, int] = {}
        for o in opts.options:
            if o.source == t.name:
                best[o.pipeline] = max(best.get(o.pipeline, 0), o.level)
        if sum(best.values()) < levels:
            why = _reasons(opts.reasons.get(t.name, [])) or (
                "no site it reaches hosts P with an MD site beside it or across a line"
            )
            raise TopologyError(
                f"no site can serve source {t.name} within its SLA: {why}",
                file=ti.file,
                key=f"traffic[{i}] ({t.name})",
            )


#: Reasons a source's error names before it counts the rest.
REASONS_SHOWN = 3


def _reasons(reasons: list[str]) -> str:
    """The distinct reasons, on one line: the first :data:`REASONS_SHOWN`, then a count."""
    uniq = [" ".join(r.split()) for r in dict.fromkeys(reasons)]
    more = len(uniq) - REASONS_SHOWN
    return "; ".join(uniq[:REASONS_SHOWN]) + (f"; and {more} more" if more > 0 else "")


def plan_topology(
    ti: TopologyInput, *, resilient: bool = False, options: Options | None = None
) -> TopologyPlan:
    """The least-cost plan of a topology; with ``resilient``, the cheapest that still serves
    every source after any single line failure (and the cost of the plan that need not)."""
    opts = options if options is not None else size_options(ti)
    _check_servable(ti, opts)
    market = market_of(ti)
    choice = choose(opts.options, market, resilient=resilient)
    plain = choose(opts.options, market).cost_usd_per_hour if resilient else None
    return _plan(ti, opts, market, choice, resilient, plain)


def _plan(
    ti: TopologyInput,
    opts: Options,
    market: Market,
    choice: Choice,
    resilient: bool,
    plain: float | None,
) -> TopologyPlan:
    chosen = [opts.options[i] for i in choice.chosen]
    carried: dict[str, float] = {}
    for s in market.sources:
        mine = [o for o in chosen if o.source == s]
        total = sum(o.level for o in mine)
        for o in mine:
            carried[o.pipeline] = o.level / total
    fails = line_failures(ti, chosen, carried, market)
    return TopologyPlan(
        spec_name=ti.spec.name,
        share_levels=market.share_levels,
        resilient=resilient,
        options=opts.options,
        chosen=chosen,
        carried_share=carried,
        cost_usd_per_hour=choice.cost_usd_per_hour,
        owned_used=dict(choice.owned_used),
        market=market,
        pipelines=opts.pipelines,
        failures=fails,
        sources=ti.sources,
        site_specs=list(ti.spec.sites),
        line_specs=list(ti.spec.lines),
        plain_cost_usd_per_hour=plain,
    )


def line_failures(
    ti: TopologyInput, chosen: list[Option], carried: dict[str, float], market: Market
) -> list[Failure]:
    """Each single line failure of a plan (a line entry down: every leased line of it, as one
    fibre cut takes a route). The share its sources had on it moves to their other pipelines of
    the plan, first each up to the rate it was sized for (its pools and lines as bought: every
    target still met); what is left is spread over them by their sized shares, and each
    pipeline pushed past its sized rate is checked there with the fleet check
    (:func:`pddplan.solver.fleet.check_fleet`), which names the target that breaks. A source
    with no other pipeline leaves that share unserved."""
    from pddplan.solver.fleet import check_fleet
    from pddplan.solver.search import Solver

    rates = {t.name: t.rate_rps for t in ti.spec.traffic}
    out: list[Failure] = []
    for line in sorted(market.line_max):
        per_source: dict[str, tuple[float, float, float]] = {}
        moved: dict[str, float] = {}
        breaks: list[str] = []
        for s in market.sources:
            mine = [o for o in chosen if o.source == s]
            lost = sum(carried[o.pipeline] for o in mine if o.line == line)
            if lost <= 0:
                continue
            rest = sorted((o for o in mine if o.line != line), key=lambda o: o.pipeline)
            share = {o.pipeline: carried[o.pipeline] for o in rest}
            left = lost
            for o in rest:
                take = min(o.level / market.share_levels - share[o.pipeline], left)
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
                if share[o.pipeline] <= carried[o.pipeline] + 1e-12:
                    continue
                rate = share[o.pipeline] * rates[s]
                moved[o.pipeline] = rate
                if rate <= o.rate_rps * (1 + 1e-12):
                    continue  # within the rate it was sized for
                fc = check_fleet(Solver(o.plan.problem), o.plan, rate)
                if not fc.meets_sla:
                    what = _what_breaks(fc, o.plan.problem)
                    breaks.append(f"{o.pipeline}: {what} at {rate:.4g} req/s")
        out.append(Failure(line, per_source, moved, breaks))
    return out


def _what_breaks(fc: Any, pb: Any) -> str:
    if fc.link_utilization >= 1.0:
        return "the line saturates"
    if not fc.meets_ttft:
        names = ("TTFT p50", "TTFT p90", "TTFT p99")
        bad = [n for n, q, t in zip(names, fc.ttft_s, pb.ttft_targets_s, strict=True) if q > t]
        return ", ".join(bad) or "TTFT"
    return "decode slots (TPOT)"
