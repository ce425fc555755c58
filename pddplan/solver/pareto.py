"""The frontier of plans over cost, goodput and TTFT p99, for PDD and its baselines.

A grid of target rates, each answered by :func:`~pddplan.solver.answer.solve_scenario` (the
least-cost PDD plan at that rate and the baselines sized at the same rate, exactly what
``pddplan solve --rate R`` returns), then the plans no other plan beats on all three at once:
a point is dominated when another costs no more [$/h], serves no less goodput [req/s] and has no
higher TTFT p99 at its own target rate [s], and is better on one of them. Only plans that meet
every SLA target at their rate take part; the others (a baseline sized for capacity because no
prefill count meets TTFT) are listed, marked, and never on a frontier.

Each topology (``pdd``, ``same-dc``, ``no-relay``, ``no-relay-rld``) has its own frontier; the
joint frontier pools every plan, so a PDD plan off it names the baseline plan that dominates it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from pddplan.errors import InfeasibleError, OptionError
from pddplan.executors import Progress
from pddplan.solver.answer import Outcome, rate_ceiling, solve_scenario
from pddplan.solver.plan import Plan
from pddplan.solver.problem import PDD, Problem
from pddplan.solver.token_cost import cost_usd_per_mtok
from pddplan.spec.scenario import ResolvedScenario

#: Relative tolerance under which two figures of a plan count as equal [-].
TIE_RTOL = 1e-9


@dataclass(frozen=True)
class ParetoPoint:
    """One topology's plan at one target rate of the grid (``plan`` None: no plan fits there,
    ``reason`` says why)."""

    topology: str
    rate_rps: float
    plan: Plan | None
    reason: str = ""
    #: non-dominated among the plans of its own topology
    on_frontier: bool = False
    #: non-dominated among the plans of every topology
    on_joint_frontier: bool = False
    #: a plan of another topology that dominates it, as ``topology at R req/s``
    dominated_by: str = ""

    @property
    def meets_sla(self) -> bool:
        """Whether the point has a plan that meets every SLA target at its rate."""
        return self.plan is not None and self.plan.meets_sla

    @property
    def objectives(self) -> tuple[float, float, float]:
        """``(cost [$/h], goodput [req/s], TTFT p99 [s])`` of its plan (which it must have)."""
        assert self.plan is not None
        p = self.plan
        return p.cost_usd_per_hour, p.goodput_rps, float(p.prefill.ttft_s[2])

    @property
    def cost_usd_per_mtok(self) -> tuple[float | None, float | None]:
        """Cost per million input and output tokens at its goodput [$/Mtok]
        (:func:`~pddplan.solver.token_cost.cost_usd_per_mtok`)."""
        return cost_usd_per_mtok(self.plan) if self.plan is not None else (None, None)

    def label(self) -> str:
        return f"{self.topology} at {self.rate_rps:.4g} req/s"


@dataclass(frozen=True)
class Frontier:
    """The grid's points, every topology, with their frontier flags.

    Attributes
    ----------
    scenario_name : the scenario's name.
    problem : PDD's problem (model, line, SLA targets) at the grid's first feasible rate.
    rates_rps : [req/s] the grid of target rates.
    upper : what sets the grid's top (the line at its utilization cap, a maximum rate ...).
    points : one per topology and rate, PDD first at each rate.
    notes : what the grid left out (rates with no PDD plan, baselines that could not be sized).
    """

    scenario_name: str
    problem: Problem
    rates_rps: tuple[float, ...]
    upper: str
    points: list[ParetoPoint]
    notes: list[str] = field(default_factory=list)

    def topologies(self) -> list[str]:
        """The topologies present, PDD first."""
        out: list[str] = []
        for p in self.points:
            if p.topology not in out:
                out.append(p.topology)
        return out

    def frontier(self, topology: str = PDD.name) -> list[ParetoPoint]:
        """``topology``'s frontier, cheapest first."""
        pts = [p for p in self.points if p.topology == topology and p.on_frontier]
        return sorted(pts, key=lambda p: (p.objectives[0], -p.objectives[1], p.rate_rps))


def rate_grid(lo_rps: float, hi_rps: float, points: int) -> list[float]:
    """``points`` target rates evenly spaced from ``lo_rps`` to ``hi_rps`` [req/s], both ends
    included."""
    if points < 2:
        raise OptionError("points", f"must be a whole number >= 2, not {points!r}")
    step = (hi_rps - lo_rps) / (points - 1)
    return [lo_rps + i * step for i in range(points - 1)] + [hi_rps]


def _le(a: float, b: float) -> bool:
    return a <= b or abs(a - b) <= TIE_RTOL * max(abs(a), abs(b))


def _lt(a: float, b: float) -> bool:
    return a < b and not _le(b, a)


def dominates(a: tuple[float, float, float], b: tuple[float, float, float]) -> bool:
    """Whether plan figures ``a`` dominate ``b`` (``(cost, goodput, TTFT p99)``): no worse on
    each (lower cost, higher goodput, lower p99; equal within :data:`TIE_RTOL`) and better on
    one."""
    (ca, ga, ta), (cb, gb, tb) = a, b
    no_worse = _le(ca, cb) and _le(gb, ga) and _le(ta, tb)
    return no_worse and (_lt(ca, cb) or _lt(gb, ga) or _lt(ta, tb))


