"""A fixed fleet evaluated at any rate: does it meet every SLA target, and its goodput.

Goodput follows DistServe [1]_: the highest request rate at which the fleet meets every SLA
target (TTFT p50, p90 and p99 and the TPOT target), not the share of requests that happen to
finish under one percentile's target. BCR divides it by the fleet's cost.

At a rate ``r`` the fleet meets the SLA when

- the TTFT percentiles of the prefill pool (``n_P`` instances; queueing, prefill, transfer or
  relay, first step) are at most their targets;
- MD's sequences fit its TPOT-bound batch slots: ``r sum_k w_k T_MD,k / b_MD + r E_ext <= n_MD``;
- RLD's sequences fit its slots: ``r sum_k w_k T_RLD,k <= n_RLD b_RLD``;
- in each decode pool a request finds every slot taken (Erlang C over ``n b`` slots at the
  pool's load) with at most the sizing's probability (``decode_slot_wait_probability_cap``);
- the line is below saturation (the transfer times above grow without bound as it fills).

Each condition only gets harder as ``r`` grows, so the feasible rates are an interval from 0
and its end is found by bisection.

References
----------
.. [1] Zhong et al., "DistServe: Disaggregating Prefill and Decoding for Goodput-optimized Large
   Language Model Serving", OSDI 2024, section 2: goodput is the maximum request rate served
   while meeting the SLO attainment goal.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from pddplan import timing
from pddplan.models import queueing
from pddplan.solver import sla
from pddplan.solver.plan import Plan, Route
from pddplan.solver.problem import PERCENTILES, Problem
from pddplan.solver.search import Solver

#: Relative precision of the goodput bisection [-].
GOODPUT_RTOL = 1e-3


@dataclass(frozen=True)
class FleetCheck:
    """A fixed fleet at one rate."""

    rate_rps: float
    ttft_s: tuple[float, float, float]
    meets_ttft: bool
    md_slots_needed: float  # [instances] MD instances the rate needs
    rld_slots_needed: float  # [instances] RLD instances the rate needs
    meets_decode: bool
    link_utilization: float
    #: [-] the largest of each figure over its limit, minus one (TTFT percentiles over their
    #: targets, decode loads over their instances, slot-wait probabilities over their cap, the
    #: line's utilization over 1): below 0 where every check passes, above where one fails,
    #: and continuous in the rate where the checks are; it guides :func:`goodput_bracket`'s
    #: probes, never decides a check (without figures the TTFT terms are tail shares over
    #: their allowed shares, see :func:`check_fleet`)
    margin: float = math.nan
    #: [-] the terms whose largest is :attr:`margin` (the TTFT targets', the line's where the
    #: fleet crosses datacenters, MD's load and slot wait, RLD's, or an inf for a routing that
    #: relays with no RLD), in that order; ``(inf,)`` alone where the line is overloaded, as no
    #: other term is computed then. Each crosses 0 at its own rate, which the verdict's search
    #: estimates term by term where two checks list them alike
    terms: tuple[float, ...] = ()

    @property
    def meets_sla(self) -> bool:
        return self.meets_ttft and self.meets_decode and self.link_utilization < 1.0


def line_overloaded(pb: Problem, link_utilization: float) -> bool:
    """Whether a route's WAN line runs at or past its capacity (a fleet that crosses
    datacenters at that load meets no target, whatever its counts)."""
    return pb.topology.cross_dc and link_utilization >= 1.0


def check_start(solver: Solver, plan: Plan, rate_rps: float) -> CheckStart:
    """The part of :func:`check_fleet` before the TTFT distribution (a check's costliest
    part, which a caller that needs only whether the fleet meets its targets may skip where
    this part already misses one: :attr:`CheckStart.misses`); ``check_fleet(..., start=)``
    finishes it."""
    route = solver.route(rate_rps, plan.routing)
    if line_overloaded(solver.pb, route.link_utilization):
        return CheckStart(rate_rps, route, None)
    return CheckStart(rate_rps, route, _decode_check(solver, plan, route, rate_rps))


def misses_without_wait(solver: Solver, plan: Plan, start: CheckStart) -> bool:
    """Whether ``plan``'s fleet misses a TTFT target at ``start``'s rate even with no prefill
    wait: the CDF of its TTFT offsets alone (:meth:`~pddplan.solver.sizing.Sizing.cdf_meets`,
    no wait) falls short of a percentile at its target. Waiting only delays: each request
    class's term of the CDF with the wait, ``w (1 - P_w P(W > t - d | W > 0))``, is at most its
    term without, ``w``, in floating point too, and both are summed alike; so
    :func:`check_fleet` at that rate then misses. It reads the offsets the check reads
    (memoized), not the wait's table. True where the line is overloaded (no offsets)."""
    if start.decode is None:
        return True
    p_inst, _ = plan.roles["P"]  # type: ignore[misc]
    offs, wts, _ = solver.ttft_offsets(p_inst, start.route)
    return not solver.cdf_meets(offs, wts)


