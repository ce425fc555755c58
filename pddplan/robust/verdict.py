"""What a solve's verdict rests on: PDD against each baseline, one estimated input at a time.

The verdict against a baseline is whether PDD's BCR beats the baseline's (their ratio above 1).
For every estimated input (:func:`~pddplan.robust.inputs.collect_inputs`: the profiles'
``estimated:`` keys, the workload's hit-rate shift and anomalous share, the scenario's
``uncertainty:`` block; not the target rate, which is the question asked), the verdict is taken
again with that input alone at each end of its plausible range
(:func:`~pddplan.robust.inputs.plausible_range`), like one bar of a tornado chart. An input
whose end reverses the verdict is one the verdict rests on; bisection between the point value
and that end then brackets where it turns (:data:`FLIP_BISECTION_STEPS` halvings).

The fleets are held: PDD's plan and each baseline's, as the solve sized them (chips, instance
sizes, counts, routing, hand-over), are re-evaluated with the input changed, their decode pools
stepping at the largest batch that meets TPOT there (:func:`~pddplan.robust.evaluate.
fleet_plan`, as ``pddplan robust`` does), priced at the changed prices, with the goodput of
:func:`~pddplan.solver.fleet.goodput_rps`. This answers "would the fleets as bought still rank
the same", not "would a planner who knew the value size other fleets" (a full re-solve per end:
about 50x the cost; ``pddplan whatif`` answers that for one input).

Notes
-----
PDD wins against a baseline when ``g_P / c_P > g_B / c_B`` (goodput ``g``, cost ``c``). The
feasible rates of a fleet are an interval from 0 (:mod:`pddplan.solver.fleet`), so one check of
each fleet decides it without either goodput: if PDD's fleet meets every target at a rate ``x``
and the baseline's misses one at ``x c_B / c_P``, PDD wins; the other way round, it does not.
``x`` starts at a guess from the point estimate (:func:`_equal_rate_guess`) and moves while
both fleets meet, or both miss (``x`` is then below, or above, both ``g_P`` and
``g_B c_P / c_B``), to the goodput's precision (:data:`~pddplan.solver.fleet.GOODPUT_RTOL`):
two checks a step, instead of a goodput bisection per fleet. Where it moves is guided by the
checks' margins (:func:`_next_probe`: while both meet or both miss, Newton on each fleet's
margin terms, each with its slope measured on the point estimate (:func:`_starts`), then the
secant of the margin's terms; once bracketed, false position towards each fleet's turning rate
term by term, a bisection where two probes have not halved the bracket): a tie's bracket closes
in about three steps, where bisection took twelve. Fleets that no rate within that precision
separates tie, and a tie is no win; a baseline that is PDD's very fleet at PDD's cost (one
:meth:`~pddplan.solver.sizing.Sizing.fleet_key`, the key every fleet figure is memoized on)
ties without a check. PDD's fleet is checked once for every baseline whose first guess is at
or below a rate where it met every target (:meth:`_OnSample.known`).

The point estimate's verdict is taken the same way, on the fleets as solved (not read off the
BCR figures): a BCR ratio within the goodput's precision of 1 is then a tie at the point as at
every changed value, not a win at the point that every input's range appears to reverse.

An input may leave a fleet as it is (:meth:`_Fleet.reads`): an estimate of a chip the fleet does
not have (each fleet's problem holds its own instance kinds only, :meth:`_Fleet.on`, and a
chip's keys change that chip alone); of the WAN link where the fleet stays in one datacenter
(its KV goes over the RDMA fabric, :attr:`~pddplan.timing.Paths.decode_link`, its line load is
0, nothing of it is relayed, so the hand-over that reads the line is never taken, and the line
costs it nothing, :attr:`~pddplan.solver.problem.Problem.line_cost_usd_per_hour`); or of the
RDMA fabric where the fleet crosses datacenters on a topology that relays nothing (its KV goes
over the WAN link, every request is decoded on MD from it: the RDMA copy to RLD, the one time
the fabric sets there, is never taken, and the fabric has no price). Such a fleet
is not rebuilt on the input's changed values: the point's build of it is checked there, and
each of its checks is kept by rate (:meth:`_Built.check`), so that a probe at a rate the point
or another value checked it at already (its first, where the costs are the point's) is
answered as it was. An input that leaves every fleet as it is
(a catalog's other chips) is still resolved at its ends (a value the schema rejects is reported
as for any input), but the verdict there is the point's (:func:`_leaves_fleets`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from pddplan.errors import OverrideError
from pddplan.robust.evaluate import Config, fleet_plan
from pddplan.robust.inputs import (
    RATE,
    Input,
    NotSampled,
    collect_inputs,
    plausible_range,
    sample_overrides,
)
from pddplan.robust.search import point_config
from pddplan.solver import Outcome, Plan, Solver, Topology, build_problem
from pddplan.solver.fleet import (
    GOODPUT_RTOL,
    CheckStart,
    FeasibleRates,
    FleetCheck,
    check_fleet,
    check_start,
    log_margin,
    misses_without_wait,
)
from pddplan.solver.plan import FREE_PDD_RATIO
from pddplan.spec.scenario import ResolvedScenario

#: Halvings of the interval between an input's point value and the end that reverses a verdict.
FLIP_BISECTION_STEPS = 3
#: The baseline's BCR-equal rate is taken this much below the cost ratio, so that two fleets
#: of equal BCR never read as a win [-] (ties within the goodput's precision are decided by
#: :meth:`_OnSample.outcome`).
TIE_RTOL = 1e-9
#: The search for a deciding rate stops this far below (or above) its first guess: both fleets
#: then miss a target at every rate, or meet them all (a tie) [-].
TINY_RATE_SHARE = 1e-6

Resolve = Callable[[Mapping[str, Any]], ResolvedScenario]

#: The outcomes of PDD's fleet against a baseline's (:meth:`_OnSample.outcome`).
WINS, LOSES, TIE = "wins", "loses", "tie"


@dataclass(frozen=True)
class Flip:
    """An estimated input whose plausible range reverses a verdict.

    Attributes
    ----------
    path : the input's override PATH.
    point : its value in the scenario.
    low, high : its plausible range.
    end : ``low`` or ``high``: the end of the range that reverses the verdict.
    flips_at : the value nearest the point found to reverse it (bisection towards ``end``).
    holds_at : the value next to ``flips_at``, towards the point, where the verdict holds
        (None where the scenario has no point value: the end alone is given).
    """

    path: str
    point: float
    low: float
    high: float
    end: str
    flips_at: float
    holds_at: float | None


@dataclass(frozen=True)
class Verdict:
    """PDD against one baseline at the point estimate, and the inputs that reverse it."""

    baseline: str
    pdd_wins: bool
    bcr_ratio: float | None  # PDD over the baseline; None where the baseline's BCR is 0
    ratio_undefined: str | None  # why bcr_ratio is None
    flips: list[Flip]
    #: ``"wins"``, ``"loses"`` or ``"tie"`` (no rate separates the fleets within the goodput's
    #: precision; a tie is no win): the point's verdict, :meth:`_OnSample.outcome`
    outcome: str = ""


@dataclass(frozen=True)
class VerdictCheck:
    """Every baseline's verdict, the inputs checked with their ranges, and those left out."""

    verdicts: list[Verdict]
    inputs: list[tuple[str, float, float, float]]  # (path, point, low, high)
    not_checked: list[NotSampled]


