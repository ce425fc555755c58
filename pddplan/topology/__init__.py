"""Many-datacenter planning: pipelines sized by the plan builder, chosen by one MILP.

:func:`plan_topology` sizes every option of every pipeline (:mod:`.pipelines`), chooses the
least-cost set (:mod:`.milp`) and evaluates each single failure (:mod:`.failures`).
docs/topology.md states the model and its assumptions.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from pddplan.errors import InfeasibleError
from pddplan.solver.plan import bcr
from pddplan.spec.topology import Line, Site, TrafficSource
from pddplan.topology.failures import Failure, line_failures, partial_cases, plan_failures
from pddplan.topology.inputs import (
    TopologyInput,
    check_topology,
    profile_rental_usd_per_hour,
    read_topology,
)
from pddplan.topology.milp import ChipStock, Choice, Market, Mode, choose, failure_cases
from pddplan.topology.pipelines import Option, Options, Pipeline, size_options

__all__ = [
    "Failure",
    "TopologyInput",
    "TopologyPlan",
    "check_topology",
    "line_failures",
    "market_for",
    "market_of",
    "plan_topology",
    "read_topology",
]


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
    #: what the plan optimizes (:data:`pddplan.topology.milp.MODES`)
    mode: Mode = "cost"
    budget_usd_per_hour: float | None = None
    #: source -> traffic served [requests/s] (its whole rate in the ``cost`` mode; with
    #: ``resilient``, what is still served under every single failure)
    served_rps: dict[str, float] = field(default_factory=dict)

    @property
    def served_total_rps(self) -> float:
        """The traffic served, all sources [requests/s]."""
        return float(sum(self.served_rps.values()))

    @property
    def served_bcr_requests_per_usd(self) -> float:
        """BCR at the traffic served: the sources' traffic the plan serves per dollar
        [requests/USD], by the BCR rule (:func:`~pddplan.solver.plan.bcr`) with the traffic
        served as its goodput; unbounded (inf) where the plan serves traffic and costs nothing
        (its chips owned at an owned price of 0, and no line leased or only free ones).

        Not ``solve``'s BCR, whose goodput is the fleet's highest rate within every SLA target
        (above the rate it is sized for, as chips come whole): a topology serves its sources'
        stated rates, never above them, and its budget and highest-BCR modes choose what to
        serve by this figure (docs/topology.md)."""
        return bcr(self.served_total_rps, self.cost_usd_per_hour)

    @property
    def failure_kind(self) -> str:
        """What its N-1 set is made of, in words: ``line failure``, or ``failure`` when it
        holds partial failures too."""
        return "failure" if any(f.kind != "line" for f in self.failures) else "line failure"

    @property
    def objective(self) -> str:
        """What the plan is, in words: ``least cost``, ``surviving any single line failure``,
        ``most goodput within 300 $/h``, ``highest BCR``."""
        what = {
            "cost": "least cost",
            "budget": f"most goodput within {self.budget_usd_per_hour or 0:.6g} $/h",
            "max-bcr": "highest BCR",
        }[self.mode]
        if not self.resilient:
            return what
        alive = f"surviving any single {self.failure_kind}"
        return alive if self.mode == "cost" else f"{what}, {alive}"

    def summary_row(self) -> dict[str, Any]:
        """The plan in one row (a ``sweep`` point of a topology): cost, pipelines and flows
        (``source:P->MD share``), lines leased, the highest line utilization and TTFT p99 of
        its pipelines, and how many single failures it survives."""
        flows = []
        for o in self.chosen:
            pipe = self.pipelines[o.pipeline]
            flows.append(
                f"{o.source}:{pipe.p_site}->{pipe.m_site} {self.carried_share[o.pipeline]:.3g}"
            )
        return {
            "cost_usd_per_hour": self.cost_usd_per_hour,
            "pipelines": len(self.chosen),
            "flows": "; ".join(flows),
            "lines_leased": sum(o.lines for o in self.chosen),
            "line_utilization_max": max(
                (float(o.plan.route.link_utilization) for o in self.chosen if o.line),
                default=0.0,
            ),
            "max_ttft_p99_s": max(
                (float(o.plan.prefill.ttft_s[2]) for o in self.chosen), default=0.0
            ),
            "failures_survived": sum(1 for f in self.failures if f.survives),
            "failures": len(self.failures),
        }


def market_of(ti: TopologyInput) -> Market:
    """The sites' chip stocks and the lines' limits, from the topology."""
    stock: dict[tuple[str, str], ChipStock] = {}
    for s in ti.spec.sites:
        for chip, sc in s.chips.items():
            rental = sc.rental_usd_per_hour
            if rental is None:
                rental = profile_rental_usd_per_hour(ti, chip)
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
    """A source whose pipelines cannot add up to its whole rate: InfeasibleError (no plan fits,
    exit 3) naming the file, the source and why."""
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
            raise InfeasibleError(
                f"{ti.file}: traffic[{i}] ({t.name}): no site can serve source {t.name} within "
                f"its SLA: {why}",
                binding="sla",
            )


#: Reasons a source's error names before it counts the rest.
REASONS_SHOWN = 3


def _reasons(reasons: list[str]) -> str:
    """The distinct reasons, on one line: the first :data:`REASONS_SHOWN`, then a count."""
    uniq = [" ".join(r.split()) for r in dict.fromkeys(reasons)]
    more = len(uniq) - REASONS_SHOWN
    return "; ".join(uniq[:REASONS_SHOWN]) + (f"; and {more} more" if more > 0 else "")


def plan_topology(
    ti: TopologyInput,
    *,
    resilient: bool = False,
    options: Options | None = None,
    mode: Mode = "cost",
    budget_usd_per_hour: float | None = None,
) -> TopologyPlan:
    """The least-cost plan of a topology; with ``resilient``, the cheapest that still serves
    every source after any single failure of the N-1 set (a whole line down and, when the
    topology states them, a line losing a share of its bandwidth or a site a share of its
    chips), and the cost of the plan that need not.

    ``mode`` ``budget``: the most traffic served within ``budget_usd_per_hour`` (a source may
    be served in part, in steps of its options' share levels); ``max-bcr``: the most traffic
    served per dollar (:func:`pddplan.topology.milp.choose`). With ``resilient`` the traffic
    counted is what the plan still serves under every single failure."""
    opts = options if options is not None else size_options(ti)
    if mode == "cost":
        _check_servable(ti, opts)
    market = market_for(ti, opts.options)
    rates = {t.name: t.rate_rps for t in ti.spec.traffic}
    if mode != "cost":
        choice = choose(
            opts.options,
            market,
            resilient=resilient,
            mode=mode,
            budget_usd_per_hour=budget_usd_per_hour,
            rates=rates,
        )
        return _plan(ti, opts, market, choice, resilient, None, mode, budget_usd_per_hour)
    plain_choice = choose(opts.options, market)
    if not resilient:
        return _plan(ti, opts, market, plain_choice, resilient, None)
    try:
        choice = choose(opts.options, market, resilient=True)
    except InfeasibleError as exc:
        raise InfeasibleError(f"{exc}; {_what_cannot_survive(opts.options, market)}") from None
    return _plan(ti, opts, market, choice, resilient, plain_choice.cost_usd_per_hour)


def market_for(ti: TopologyInput, options: list[Option]) -> Market:
    """:func:`market_of` with the topology's partial failures (``resilience:``), each with the
    share levels the options it touches still serve (:func:`partial_cases`)."""
    return replace(market_of(ti), partial_failures=partial_cases(ti, options))


def _what_cannot_survive(options: list[Option], market: Market) -> str:
    """Which single failures no choice survives even alone (for the infeasible message)."""
    alone: list[str] = []
    for case in failure_cases(market):
        line = case.kind == "line"
        one = replace(
            market,
            whole_lines=(case.where,) if line else (),
            partial_failures=() if line else (case,),
        )
        try:
            choose(options, one, resilient=True)
        except InfeasibleError:
            alone.append(case.label)
    if not alone:
        return "each single failure alone can be survived, but not all of them by one plan"
    return "no plan survives a failure of " + ", ".join(alone)


def _plan(
    ti: TopologyInput,
    opts: Options,
    market: Market,
    choice: Choice,
    resilient: bool,
    plain: float | None,
    mode: Mode = "cost",
    budget: float | None = None,
) -> TopologyPlan:
    chosen = [opts.options[i] for i in choice.chosen]
    carried: dict[str, float] = {}
    served: dict[str, float] = {}
    rates = {t.name: t.rate_rps for t in ti.spec.traffic}
    for s in market.sources:
        mine = [o for o in chosen if o.source == s]
        total = sum(o.level for o in mine)
        # the share of the source served (1 in the cost mode), split by the sized levels
        part = choice.served_levels.get(s, market.share_levels) / market.share_levels
        served[s] = rates[s] * part if mine else 0.0
        for o in mine:
            carried[o.pipeline] = o.level / total * part
    fails = plan_failures(ti, chosen, carried, market)
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
        mode=mode,
        budget_usd_per_hour=budget,
        served_rps=served,
    )
