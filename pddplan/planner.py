"""The question a planner brings, answered: a PDD plan in one of three modes, and its baselines.

- rate: the least-cost plan that serves the rate within SLA (procurement);
- budget (and inventory): the most goodput within a $/h budget;
- neither: the plan of highest BCR, bounded by the line, inventory or ``max_rate``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pddplan.errors import InfeasibleError, UsageError
from pddplan.loader import ResolvedScenario
from pddplan.solver import (
    NO_RELAY,
    PDD,
    SAME_DC,
    Plan,
    Problem,
    Progress,
    Solver,
    baseline_at_rate,
    build_problem,
    check_options,
)

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
