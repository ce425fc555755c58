"""The questions a planner brings, answered on top of the search.

- rate: the least-cost plan that serves the rate within SLA (procurement);
- budget (and inventory): the most goodput within a $/h budget;
- neither: the plan of highest BCR, bounded by the line, inventory or ``max_rate``;
- the baselines (same datacenter; cross-datacenter without relay; cross-datacenter with RLD for
  the anomalous requests only, :data:`NO_RELAY_RLD`) at the plan's rate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import NamedTuple, Protocol

from pddplan import units
from pddplan.errors import InfeasibleError
from pddplan.executors import Progress
from pddplan.solver.cache import SearchCache
from pddplan.solver.fleet import goodput_bracket, goodput_rps, meets_sla, sizing_limit_rps
from pddplan.solver.plan import Plan, changed
from pddplan.solver.problem import (
    Problem,
    Topology,
    build_problem,
    check_options,
)
from pddplan.solver.search import Solver, better_plan
from pddplan.spec.scenario import ResolvedScenario

#: The stronger no-relay baseline: the PDD fleet with ``serving.routing=no-relay``. No request
#: relays, but RLD still finishes the anomalous requests (long input, short output), so their
#: KV never crosses the line; only the others go P-MD.
NO_RELAY_RLD = Topology("no-relay-rld", cross_dc=True, relay=True, anomalous_filter=True)
#: The routing rule a baseline is sized with, where it is not the scenario's.
BASELINE_ROUTING = {NO_RELAY_RLD.name: "no-relay"}


class RateSolver(Protocol):
    def solve_rate(self, rate: float, progress: Progress | None = None) -> Plan: ...

    def candidate_rate(self, rate: float, progress: Progress | None = None) -> Plan: ...

    def finalized(self, candidate: Plan) -> Plan: ...

    def cost_floor(self, rate: float) -> float: ...

    def step_end_for_goodput(self, goodput_rps: float) -> float: ...

    def goodput_bound_for_cost(self, cost_usd_per_hour: float, rate: float) -> float: ...

    def cost_floor_for_goodput(self, goodput_rps: float) -> float: ...


class PlanSearch:
    """The PDD search over its variants, each an exact search of its own.

    With the anomalous filter, RLD finishes the anomalous requests (long input, short output)
    and they never cross the line; without it they cross like any other request, and a plan may
    have no RLD at all. Relaying is a choice the search prices, not a given.
    """

    def __init__(self, problems: list[Problem], cache: SearchCache | None = None) -> None:
        self.solvers = [Solver(pb, cache) for pb in problems]

    def solve_rate(self, rate: float, progress: Progress | None = None) -> Plan:
        """The best of the variants' plans (:func:`better_plan` on their final figures, which
        are computed only for plans whose costs tie)."""
        final = Finals(self)
        return final(self._candidate(rate, progress, final))

    def candidate_rate(self, rate: float, progress: Progress | None = None) -> Plan:
        """The plan :meth:`solve_rate` returns, before its final figures (:meth:`finalized`):
        its cost, fleet and routing are final."""
        return self._candidate(rate, progress, Finals(self))

    def _candidate(self, rate: float, progress: Progress | None, final: Finals) -> Plan:
        best: Plan | None = None
        first_error: InfeasibleError | None = None
        for s in self.solvers:
            try:
                # a variant's routes on which no plan can beat the best so far are skipped
                above = best.cost_usd_per_hour if best is not None else math.inf
                plan = s.candidate_rate(rate, progress, above)
            except InfeasibleError as exc:
                first_error = first_error or exc
                continue
            if best is None or better_plan(plan, best, final.ttft_s):
                best = plan
        if best is None:
            assert first_error is not None
            raise first_error
        # the error's traceback holds this frame, whose local holds the error: a cycle that
        # keeps every frame of the failed search (its solver and plans) until the collector
        # runs; dropped here, they go when the call returns
        first_error = None
        return best

    def finalized(self, candidate: Plan) -> Plan:
        """A candidate of :meth:`candidate_rate` with its final figures, by the variant's
        solver that sized it (:meth:`Solver.finalized`)."""
        s = self.solver_of(candidate)
        if s is None:
            raise ValueError("the plan was not sized by one of this search's variants")
        return s.finalized(candidate)

    def solver_of(self, plan: Plan) -> Solver | None:
        """The variant's solver that sized ``plan`` (None for a plan of another problem)."""
        for s in self.solvers:
            if s.pb is plan.problem:
                return s
        return None

    def line_rate_limit(self) -> float:
        return max(s.line_rate_limit() for s in self.solvers)

    def cost_floor(self, rate: float) -> float:
        """A cost no variant's plan at ``rate`` or above can undercut [USD/h]
        (:meth:`Solver.cost_floor`)."""
        return min(s.cost_floor(rate) for s in self.solvers)

    def step_end_for_goodput(self, goodput_rps: float) -> float:
        """The lowest of the variants' :meth:`Solver.step_end_for_goodput` [requests/s]:
        every variant's fleets whose steps end by it have at most ``goodput_rps``."""
        return min(s.step_end_for_goodput(goodput_rps) for s in self.solvers)

    def goodput_bound_for_cost(self, cost_usd_per_hour: float, rate: float) -> float:
        """The highest of the variants' :meth:`Solver.goodput_bound_for_cost` [requests/s]."""
        return max(s.goodput_bound_for_cost(cost_usd_per_hour, rate) for s in self.solvers)

    def cost_floor_for_goodput(self, goodput_rps: float) -> float:
        """The lowest of the variants' :meth:`Solver.cost_floor_for_goodput` [USD/h]."""
        return min(s.cost_floor_for_goodput(goodput_rps) for s in self.solvers)


