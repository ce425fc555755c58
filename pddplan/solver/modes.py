"""The questions a planner brings, answered on top of the search.

- rate: the least-cost plan that serves the rate within SLA (procurement);
- budget (and inventory): the most goodput within a $/h budget;
- neither: the plan of highest BCR, bounded by the line, inventory or ``max_rate``;
- the baselines (same datacenter; cross-datacenter without relay) at the plan's rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from pddplan.errors import InfeasibleError, UsageError
from pddplan.scenario import ResolvedScenario
from pddplan.solver.plan import Plan
from pddplan.solver.problem import (
    NO_RELAY,
    PDD,
    SAME_DC,
    Problem,
    Progress,
    Topology,
    build_problem,
    check_options,
)
from pddplan.solver.search import Solver


def solve_budget(solver: Solver, budget_usd_per_hour: float, hi_rate: float) -> Plan:
    """Most goodput within a budget (and inventory): bisection on the rate."""
    lo_plan: Plan | None = None
    lo, hi = 0.0, hi_rate
    try:
        plan = solver.solve_rate(hi)
        if plan.cost_usd_per_hour <= budget_usd_per_hour:
            return plan
    except InfeasibleError:
        pass
    for _ in range(40):
        mid = (
            (lo + hi) / 2
            if lo > 0
            else hi / 2**0.5
            if lo_plan is None and hi > 1e-6
            else (lo + hi) / 2
        )
        try:
            plan = solver.solve_rate(mid)
            good = plan.cost_usd_per_hour <= budget_usd_per_hour
        except InfeasibleError:
            good = False
        if good:
            lo, lo_plan = mid, plan
        else:
            hi = mid
        if hi - lo < 1e-3 * hi:
            break
    if lo_plan is None:
        raise InfeasibleError(
            f"no plan serves any traffic within {budget_usd_per_hour:.4g} $/h", binding="budget"
        )
    return lo_plan


def solve_max_bcr(solver: Solver, hi_rate: float, points: int = 24) -> Plan:
    """The plan of highest BCR for rates up to ``hi_rate``."""
    rates = np.geomspace(hi_rate / 64, hi_rate, points)
    best: Plan | None = None
    for r in rates:
        try:
            p = solver.solve_rate(float(r))
        except InfeasibleError:
            continue
        if best is None or p.bcr_requests_per_usd > best.bcr_requests_per_usd:
            best = p
    if best is None:
        return solver.solve_rate(float(rates[0]))
    # refine: the highest rate that the best plan's counts still serve
    lo, hi = best.rate_rps, min(hi_rate, best.rate_rps * (rates[1] / rates[0]))
    for _ in range(20):
        mid = (lo + hi) / 2
        try:
            p = solver.solve_rate(mid)
        except InfeasibleError:
            hi = mid
            continue
        if p.bcr_requests_per_usd >= best.bcr_requests_per_usd:
            best, lo = p, mid
        else:
            hi = mid
    return best


def baseline_at_rate(rs: ResolvedScenario, topology: Topology, rate: float) -> Plan:
    """Size a baseline at a rate; when no count meets TTFT, size it for capacity and say so."""
    pb = build_problem(rs, topology)
    check_options(pb)
    try:
        return Solver(pb).solve_rate(rate)
    except InfeasibleError:
        pb.enforce_ttft = False
        plan = Solver(pb).solve_rate(rate)
        return replace(plan, meets_sla=False)


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
) -> Outcome:
    scen = rs.scenario
    pb = build_problem(rs, PDD)
    if max_chips:
        unknown = [c for c in max_chips if c not in rs.chips]
        if unknown:
            raise UsageError(
                f"--max-chips names chips the scenario does not use: {', '.join(unknown)}"
            )
        pb.max_chips = {**pb.max_chips, **max_chips}
    check_options(pb)
    solver = Solver(pb)
    rate = rate_rps if rate_rps is not None else scen.rate_rps
    budget = (
        budget_usd_per_hour if budget_usd_per_hour is not None else scen.limits.budget_usd_per_hour
    )
    cap = max_rate_rps if max_rate_rps is not None else scen.limits.max_rate_rps
    if (budget is not None and rate_rps is None) or max_bcr:
        rate = None
    if max_bcr:
        budget = None
    line_rate = solver.line_rate_limit()
    hi = min(x for x in (line_rate, cap or math.inf, DEFAULT_RATE_CEILING_RPS))
    if rate is not None:
        plan = solver.solve_rate(rate, progress)
        mode, bound = "rate", "target rate"
    elif budget is not None:
        plan = solver.solve_budget(budget, hi)
        mode = "budget"
        bound = "budget"
        if plan.rate_rps >= hi * 0.999:
            bound = _bound_name(hi, line_rate, cap)
        elif pb.max_chips:
            bound = "budget or inventory"
    else:
        plan = solver.solve_max_bcr(hi)
        mode = "max-bcr"
        bound = _bound_name(hi, line_rate, cap)
        if pb.max_chips:
            bound += " (inventory limits applied)"
    base: list[Plan] = []
    notes: list[str] = []
    if baselines:
        topologies = ([SAME_DC] if scen.baseline is not None else []) + [NO_RELAY]
        for topo in topologies:
            try:
                base.append(baseline_at_rate(rs, topo, plan.rate_rps))
            except InfeasibleError as exc:
                notes.append(
                    f"baseline {topo.name} cannot be sized at {plan.rate_rps:.4g} req/s: {exc}"
                )
    return Outcome(mode, plan, base, bound, pb, notes, scen.name)


def _bound_name(hi: float, line_rate: float, cap: float | None) -> str:
    if cap is not None and hi == cap:
        return f"max rate {cap:.4g} req/s"
    if hi == line_rate:
        return "line capacity (utilization cap)"
    return f"search ceiling {hi:.4g} req/s"


def ratio(a: float, b: float) -> float:
    return a / b if b else math.inf