class _Built:
    """A fleet built on a scenario (:meth:`_Fleet.on`): the solver on its problem and the fleet's
    plan there (None: it no longer stands), with its checks kept by rate (:meth:`check`).
    ``served_nothing``: the fleet met no target at any rate on the point estimate (its goodput
    0), so that a miss is likely wherever it is checked (:meth:`early`)."""

    __slots__ = ("_checks", "_starts", "plan", "served_nothing", "solver")

    def __init__(self, solver: Solver, plan: Plan | None, served_nothing: bool = False) -> None:
        self.solver, self.plan = solver, plan
        self.served_nothing = served_nothing
        self._checks: dict[float, FleetCheck] = {}
        self._starts: dict[float, CheckStart] = {}

    def check(self, rate: float) -> FleetCheck:
        """``check_fleet(solver, plan, rate, figures=False)``, kept: a build checked again at
        a rate (the point's, on the changed values that leave its fleet, :meth:`_Fleet.reads`,
        where the first probe is the point's) answers as it did; a check begun by
        :meth:`early` is finished."""
        c = self._checks.get(rate)
        if c is None:
            assert self.plan is not None
            start = self._starts.pop(rate, None)
            c = self._checks[rate] = check_fleet(
                self.solver, self.plan, rate, figures=False, start=start
            )
        return c

    def early(self, rate: float) -> bool | None:
        """Whether the fleet meets every target at ``rate`` where that is known without its TTFT
        distribution: a kept check's answer, or False where the check's first part
        (:func:`~pddplan.solver.fleet.check_start`, kept for :meth:`check` to finish) finds the
        line overloaded or a decode pool missing, or, for a fleet that served nothing on the
        point estimate, where its TTFT offsets miss a target with no prefill wait at all
        (:func:`~pddplan.solver.fleet.misses_without_wait`: the no-relay baseline's transfers
        over the line, say); None where only the whole check can tell."""
        c = self._checks.get(rate)
        if c is not None:
            return c.meets_sla
        start = self._starts.get(rate)
        if start is None:
            assert self.plan is not None
            start = self._starts[rate] = check_start(self.solver, self.plan, rate)
        if start.misses:
            return False
        if self.served_nothing:
            assert self.plan is not None
            if misses_without_wait(self.solver, self.plan, start):
                return False
        return None