def check_fleet(
    solver: Solver,
    plan: Plan,
    rate_rps: float,
    figures: bool = True,
    start: CheckStart | None = None,
) -> FleetCheck:
    """Evaluate ``plan``'s fleet (counts, batches, routing, hand-over) at ``rate_rps``.

    ``figures=False`` skips the TTFT percentiles (``ttft_s`` is then NaN): whether the fleet
    meets its targets is decided the same way, on the TTFT distribution's CDF at the targets
    (:meth:`~pddplan.solver.sizing.Sizing.ttft_meets`), at a fraction of the cost, and the
    margin's TTFT terms are read on that CDF (each target's tail share ``1 - F(t)`` over the
    share its percentile allows, ``1 - p``, minus one: 0 exactly where the percentile meets
    its target, as the percentile's ``q / t - 1``); the bisections pass it.

    ``start``: this check's :func:`check_start` at ``rate_rps``, made already."""
    pb = solver.pb
    if start is None:
        start = check_start(solver, plan, rate_rps)
    assert start.rate_rps == rate_rps
    route, d = start.route, start.decode
    p_inst, n_p = plan.roles["P"]  # type: ignore[misc]
    if d is None:  # the line is overloaded
        inf = (math.inf, math.inf, math.inf)
        return FleetCheck(
            rate_rps,
            inf,
            False,
            math.inf,
            math.inf,
            False,
            route.link_utilization,
            math.inf,
            (math.inf,),
        )
    offs, wts, _ = solver.ttft_offsets(p_inst, route)
    cdf = solver.ttft_cdf(p_inst, n_p, rate_rps, offs, wts)
    meets_ttft = sla.reaches_percentiles(cdf, PERCENTILES)
    if figures:
        q, _, _ = solver.ttft_at(p_inst, n_p, rate_rps, offs, wts)
        over = [_over(float(v), t) for v, t in zip(q, pb.ttft_targets_s, strict=True)]
    else:
        q = (math.nan, math.nan, math.nan)
        # each target's tail share over the share its percentile allows
        over = [_over(1.0 - f, 1.0 - p) for f, p in zip(cdf, PERCENTILES, strict=True)]
    if pb.topology.cross_dc:
        over.append(route.link_utilization - 1.0)
    terms = (*over, *d.over)
    return FleetCheck(
        rate_rps,
        (float(q[0]), float(q[1]), float(q[2])),
        meets_ttft,
        d.md_need,
        d.rld_need,
        d.ok,
        route.link_utilization,
        max(terms),
        terms,
    )


def meets_sla(
    solver: Solver, plan: Plan, rate_rps: float, starts: dict[float, CheckStart] | None = None
) -> bool:
    """Whether ``plan``'s fleet meets every SLA target at ``rate_rps``: ``check_fleet(solver,
    plan, rate_rps, figures=False).meets_sla``, by the same checks, stopping at the first that
    fails (the line, then the decode pools, then TTFT, the costliest), with no margin.

    The feasible rates of a fleet are an interval from 0 (see the module notes), so a rate at
    or below one where the fleet met every target meets them too, and one at or above a rate
    where it missed misses: those are answered from the fleet's earlier answers
    (:class:`FeasibleRates`, kept for every plan of the same fleet, whatever rate it was sized
    at), the others checked.

    ``starts``: the checks' first parts (:func:`check_start`) by rate, kept there and read
    back (a search's own, for the checks it makes again at one rate)."""
    known = feasible_rates(solver, plan)
    answer = known.answer(rate_rps)
    if answer is None:
        answer = _meets_sla(solver, plan, rate_rps, starts)
        known.note(rate_rps, answer)
    return answer