class Finals:
    """Candidates' final plans (``solver.finalized``), each computed once, the candidates kept
    alive with them so that no other plan meets their ``id``."""

    def __init__(self, solver: RateSolver) -> None:
        self._solver = solver
        self._final: dict[int, tuple[Plan, Plan]] = {}  # id of a candidate -> (it, final)

    def __call__(self, plan: Plan) -> Plan:
        kept = self._final.get(id(plan))
        if kept is None:
            kept = self._final[id(plan)] = (plan, self._solver.finalized(plan))
        return kept[1]

    def ttft_s(self, plan: Plan) -> tuple[float, float, float]:
        """The final plan's TTFT p50/p90/p99 [s]: what :func:`better_plan` ranks ties by."""
        return self(plan).prefill.ttft_s


def solver_for(plan: Plan) -> Solver:
    """A solver on the problem ``plan`` was sized on."""
    return Solver(plan.problem)


def with_goodput(plan: Plan, solver: Solver | None = None) -> Plan:
    """``plan`` with its fleet's goodput (:func:`fleet.goodput_rps`) filled in (``solver``: one
    on the plan's problem that the caller has, else a new one)."""
    if plan.fleet_goodput_rps is not None or plan.problem is None:
        return plan
    if solver is None:
        solver = solver_for(plan)
    assert solver.pb is plan.problem
    return changed(plan, fleet_goodput_rps=goodput_rps(solver, plan))


#: Relative precision of the goodput of each fleet the exact modes compare [-].
EXACT_GOODPUT_RTOL = 1e-7
#: Where the walk over the rate axis starts, as a share of its upper end [-].
WALK_START_SHARE = 1e-6


def walk_fleets(
    solver: RateSolver,
    hi_rate: float,
    ended: list[InfeasibleError] | None = None,
    falls: list[tuple[Plan, Plan]] | None = None,
    skip: WalkSkip | None = None,
) -> Iterator[Plan]:
    """Every fleet the rate search returns for a rate in ``(0, hi_rate]``, in rate order, each
    with its fleet goodput, as a candidate (:meth:`RateSolver.candidate_rate`): its final
    figures (:meth:`RateSolver.finalized`, through :class:`Finals`) are computed where a
    caller needs them, for a tie and for the plan it returns, not for every fleet walked (they
    change neither the fleet, its goodput nor the step it ends).

    Notes
    -----
    The least-cost plan at rate ``r`` is a fleet ``F``. ``F`` stays a valid sizing (it meets
    every target and every utilization cap, :func:`fleet.sizing_limit_rps`) for every rate
    from ``r`` to ``e(F) = min(goodput(F), cap limit(F))``. Just past ``e(F)``, ``F`` is no
    longer valid and the search returns another fleet. Stepping from ``e(F)`` to the next fleet
    therefore visits the fleet at the start of every step of the least-cost staircase, which
    is what makes the modes built on it exact within the model (up to the goodput's relative
    precision :data:`EXACT_GOODPUT_RTOL`) wherever the least cost does not fall as the rate
    grows: ``F`` is then the least-cost plan on all of ``[r, e(F)]``. A fleet of equal cost
    and lower goodput that the search ranks first (by TTFT) at some rate inside a step is then
    the only plan not visited.

    The least cost can fall as the rate grows, though: RLD's batch is the largest that meets
    the TPOT target at RLD's mean context at the rate, and that context shrinks as the line
    loads (it is weighted by each class's time on RLD), so near the line's capacity a bigger
    batch and fewer RLD instances can serve a higher rate for less (pdd-paper with
    ``serving.link_utilization_cap: 0.99`` and L40S RLD: 771.16 $/h at 10.83 req/s,
    743.32 $/h at 10.88). A fleet that is least-cost only at rates strictly inside another
    fleet's step is not visited; one that is least-cost at a step's start is, whatever the
    costs before it, so :func:`solve_budget` walks on past a fleet above its budget.

    ``ended``: when given, the error of the first rate past the last fleet that nothing fits is
    appended to it (the walk then stopped below ``hi_rate``).

    ``falls``: when given, each fleet that costs less than the fleet walked before it is
    appended to it with that fleet, ``(dearer, cheaper)``: where the least cost fell
    (:func:`fall_note` words it for a solve's notes). Only the fleets walked are compared: a
    fall inside a stretch passed over (``skip``) is not seen.

    ``skip``: when given, the walk passes over the stretches it names
    (:meth:`WalkSkip.resume_rate`: the caller's proof that no fleet whose step starts in one is
    a fleet it needs) and takes the fleet the search returns where the stretch ends. That rate
    lies inside a step, where the search may size the step's fleet otherwise or rank another
    fleet of the same cost first, and where a walk step by step may meet more fleets of that
    cost before the step of the fleet found ends; so where the caller may need a fleet of
    that cost (:meth:`WalkSkip.needs`), or nothing fits there, the walk goes back and walks
    the stretch step by step instead. A long stretch is first passed over to its middle only
    (:data:`WALK_SKIP_SHRINKS`; the caller's proof holds for every part of a stretch that
    starts where it starts): where the fleet found there stands, the walk goes on step by step
    from it up to the end first tried.
    """
    last: Plan | None = None  # the fleet walked before
    r = hi_rate * WALK_START_SHARE
    origin: float | None = None  # where the stretch passed over began, until it stands
    stepwise_to = 0.0  # a stretch gone back to is walked step by step up to this rate
    shrinks = 0  # how many times the stretch passed over was halved
    needed_at = 0.0  # where the stretch passed over ended first, when its fleet was needed
    while r <= hi_rate:
        try:
            plan = solver.candidate_rate(r)
        except InfeasibleError as exc:
            if origin is not None:  # walk the stretch instead: the wall may lie inside it
                r, stepwise_to, origin = origin, needed_at if shrinks else r, None
                continue
            if r <= hi_rate * WALK_START_SHARE:
                raise
            if ended is not None:
                ended.append(exc)
            return  # every constraint tightens with the rate: nothing fits above either
        plan, end = _with_step(plan)
        if origin is not None:
            assert skip is not None
            if skip.needs(plan):  # it may be sized otherwise at its step's start
                if not shrinks:
                    needed_at = r  # the walk goes step by step up to here from now on
                if shrinks < WALK_SKIP_SHRINKS and r > origin * (1 + WALK_SKIP_SHRINK_SPAN):
                    shrinks += 1  # pass over the stretch's first half only
                    r = origin + 0.5 * (r - origin)
                    continue
                r, stepwise_to, origin = origin, needed_at, None
                continue
            if shrinks:  # the first half stands: step by step from here to the first end
                stepwise_to = max(stepwise_to, needed_at)
            origin = None
        if (
            falls is not None
            and last is not None
            and plan.cost_usd_per_hour < last.cost_usd_per_hour
            and not _close(plan.cost_usd_per_hour, last.cost_usd_per_hour)
        ):
            falls.append((last, plan))
        last = plan
        yield plan
        r = max(end, r * (1 + EXACT_GOODPUT_RTOL))
        if skip is not None and stepwise_to < r <= hi_rate:
            to = min(skip.resume_rate(r), hi_rate)
            if to > r:
                origin, r, shrinks = r, to, 0