def same_figures(a: tuple[float, float, float], b: tuple[float, float, float]) -> bool:
    """Whether two plans' ``(cost, goodput, TTFT p99)`` are equal within :data:`TIE_RTOL`."""
    return all(_le(x, y) and _le(y, x) for x, y in zip(a, b, strict=True))


def non_dominated(objectives: Sequence[tuple[float, float, float]]) -> list[bool]:
    """For each ``(cost, goodput, TTFT p99)``, whether no other in the list dominates it."""
    return [not any(dominates(o, x) for o in objectives) for x in objectives]


def pareto_frontier(
    rs: ResolvedScenario,
    *,
    points: int,
    min_rate_rps: float | None = None,
    max_rate_rps: float | None = None,
    max_chips: dict[str, int] | None = None,
    baselines: bool = True,
    progress: Progress | None = None,
    solve: Callable[..., Outcome] = solve_scenario,
    ceiling: Callable[..., tuple[float, str]] = rate_ceiling,
) -> Frontier:
    """Solve PDD (and the baselines) at ``points`` target rates and mark the frontiers.

    ``solve`` answers each rate (:func:`~pddplan.solver.answer.solve_scenario`'s signature):
    the API passes :func:`pddplan.tiers.solve`, which sizes a scenario's cache tiers at each,
    and ``ceiling`` the grid's top (:func:`pddplan.tiers.rate_ceiling`: that of the cache
    capacities those answers choose from).

    The grid runs from ``min_rate_rps`` (default: its top over ``points``) to ``max_rate_rps``
    (default: the highest rate PDD's search goes to, :func:`~pddplan.solver.answer.rate_ceiling`:
    the line at its utilization cap, ``limits.max_rate_rps`` or the search ceiling).

    Raises
    ------
    OptionError : ``min_rate_rps`` not below the grid's top.
    InfeasibleError : no PDD plan meets the SLA at any rate of the grid (exit 3).
    """
    if max_rate_rps is not None:
        hi, upper = max_rate_rps, f"maximum rate asked for, {max_rate_rps:.4g} req/s"
    else:
        hi, upper = ceiling(rs, max_chips)
    lo = min_rate_rps if min_rate_rps is not None else hi / points
    if not lo < hi:
        raise OptionError(
            "min_rate_rps", f"must be below the grid's top {hi:.4g} req/s ({upper}), not {lo:.4g}"
        )
    grid = rate_grid(lo, hi, points)
    pts: list[ParetoPoint] = []
    notes: list[str] = []
    problem: Problem | None = None
    first_error: InfeasibleError | None = None
    unsized: dict[str, list[tuple[float, str]]] = {}  # baseline -> (rate, why) it was not sized
    for i, rate in enumerate(grid):
        try:
            out = solve(rs, rate_rps=rate, max_chips=max_chips, baselines=baselines)
        except InfeasibleError as exc:
            first_error = first_error or exc
            pts.append(ParetoPoint(PDD.name, rate, None, str(exc)))
        else:
            problem = problem or out.problem
            pts.append(ParetoPoint(PDD.name, rate, out.plan))
            pts += [ParetoPoint(b.topology, rate, b) for b in out.baselines]
            for name, why in out.unsized_baselines.items():
                unsized.setdefault(name, []).append((rate, why))
        if progress is not None:
            progress(i + 1, len(grid))
    if problem is None:
        assert first_error is not None
        raise InfeasibleError(
            f"pareto: no PDD plan meets the SLA at any of the {len(grid)} target rates from "
            f"{lo:.4g} to {hi:.4g} req/s (scenario {rs.scenario.name}); at {lo:.4g} req/s: "
            f"{first_error}",
            binding=first_error.binding,
            relaxation=first_error.relaxation,
        )
    missing = [p.rate_rps for p in pts if p.topology == PDD.name and p.plan is None]
    if missing:
        notes.insert(
            0,
            f"no PDD plan fits at {len(missing)} of the {len(grid)} target rates "
            f"({', '.join(f'{r:.4g}' for r in missing)} req/s); they are left off the frontier",
        )
    for name, where in unsized.items():
        notes.append(
            f"baseline {name} cannot be sized at {len(where)} of the {len(grid)} target rates "
            f"({', '.join(f'{r:.4g}' for r, _ in where)} req/s); at {where[0][0]:.4g} req/s: "
            f"{where[0][1]}"
        )
    return Frontier(rs.scenario.name, problem, tuple(grid), upper, mark(pts), notes)


def mark(points: list[ParetoPoint]) -> list[ParetoPoint]:
    """``points`` with their frontier flags and, for a point off the joint frontier, a plan of
    another topology that dominates it. Points that miss the SLA (or have no plan) are on no
    frontier."""
    ok = [i for i, p in enumerate(points) if p.meets_sla]
    joint = dict(zip(ok, non_dominated([points[i].objectives for i in ok]), strict=True))
    own: dict[int, bool] = {}
    for topo in {p.topology for p in points}:
        idx = [i for i in ok if points[i].topology == topo]
        own.update(zip(idx, non_dominated([points[i].objectives for i in idx]), strict=True))
    out: list[ParetoPoint] = []
    for i, p in enumerate(points):
        by = ""
        if i in ok and not joint[i]:
            by = next(
                (
                    points[j].label()
                    for j in ok
                    if points[j].topology != p.topology
                    and dominates(points[j].objectives, p.objectives)
                ),
                "",
            )
        out.append(
            replace(
                p,
                on_frontier=own.get(i, False),
                on_joint_frontier=joint.get(i, False),
                dominated_by=by,
            )
        )
    return out