class FeasibleRates:
    """What the checks of one fleet have shown (:func:`meets_sla`): the highest rate at which it
    met every target, and the lowest at which it missed one [requests/s]."""

    __slots__ = ("met_rps", "missed_rps")

    def __init__(self) -> None:
        self.met_rps = 0.0
        self.missed_rps = math.inf

    def answer(self, rate_rps: float) -> bool | None:
        """Whether the fleet meets every target at ``rate_rps``, where the checks made decide
        it (None where they do not)."""
        if 0.0 < rate_rps <= self.met_rps:
            return True
        if rate_rps >= self.missed_rps:
            return False
        return None

    def note(self, rate_rps: float, meets: bool) -> None:
        """Keep a check's answer at ``rate_rps``."""
        if meets:
            self.met_rps = max(self.met_rps, rate_rps)
        else:
            self.missed_rps = min(self.missed_rps, rate_rps)


def feasible_rates(solver: Solver, plan: Plan) -> FeasibleRates:
    """The :class:`FeasibleRates` of ``plan``'s fleet, memoized on what its checks depend on
    (:meth:`~pddplan.solver.sizing.Sizing.check_key`): not the rate the plan was sized at, so
    that a rate sweep's points that size one fleet share it."""
    return solver.cache.get(("feasible-rates", solver.check_key(plan)), FeasibleRates)


def _meets_sla(
    solver: Solver, plan: Plan, rate_rps: float, starts: dict[float, CheckStart] | None = None
) -> bool:
    """:func:`meets_sla` by its checks."""
    start = _kept_start(solver, plan, rate_rps, starts)
    if start.misses:
        return False
    return _meets_ttft(solver, plan, rate_rps, start.route)


def _kept_start(
    solver: Solver, plan: Plan, rate_rps: float, starts: dict[float, CheckStart] | None
) -> CheckStart:
    """:func:`check_start` at ``rate_rps``, kept in ``starts`` (where given) by rate."""
    if starts is None:
        return check_start(solver, plan, rate_rps)
    start = starts.get(rate_rps)
    if start is None:
        start = starts[rate_rps] = check_start(solver, plan, rate_rps)
    return start


def _meets_ttft(solver: Solver, plan: Plan, rate_rps: float, route: Route) -> bool:
    """Whether ``plan``'s fleet meets its TTFT targets at ``rate_rps`` on ``route`` (its
    route there, the line below saturation): the last of :func:`meets_sla`'s checks."""
    p_inst, n_p = plan.roles["P"]  # type: ignore[misc]
    offs, wts, _ = solver.ttft_offsets(p_inst, route)
    return sla.reaches_percentiles(solver.ttft_cdf(p_inst, n_p, rate_rps, offs, wts), PERCENTILES)


class _DecodeCheck:
    """The decode pools' part of a check (:func:`_decode_check`): whether both cover their
    loads within the slot-wait bound (``ok``, decided as :func:`slots_ok` decides it: Erlang
    C's bounds first), and the pools' figures over their limits (``over``, for
    :attr:`FleetCheck.margin`, with each pool's slot-wait probability itself: computed where
    a caller reads them, as :func:`meets_sla`'s callers do not)."""

    __slots__ = ("_over", "_pb", "_pools", "_unrelayed", "md_need", "ok", "rld_need")

    def __init__(
        self,
        pb: Problem,
        md_need: float,
        rld_need: float,
        ok: bool,
        pools: list[tuple[float, int, int]],
        unrelayed: bool,
    ) -> None:
        self.md_need = md_need  # [instances] MD instances the rate needs
        self.rld_need = rld_need  # [instances] RLD instances the rate needs
        self.ok = ok  # both pools cover their loads within the slot-wait bound
        self._pb = pb
        self._pools = pools  # (need, instances, batch) of MD, then of RLD, where checked
        self._unrelayed = unrelayed  # the routing relays requests but the fleet has no RLD
        self._over: list[float] | None = None

    @property
    def over(self) -> list[float]:
        """The pools' figures over their limits, minus one (:attr:`FleetCheck.margin`): each
        pool's load over its instances and slot-wait probability over its cap (MD's, then
        RLD's), or an inf for a routing that relays with no RLD."""
        if self._over is None:
            pb = self._pb
            over: list[float] = []
            for need, n, b in self._pools:
                wait = slot_wait_probability(pb, need * b, n, b)
                over += [_over(need, n), _slot_wait_over(pb, wait)]
            if self._unrelayed:
                over.append(math.inf)
            self._over = over
        return self._over