@dataclass(frozen=True)
class _Fleet:
    """A plan's fleet, ready to be rebuilt on a changed scenario."""

    cfg: Config
    topology: Topology
    routing: str
    rate_rps: float
    #: its goodput on the point estimate is 0 (it met no target at any rate there)
    served_nothing: bool = False

    @classmethod
    def of(cls, plan: Plan) -> _Fleet:
        pb = plan.problem
        nothing = plan.goodput_rps <= 0
        return cls(point_config(plan), pb.topology, pb.routing, plan.rate_rps, nothing)

    @property
    def chips(self) -> frozenset[str]:
        """The fleet's chip kinds (every role's)."""
        keys = (self.cfg.p, self.cfg.rld, self.cfg.md)
        return frozenset(k[0] for k in keys if k is not None)

    def reads(self, inp: Input) -> bool:
        """Whether ``inp`` may change this fleet: not where it is a key of a chip the fleet
        does not have, a key of the WAN link (``link.``) where the fleet stays in one
        datacenter, or one of the RDMA fabric (``rdma.``) where it crosses datacenters on a
        topology that relays nothing (see the module notes); any other input may."""
        parts = inp.path.split(".")
        t = self.topology
        if len(parts) > 2 and parts[0] == "chips":
            return parts[1] in self.chips
        if parts[0] == "link":
            return t.cross_dc
        if parts[0] == "rdma":
            return t.relay or not t.cross_dc
        return True

    def on(self, rs: ResolvedScenario) -> _Built:
        """A solver on ``rs`` for this fleet's topology, and the fleet there (None: a pool
        can no longer meet TPOT at any batch, or an instance no longer fits). The problem
        holds only the fleet's own instance kinds: it is evaluated, not searched."""
        roles = {"P": self.cfg.p, "MD": self.cfg.md, "RLD": self.cfg.rld}
        only = {role: frozenset([key]) for role, key in roles.items() if key is not None}
        pb = build_problem(rs, self.topology, only=only)
        pb.routing = self.routing
        solver = Solver(pb)
        plan = fleet_plan(solver, self.cfg, self.cfg.base, self.rate_rps)
        return _Built(solver, plan, self.served_nothing)


def bcr_ratio(pdd: Plan, base: Plan) -> tuple[float | None, str | None]:
    """PDD's BCR over the baseline's, or None and why where it has no finite value: the
    baseline's BCR is 0 (its goodput is 0, whatever it costs), or PDD's fleet costs nothing
    (its BCR unbounded). Against a baseline that costs nothing and serves something (unbounded
    BCR) PDD's finite BCR is a ratio of 0."""
    p, b = pdd.bcr_requests_per_usd, base.bcr_requests_per_usd
    if not math.isfinite(p):
        return None, (
            "both fleets cost nothing: neither BCR is finite"
            if not math.isfinite(b)
            else FREE_PDD_RATIO
        )
    if b > 0:
        return p / b, None
    return None, "the baseline's fleet misses an SLA target at every rate (goodput 0)"


def check_verdict(resolve: Resolve, rs: ResolvedScenario, out: Outcome) -> VerdictCheck:
    """The verdict of PDD against each of ``out``'s baselines and the estimated inputs whose
    plausible range reverses it (see the module notes).

    Parameters
    ----------
    resolve : the scenario resolved with more overrides (the solve's own overrides kept).
    rs : the scenario as solved.
    out : the solve's outcome (plan and baselines).
    """
    found, skipped = collect_inputs(rs)
    inputs = [i for i in found if i.path != RATE]
    if len(inputs) < len(found):
        skipped = [*skipped, NotSampled(RATE, "the rate is the question asked, not an estimate")]
    pdd = _Fleet.of(out.plan)
    bases = [_Fleet.of(b) for b in out.baselines]
    built = [f.on(rs) for f in (pdd, *bases)]  # at the point, kept for the inputs that leave them
    guesses = _starts(
        rs, pdd, bases, [_equal_rate_guess(out.plan, b) for b in out.baselines], built
    )
    # the point's verdict by the same rule as every changed value's (fleet checks, ties to
    # the goodput's precision do not win), not by the BCR figures: a ratio within that
    # precision of 1 would otherwise be a win at the point and a tie at every end
    at_point: list[float | None] = []  # where each outcome was decided (a PDD rate)
    outcomes = _outcomes_on(rs, pdd, bases, guesses, built, at_point)
    point = [o == WINS for o in outcomes]
    flips: list[list[Flip]] = [[] for _ in bases]
    ranges: list[tuple[str, float, float, float]] = []
    for inp in inputs:
        lo, hi = plausible_range(inp)
        try:
            if _leaves_fleets(inp, [pdd, *bases]):
                for value in (lo, hi):  # an end the schema rejects is reported as any input's
                    _resolved(resolve, inp, value)
                ends = {"low": point, "high": point}
                at_end = {"low": at_point, "high": at_point}
            else:
                at_end = {"low": [], "high": []}
                ends = {
                    "low": _wins_at(resolve, inp, lo, pdd, bases, guesses, built, at_end["low"])
                }
                ends["high"] = _wins_at(
                    resolve, inp, hi, pdd, bases, guesses, built, at_end["high"]
                )
        except OverrideError as exc:
            skipped.append(NotSampled(inp.path, f"its range reaches a value not allowed: {exc}"))
            continue
        ranges.append((inp.path, inp.point, lo, hi))
        for j, w0 in enumerate(point):
            for end, v in (("low", lo), ("high", hi)):
                if ends[end][j] != w0:
                    fleets = (pdd, bases[j], guesses[j])
                    kept = [built[0], built[1 + j]]
                    decided = (at_point[j], at_end[end][j])
                    flips[j].append(
                        _bisect(resolve, inp, (lo, hi), end, v, fleets, w0, kept, decided)
                    )
    verdicts = []
    for j, b in enumerate(out.baselines):
        ratio, why = bcr_ratio(out.plan, b)
        verdicts.append(Verdict(b.topology, point[j], ratio, why, flips[j], outcomes[j]))
    return VerdictCheck(verdicts, ranges, skipped)