#: The most times :func:`walk_fleets` halves a stretch it passed over, where the fleet found at
#: its end may be needed, before it walks the stretch step by step [-]: once, and only a
#: stretch that spans more than :data:`WALK_SKIP_SHRINK_SPAN` of the rate it starts at (each
#: halving costs a search, which a short stretch's steps may not repay). Either way the walk
#: goes on step by step from where the fleet it kept was found up to the first end.
WALK_SKIP_SHRINKS = 1
#: [-] see :data:`WALK_SKIP_SHRINKS`.
WALK_SKIP_SHRINK_SPAN = 0.1


class WalkSkip(Protocol):
    """What lets :func:`walk_fleets` pass over stretches of the rate axis."""

    def resume_rate(self, rate: float) -> float:
        """From the rate the walk has reached after a fleet, the rate it may go on from: no
        fleet whose step starts in between, save the one whose step holds that rate, is one
        the caller needs [requests/s]."""
        ...

    def needs(self, plan: Plan) -> bool:
        """Whether the caller may need a fleet of the cost of ``plan`` (with its fleet
        goodput; the fleet found where a stretch passed over ends) that meets every target
        at ``plan``'s rate."""
        ...


def _with_step(plan: Plan) -> tuple[Plan, float]:
    """A candidate of the walks with its fleet goodput (bisected to
    :data:`EXACT_GOODPUT_RTOL`, then held to the grid of :func:`_on_grid`), and the rate its
    step ends at, ``e(F)`` of :func:`walk_fleets`: past it the fleet misses a target or a
    utilization cap, so the search returns another."""
    s = solver_for(plan)
    lo, hi = _on_grid(s, plan, *goodput_bracket(s, plan, EXACT_GOODPUT_RTOL, guided=True))
    end = min(hi, sizing_limit_rps(s, plan) * (1 + 1e-12))
    return changed(plan, fleet_goodput_rps=lo), end


def with_exact_goodput(plan: Plan) -> Plan:
    """``plan`` with its fleet goodput as the max-BCR and budget walks count every fleet they
    compare (:func:`_with_step`: to :data:`EXACT_GOODPUT_RTOL`, on the grid of
    :func:`_on_grid`, so that one fleet has one goodput whichever search found it): the
    baselines of those modes are counted so too."""
    return _with_step(plan)[0]


#: [-] The walks' goodput brackets end on a binary grid of ``2^-STEP_GRID_BITS`` of the binade
#: that holds the goodput (:func:`_on_grid`): 6e-8 relative at most, within
#: :data:`EXACT_GOODPUT_RTOL`.
STEP_GRID_BITS = 24


