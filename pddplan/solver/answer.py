"""A scenario's question answered: the plan (rate, budget or max-BCR mode), the baselines at its
rate, and why relay does or does not pay (:mod:`pddplan.solver.modes` holds the modes,
:mod:`pddplan.solver.relay_edge` where relay would start to pay)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from pddplan.errors import InfeasibleError, OptionError
from pddplan.executors import Progress
from pddplan.solver.fleet import goodput_rps
from pddplan.solver.modes import (
    NO_RELAY_RLD,
    PlanSearch,
    baseline_at_rate,
    fall_note,
    finalized_plan,
    goodput_up_to,
    solve_budget,
    solve_max_bcr,
    with_exact_goodput,
    with_goodput,
)
from pddplan.solver.plan import Plan, changed
from pddplan.solver.problem import (
    NO_RELAY,
    PDD,
    PDD_UNFILTERED,
    RELAY_ONLY,
    SAME_DC,
    Problem,
    build_problem,
    check_options,
)
from pddplan.solver.relay_edge import RelayEdge, relay_edges
from pddplan.solver.relay_edge import describe as describe_edges
from pddplan.spec import Scenario
from pddplan.spec.scenario import ResolvedScenario

#: Upper end of the rate search when nothing else bounds the scale [requests/s].
DEFAULT_RATE_CEILING_RPS = 1000.0


@dataclass(frozen=True)
class Outcome:
    mode: str  # "rate", "budget", "max-bcr"
    plan: Plan
    baselines: list[Plan]
    scale_bound: str  # what bounds the scale (for budget / max-bcr modes)
    problem: Problem
    notes: list[str]
    scenario_name: str = ""
    #: where relay would start to pay, when the plan has none (``explain_relay``)
    relay_edges: list[RelayEdge] = field(default_factory=list)
    #: each baseline that no fleet fits at the plan's rate, and why (the notes say it too)
    unsized_baselines: dict[str, str] = field(default_factory=dict)
    #: with ``cache:`` tiers, the capacity chosen (:func:`pddplan.tiers.sizing_row`), else None
    #: (set by :func:`pddplan.tiers.solve`)
    cache: dict[str, Any] | None = None
    #: the scenario as solved (with ``cache:`` tiers, at that capacity)
    scenario: ResolvedScenario | None = None


def check_max_chips(rs: ResolvedScenario, max_chips: dict[str, int] | None) -> None:
    """Inventory limits may name only chips the scenario uses (OptionError ``max_chips``)."""
    unknown = [c for c in (max_chips or {}) if c not in rs.chips]
    if unknown:
        raise OptionError(
            "max_chips", f"names chips the scenario does not use: {', '.join(unknown)}"
        )


def _problems(rs: ResolvedScenario, max_chips: dict[str, int] | None) -> list[Problem]:
    """The PDD problem, and the same without the anomalous filter when the workload has
    anomalous requests (the search takes the better of the two)."""
    check_max_chips(rs, max_chips)
    pb = build_problem(rs, PDD)
    pb.max_chips = {**pb.max_chips, **(max_chips or {})}
    check_options(pb)
    problems = [pb]
    if has_anomalous_rld(pb):
        pb_all = build_problem(rs, PDD_UNFILTERED)
        pb_all.max_chips = dict(pb.max_chips)
        problems.append(pb_all)
    return problems


#: What bounds a budget plan's scale when no fleet fits at a higher rate, by the error's binding.
_WALL = {"line utilization": "line capacity (utilization cap)", "inventory": "inventory"}


def _answer(
    solver: PlanSearch,
    rate: float | None,
    budget: float | None,
    hi: float,
    bound_of_hi: str,
    limited: bool,
    progress: Progress | None,
    falls: list[tuple[Plan, Plan]] | None = None,
) -> tuple[Plan, str, str]:
    """``(plan, mode, scale bound)`` of the scenario's question (``falls``: see
    :func:`~pddplan.solver.modes.walk_fleets`)."""
    if rate is not None:
        return solver.solve_rate(rate, progress), "rate", "target rate"
    if budget is not None:
        stopped: list[str] = []
        plan = solve_budget(solver, budget, hi, stopped, falls)
        if not stopped:  # the walk reached the question's highest rate
            bound = bound_of_hi
        elif stopped[0] == "budget":
            bound = "budget"
        else:  # no fleet fits above the plan's rate, whatever it costs
            bound = _WALL.get(stopped[0], f"{stopped[0] or 'no plan'} at higher rates")
        return plan, "budget", bound
    walls: list[str] = []
    plan = solve_max_bcr(solver, hi, falls, walls)
    if walls:  # no fleet fits above some rate below the question's highest, whatever it costs
        return plan, "max-bcr", _WALL.get(walls[0], f"{walls[0] or 'no plan'} at higher rates")
    return plan, "max-bcr", bound_of_hi + (" (inventory limits applied)" if limited else "")


def question(
    scen: Scenario,
    rate_rps: float | None = None,
    budget_usd_per_hour: float | None = None,
    max_bcr: bool = False,
) -> tuple[float | None, float | None]:
    """``(rate, budget)`` of the scenario's question: a rate (the least-cost plan serving it),
    else a budget (the most goodput within it), else neither (the highest BCR). The options
    given win over the scenario's ``rate_rps`` and ``limits.budget_usd_per_hour``; a budget
    (given or the scenario's) wins over the scenario's rate; ``max_bcr`` asks for neither."""
    if max_bcr:
        return None, None
    rate = rate_rps if rate_rps is not None else scen.rate_rps
    budget = (
        budget_usd_per_hour if budget_usd_per_hour is not None else scen.limits.budget_usd_per_hour
    )
    if budget is not None and rate_rps is None:
        rate = None
    return rate, budget


def mode_of(rate_rps: float | None, budget_usd_per_hour: float | None) -> str:
    """The mode of a question (:func:`question`): ``rate``, ``budget`` or ``max-bcr``."""
    if rate_rps is not None:
        return "rate"
    return "budget" if budget_usd_per_hour is not None else "max-bcr"


def solve_scenario(
    rs: ResolvedScenario,
    *,
    rate_rps: float | None = None,
    budget_usd_per_hour: float | None = None,
    max_chips: dict[str, int] | None = None,
    max_rate_rps: float | None = None,
    progress: Progress | None = None,
    baselines: bool = True,
    max_bcr: bool = False,
    explain_relay: bool = False,
    final_baselines: bool = True,
) -> Outcome:
    """Answer the scenario's question (rate, budget or max BCR) and size the baselines.

    ``explain_relay``: when the chosen plan has no relay, also find the line bandwidth and the
    hit-rate shift at which it would (:mod:`pddplan.solver.relay_edge`; a few more searches).

    ``final_baselines=False``: the baselines come before their final figures
    (:func:`~pddplan.solver.modes.baseline_at_rate` with ``final=False``: their fleet, cost,
    goodput, BCR and SLA verdict are final; their reported TTFT, hand-over figures and the
    prefill's binding entry are not), for a caller that reads only their BCR (a sweep's rows,
    a break-even search); the plan chosen is final either way.
    """
    scen = rs.scenario
    problems = _problems(rs, max_chips)
    pb = problems[0]
    solver = PlanSearch(problems)
    rate, budget = question(scen, rate_rps, budget_usd_per_hour, max_bcr)
    cap = max_rate_rps if max_rate_rps is not None else scen.limits.max_rate_rps
    hi, bound_of_hi = scale_bound(solver.line_rate_limit(), cap)
    falls: list[tuple[Plan, Plan]] = []
    plan, mode, bound = _answer(
        solver, rate, budget, hi, bound_of_hi, bool(pb.max_chips), progress, falls
    )
    plan = with_goodput(plan, solver.solver_of(plan))
    notes: list[str] = []
    fell = fall_note(mode, falls)
    if fell is not None:
        notes.append(fell)
    counted_note = _counted_goodput_note(solver, plan, mode, hi, bound_of_hi)
    if counted_note is not None:
        notes.append(counted_note)
    # without the baselines the plan without relay is only compared (its figures are
    # computed if it is the plan chosen)
    final = baselines and final_baselines

    def counted(p: Plan) -> Plan:
        """A baseline's goodput counted as the plan's is: where the question asked no rate,
        to the walks' precision (:func:`~pddplan.solver.modes.with_exact_goodput`: a baseline
        that is the plan's very fleet then has its goodput, not one 1e-4 away) and up to the
        question's bound (:func:`~pddplan.solver.modes.goodput_up_to`)."""
        return p if mode == "rate" else goodput_up_to(with_exact_goodput(p), hi)

    unsized: dict[str, str] = {}
    no_relay = _no_relay(rs, plan, pb, _Unsized(notes, unsized) if baselines else None, final)
    no_relay = None if no_relay is None else counted(no_relay)
    if no_relay is not None and _relay_loses(pb, plan, no_relay, mode, budget):
        if not final:
            no_relay = finalized_plan(no_relay)
        notes.append(
            f"relay does not pay at {plan.rate_rps:.4g} req/s: the best plan with RLD has BCR "
            f"{plan.bcr_requests_per_usd:.4g} req/$ at {plan.cost_usd_per_hour:.4g} $/h, below "
            f"the plan without relay ({no_relay.bcr_requests_per_usd:.4g} req/$ at "
            f"{no_relay.cost_usd_per_hour:.4g} $/h), which is the plan chosen"
        )
        plan = replace(no_relay, topology=PDD.name)
    edges: list[RelayEdge] = []
    if pb.routing == "optimize" and not plan.has_relay and rate is not None:
        notes.append(_relay_does_not_pay(problems, plan))
        if explain_relay:
            edges = relay_edges(rs, plan.rate_rps, max_chips)
            notes.append(describe_edges(edges))
    base = (
        [counted(b) for b in _baselines(rs, plan, no_relay, pb, _Unsized(notes, unsized), final)]
        if baselines
        else []
    )
    return Outcome(
        mode, plan, base, bound, plan.problem or pb, notes, scen.name, edges, unsized, None, rs
    )


#: The note of a scenario without a one-datacenter baseline (no ``baseline:`` section).
NO_SAME_DC = (
    "no one-datacenter baseline (same-dc): the scenario has no baseline: section naming its chips"
)


@dataclass(frozen=True)
class _Unsized:
    """Where a baseline that no fleet fits is told: the outcome's notes and its
    ``unsized_baselines``."""

    notes: list[str]
    reasons: dict[str, str]

    def __call__(self, name: str, rate: float, exc: InfeasibleError) -> None:
        self.reasons[name] = str(exc)
        self.notes.append(f"baseline {name} cannot be sized at {rate:.4g} req/s: {exc}")


def _no_relay(
    rs: ResolvedScenario, plan: Plan, pb: Problem, unsized: _Unsized | None, final: bool = True
) -> Plan | None:
    """The cross-datacenter plan without relay at the plan's rate (None when none fits, told
    to ``unsized`` where given; ``final``: see :func:`~pddplan.solver.modes.baseline_at_rate`).

    Without ``unsized`` (no baselines asked for) the plan is only compared with the plan with
    relay, which a plan that misses its SLA never beats (:func:`_relay_loses`): where no count
    meets TTFT, None, without the search that sizes the baseline for capacity."""
    try:
        return baseline_at_rate(
            rs,
            NO_RELAY,
            plan.rate_rps,
            max_chips=pb.max_chips,
            final=final,
            capacity=unsized is not None,
        )
    except InfeasibleError as exc:
        if unsized is not None:
            unsized(NO_RELAY.name, plan.rate_rps, exc)
        return None


def _relay_loses(pb: Problem, plan: Plan, no_relay: Plan, mode: str, budget: float | None) -> bool:
    """Whether the plan without relay beats the plan with it on BCR (and fits the budget)."""
    return (
        pb.routing == "optimize"
        and no_relay.meets_sla
        and no_relay.bcr_requests_per_usd > plan.bcr_requests_per_usd * (1 + 1e-12)
        and (mode != "budget" or budget is None or no_relay.cost_usd_per_hour <= budget)
    )


def _baselines(
    rs: ResolvedScenario,
    plan: Plan,
    no_relay: Plan | None,
    pb: Problem,
    unsized: _Unsized,
    final: bool = True,
) -> list[Plan]:
    """The same-datacenter baseline (when the scenario has one), the no-relay plan and, when
    RLD finishes anomalous requests, the stronger no-relay plan that keeps RLD for those only
    (:data:`~pddplan.solver.modes.NO_RELAY_RLD`); each that no fleet fits is told to
    ``unsized``; ``final``: see :func:`~pddplan.solver.modes.baseline_at_rate`."""
    base: list[Plan] = []
    if rs.scenario.baseline is not None:
        try:
            base.append(baseline_at_rate(rs, SAME_DC, plan.rate_rps, final=final))
        except InfeasibleError as exc:
            unsized(SAME_DC.name, plan.rate_rps, exc)
    else:
        unsized.notes.append(NO_SAME_DC)
    if no_relay is not None:
        base.append(no_relay)
    if has_anomalous_rld(pb):
        try:
            base.append(
                baseline_at_rate(
                    rs, NO_RELAY_RLD, plan.rate_rps, max_chips=pb.max_chips, final=final
                )
            )
        except InfeasibleError as exc:
            unsized(NO_RELAY_RLD.name, plan.rate_rps, exc)
    return base


def has_anomalous_rld(pb: Problem) -> bool:
    """Whether RLD finishes anomalous requests in ``pb`` (the anomalous filter is on and the
    workload has some): then the no-relay fleet without RLD is not the only one."""
    return pb.topology.anomalous_filter and bool(np.logical_or.reduce(pb.classes.anomalous))


def _relay_does_not_pay(problems: list[Problem], plan: Plan) -> str:
    """Why the chosen plan has no RLD: the best plan that relays, priced at the same rate."""
    relaying = [replace(p, routing=RELAY_ONLY) for p in problems]
    head = f"relay does not pay at {plan.rate_rps:.4g} req/s"
    try:
        alt = with_goodput(PlanSearch(relaying).solve_rate(plan.rate_rps))
    except InfeasibleError as exc:
        return f"{head}: no plan with RLD fits ({exc})"
    return (
        f"{head}: the best plan with RLD costs {alt.cost_usd_per_hour:.4g} $/h for BCR "
        f"{alt.bcr_requests_per_usd:.4g} req/$, against {plan.cost_usd_per_hour:.4g} $/h and "
        f"{plan.bcr_requests_per_usd:.4g} req/$ without"
    )


def scale_bound(line_rate: float, cap: float | None) -> tuple[float, str]:
    """The highest rate a question's search goes to [req/s] and what sets it: the line at its
    utilization cap (``line_rate``), the maximum rate ``cap``, or the search ceiling."""
    hi = min(x for x in (line_rate, math.inf if cap is None else cap, DEFAULT_RATE_CEILING_RPS))
    return hi, _bound_name(hi, line_rate, cap)


def rate_ceiling(
    rs: ResolvedScenario,
    max_chips: dict[str, int] | None = None,
    max_rate_rps: float | None = None,
) -> tuple[float, str]:
    """:func:`scale_bound` of a scenario: the highest rate its PDD search goes to [req/s]
    (``max_rate_rps``, else the scenario's ``limits.max_rate_rps``) and what sets it."""
    cap = max_rate_rps if max_rate_rps is not None else rs.scenario.limits.max_rate_rps
    return scale_bound(PlanSearch(_problems(rs, max_chips)).line_rate_limit(), cap)


def _counted_goodput_note(
    solver: PlanSearch, plan: Plan, mode: str, hi: float, bound: str
) -> str | None:
    """Where a question without a target rate counted the plan's goodput up to its bound
    (:func:`~pddplan.solver.modes.goodput_up_to`) below the rate its fleet meets every target
    up to, which a solve at a target rate reports (:func:`~pddplan.solver.fleet.goodput_rps`):
    a note giving both, so that the two BCRs of one fleet are told apart. None elsewhere."""
    s = solver.solver_of(plan)
    if mode == "rate" or s is None or plan.goodput_rps < hi:
        return None
    own = goodput_rps(s, changed(plan, fleet_goodput_rps=None))
    if not own > hi:
        return None
    return (
        f"goodput and BCR count the traffic up to {hi:.4g} req/s, the highest rate this question "
        f"plans for, set by the {bound}; the fleet meets every target up to {own:.4g} req/s (BCR "
        f"{changed(plan, fleet_goodput_rps=own).bcr_requests_per_usd:.4g} req/$), the figures a "
        f"solve at a target rate (--rate) reports for it"
    )


def _bound_name(hi: float, line_rate: float, cap: float | None) -> str:
    if cap is not None and hi == cap:
        return f"max rate {cap:.4g} req/s"
    if hi == line_rate:
        return "line capacity (utilization cap)"
    return f"search ceiling {hi:.4g} req/s"