class CheckStart(NamedTuple):
    """What :func:`check_fleet` reads before the TTFT distribution (:func:`check_start`): the
    route at the rate and the decode pools' check there (None where the line is overloaded)."""

    rate_rps: float
    route: Route
    decode: _DecodeCheck | None

    @property
    def misses(self) -> bool:
        """Whether the fleet misses a target here whatever its TTFT: its line is overloaded or
        a decode pool misses (the check's ``meets_sla`` is then False, which also reads the
        line's load on a fleet in one datacenter)."""
        return self.decode is None or not self.decode.ok or self.route.link_utilization >= 1.0


def _decode_check(solver: Solver, plan: Plan, route: Route, rate_rps: float) -> _DecodeCheck:
    """The decode pools of ``plan``'s fleet at ``rate_rps`` on ``route``: MD's and RLD's loads
    against their instances and the slot-wait bound (:func:`check_fleet`'s decode terms)."""
    pb = solver.pb
    w = pb.classes.weight
    md_role = plan.roles["MD"]
    md_dec = plan.decode.get("MD")
    md_need = 0.0
    ok_decode = True
    pools: list[tuple[float, int, int]] = []
    mode = timing.handover_mode(plan.handover)
    rld_time = None
    if md_role is not None and md_dec is not None:
        m_inst, n_m = md_role
        _ctx, md_time, ext_busy, _stall, rld_time, _tok, _extra = solver.decode_load(
            route, m_inst, mode
        )
        b = max(md_dec.batch_per_instance, 1)
        md_need = decode_need(pb, rate_rps, md_time, b, ext_busy)
        ok_decode = sla.covers(md_need, n_m) and slots_ok(pb, md_need * b, n_m, b)
        pools.append((md_need, n_m, b))
    rld_need = 0.0
    rld_role = plan.roles.get("RLD")
    rld_dec = plan.decode.get("RLD")
    unrelayed = False
    if rld_role is not None and rld_dec is not None and rld_time is not None:
        _r_inst, n_r = rld_role
        b_r = max(rld_dec.batch_per_instance, 1)
        rld_need = decode_need(pb, rate_rps, rld_time, b_r)
        ok_decode = (
            ok_decode and sla.covers(rld_need, n_r) and slots_ok(pb, rld_need * b_r, n_r, b_r)
        )
        pools.append((rld_need, n_r, b_r))
    elif rld_time is not None and float(np.add.reduce(w * rld_time)) > 0:
        ok_decode = False  # the routing relays requests but the fleet has no RLD
        unrelayed = True
    return _DecodeCheck(pb, md_need, rld_need, ok_decode, pools, unrelayed)


def decode_need(
    pb: Problem, rate_rps: float, time_s: np.ndarray, batch: int, extra_s: np.ndarray | None = None
) -> float:
    """Instances a decode pool needs at ``rate_rps`` [instances]: its sequences' slot time
    (``time_s`` per class [s]) over ``batch`` sequences an instance, plus ``extra_s`` per class
    [s] that holds whole instances (MD's extend passes). The one home of the rule, for
    :func:`check_fleet` and the robust study's counts."""
    w = pb.classes.weight
    need = rate_rps * float(np.add.reduce(w * time_s)) / batch
    if extra_s is not None:
        need += rate_rps * float(np.add.reduce(w * extra_s))
    return need