def _on_grid(s: Solver, plan: Plan, lo: float, hi: float) -> tuple[float, float]:
    """The cell of a fixed binary grid that holds the fleet's goodput, from a bracket
    ``(lo, hi)`` of it (the fleet meets every target at ``lo`` and misses one at ``hi``).

    A bracket's ends depend on where its search started, the rate the fleet was found at,
    so a walk that found a fleet inside its step (after a stretch passed over) would go on
    from another float than a walk that found it at the step's start, and every later step
    of the two walks would differ in its last bits. The grid cell depends on the fleet alone:
    its points lie ``2^(e - 1 - STEP_GRID_BITS)`` apart in the binade ``[2^(e-1), 2^e)`` that
    holds the goodput (a check at the power of two between ``lo`` and ``hi`` tells which,
    where they straddle one), and the cell is the one whose lower point the fleet meets and
    whose upper point it misses, found among the points inside the bracket
    (:func:`~pddplan.solver.fleet.meets_sla`, one or two checks: the bracket spans at most a
    few points). The bracket itself where it is not finite and positive."""
    if not (0.0 < lo <= hi < math.inf):
        return lo, hi
    e_lo, e_hi = math.frexp(lo)[1], math.frexp(hi)[1]
    e = e_lo
    if e_hi != e_lo and meets_sla(s, plan, math.ldexp(1.0, e_hi - 1)):
        e = e_hi
    q = math.ldexp(1.0, e - 1 - STEP_GRID_BITS)
    k_lo, k_hi = math.floor(lo / q), math.ceil(hi / q)
    if k_hi == k_lo:  # hi on a grid point equal to lo's cannot be: the fleet misses at hi
        k_hi += 1
    while k_hi - k_lo > 1:
        k = (k_lo + k_hi) // 2
        if meets_sla(s, plan, k * q):
            k_lo = k
        else:
            k_hi = k
    return k_lo * q, k_hi * q


def solve_budget(
    solver: RateSolver,
    budget_usd_per_hour: float,
    hi_rate: float,
    stopped: list[str] | None = None,
    falls: list[tuple[Plan, Plan]] | None = None,
) -> Plan:
    """Most goodput within a budget (and inventory), exactly: the fleet of highest goodput
    among every fleet the search returns at a rate up to ``hi_rate`` that costs at most the
    budget (see :func:`walk_fleets`). Ties: the lower cost, then :func:`better_plan`. Goodput
    counts up to ``hi_rate``, as :func:`solve_max_bcr` counts it (:func:`goodput_up_to`): traffic
    above the question's bound is not there to serve, so two fleets that both reach it tie,
    and the cheaper wins (a fleet's goodput past the line's utilization cap made its BCR
    higher than the max-BCR plan's).

    The walk goes on past a fleet above the budget: the least cost can fall as the rate grows
    (see :func:`walk_fleets`), so a later fleet may fit again. It stops where no fleet at a
    higher rate can fit, the solver's :meth:`~Solver.cost_floor` above the budget.

    The walk passes over stretches of early steps whose fleets a bound proves to have less
    goodput than a fleet within the budget that a few searches found first, or than the best
    walked so far (:class:`_BudgetSkip`; on the default scenario at 176 $/h it searches 21
    rates, the probes' among them, where every step took 37). Where the plan it returns has
    no more goodput than that bound allows, it walks every step instead. A fleet passed over
    can neither be the plan nor tie it, and the steps after a stretch end where the full
    walk's do (their ends lie on the grid of :func:`_on_grid`, whatever rate a fleet was found
    at), so the plan is the full walk's to the bit wherever the fleet found at a stretch's end
    is its step's own; a fall of the least cost inside a stretch passed over is not seen
    (``falls``).

    ``stopped``: when given, what ended the walk is appended to it: ``"budget"`` (a fleet
    walked after the plan costs more), the binding of the error at the first rate nothing fits
    (a wall below ``hi_rate``, see :func:`walk_fleets`), or nothing when it reached
    ``hi_rate``. ``falls``: see :func:`walk_fleets`."""
    limit = budget_usd_per_hour * (1 + 1e-12)
    final = Finals(solver)
    skip = _BudgetSkip(solver, limit, hi_rate)
    walked = _budget_walk(solver, limit, hi_rate, final, skip)
    if skip.passed_over and not (
        walked.best is not None and skip.passed_below < walked.best.goodput_rps * (1 - _TIE)
    ):
        # a fleet the probes found has more goodput than every fleet walked, so the bound it
        # lent the stretches passed over may not hold against the plan: walk every step
        walked = _budget_walk(solver, limit, hi_rate, final, None)
    best = walked.best
    if best is None:
        raise InfeasibleError(
            f"no plan serves any traffic within {budget_usd_per_hour:.4g} $/h", binding="budget"
        )
    if falls is not None:
        falls.extend(walked.falls)
    if stopped is not None:
        if walked.over:
            stopped.append("budget")
        if walked.ended:
            stopped.append(walked.ended[0].binding)
    return final(best)


class _BudgetWalk(NamedTuple):
    """What :func:`_budget_walk` found: the plan (None: no fleet walked fits the budget),
    whether a fleet walked after it costs more than the budget, the error of the first rate
    nothing fits (see :func:`walk_fleets`), and the falls of the least cost it saw."""

    best: Plan | None
    over: bool
    ended: list[InfeasibleError]
    falls: list[tuple[Plan, Plan]]


def _budget_walk(
    solver: RateSolver, limit: float, hi_rate: float, final: Finals, skip: _BudgetSkip | None
) -> _BudgetWalk:
    """The fleet of most goodput (counted up to ``hi_rate``) within ``limit`` [USD/h] among
    the fleets :func:`walk_fleets` visits (passing over ``skip``'s stretches, where given,
    which is told the most goodput so far); see :func:`solve_budget`."""
    best: Plan | None = None
    ended: list[InfeasibleError] = []
    falls: list[tuple[Plan, Plan]] = []
    over = False  # a fleet walked after the plan costs more than the budget
    for plan in walk_fleets(solver, hi_rate, ended, falls, skip):
        plan = goodput_up_to(plan, hi_rate)
        if plan.cost_usd_per_hour > limit:
            over = True
            if solver.cost_floor(plan.rate_rps) > limit:
                break  # no fleet the search returns at a higher rate fits
            continue
        if best is None or _more_goodput(plan, best, final.ttft_s):
            best, over = plan, False  # only a fleet above the budget after it bounds it
            if skip is not None:
                skip.best_goodput = max(skip.best_goodput, plan.goodput_rps)
    return _BudgetWalk(best, over, ended, falls)