def _leaves_fleets(inp: Input, fleets: list[_Fleet]) -> bool:
    """Whether ``inp`` changes none of ``fleets`` (:meth:`_Fleet.reads`; see the module
    notes)."""
    return not any(f.reads(inp) for f in fleets)


def _kept(inp: Input, fleets: list[_Fleet], built: list[_Built] | None) -> list[_Built | None]:
    """Each fleet's build at the point where ``inp`` leaves it as it is (:meth:`_Fleet.reads`),
    else None (to build on the changed scenario); all None without ``built``."""
    if built is None:
        return [None] * len(fleets)
    return [None if f.reads(inp) else b for f, b in zip(fleets, built, strict=True)]


class Start(NamedTuple):
    """Where :meth:`_OnSample.outcome` starts against one baseline: the PDD rate of its first
    check, and the two fleets' slopes there (PDD's, the baseline's), ``d log(1 + margin) / d
    log(rate)`` on the point estimate (:func:`~pddplan.solver.fleet.log_margin`), or None;
    and each fleet's slopes term by term (:func:`_log_terms`), or None where a fleet's two
    checks list different terms or where no slopes were measured (no fleet, a baseline that
    costs nothing or is PDD's very fleet, a guess that is not finite)."""

    rate_rps: float
    slopes: tuple[float, float] | None
    term_slopes: tuple[Terms, Terms] | None = None


#: [-] the relative rate step over which :func:`_starts` reads the fleets' margin slopes.
SLOPE_STEP = 0.02


def _starts(
    rs: ResolvedScenario,
    pdd: _Fleet,
    bases: list[_Fleet],
    guesses: list[float],
    built: list[_Built] | None = None,
) -> list[Start]:
    """Each baseline's :class:`Start` on the point estimate: its guess, and both fleets' margin
    slopes there (two checks of each, :data:`SLOPE_STEP` apart; None where a margin is not
    finite or does not grow with the rate), and their terms' slopes from the same two checks
    (:func:`_term_slopes`). The slopes only place the probes of a changed
    value's search (:func:`_next_probe`): every answer is still decided by the checks.
    ``built``: the fleets (PDD's, then each baseline's) built on ``rs`` already."""
    if built is None:
        built = [f.on(rs) for f in (pdd, *bases)]
    mine = _OnSample(built[0])
    out = []
    for theirs, x in zip(built[1:], guesses, strict=True):
        slopes = None
        base = theirs.plan
        if (
            mine.plan is not None
            and base is not None
            and base.cost_usd_per_hour > 0
            and math.isfinite(x)
            and not mine.same_as(theirs.solver, base)  # a tie, decided without a probe
        ):
            scale = base.cost_usd_per_hour / mine.plan.cost_usd_per_hour * (1 - TIE_RTOL)
            fs = []
            ts = []
            for r in (x, x * (1 + SLOPE_STEP)):
                a, c = built[0].check(r), theirs.check(r * scale)
                fs.append((log_margin(a.margin), log_margin(c.margin)))
                ts.append((_log_terms(a), _log_terms(c)))
            k = tuple((f1 - f0) / math.log1p(SLOPE_STEP) for f0, f1 in zip(*fs, strict=True))
            if all(math.isfinite(v) and v > 0 for v in k):
                slopes = (k[0], k[1])
            per_term = _term_slopes(ts[0], ts[1])
        else:
            per_term = None
        out.append(Start(x, slopes, per_term))
    return out


def _term_slopes(t0: tuple[Terms, Terms], t1: tuple[Terms, Terms]) -> tuple[Terms, Terms] | None:
    """Each fleet's log margin slopes term by term between two checks :data:`SLOPE_STEP`
    apart (None where a fleet's checks list different terms)."""
    out = []
    for a, b in zip(t0, t1, strict=True):
        if len(a) != len(b):
            return None
        out.append(tuple((y - x) / math.log1p(SLOPE_STEP) for x, y in zip(a, b, strict=True)))
    return (out[0], out[1])


def _term_turning(terms: Terms, slopes: Terms, u_at: float, up: bool) -> float | None:
    """A fleet's turning log rate by Newton's step term by term from ``u_at`` (its log margin
    ``terms`` there, ``slopes`` each term's): the least root of the terms that rise (going
    ``up`` from where it meets: the first to cross 0 turns it) or of those above 0 (going down
    from where it misses: it meets once the last of them has fallen below 0, the least root as
    every term rises with the rate). None where a term needed has no finite rising slope, or,
    going up, where a term is above 0 or NaN (the fleet does not meet there)."""
    if len(terms) != len(slopes):
        return None
    roots = []
    for f, k in zip(terms, slopes, strict=True):
        if up and not f <= 0:
            return None
        if not up and not f > 0:
            continue
        if not (math.isfinite(f) and math.isfinite(k) and k > 0):
            if up:
                continue
            return None
        roots.append(u_at - f / k)
    return min(roots) if roots else None