def _over(value: float, limit: float) -> float:
    """``value / limit - 1`` (0 over a limit of 0 is 0; anything else over 0 is inf)."""
    if limit > 0:
        return value / limit - 1.0 if math.isfinite(limit) else -1.0
    return 0.0 if value <= 0 else math.inf


def slot_wait_probability(
    pb: Problem, offered_load: float, instances: int, batch: int
) -> float | None:
    """The probability that a request finds every slot of the pool taken (Erlang C over
    ``instances * batch`` slots at ``offered_load``) [-]; None where the slot-wait bound does
    not apply (a cap of 1, or no load)."""
    if pb.decode_slot_wait_probability_cap >= 1.0 or offered_load <= 0:
        return None
    return queueing.erlang_c(instances * batch, offered_load)


def _slot_wait_over(pb: Problem, probability: float | None) -> float:
    """A :func:`slot_wait_probability` over its cap, minus one (-1 where the bound does not
    apply)."""
    if probability is None:
        return -1.0
    return _over(probability, pb.decode_slot_wait_probability_cap)


def slots_ok(pb: Problem, offered_load: float, instances: int, batch: int) -> bool:
    """The pool's slot-wait bound at this load (the sizing's,
    ``Problem.decode_slot_wait_probability_cap``): Erlang C compared with the cap by
    :func:`~pddplan.models.queueing.wait_over_cap` (bounds first, the closed form where they
    cannot tell) with the SLA's slack: ``erlang_c <= slack_cap(cap)``. The one home of the
    test, for :func:`check_fleet` and the robust study's counts."""
    cap = pb.decode_slot_wait_probability_cap
    if cap >= 1.0 or offered_load <= 0:
        return True
    return not queueing.wait_over_cap(instances * batch, offered_load, sla.slack_cap(cap))


def within_goodput_precision(bcr_ratio: float) -> bool:
    """Whether two fleets' BCR ratio is within the precision of their goodputs of 1 (each is a
    bisection's end within :data:`GOODPUT_RTOL`, so their ratio is known to about twice that):
    a tie, neither fleet beats the other."""
    return abs(bcr_ratio - 1.0) <= 2.0 * GOODPUT_RTOL


def loses_by_ratio(bcr_ratio: float) -> bool:
    """Whether PDD's BCR ratio to a baseline says PDD loses, where no fleet check has decided
    it (a sweep's point, a solve without its verdict check): below 1 by more than the
    goodputs' precision (:func:`within_goodput_precision`: a tie, not a loss). Where the
    verdict check ran, its outcome at the point decides instead
    (:meth:`~pddplan.robust.verdict._OnSample.outcome`: both fleets checked at the rates
    that separate them), which agrees with this rule wherever the ratio is beyond that
    precision."""
    return bcr_ratio < 1.0 and not within_goodput_precision(bcr_ratio)


def goodput_rps(
    solver: Solver, plan: Plan, rtol: float = GOODPUT_RTOL, first: FleetCheck | None = None
) -> float:
    """The highest rate at which ``plan``'s fleet meets every SLA target [requests/s].

    0 when the fleet misses a target even as the rate goes to zero (a transfer alone longer
    than a TTFT target, say). ``first``: see :func:`goodput_bracket`.
    """
    return goodput_bracket(solver, plan, rtol, first=first)[0]