def solve_max_bcr(
    solver: RateSolver,
    hi_rate: float,
    falls: list[tuple[Plan, Plan]] | None = None,
    stopped: list[str] | None = None,
) -> Plan:
    """The plan of highest BCR (fleet goodput per dollar), exactly, among every fleet the
    search returns at a rate up to ``hi_rate`` (see :func:`walk_fleets`). Ties: the higher
    goodput, then :func:`better_plan`.

    Goodput counts up to ``hi_rate``, the bound of the question (a maximum rate, the line at
    its utilization cap, or the search ceiling): traffic above it is not there to serve. This
    also keeps the walk exact: a fleet whose goodput reaches past ``hi_rate`` would otherwise
    outrank the staircase's fleets with capacity that only exists beyond the walk's end (looser
    TTFT targets could then lower the best BCR; tests/property/test_solver_metamorphic.py).

    The walk passes over stretches of cheap early steps that a bound proves below the best
    BCR walked so far, or below that of the fleet the search returns at ``hi_rate`` where
    that is higher (:class:`_BcrSkip`; on the default scenario it searches 14 rates, the
    ceiling's among them, for its 87 steps). It goes back and walks a stretch step by step
    where a fleet of the cost of the one it finds at the stretch's end could reach the bound
    (:meth:`_BcrSkip.needs`), and walks every step where the plan does not reach the ceiling
    fleet's BCR (past a fall of the least cost, where the bound proves nothing).

    ``stopped``: when given, the binding of the error at the first rate nothing fits is
    appended to it where the walk met such a wall below ``hi_rate`` (see :func:`walk_fleets`);
    nothing where it reached ``hi_rate``.
    """
    falls_seen: list[tuple[Plan, Plan]] = []
    ended: list[InfeasibleError] = []
    skip = _BcrSkip(solver, hi_rate)
    walk = walk_fleets(solver, hi_rate, ended, falls=falls_seen, skip=skip)
    best = _best_bcr(solver, hi_rate, walk, skip)
    if skip.passed_over and _capped_bcr(best, hi_rate) < skip.ceiling_bcr:
        # the ceiling's fleet outranks every fleet walked, so the bound it lent the stretches
        # passed over proves nothing against the plan: walk every step
        falls_seen.clear()
        ended.clear()
        best = _best_bcr(solver, hi_rate, walk_fleets(solver, hi_rate, ended, falls=falls_seen))
    if falls is not None:
        falls.extend(falls_seen)
    if stopped is not None and ended:
        stopped.append(ended[0].binding)
    return best


def _best_bcr(
    solver: RateSolver, hi_rate: float, walk: Iterator[Plan], skip: _BcrSkip | None = None
) -> Plan:
    """The final plan of highest BCR among the fleets walked, goodput counted up to
    ``hi_rate`` (see :func:`solve_max_bcr`); ``skip``, where given, is told the best so far."""
    best: Plan | None = None
    final = Finals(solver)
    for plan in walk:
        plan = goodput_up_to(plan, hi_rate)
        if best is None or _higher_bcr(plan, best, final.ttft_s):
            best = plan
            if skip is not None:
                skip.best_bcr = plan.bcr_requests_per_usd
    assert best is not None  # walk_fleets raises when nothing fits at its first rate
    return final(best)


def goodput_up_to(plan: Plan, hi_rate: float) -> Plan:
    """``plan`` with its fleet goodput counted up to ``hi_rate``, the bound of a question
    without a target rate (the max-BCR and budget modes count every fleet they compare so,
    their baselines too: traffic above the bound is not there to serve)."""
    if plan.fleet_goodput_rps is not None and plan.fleet_goodput_rps > hi_rate:
        return changed(plan, fleet_goodput_rps=hi_rate)
    return plan


def _capped_bcr(plan: Plan, hi_rate: float) -> float:
    """``plan``'s BCR with its goodput counted up to ``hi_rate`` (:func:`goodput_up_to`)."""
    return goodput_up_to(plan, hi_rate).bcr_requests_per_usd


#: [-] How far below the best figure (BCR, or goodput within a budget) a bound must prove every
#: fleet a walk passes over: ten times the tie of :func:`_higher_bcr` and :func:`_more_goodput`,
#: so that no fleet passed over could tie the best.
RESUME_RTOL = 1e-5
#: The most times :meth:`_BcrSkip.resume_rate` raises the cost that a fleet passed over must
#: have for its goodput (each a :meth:`RateSolver.cost_floor_for_goodput`) [-].
RESUME_FLOOR_STEPS = 8