def _equal_rate_guess(pdd: Plan, base: Plan) -> float:
    """A PDD rate [req/s] between PDD's goodput and the baseline's scaled to PDD's cost (their
    geometric mean; a quarter of PDD's goodput stands in for a baseline that serves nothing):
    where the two fleets' feasibility most often decides the verdict in one check each."""
    g = pdd.goodput_rps
    if base.cost_usd_per_hour <= 0:  # a free baseline: decided without a rate
        return pdd.rate_rps
    g_base = base.goodput_rps * pdd.cost_usd_per_hour / base.cost_usd_per_hour
    return math.sqrt(g * max(g_base, g / 4)) if g > 0 else pdd.rate_rps


def _resolved(resolve: Resolve, inp: Input, value: float) -> ResolvedScenario:
    (ov,) = sample_overrides([inp], np.array([[value]]))
    return resolve(ov)


def _wins_at(
    resolve: Resolve,
    inp: Input,
    value: float,
    pdd: _Fleet,
    bases: list[_Fleet],
    guesses: list[Start],
    built: list[_Built] | None = None,
    decided: list[float | None] | None = None,
) -> list[bool]:
    """Whether PDD's fleet beats each baseline's with ``inp`` at ``value``
    (:meth:`_OnSample.outcome` is :data:`WINS`). ``built``: the fleets' builds at the point
    (PDD's, then each baseline's), checked as they are where ``inp`` leaves them
    (:func:`_kept`); without them every fleet is built on the changed scenario. ``decided``:
    filled as :func:`_outcomes_on` fills it."""
    rs = _resolved(resolve, inp, value)
    kept = _kept(inp, [pdd, *bases], built)
    return [o == WINS for o in _outcomes_on(rs, pdd, bases, guesses, kept, decided)]


def _outcomes_on(
    rs: ResolvedScenario,
    pdd: _Fleet,
    bases: list[_Fleet],
    guesses: list[Start],
    kept: list[_Built] | list[_Built | None] | None = None,
    decided: list[float | None] | None = None,
) -> list[str]:
    """PDD's fleet against each baseline's on scenario ``rs`` (:meth:`_OnSample.outcome`).

    ``kept``: a build to check instead of building the fleet on ``rs`` (PDD's, then each
    baseline's; None: build it), where ``rs`` changes nothing the fleet reads. ``decided``:
    extended with the PDD rate at which each outcome was decided (:attr:`_OnSample.decided_rps`).

    The baselines are taken from the highest first guess down: PDD's fleet meeting every target
    at one guess then answers for every lower one without a check (:meth:`_OnSample.meets`)."""
    fleets = [pdd, *bases]
    given = kept if kept is not None else [None] * len(fleets)
    built = [b if b is not None else f.on(rs) for f, b in zip(fleets, given, strict=True)]
    mine = _OnSample(built[0])
    out = [""] * len(bases)
    rates: list[float | None] = [None] * len(bases)
    for j in sorted(range(len(bases)), key=lambda j: (-guesses[j].rate_rps, j)):
        out[j] = mine.outcome(built[1 + j], guesses[j])
        rates[j] = mine.decided_rps
    if decided is not None:
        decided.extend(rates)
    return out