def goodput_bracket(
    solver: Solver,
    plan: Plan,
    rtol: float = GOODPUT_RTOL,
    guided: bool = False,
    first: FleetCheck | None = None,
) -> tuple[float, float]:
    """``(lo, hi)``: the fleet meets every SLA target at ``lo`` and misses one at ``hi``, with
    ``hi - lo <= rtol hi`` [requests/s]; ``(inf, inf)`` for a fleet no rate overloads.

    The bracket is found by doubling from the plan's rate, then narrowed: by halving, or, with
    ``guided``, by probing where the checks' :attr:`FleetCheck.margin` crosses zero (Illinois
    false position, kept a quarter of the tolerance inside the bracket so that it closes, a
    halving every fourth probe; the margin read on the TTFT CDF, no percentile computed).
    Either way every end is decided by the checks themselves (``meets_sla``), so both
    brackets hold the same goodput; the guided one reaches a tight
    ``rtol`` (the exact modes' 1e-7) in about a third of the checks. Halving stays the default
    so that the figures computed at the reports' 1e-3 keep their values.

    ``first``: the fleet's check at its own rate where the caller has made it already (with or
    without figures: whether it meets is decided the same way); halving starts from it instead
    of checking again (the guided search, which reads the margin, checks again).

    Memoized on the fleet's physics (:meth:`~pddplan.solver.sizing.Sizing.fleet_key`): a
    price sweep's points check each fleet once.
    """
    key = ("goodput-bracket", solver.fleet_key(plan), rtol, guided)
    return solver.cache.get(key, lambda: _goodput_bracket(solver, plan, rtol, guided, first))


def _goodput_bracket(
    solver: Solver, plan: Plan, rtol: float, guided: bool, first: FleetCheck | None = None
) -> tuple[float, float]:
    r0 = plan.rate_rps
    if r0 <= 0:
        return 0.0, 0.0

    starts: dict[float, CheckStart] = {}  # the halving's checks' first parts, by rate

    def probe(rate: float) -> _Probe:
        # halving reads whether the fleet meets, guided probes read the margin too
        if guided:
            c = check_fleet(solver, plan, rate, figures=False)
            return _Probe(rate, c.meets_sla, c.margin)
        return _Probe(rate, meets_sla(solver, plan, rate, starts), math.nan)

    if guided or first is None or first.rate_rps != r0:
        first_p = probe(r0)
    else:
        first_p = _Probe(r0, first.meets_sla, first.margin)
    if first_p.meets:
        # no fleet meets its targets past the rate that saturates its prefill pool or its line;
        # only a fleet with neither bound is called unbounded, a million times its rate on
        ceiling = overload_rps(solver, plan)
        unbounded = 4.0 * ceiling if math.isfinite(ceiling) else r0 * 1e6
        lo_c, hi_c = first_p, probe(r0 * 1.25)
        while hi_c.meets:
            lo_c, hi_c = hi_c, probe(hi_c.rate_rps * 2.0)
            if hi_c.rate_rps > unbounded:
                return math.inf, math.inf
    else:
        hi_c = first_p
        lo_c = probe(r0 * 1e-6)
        if not lo_c.meets:
            return 0.0, r0 * 1e-6
    lo, hi = lo_c.rate_rps, hi_c.rate_rps
    if not guided:
        return _halve(solver, plan, lo, hi, rtol, starts)
    # on log(1 + margin): the margin's terms grow without bound towards overload, their log is
    # far closer to a line in the rate, which false position needs
    f_lo, f_hi = log_margin(lo_c.margin), log_margin(hi_c.margin)
    kept = 0  # +1: the last probe moved lo (hi kept), -1: it moved hi
    step = 0
    while hi - lo > rtol * hi:
        x = 0.5 * (lo + hi)
        if step % 4 != 3 and math.isfinite(f_lo) and math.isfinite(f_hi) and f_hi > f_lo:
            eps = 0.25 * rtol * hi
            x = min(max(hi - f_hi * (hi - lo) / (f_hi - f_lo), lo + eps), hi - eps)
        step += 1
        c = check_fleet(solver, plan, x, figures=False)
        if c.meets_sla:
            lo, f_lo = x, min(log_margin(c.margin), 0.0)
            if kept == 1:
                f_hi *= 0.5
            kept = 1
        else:
            hi, f_hi = x, max(log_margin(c.margin), 0.0)
            if kept == -1:
                f_lo *= 0.5
            kept = -1
    return lo, hi