class _BcrSkip:
    """The stretches a max-BCR walk passes over (:class:`WalkSkip`), bounded by the best BCR
    walked so far or, where it is higher, the BCR of the fleet the search returns at the
    ceiling (``ceiling_bcr``): the walk's last steps come near it, so its early steps, cheap
    and far below it, are passed over. The plan must then reach that BCR
    (:func:`solve_max_bcr` checks that it does: past a fall of the least cost it might not)."""

    def __init__(self, solver: RateSolver, hi_rate: float) -> None:
        self.solver, self.hi_rate = solver, hi_rate
        self.best_bcr = 0.0  # the best BCR walked so far [requests/USD]
        self.passed_over = False  # whether a stretch was passed over
        try:
            top, _ = _with_step(solver.candidate_rate(hi_rate))
            self.ceiling_bcr = _capped_bcr(top, hi_rate)
        except InfeasibleError:
            self.ceiling_bcr = 0.0  # a wall below the ceiling, which the walk meets

    def _bound(self) -> float:
        """The best BCR, walked or the ceiling fleet's, less :data:`RESUME_RTOL`
        [requests/USD]: a fleet that may reach it may be needed."""
        return max(self.best_bcr, self.ceiling_bcr) * (1.0 - RESUME_RTOL)

    def needs(self, plan: Plan) -> bool:
        """Whether a fleet of ``plan``'s cost valid at its rate could reach the bound: the
        step-by-step walk may hold another fleet of that cost there (sized at the step's
        start, at other batches, or ranked first by TTFT), and may meet more of that cost
        before ``plan``'s step ends; each has at most
        :meth:`RateSolver.goodput_bound_for_cost` of goodput. (A fleet cheaper than ``plan``
        that is least-cost only inside ``plan``'s step, a fall of the least cost, is not
        bounded: the walk does not look for those, see :func:`walk_fleets`.)"""
        cost = plan.cost_usd_per_hour
        if cost > 0.0:
            most = _most_goodput(self.solver, cost, plan.rate_rps, self.hi_rate)
            bcr = most * units.SECONDS_PER_HOUR / cost
        else:
            bcr = math.inf
        needed = bcr >= self._bound()
        self.passed_over = self.passed_over or not needed
        return needed

    def resume_rate(self, rate: float) -> float:
        """Below the rate returned, every fleet the walk would visit from ``rate`` on has a
        BCR under the bound (:meth:`_bound`).

        A fleet the walk visits at a rate ``r_F >= rate`` is a plan the search sized at
        ``r_F``, so it costs at least ``floor``, :meth:`RateSolver.cost_floor` at ``rate``.
        Every fleet whose step starts in ``[rate, x)``, save the one whose step holds ``x``,
        has its step end by ``x``, and so a goodput of at most ``g`` where ``x`` is
        :meth:`RateSolver.step_end_for_goodput` of ``g``. Its BCR is at most its goodput
        (counted up to ``hi_rate``) over its cost, and a fleet whose goodput is above ``g_i``
        costs at least :meth:`RateSolver.cost_floor_for_goodput` of ``g_i`` (``c_i``; and at
        least ``floor``): every goodput up to ``g_{i+1}``, the one of the bound's BCR at
        ``c_i``, is below the bound. From ``g_0``, that goodput at ``floor``, the goodputs so
        proven grow while ``c_i`` does (:data:`RESUME_FLOOR_STEPS` at most). The walk goes on
        from the ``x`` of the last ``g`` (``hi_rate`` where it passes ``hi_rate``); from
        ``rate`` itself where nothing can be passed over."""
        bcr = self._bound()
        floor = self.solver.cost_floor(rate)
        if not (math.isfinite(bcr) and bcr > 0.0 and floor > 0.0):
            return rate
        cost = floor
        goodput = bcr * cost / units.SECONDS_PER_HOUR  # of that BCR at that cost [req/s]
        for _ in range(RESUME_FLOOR_STEPS):
            if goodput > self.hi_rate:
                return self.hi_rate
            more = self.solver.cost_floor_for_goodput(goodput)
            if not (math.isfinite(more) and more > cost):
                break
            cost = more
            goodput = bcr * cost / units.SECONDS_PER_HOUR
        if goodput > self.hi_rate:
            return self.hi_rate
        return max(rate, self.solver.step_end_for_goodput(goodput))


def _most_goodput(
    solver: RateSolver, cost_usd_per_hour: float, rate: float, hi_rate: float
) -> float:
    """The most goodput, counted up to ``hi_rate``, of a fleet that costs at most
    ``cost_usd_per_hour`` and meets every target at ``rate`` [requests/s]
    (:meth:`RateSolver.goodput_bound_for_cost`, which grows with the cost): what bounds a fleet
    that a walk passing over a stretch may have missed (see :meth:`WalkSkip.needs`)."""
    return min(solver.goodput_bound_for_cost(cost_usd_per_hour, rate), hi_rate)


#: The most searches :class:`_BudgetSkip` makes before a budget walk, to find a fleet within
#: the budget whose goodput bounds the stretches the walk passes over [-].
BUDGET_PROBES = 10
#: [-] :class:`_BudgetSkip` probes only where the budget is at least this many times the cost
#: floor where the walk starts: a smaller budget buys fleets of few costs, whose walk is short
#: (19 steps, of two costs, on the default scenario at 100 $/h, whose floor there is
#: 63.40 $/h), which the probes' searches would not repay.
BUDGET_PROBE_MIN_SHARE = 2.0
#: [-] The probes of :class:`_BudgetSkip` stop where the highest rate whose fleet was found
#: within the budget and the lowest whose fleet was not are this close (a share of the
#: ceiling: twelve halvings of it).
BUDGET_PROBE_RTOL = 2.0**-12


#: [-] A budget walk resumes after a stretch it passes over at a multiple of this share of the
#: ceiling (the highest below the rate its bound proves): the walks of one question at
#: different prices or budgets, a sweep's points, then resume at the same rates more often and
#: share their searches' price tables.
BUDGET_RESUME_GRID = 2.0**-10