class _OnSample:
    """PDD's fleet on one changed scenario.

    Its feasible rates are an interval from 0 (:mod:`pddplan.solver.fleet`), so a rate at or
    below one where it met every target meets them, and one at or above one where it missed
    misses: :meth:`meets` answers those from the checks already made, and checks the others."""

    def __init__(self, built: _Built) -> None:
        self.built, self.solver, self.plan = built, built.solver, built.plan
        self._seen = FeasibleRates()  # highest rate met, lowest missed so far
        #: the PDD rate at which the last :meth:`outcome` found one fleet meeting every target
        #: and the other not (None: it was decided without one, or a tie)
        self.decided_rps: float | None = None

    def check(self, rate: float) -> FleetCheck:
        """The fleet checked at ``rate`` (margins read on the TTFT CDF), remembered for
        :meth:`meets`."""
        c = self.built.check(rate)
        self._seen.note(rate, c.meets_sla)
        return c

    def early(self, rate: float) -> bool | None:
        """:meth:`_Built.early`, remembered for :meth:`meets` where it tells."""
        e = self.built.early(rate)
        if e is not None:
            self._seen.note(rate, e)
        return e

    def known(self, rate: float) -> bool | None:
        """Whether the fleet meets every target at ``rate``, where the checks made decide it
        (None where they do not)."""
        return self._seen.answer(rate)

    def meets(self, rate: float) -> bool:
        """Whether the fleet meets every target at ``rate``: :meth:`known`, else a check."""
        known = self.known(rate)
        return self.check(rate).meets_sla if known is None else known

    def same_as(self, solver: Solver, base: Plan) -> bool:
        """Whether ``base`` on ``solver`` is this fleet at this fleet's cost
        (:meth:`~pddplan.solver.sizing.Sizing.fleet_key`: one physics, rate, routing, hand-over,
        instances, counts and decode sizings, whatever the topologies' names or routing
        choices): every check of the two agrees at every rate, so their BCRs are equal."""
        assert self.plan is not None
        return base.cost_usd_per_hour == self.plan.cost_usd_per_hour and solver.fleet_key(
            base
        ) == self.solver.fleet_key(self.plan)

    def outcome(self, theirs: _Built, start: Start) -> str:
        """This fleet's BCR against the baseline's (``theirs``, built on the same scenario; see
        the module notes): both fleets checked at PDD rates ``x`` and their BCR-equal rates,
        ``x`` moved up while
        both meet every target and down while both miss one, until one meets and the other does
        not (:data:`WINS` or :data:`LOSES`), or ``x`` is pinned within
        :data:`~pddplan.solver.fleet.GOODPUT_RTOL` (:data:`TIE`). ``x`` starts at ``start``'s
        rate; its slopes, where known, place the first probe after it, the fleets' margin terms
        the others (:func:`_next_probe`). A baseline that is this very fleet at its cost
        (:meth:`same_as`: PDD's plan relays nothing and the baseline that keeps RLD for the
        anomalous requests only is sized alike) ties without a check: the search would pin
        ``x`` at their common goodput in some six checks, or call it a loss where a probe fell
        between that goodput and the BCR-equal rate :data:`TIE_RTOL` below it."""
        guess = start.rate_rps
        solver, base = theirs.solver, theirs.plan
        self.decided_rps = None
        if self.plan is None:
            return LOSES
        if base is None or base.cost_usd_per_hour <= 0:
            # no fleet, or a free one: its BCR is 0 where it misses a target even at a tiny
            # rate (it serves nothing), and unbounded where it meets them there
            tiny = self.plan.rate_rps * TINY_RATE_SHARE
            serves = base is not None and theirs.check(tiny).meets_sla
            won = not serves and self.meets(tiny)
            return WINS if won else LOSES
        if not math.isfinite(guess):
            return LOSES  # a baseline no rate overloads: its BCR has no bound
        if self.same_as(solver, base):
            return TIE  # one fleet at one cost: equal BCR, which no rate can separate
        scale = base.cost_usd_per_hour / self.plan.cost_usd_per_hour * (1 - TIE_RTOL)
        lo, hi = 0.0, math.inf  # both fleets meet every target at lo, both miss one at hi
        nan: Terms = (math.nan,)
        f_lo: tuple[Terms, Terms] = (nan, nan)  # the two fleets' log margin terms there
        f_hi = f_lo
        floor, ceiling = guess * TINY_RATE_SHARE, guess / TINY_RATE_SHARE
        x = guess
        step = kept = 0
        widths: list[float] = []  # hi - lo after each probe (hi itself while lo is 0)
        last: tuple[float, tuple[Terms, Terms]] | None = None  # the previous probe
        while (math.isinf(hi) or hi - lo > GOODPUT_RTOL * hi) and floor <= x <= ceiling:
            # whether each fleet meets every target here: what the checks made tell, else
            # the checks' first parts where they miss (no TTFT distribution read for a probe
            # that decides), else the whole checks
            met = self.known(x)
            if met is None:
                met = self.early(x)
            theirs_met = theirs.early(x * scale)
            if met is None:
                met = self.check(x).meets_sla
            if theirs_met is None:
                theirs_met = theirs.check(x * scale).meets_sla
            if met != theirs_met:
                self.decided_rps = x
                return WINS if met else LOSES
            mine, c = self.check(x), theirs.check(x * scale)  # their margins guide the next probe
            f = (_log_terms(mine), _log_terms(c))
            # Illinois: an end kept twice in a row has its margins halved, so that false
            # position does not creep towards the turning rates from one side
            if mine.meets_sla:
                lo, f_lo = x, f
                f_hi = _halved(f_hi) if kept == 1 else f_hi
                kept = 1
            else:
                hi, f_hi = x, f
                f_lo = _halved(f_lo) if kept == -1 else f_lo
                kept = -1
            if math.isfinite(hi):
                widths.append(hi - lo)
            # two probes that did not halve the bracket: the third halves it
            stalled = len(widths) >= 3 and widths[-1] > 0.5 * widths[-3]
            # while the bracket is open, the probe before fell on the same side as this one
            prev, last = last, (x, f)
            x = _next_probe(
                lo, hi, f_lo, f_hi, step, start.slopes, stalled, prev, start.term_slopes
            )
            step += 1
        return TIE


Terms = tuple[float, ...]


def _log_terms(c: FleetCheck) -> Terms:
    """The check's margin terms (:attr:`~pddplan.solver.fleet.FleetCheck.terms`) on the log
    scale of :func:`~pddplan.solver.fleet.log_margin` (the margin itself where it has no
    terms)."""
    return tuple(log_margin(t) for t in c.terms) if c.terms else (log_margin(c.margin),)


def _halved(f: tuple[Terms, Terms]) -> tuple[Terms, Terms]:
    """Both fleets' log margin terms halved (Illinois)."""
    return (tuple(0.5 * v for v in f[0]), tuple(0.5 * v for v in f[1]))


