"""``breakeven`` over a topology file: the value of one PATH at which the least-cost plan changes
its structure, or at which its cost reaches a target (docs/topology.md, "Break-even").

The plan at each value is the topology planner's (:func:`pddplan.topology.plan_topology`); the
search is ``breakeven``'s bisection (:func:`pddplan.whatif.bisect_side`). A plan's *structure* is
what it buys and where its traffic goes: per chosen pipeline (source, P site, MD site) the
share of its source it carries, the lines it leases and the chips it buys at each site
(:func:`structure`; not the share level an option was sized at, which two plans of one fleet
may differ in); a plan no choice gives is its own structure (``infeasible``). The structure is a step function of the PATH: with one change in ``[lo, hi]``
the bisection finds it; with several it finds one at which the plan at ``lo`` stops being the
plan (a sweep of the PATH shows them all).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pddplan import defaults
from pddplan.errors import InfeasibleError, TopologyError
from pddplan.topology import TopologyPlan, plan_topology
from pddplan.topology.inputs import TopologySource
from pddplan.whatif import bisect_side, bisection_steps

Structure = tuple[tuple[str, float, int, tuple[tuple[str, str, int], ...]], ...] | str
Question = Literal["structure", "cost"]


def structure(tp: TopologyPlan) -> Structure:
    """A plan's structure: (pipeline, share carried, lines leased, chips by site) of each chosen
    option. Two options of one pipeline at two share levels that buy the same chips (a least
    size that serves both rates) are one structure: a break-even reported between them
    changed nothing a buyer sees."""
    return tuple(
        sorted((o.pipeline, tp.carried_share[o.pipeline], o.lines, o.chips) for o in tp.chosen)
    )


@dataclass(frozen=True)
class PlanAt:
    """The least-cost plan at one value of the PATH, in brief."""

    value: float
    structure: Structure
    cost_usd_per_hour: float  # inf where no plan serves every source
    flows: str  # as a sweep row gives them; the reason where infeasible
    lines_leased: int


@dataclass(frozen=True)
class TopologyBreakEven:
    path: str
    question: Question
    target_usd_per_hour: float | None
    lo: PlanAt
    hi: PlanAt
    #: the plans either side of the change (None: no change in the interval)
    below: PlanAt | None
    above: PlanAt | None
    iterations: int

    @property
    def value(self) -> float | None:
        if self.below is None or self.above is None:
            return None
        return (self.below.value + self.above.value) / 2


def plan_at(src: TopologySource, overrides: Mapping[str, Any], path: str, x: float) -> PlanAt:
    """The topology planner's least-cost plan with ``path`` at ``x``."""
    try:
        tp = plan_topology(src.resolve({**overrides, path: x}))
    except (InfeasibleError, TopologyError) as exc:
        return PlanAt(x, "infeasible", math.inf, str(exc), 0)
    row = tp.summary_row()
    return PlanAt(x, structure(tp), tp.cost_usd_per_hour, str(row["flows"]), row["lines_leased"])


def topology_breakeven(
    src: TopologySource,
    overrides: Mapping[str, Any],
    path: str,
    lo: float,
    hi: float,
    *,
    against_cost_usd_per_hour: float | None = None,
    tol: float = defaults.BREAKEVEN_TOLERANCE,
    progress: Callable[[int, int], None] | None = None,
) -> TopologyBreakEven:
    """The value of ``path`` in ``[lo, hi]`` at which the least-cost plan's structure changes
    or, with ``against_cost_usd_per_hour``, at which its cost crosses that target; located to
    within ``tol`` of the interval (``progress(done, total)`` after each plan)."""
    steps = bisection_steps(tol)
    total = 2 + steps

    def tell(done: int) -> None:
        if progress:
            progress(done, total)

    tell(0)
    at_lo = plan_at(src, overrides, path, lo)
    tell(1)
    at_hi = plan_at(src, overrides, path, hi)
    tell(2)
    target = against_cost_usd_per_hour
    question: Question = "structure" if target is None else "cost"
    seen: dict[float, PlanAt] = {lo: at_lo, hi: at_hi}

    def gap(p: PlanAt) -> float:
        assert target is not None
        return p.cost_usd_per_hour - target

    def side(x: float) -> int:
        p = seen[x] = plan_at(src, overrides, path, x)
        if target is None:
            return 1 if p.structure == at_lo.structure else -1
        g = gap(p)
        return 0 if g == 0 else (1 if (g > 0) == (gap(at_lo) > 0) else -1)

    if target is None:
        changes = at_lo.structure != at_hi.structure
    else:
        changes = gap(at_lo) == 0 or (gap(at_lo) > 0) != (gap(at_hi) > 0)
    if not changes:
        tell(total)
        return TopologyBreakEven(path, question, target, at_lo, at_hi, None, None, 0)
    if target is not None and gap(at_lo) == 0:
        tell(total)
        return TopologyBreakEven(path, question, target, at_lo, at_hi, at_lo, at_lo, 0)
    a, b, it = bisect_side(side, lo, hi, tol, steps, lambda i: tell(2 + i))
    tell(total)
    return TopologyBreakEven(path, question, target, at_lo, at_hi, seen[a], seen[b], it)