class _BudgetSkip:
    """The stretches a budget walk passes over (:class:`WalkSkip`), bounded by the most goodput
    of a fleet within the budget: walked so far, or, where it is higher, found before the walk
    by a few searches (``probed``, :meth:`_probe`). The plan most often lies at the last steps
    within the budget, so the walk's early steps, cheap fleets of little goodput, are passed
    over. The plan must then reach ``probed`` (:func:`solve_budget` checks that it does: a fleet
    a probe finds inside a step may be one the walk does not visit, of equal cost and ranked
    first by TTFT there, and past a fall of the least cost the fleet of that step may cost
    more than the budget)."""

    def __init__(self, solver: RateSolver, limit: float, hi_rate: float) -> None:
        self.solver, self.limit, self.hi_rate = solver, limit, hi_rate
        self.best_goodput = 0.0  # the most goodput walked so far within the budget [req/s]
        self.passed_over = False  # whether a stretch was passed over
        #: the highest bound a stretch passed over was proven below [requests/s]: the plan
        #: must have more goodput, beyond a tie, for the walk to be the full walk's
        self.passed_below = 0.0
        self.probed = self._probe()

    def _probe(self) -> float:
        """The most goodput (counted up to ``hi_rate``) of the fleets within the budget that
        the search returns at a few rates [requests/s] (0 where none fits; none is looked for
        where the budget is under :data:`BUDGET_PROBE_MIN_SHARE` times the walk's first cost
        floor, or where no cost bounds the goodput of the walk's cheapest fleet below the
        ceiling). Whether it probes depends on the question alone, never on what the memo
        holds, so that one question has one answer to the last bit. The probes are a
        bisection of ``[0, hi_rate]``, :data:`BUDGET_PROBES` searches at most, between the
        rates whose fleets fit the budget and those whose fleets do not, until the two ends are
        within :data:`BUDGET_PROBE_RTOL` of the ceiling: the rates searched are its binary
        fractions, the same for every price and budget (a sweep's points share their price
        tables), and none above the highest rate whose cost floor
        (:meth:`RateSolver.cost_floor`) is within the budget is searched (no fleet there fits
        it). The goodput is that of the fleet found at the
        highest rate that fits (the least cost most often grows with the rate, and a fleet's
        goodput is at least the rate it was found at), the one fleet whose goodput is
        computed."""
        start = self.hi_rate * WALK_START_SHARE
        floor = self.solver.cost_floor(start)
        if self.limit < BUDGET_PROBE_MIN_SHARE * floor:
            return 0.0  # a walk of few steps (or none within the budget): no probe repays
        if _most_goodput(self.solver, floor, start, self.hi_rate) >= self.hi_rate:
            # no cost bounds a fleet's goodput below the ceiling (owned chips at no cost, say):
            # every stretch's end would be needed, and nothing passed over
            return 0.0
        top = self._floor_rate(start)
        fit: Plan | None = None  # the fleet found within the budget at the highest rate
        lo, hi = 0.0, self.hi_rate
        r = hi
        searches = 0
        while searches < BUDGET_PROBES and hi - lo > BUDGET_PROBE_RTOL * self.hi_rate:
            if r <= top:  # above it, every fleet costs more than the budget: no search
                searches += 1
                try:
                    plan: Plan | None = self.solver.candidate_rate(r)
                except InfeasibleError:
                    plan = None
                if plan is not None and plan.cost_usd_per_hour <= self.limit:
                    fit, lo = plan, r
                else:
                    hi = r
            else:
                hi = r
            r = 0.5 * (lo + hi)
        if fit is None:
            return 0.0
        return goodput_up_to(_with_step(fit)[0], self.hi_rate).goodput_rps

    def _floor_rate(self, start: float) -> float:
        """A rate up to ``hi_rate`` whose cost floor is within the budget, within
        :data:`BUDGET_PROBE_RTOL` of ``hi_rate`` below the highest such [requests/s]: a fleet
        the search returns at a higher rate than that costs more than the budget (the floor
        grows with the rate). ``start``: a rate whose floor is within the budget."""
        solver, lo, hi = self.solver, start, self.hi_rate
        if solver.cost_floor(hi) <= self.limit:
            return hi
        while hi - lo > BUDGET_PROBE_RTOL * self.hi_rate:
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if solver.cost_floor(mid) <= self.limit else (lo, mid)
        return lo

    def _bound(self) -> float:
        """The most goodput, walked or probed, less :data:`RESUME_RTOL` [requests/s]: a
        fleet within the budget that may reach it may be needed."""
        return max(self.best_goodput, self.probed) * (1.0 - RESUME_RTOL)

    def needs(self, plan: Plan) -> bool:
        """Whether a fleet the step-by-step walk may visit in ``plan``'s step could be the
        plan: one of ``plan``'s cost (sized at the step's start, or ranked first by TTFT
        there), or, where another of that cost ends the step sooner, one the walk finds after
        it, cheaper where the least cost falls (see :meth:`_BcrSkip.needs`). Any of them that
        fits the budget costs at most ``plan``'s cost and the budget, so its goodput is at most
        :func:`_most_goodput` of the lower of the two; it is needed where that reaches the
        bound (a fleet above the budget is needed too where a cheaper one within it could be
        the plan)."""
        bound = self._bound()
        cost = min(plan.cost_usd_per_hour, self.limit)
        needed = _most_goodput(self.solver, cost, plan.rate_rps, self.hi_rate) >= bound
        if not needed:
            self.passed_over = True
            self.passed_below = max(self.passed_below, bound)
        return needed

    def resume_rate(self, rate: float) -> float:
        """Below the rate returned, every fleet the walk would visit from ``rate`` on has a
        goodput under the bound (:meth:`_bound`): every fleet whose step starts in ``[rate,
        x)``, save the one whose step holds ``x``, has its step end by ``x``, and so a goodput
        of at most the bound where ``x`` is :meth:`RateSolver.step_end_for_goodput` of it;
        ``rate`` itself where nothing within the budget is known yet."""
        bound = self._bound()
        if not bound > 0.0:
            return rate
        grid = self.hi_rate * BUDGET_RESUME_GRID
        x = math.floor(self.solver.step_end_for_goodput(bound) / grid) * grid
        if x > rate:
            self.passed_below = max(self.passed_below, bound)
        return max(rate, x)