def _halve(
    solver: Solver,
    plan: Plan,
    lo: float,
    hi: float,
    rtol: float,
    starts: dict[float, CheckStart],
) -> tuple[float, float]:
    """The bracket ``(lo, hi)`` halved until ``hi - lo <= rtol hi``, the fleet meeting every
    target at ``lo`` and missing one at ``hi``: the same midpoints, each decided as
    :func:`meets_sla` decides it, but most of them by the part of the check that binds.

    Each of the check's parts (the line, the decode pools, TTFT) only gets harder as the rate
    grows (see the module notes), so

    - where the line and the decode pools pass at ``hi``, they pass at every midpoint (all
      below ``hi``): TTFT alone decides each, and the decode pools are not checked;
    - where they miss at ``hi``, the midpoints are decided by them alone (no TTFT
      distribution read), and TTFT is checked once, at the ``lo`` they end at. Where it
      passes there it passes at every midpoint that passed (none is above that ``lo``), so
      each midpoint was decided as the whole check decides it, and the bracket is the one
      :func:`meets_sla` gives. Where it misses (TTFT binds below), the plain halving runs,
      its misses known already.

    Answers known for the fleet (:func:`feasible_rates`) decide as they do in
    :func:`meets_sla`, and every answer found is kept there. ``starts``: the checks' first
    parts made so far, by rate (the bracket's), kept for the checks made again."""
    known = feasible_rates(solver, plan)
    if not _kept_start(solver, plan, hi, starts).misses:
        routing = plan.routing

        def by_ttft(rate: float) -> bool:
            return _meets_ttft(solver, plan, rate, solver.route(rate, routing))

        return _halving(known, by_ttft, lo, hi, rtol, keep_met=True)

    def by_start(rate: float) -> bool:
        return not _kept_start(solver, plan, rate, starts).misses

    a, b = _halving(known, by_start, lo, hi, rtol, keep_met=False)
    if meets_sla(solver, plan, a, starts):
        return a, b

    def whole(rate: float) -> bool:
        return _meets_sla(solver, plan, rate, starts)

    return _halving(known, whole, lo, hi, rtol, keep_met=True)


def _halving(
    known: FeasibleRates,
    decide: Callable[[float], bool],
    lo: float,
    hi: float,
    rtol: float,
    keep_met: bool,
) -> tuple[float, float]:
    """Bisection of ``(lo, hi)`` to ``rtol``: a midpoint is met where ``known`` says so, else
    where ``decide`` does. A miss it decides is kept in ``known`` (a miss of any part is the
    whole check's); a pass only with ``keep_met`` (where ``decide`` is the whole check's
    answer)."""
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        met = known.answer(mid)
        if met is None:
            met = decide(mid)
            if keep_met or not met:
                known.note(mid, met)
        if met:
            lo = mid
        else:
            hi = mid
    return lo, hi


class _Probe(NamedTuple):
    """A goodput search's check at one rate: whether the fleet meets every target there, and
    (guided) its :attr:`FleetCheck.margin`."""

    rate_rps: float
    meets: bool
    margin: float


def log_margin(margin: float) -> float:
    """``log(1 + margin)``, from -inf (every figure 0) to inf (an overloaded pool): the
    guided searches' false position works on it, as the margin's terms (a TTFT tail share over
    its allowed share, a load over its instances) grow without bound towards overload."""
    if math.isnan(margin):
        return margin
    return math.log(margin + 1.0) if margin > -1.0 else -math.inf


def overload_rps(solver: Solver, plan: Plan) -> float:
    """A rate at or above which ``plan``'s prefill pool or its line runs at 100%
    [requests/s]: :func:`sizing_limit_rps` over the lower of the planner's caps
    (:attr:`~pddplan.solver.problem.Problem.lowest_utilization_cap`; inf where neither does
    any work)."""
    cap = solver.pb.lowest_utilization_cap
    return sizing_limit_rps(solver, plan) / cap if cap > 0 else math.inf


def sizing_limit_rps(solver: Solver, plan: Plan) -> float:
    """The highest rate at which ``plan``'s fleet stays within the planner's utilization caps
    (prefill and line) [requests/s]: past it the search can no longer return this fleet."""
    pb = solver.pb
    p_inst, n_p = plan.roles["P"]  # type: ignore[misc]
    mean_s = solver.mean_prefill_s(p_inst)
    cap = n_p * pb.prefill_utilization_cap / mean_s if mean_s > 0 else math.inf
    return min(cap, solver.line_rate_limit())