def _turning(a: Terms, b: Terms, u_lo: float, u_hi: float) -> float | None:
    """A fleet's turning log rate by false position between ``u_lo`` (its log margin terms
    ``a``, every one at most about 0: it meets) and ``u_hi`` (terms ``b``: one above 0),
    term by term: the first term to cross 0 turns it, so the least of the roots of the terms
    that cross (each term's own line, where the largest term's line misplaces a term that
    overtakes another inside the bracket, a slot wait rising steeply past a TTFT tail share,
    say). The largest terms' line where a crossing term has no finite end, a term is NaN or
    the ends have no common order, None where that has none either."""
    roots = []
    whole = len(a) == len(b)
    if whole:
        for x, y in zip(a, b, strict=True):
            if math.isnan(x) or math.isnan(y):
                whole = False
                break
            if y > 0 and y > x:
                if not (math.isfinite(x) and math.isfinite(y)):
                    whole = False
                    break
                roots.append(u_lo - x * (u_hi - u_lo) / (y - x))
    if whole and roots:
        return min(roots)
    x, y = max(a), max(b)
    if not (math.isfinite(x) and math.isfinite(y)) or y <= x:
        return None
    return u_lo - x * (u_hi - u_lo) / (y - x)


def _secant_step(
    at: float, terms: tuple[Terms, Terms], prev: tuple[float, tuple[Terms, Terms]], up: bool
) -> float | None:
    """Where an open bracket's two fleets turn, by the secant through their log margin terms
    at its closed end ``at`` (``terms``) and at the probe before it on the same side
    (``prev``), term by term on the log rate: a fleet turns at the least root of the terms that
    rise towards 0 (going ``up``: the first to cross) or of those above 0 (going down: each
    must fall towards 0, and the fleet meets once the last has crossed, at the least root, as
    every term rises with the rate). The probe halfway between the two fleets' turning rates
    (on the log rate); None where a fleet gives no root."""
    x0, before = prev
    u_at, u_prev = math.log(at), math.log(x0)
    if u_at == u_prev:
        return None
    turns = []
    for now, then in zip(terms, before, strict=True):
        if len(now) != len(then):
            return None
        roots = []
        for f, p in zip(now, then, strict=True):
            if up and not f <= 0:
                continue
            if not up and not f > 0:
                continue
            rising = math.isfinite(f) and math.isfinite(p) and (f - p) * (u_at - u_prev) > 0
            if rising:
                roots.append(u_at - f * (u_at - u_prev) / (f - p))
            elif not up:
                return None  # a term above 0 that does not fall towards it
        if not roots:
            return None
        turns.append(min(roots))
    return _exp(0.5 * (turns[0] + turns[1]))


def _exp(u: float) -> float:
    """``exp(u)``, and inf where that passes the float range (a root of nearly flat margins
    can lie that far out): every such rate is past any bracket or factor-2 bound it is
    compared with, as its exponential would be."""
    return math.exp(u) if u < 700.0 else math.inf


def _newton(at: float, f: tuple[float, float], slopes: tuple[float, float]) -> float:
    """Halfway (on the log rate) between the two fleets' turning rates by Newton's step from
    ``at`` on their log margins ``f``, each with its slope on the point estimate."""
    u = [math.log(at) - v / k for v, k in zip(f, slopes, strict=True)]
    return _exp(0.5 * (u[0] + u[1]))