def fall_note(mode: str, falls: list[tuple[Plan, Plan]]) -> str | None:
    """A solve's note where its walk saw the least cost fall as the rate grew (``falls`` of
    :func:`walk_fleets`; None where it did not)."""
    if not falls:
        return None
    dearer, cheaper = falls[0]
    more = f", and {len(falls) - 1} more time{'s' * (len(falls) > 2)}" if len(falls) > 1 else ""
    return (
        f"the least cost fell as the rate grew ({dearer.cost_usd_per_hour:.2f} $/h at "
        f"{dearer.rate_rps:.4g} req/s, {cheaper.cost_usd_per_hour:.2f} $/h at "
        f"{cheaper.rate_rps:.4g} req/s{more}; near the line's capacity RLD's mean context can "
        f"shrink and its batch grow): the {mode} walk takes the fleet at the start of every "
        "cost step, but a fleet least-cost only inside another's step is not seen; "
        "`pddplan solve --rate R` answers each rate exactly"
    )


def _close(a: float, b: float, rtol: float = 1e-9) -> bool:
    """Whether ``a`` and ``b`` agree within ``rtol`` (relative); an infinite value (the BCR of
    a fleet that costs nothing, the goodput of one no rate overloads) is close to itself only,
    not to every finite one."""
    if a == b:
        return True
    return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= rtol * max(abs(a), abs(b))


#: [-] Goodputs (and BCRs) within this of each other tie (:func:`_more_goodput`).
_TIE = EXACT_GOODPUT_RTOL * 10


def _more_goodput(a: Plan, b: Plan, ttft_s: Callable[[Plan], tuple[float, float, float]]) -> bool:
    """Whether ``a`` has more goodput than ``b``; ties by :func:`better_plan` on the TTFT
    percentiles ``ttft_s`` gives (the final plans')."""
    if not _close(a.goodput_rps, b.goodput_rps, _TIE):
        return a.goodput_rps > b.goodput_rps
    return better_plan(a, b, ttft_s)


def _higher_bcr(a: Plan, b: Plan, ttft_s: Callable[[Plan], tuple[float, float, float]]) -> bool:
    """Whether ``a`` has a higher BCR than ``b``; ties by goodput, then as
    :func:`_more_goodput`."""
    if not _close(a.bcr_requests_per_usd, b.bcr_requests_per_usd, _TIE):
        return a.bcr_requests_per_usd > b.bcr_requests_per_usd
    return _more_goodput(a, b, ttft_s)


def baseline_at_rate(
    rs: ResolvedScenario,
    topology: Topology,
    rate: float,
    *,
    max_chips: dict[str, int] | None = None,
    final: bool = True,
    capacity: bool = True,
) -> Plan:
    """Size a baseline at a rate; when no count meets TTFT, size it for capacity and say so.

    The plan's goodput is its fleet's (:func:`with_goodput`): below the rate, or zero, when it
    misses a target. A baseline of :data:`BASELINE_ROUTING` is sized with its routing rule.

    ``final=False``: the plan before its final figures (:meth:`Solver.candidate_rate`: its
    fleet, cost, goodput and SLA verdict are final; its reported TTFT and hand-over figures are
    not, and no goodput reads them), for a caller that only compares it;
    :func:`finalized_plan` completes it where it is shown.

    ``capacity=False``: where no count meets TTFT, raise the TTFT search's
    :class:`InfeasibleError` instead of sizing for capacity, for a caller that reads only a
    plan that meets its SLA (the one sized for capacity never does).
    """
    pb = build_problem(rs, topology)
    pb.routing = BASELINE_ROUTING.get(topology.name, pb.routing)
    if max_chips and topology.cross_dc:
        pb.max_chips = {**pb.max_chips, **max_chips}
    check_options(pb)
    solver = Solver(pb)
    try:
        plan = solver.candidate_rate(rate)
    except InfeasibleError as exc:
        if not capacity:
            raise
        why = str(exc)  # the text alone: the error's traceback holds this frame
    else:
        return with_goodput(solver.finalized(plan) if final else plan, solver)
    # no count meets TTFT: size for capacity, and say which target fails and why
    pb.enforce_ttft = False
    solver = Solver(pb)
    plan = solver.candidate_rate(rate)
    if final:
        plan = solver.finalized(plan)
    # the final figures rename the prefill's binding entry alone: this one is kept either way
    plan = changed(plan, meets_sla=False, binding=[*plan.binding, f"SLA: {why}"])
    return with_goodput(plan, solver)


def finalized_plan(plan: Plan) -> Plan:
    """A plan of ``baseline_at_rate(..., final=False)`` with its final figures, as
    ``final=True`` gives it (:meth:`Solver.finalized`, which keeps its goodput)."""
    return solver_for(plan).finalized(plan)


def ratio(a: float, b: float) -> float:
    return a / b if b else math.inf