def _next_probe(
    lo: float,
    hi: float,
    f_lo: tuple[Terms, Terms],
    f_hi: tuple[Terms, Terms],
    step: int,
    slopes: tuple[float, float] | None = None,
    stalled: bool = False,
    prev: tuple[float, tuple[Terms, Terms]] | None = None,
    term_slopes: tuple[Terms, Terms] | None = None,
) -> float:
    """The next PDD rate to check in :meth:`_OnSample.outcome`, from the bracket (both fleets
    meet every target at ``lo``, both miss one at ``hi``) and the two fleets' log margin terms at
    its ends (:func:`_log_terms`: :attr:`~pddplan.solver.fleet.FleetCheck.terms` on the scale of
    :func:`~pddplan.solver.fleet.log_margin`, all at most about 0 where a fleet meets).

    - An open bracket, at its first step, with the fleets' ``term_slopes`` (:class:`Start`):
      each fleet's turning rate by Newton's step term by term from the closed end, on the log
      rate (:func:`_term_turning`: a term that is not the largest at the point, a slot wait
      that rises steeply once a pool fills, say, has a slope of its own that the margin's
      does not show); else, with the fleets' ``slopes``, by Newton's step from its margin (its
      largest term); the next check halfway between the two fleets' (on the log rate), at
      most a factor 2 away. Without either (or a margin not finite) it grows (or shrinks) at
      its first step by a factor from the margin nearest 0 at its closed end, at most 2 (a
      fleet that meets by a hair most often turns just above). At its second step, where the
      first probe fell on the same side, by the terms' secant through the two
      (:func:`_secant_step`: the point's slopes misjudge a changed value's), or, where that
      gives no root (a fleet's terms that did not move between them, say: a slot wait
      saturated at 1 tells nothing of how far the pool is past full), by the margins' Newton
      step; at most a factor 2 away.
      At every step after
      it grows by 2 (a margin that stays near 0 far from the turning rate, where a transfer
      alone bounds TTFT, cannot hold it back; Newton's steps there crept by the goodput's
      precision, thousands of checks for a tie).
    - A closed one: each fleet's turning rate by false position on the log rate between the
      ends, term by term (:func:`_turning`: the first term to cross 0 turns the fleet; the
      largest term's line misplaces a slot wait rising steeply past a flatter TTFT term); the
      next check halfway between the two (where one meets and the other does not), or, where
      they are within half the goodput's precision of each other (a likely tie), just below
      them until ``lo`` is there and then just above, so that the bracket closes in a step or
      two; the bracket's middle where two probes have not halved it (``stalled``) and where no
      estimate is inside it, so that it halves at least every third step.

    Only where the checks land differs from plain bisection: each answer is still decided by
    the two checks at one rate, and a tie by a bracket within the goodput's precision."""
    rtol = GOODPUT_RTOL
    if math.isinf(hi) or lo <= 0:
        up = math.isinf(hi)
        at, terms = (lo, f_lo) if up else (hi, f_hi)  # the closed end
        f = (max(terms[0]), max(terms[1]))  # each fleet's log margin
        guess: float | None = None
        turns: list[float | None] = [None, None]
        if step == 0 and term_slopes is not None and at > 0:
            u_at = math.log(at)
            turns = [_term_turning(t, k, u_at, up) for t, k in zip(terms, term_slopes, strict=True)]
        newton = slopes if slopes is not None and all(math.isfinite(v) for v in f) else None
        if turns[0] is not None and turns[1] is not None:
            guess = _exp(0.5 * (turns[0] + turns[1]))
        elif step == 0 and newton is not None:
            guess = _newton(at, f, newton)
        elif step == 1 and prev is not None:
            guess = _secant_step(at, terms, prev, up)
            if guess is None and newton is not None:  # e.g. terms that did not move (saturated)
                guess = _newton(at, f, newton)
        if guess is not None:  # past the closed end, at most a factor 2 away
            if up:
                return min(max(guess, at * (1 + 2 * rtol)), 2.0 * at)
            return max(min(guess, at * (1 - 2 * rtol)), 0.5 * at)
        near = max(f) if up else min(f)  # the closed end's nearest margin
        grow = 2.0
        if step == 0 and math.isfinite(near):  # the first step only: then it doubles
            grow = min(2.0, 1.0 + max(4.0 * abs(near), 2 * rtol))
        return lo * grow if math.isinf(hi) else hi / grow
    middle = 0.5 * (lo + hi)
    u_lo, u_hi = math.log(lo), math.log(hi)
    roots = []
    for a, b in zip(f_lo, f_hi, strict=True):
        r = _turning(a, b, u_lo, u_hi)
        if r is None:
            return middle
        roots.append(r)
    if stalled:
        return middle
    r1, r2 = sorted(roots)
    eps = 0.2 * rtol
    if r2 - r1 > 0.5 * rtol:
        x = _exp(0.5 * (r1 + r2))
    elif lo < _exp(r1 - 2 * eps):
        x = _exp(r1 - eps)
    else:
        x = _exp(r2 + eps)
    return x if lo < x < hi else middle


def _bisect(
    resolve: Resolve,
    inp: Input,
    rng: tuple[float, float],
    end: str,
    value: float,
    fleets: tuple[_Fleet, _Fleet, Start],
    w0: bool,
    built: list[_Built] | None = None,
    decided: tuple[float | None, float | None] = (None, None),
) -> Flip:
    """Where between the point and ``value`` the verdict (``w0`` at the point) turns
    (``built``: the two fleets' builds at the point, see :func:`_wins_at`).

    ``decided``: the PDD rates at which the outcome was decided at the point and at
    ``value`` (:attr:`_OnSample.decided_rps`). Each lies between the two fleets' turning rates
    there, which move with the input: the search at a value halfway between two values
    decided starts halfway (on the log rate) between their rates, rather than at the point's
    guess, so that it needs fewer probes. Where it ends is the checks' to say, as anywhere."""
    if not math.isfinite(inp.point):
        return Flip(inp.path, inp.point, rng[0], rng[1], end, value, None)
    pdd, base, guess = fleets
    holds, flips = inp.point, value
    r_holds, r_flips = decided
    for _ in range(FLIP_BISECTION_STEPS):
        mid = 0.5 * (holds + flips)
        start = guess
        if r_holds is not None and r_flips is not None:
            start = guess._replace(rate_rps=math.sqrt(r_holds) * math.sqrt(r_flips))
        got: list[float | None] = []
        if _wins_at(resolve, inp, mid, pdd, [base], [start], built, got)[0] == w0:
            holds, r_holds = mid, got[0] if got[0] is not None else r_holds
        else:
            flips, r_flips = mid, got[0] if got[0] is not None else r_flips
    return Flip(inp.path, inp.point, rng[0], rng[1], end, flips, holds)
