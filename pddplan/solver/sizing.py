"""Sizing of each pool for one rate and route: prefill (queueing and TTFT), MD and RLD (decode).

The quantities here are pure functions of the problem's physics and an instance; their values
are kept in a :class:`~pddplan.solver.cache.SearchCache` across solves.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from pddplan import timing, units
from pddplan.deployment import Instance
from pddplan.io.memo import IdentityMemo
from pddplan.models import pipeline, queueing
from pddplan.solver import sla
from pddplan.solver.cache import DEFAULT_CACHE, HashedKey, SearchCache
from pddplan.solver.plan import DecodeSizing, Plan, PrefillSizing, Route, changed
from pddplan.solver.problem import PERCENTILES, Problem
from pddplan.timing import Routing

#: What binds a count that the TTFT targets set, until its figures name the percentile
#: (:meth:`Sizing.prefill_figures`: ``TTFT p50``, ``p90`` or ``p99``).
TTFT_BOUND = "TTFT"
#: What bounds a prefill pool whose count its utilization cap sets.
CAP_BOUND = "prefill capacity (utilization cap)"
#: What bounds a prefill pool of one instance that the cap would need less than one of (a low
#: rate: the pool runs far below the cap, at 0.7% at 0.01 req/s on the default scenario).
ONE_INSTANCE_BOUND = "one instance (the least count)"


@dataclass(frozen=True)
class PrefillCount:
    """A prefill pool's count on one rate and route, before its TTFT figures: what the search
    prices and judges (:meth:`Sizing.prefill_count`); :meth:`Sizing.prefill_figures` turns it
    into the :class:`PrefillSizing` a plan reports."""

    instances: int
    bound_by: str
    #: whether ``instances`` meet the TTFT targets (:meth:`Sizing.ttft_meets`)
    meets_ttft: bool


class Sizing:
    """Per-option sizing on one problem (the search's building blocks)."""

    def __init__(self, problem: Problem, cache: SearchCache | None = None) -> None:
        self.pb = problem
        self.cache = cache if cache is not None else DEFAULT_CACHE
        self._key = HashedKey.of(problem.physics_key())
        self._md_ctx: float | None = None
        #: :meth:`prefill_s` by instance object, with its bytes once a key asked for them and
        #: its mean (:meth:`mean_prefill_s`) once asked (the instance kept, so that no other
        #: meets its ``id``): asked hundreds of times a search, for every option's
        #: utilization, wait and figures key. The problem's physics is this sizing's
        #: (:attr:`_key` is taken here too).
        self._prefill: dict[int, list[Any]] = {}

    # ---- per-option quantities
    def prefill_s(self, inst: Instance) -> np.ndarray:
        """Prefill time of every class on an instance [s] (memoized by physics and classes)."""
        return self._prefill_kept(inst)[1]  # type: ignore[no-any-return]

    def _prefill_kept(self, inst: Instance) -> list[Any]:
        """The instance's entry of :attr:`_prefill` (made on its first use)."""
        kept = self._prefill.get(id(inst))
        if kept is not None and kept[0] is inst:
            return kept
        c = self.pb.classes
        table = inst.cache("prefill")
        key = (c.key, self.pb.chunk_size_tokens, self.pb.cache)
        if key not in table:
            table[key] = np.asarray(
                timing.prefill_s(
                    inst,
                    c.uncached_tokens,
                    c.cached_tokens,
                    self.pb.chunk_size_tokens,
                    self.pb.cache,
                ),
                dtype=float,
            )
        kept = self._prefill[id(inst)] = [inst, table[key], None, None]
        return kept

    def mean_prefill_s(self, inst: Instance) -> float:
        """Mean prefill time over the classes on an instance, ``E[S] = sum_k w_k s_k`` [s]
        (kept per instance): the prefill pool's load per request, which its utilization, its
        cap count and its saturating rate divide."""
        kept = self._prefill_kept(inst)
        if kept[3] is None:
            kept[3] = float(np.add.reduce(self.pb.classes.weight * kept[1]))
        return kept[3]  # type: ignore[no-any-return]

    def _prefill_bytes(self, inst: Instance) -> bytes:
        """:meth:`prefill_s` as bytes (a memo key's part), taken once per instance."""
        kept = self._prefill_kept(inst)
        if kept[2] is None:
            kept[2] = kept[1].tobytes()
        return kept[2]  # type: ignore[no-any-return]

    # ---- route (rate, threshold)
    def route(self, rate: float, routing: Routing) -> Route:
        """The timeline of every class at ``rate`` under ``routing`` (memoized)."""
        return self.cache.get(
            ("route", self._key, rate, routing), lambda: self._route(rate, routing)
        )

    def _route(self, rate: float, routing: Routing) -> Route:
        pb = self.pb
        c = pb.classes
        util = timing.decode_link_utilization(pb.paths, rate, pb.mean_wan_bytes)
        return timing.timeline(
            pb.paths, routing, c.input_tokens, c.hit_rate, c.output_tokens, pb.on_decode_side, util
        )

    def fresh_routes(
        self, rate: float, routings: Sequence[Routing]
    ) -> tuple[timing.Timelines, list[Route]] | None:
        """The routings of ``routings`` whose :meth:`route` at ``rate`` is not memoized yet, as
        :func:`~pddplan.timing.timelines` computes them in one set of array calls, and their
        routes (each :meth:`route`'s memo entry, filled with its row: the values its own call
        gives); None where fewer than two are missing (:meth:`route` computes one alone)."""
        keys = [("route", self._key, rate, r) for r in routings]
        todo = [(k, r) for k, r in zip(keys, routings, strict=True) if k not in self.cache]
        if len(todo) < 2:
            return None
        pb = self.pb
        c = pb.classes
        util = timing.decode_link_utilization(pb.paths, rate, pb.mean_wan_bytes)
        tls = timing.timelines(
            pb.paths,
            [r for _, r in todo],
            c.input_tokens,
            c.hit_rate,
            c.output_tokens,
            pb.on_decode_side,
            util,
        )
        routes = [tls.row(i) for i in range(len(todo))]
        for (key, _), route in zip(todo, routes, strict=True):
            self.cache.put(key, route)
        return tls, routes

    def ttft_offsets(
        self,
        inst: Instance,
        route: Route,
        md_step_s: float | None = None,
        rld_step_s: float | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(offsets, weights, pipeline id) of TTFT before queueing; jitter expands WAN classes.

        The first decode step is the TPOT target unless the decode pools' steps at their
        working batches are given (:meth:`first_steps`): sizing uses the target, which bounds
        every step and keeps TTFT independent of the decode options (the search stays
        separable); the figures a plan reports use the working steps.

        Memoized on the route as :meth:`decode_load` is (its line load and routing), the
        instance's prefill times and the steps; the arrays are read-only.
        """
        key = self._ttft_offsets_key(inst, route, md_step_s, rld_step_s)

        def compute() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            out = timing.first_token_points(
                self.pb.paths,
                route,
                self.prefill_s(inst),
                self.pb.classes.weight,
                md_step_s=md_step_s,
                rld_step_s=rld_step_s,
            )
            for a in out:
                a.setflags(write=False)
            return out

        return self.cache.get(key, compute)

    def _ttft_offsets_key(
        self, inst: Instance, route: Route, md_step_s: float | None, rld_step_s: float | None
    ) -> tuple:
        """:meth:`ttft_offsets`' memo key."""
        return (
            "ttft-offsets",
            self._key,
            self._prefill_bytes(inst),
            route.link_utilization,
            route.routing,
            md_step_s,
            rld_step_s,
        )

    def ttft_offsets_by_routing(
        self, inst: Instance, tls: timing.Timelines, routes: list[Route]
    ) -> None:
        """Memoize :meth:`ttft_offsets` of ``inst`` (at the TPOT target's steps) on each of
        ``routes``, the rows of ``tls`` (:meth:`fresh_routes`), where it is not memoized yet:
        every routing's offsets in one :func:`~pddplan.timing.first_token_points_by_routing`
        (elementwise: each routing's are the values its own call gives)."""
        keys = [self._ttft_offsets_key(inst, r, None, None) for r in routes]
        if all(k in self.cache for k in keys):
            return
        pb = self.pb
        outs = timing.first_token_points_by_routing(
            pb.paths, tls, self.prefill_s(inst), pb.classes.weight
        )
        for key, out in zip(keys, outs, strict=True):
            if key not in self.cache:
                for a in out:
                    a.setflags(write=False)
                self.cache.put(key, out)

    def fleet_key(self, plan: Plan) -> tuple:
        """What a plan's fleet figures depend on: the problem's physics (:attr:`_key`), the
        rate, routing and hand-over, each role's instance physics and count, and the decode
        pools' sizings; never a price, so a price sweep's points share them."""
        decode = tuple((r, d) for r, d in sorted(plan.decode.items()) if d is not None)
        return (self._key, plan.rate_rps, plan.routing, plan.handover, _roles_key(plan), decode)

    def check_key(self, plan: Plan) -> tuple:
        """What a check of a plan's fleet at a given rate depends on
        (:func:`~pddplan.solver.fleet.meets_sla`): :meth:`fleet_key` without the rate the plan
        was sized at, and with only the decode pools' batches of their sizings (not their
        concurrency at that rate), so that the plans of one fleet at other rates share it."""
        batches = tuple(
            (r, d.batch_per_instance) for r, d in sorted(plan.decode.items()) if d is not None
        )
        return (self._key, plan.routing, plan.handover, _roles_key(plan), batches)

    def first_steps(self, plan: Plan) -> tuple[float | None, float | None]:
        """(MD step, RLD step) [s] at the plan's working batches (memoized on
        :meth:`fleet_key`; see :meth:`_first_steps`)."""
        return self.cache.get(
            ("first-steps", self.fleet_key(plan)), lambda: self._first_steps(plan)
        )

    def _first_steps(self, plan: Plan) -> tuple[float | None, float | None]:
        """(MD step, RLD step) [s] at the plan's working batches, for the first token.

        MD's working batch is the fixed point of ``b = min(b_max, max(1, C step(b) / tpot / n))``,
        where ``C`` is MD's concurrency counted at the TPOT target (its sequences' slot time
        shrinks with the step); RLD's is ``min(b_max, max(1, C_R / n_R))`` as in
        :meth:`reported_handover`. Both are capped at the TPOT target. ``None`` for a pool the
        plan lacks (the TPOT target is then used).
        """
        tpot = self.pb.tpot_s
        md_step: float | None = None
        rld_step: float | None = None
        md = plan.roles.get("MD")
        md_dec = plan.decode.get("MD")
        if md is not None and md_dec is not None and md[1] > 0 and md_dec.batch_per_instance > 0:
            inst, n = md
            b_max = float(md_dec.batch_per_instance)
            ctx = md_dec.context_tokens
            conc = md_dec.concurrency

            def phi(step: float) -> float:
                b = min(b_max, max(1.0, conc * step / tpot / n))
                return min(float(inst.decode_step_s(b, ctx)), tpot)

            md_step = fixed_point(phi, tpot, 1e-9 * tpot)
        rr = plan.roles.get("RLD")
        r_dec = plan.decode.get("RLD")
        if rr is not None and r_dec is not None and rr[1] > 0 and r_dec.batch_per_instance > 0:
            inst, n = rr
            b = min(max(r_dec.concurrency / n, 1.0), float(r_dec.batch_per_instance))
            rld_step = self.capped_step(inst, b, r_dec.context_tokens)
        return md_step, rld_step

    def capped_step(self, inst: Instance, batch: float, context_tokens: float) -> float:
        """``inst``'s decode step at ``batch`` sequences of ``context_tokens``, capped at the
        TPOT target [s]: RLD's working step, which a plan's first token (:meth:`first_steps`)
        and its hand-over figures (:meth:`reported_handover`) both read; memoized on the
        instance's physics and the batch and context."""
        tpot = self.pb.tpot_s
        key = ("capped-step", inst.physics_key, float(batch), float(context_tokens), tpot)
        return self.cache.get(
            key, lambda: min(float(inst.decode_step_s(batch, context_tokens)), tpot)
        )

    def reported_ttft(self, plan: Plan) -> tuple[tuple[float, float, float], float]:
        """TTFT p50/p90/p99 [s] and the p99 target's attainment [-] of a plan's fleet at its
        rate, with the decode pools' working first steps (:meth:`first_steps`)."""
        return self.cache.get(
            ("reported-ttft", self.fleet_key(plan)), lambda: self._reported_ttft(plan)
        )

    def _reported_ttft(self, plan: Plan) -> tuple[tuple[float, float, float], float]:
        p_inst, n = plan.roles["P"]  # type: ignore[misc]
        offs, wts, _ = self.ttft_offsets(p_inst, plan.route, *self.first_steps(plan))
        q, att, _ = self.ttft_at(p_inst, n, plan.rate_rps, offs, wts)
        return q, att

    def prefill_wait(self, inst: Instance, n: int, rate: float) -> queueing.WaitDistribution:
        """The prefill queue's waiting time (wait probability, mean wait [s], conditional wait):
        :func:`~pddplan.models.queueing.wait_distribution` over the classes' prefill times."""
        return queueing.wait_distribution(rate, n, self.prefill_s(inst), self.pb.classes.weight)

    def prefill_utilization(self, inst: Instance, n: int, rate: float) -> float:
        """The utilization of ``n`` prefill instances at ``rate`` [-]: ``rate E[S] / n``."""
        return rate * self.mean_prefill_s(inst) / n

    def ttft_at(
        self, inst: Instance, n: int, rate: float, offs, wts
    ) -> tuple[tuple[float, float, float], float, float]:
        util = self.prefill_utilization(inst, n, rate)
        if util >= 1:
            return (math.inf, math.inf, math.inf), 0.0, util
        wait = self.prefill_wait(inst, n, rate)
        pw, cond = wait.wait_probability, wait.conditional
        q = tuple(queueing.mixture_quantiles(PERCENTILES, offs, wts, pw, conditional=cond))
        att = float(
            queueing.mixture_cdf(self.pb.ttft_targets_s[2], offs, wts, pw, conditional=cond)
        )
        return q, att, util  # type: ignore[return-value]

    def prefill_sizing(
        self,
        inst: Instance,
        n: int,
        rate: float,
        offs,
        wts,
        bound_by: str,
        meets: bool | None = None,
    ) -> PrefillSizing:
        """``n`` instances' prefill figures at ``rate`` (TTFT percentiles, attainment,
        utilization) and whether they meet the TTFT targets (:meth:`ttft_meets`, unless the
        caller has just decided it: ``meets``)."""
        q, att, util = self.ttft_at(inst, n, rate, offs, wts)
        if meets is None:
            meets = self.ttft_meets(inst, n, rate, offs, wts)
        return PrefillSizing(n, util, q, att, bound_by, meets)

    def ttft_meets(self, inst: Instance, n: int, rate: float, offs, wts) -> bool:
        """Whether ``n`` instances meet every TTFT target at ``rate``: the SLA's rule on the
        TTFT distribution's CDF at the targets (:func:`~pddplan.solver.sla.
        reaches_percentiles`), which :meth:`ttft_at`'s percentiles agree with; no percentile
        is computed (one CDF reading instead of a root search per percentile)."""
        return sla.reaches_percentiles(self.ttft_cdf(inst, n, rate, offs, wts), PERCENTILES)

    def ttft_cdf(self, inst: Instance, n: int, rate: float, offs, wts) -> list[float]:
        """The TTFT distribution's CDF at each target (with the SLA's slack) for ``n``
        instances at ``rate`` [-]: 0 for every target where the pool is saturated."""
        if self.prefill_utilization(inst, n, rate) >= 1:
            return [0.0 for _ in self.pb.ttft_targets_s]
        wait = self.prefill_wait(inst, n, rate)
        return self.cdf_at_targets(offs, wts, wait.wait_probability, wait.conditional)

    def cdf_meets(
        self,
        offs,
        wts,
        wait_probability: float = 0.0,
        conditional: queueing.ConditionalWait | None = None,
    ) -> bool:
        """The TTFT rule on ``W + D`` (offsets ``D`` with weights, the prefill queue's wait
        ``W``; no wait by default): its CDF at every target reaches the target's percentile."""
        f = self.cdf_at_targets(offs, wts, wait_probability, conditional)
        return sla.reaches_percentiles(f, PERCENTILES)

    def cdf_at_targets(
        self,
        offs,
        wts,
        wait_probability: float = 0.0,
        conditional: queueing.ConditionalWait | None = None,
    ) -> list[float]:
        """The CDF of ``W + D`` (see :meth:`cdf_meets`) at each TTFT target with the SLA's
        slack (:func:`~pddplan.solver.sla.slack_targets`) [-]. A non-finite offset (a transfer
        that never ends) puts it at 0 for every target."""
        d = np.asarray(offs, dtype=float)
        if not np.isfinite(d).all():
            return [0.0 for _ in self.pb.ttft_targets_s]
        f = queueing.mixture_cdf(
            sla.slack_targets(self.pb.ttft_targets_s),
            d,
            wts,
            wait_probability,
            conditional=conditional,
        )
        return np.atleast_1d(f).tolist()  # type: ignore[no-any-return]

    def cdf_at_targets_by_row(
        self,
        offs_rows: np.ndarray,
        wts,
        wait_probability: float,
        conditional: queueing.ConditionalWait | None,
    ) -> list[list[float]]:
        """:meth:`cdf_at_targets` of each row of ``offs_rows`` (one distribution's offsets a
        row, every row with the weights ``wts``), those with finite offsets in one
        :func:`~pddplan.models.queueing.mixture_cdf` over a leading axis: its sum over a row's
        points is a reduction along the last axis, which numpy sums row by row exactly as it
        sums that row alone (a test checks it), so each row's values are its own call's. A row
        with a non-finite offset is read by :meth:`cdf_at_targets` itself."""
        d = np.asarray(offs_rows, dtype=float)
        finite: list[bool] = np.isfinite(d).all(axis=1).tolist()
        ok = d if all(finite) else d[np.array(finite)]
        f = iter(
            queueing.mixture_cdf(
                sla.slack_targets(self.pb.ttft_targets_s),
                ok[:, None, :],  # [row, target, point] against the targets' column
                wts,
                wait_probability,
                conditional=conditional,
            ).tolist()
            if len(ok)
            else []
        )
        return [
            next(f) if fin else self.cdf_at_targets(row, wts, wait_probability, conditional)
            for row, fin in zip(d, finite, strict=True)
        ]

    def size_prefill(self, inst: Instance, rate: float, route: Route) -> PrefillSizing | None:
        """Fewest prefill instances meeting the utilization cap and the TTFT targets, with
        their figures (:meth:`prefill_count`, then :meth:`prefill_figures`)."""
        count = self.prefill_count(inst, rate, route)
        return None if count is None else self.prefill_figures(inst, count, rate, route)

    def prefill_count(self, inst: Instance, rate: float, route: Route) -> PrefillCount | None:
        """Fewest prefill instances meeting the utilization cap and the TTFT targets, and what
        binds them, without the TTFT percentiles (the search prices many sizings and reports
        one: :meth:`prefill_figures` computes a sizing's figures when a plan needs them).

        The sizing sees the instance only through its prefill times, so instances of equal
        prefill times (layouts that differ in decode alone, say) share one entry."""
        key = self._prefill_count_key(inst, rate, route)
        return self.cache.get(key, lambda: self._size_prefill(inst, rate, route))

    def _prefill_count_key(self, inst: Instance, rate: float, route: Route) -> tuple:
        """:meth:`prefill_count`'s memo key."""
        return ("prefill", self._key, self._prefill_bytes(inst), rate, route.routing)

    def prefill_counts_by_routing(self, inst: Instance, rate: float, routes: list[Route]) -> None:
        """Memoize :meth:`prefill_count` of ``inst`` at ``rate`` on each of ``routes`` where it
        is not memoized yet, their TTFT distributions at the utilization cap's count read in
        one :meth:`cdf_at_targets_by_row` (the count, the prefill queue's wait and the points'
        weights are the same on every route; each route's offsets are its own,
        :meth:`ttft_offsets`); the rest of each sizing as :meth:`_size_prefill` goes on from
        that reading. Nothing where fewer than two are missing, where the pool saturates at
        that count (each reads 0 there) or where the routes' points differ in weight."""
        todo = [
            (key, r)
            for key, r in ((self._prefill_count_key(inst, rate, r), r) for r in routes)
            if key not in self.cache
        ]
        if len(todo) < 2:
            return
        n = self.prefill_cap_count(inst, rate)
        if self.prefill_utilization(inst, n, rate) >= 1:
            return
        offs = [self.ttft_offsets(inst, r) for _, r in todo]
        wts = offs[0][1]
        if any(len(o[1]) != len(wts) for o in offs):
            return
        if not (np.array([o[1] for o in offs]) == wts).all():
            return
        wait = self.prefill_wait(inst, n, rate)
        cdfs = self.cdf_at_targets_by_row(
            np.array([o[0] for o in offs]), wts, wait.wait_probability, wait.conditional
        )
        for (key, route), f in zip(todo, cdfs, strict=True):
            meets = sla.reaches_percentiles(f, PERCENTILES)
            compute = lambda r=route, m=meets: self._size_prefill(inst, rate, r, m)  # noqa: E731
            self.cache.get(key, compute)  # type: ignore[misc]

    def prefill_figures(
        self, inst: Instance, count: PrefillCount, rate: float, route: Route
    ) -> PrefillSizing:
        """The :class:`PrefillSizing` of a count from :meth:`prefill_count` (TTFT percentiles,
        attainment, utilization at ``rate`` on ``route``), memoized as the count is."""
        key = self._prefill_figures_key(inst, count.instances, rate, route)

        def compute() -> PrefillSizing:
            offs, wts, _ = self.ttft_offsets(inst, route)
            ps = self.prefill_sizing(
                inst, count.instances, rate, offs, wts, count.bound_by, count.meets_ttft
            )
            if count.bound_by == TTFT_BOUND:  # name the percentile that binds
                worst = max(range(3), key=lambda i: ps.ttft_s[i] / self.pb.ttft_targets_s[i])
                ps = replace(ps, bound_by=f"TTFT p{int(PERCENTILES[worst] * 100)}")
            return ps

        return self.cache.get(key, compute)

    def _prefill_figures_key(self, inst: Instance, n: int, rate: float, route: Route) -> tuple:
        """:meth:`prefill_figures`' memo key."""
        return ("prefill-figures", *self._figures_key(inst, n, rate, route.routing))

    def _figures_key(self, inst: Instance, n: int, rate: float, routing: Routing) -> tuple:
        """What :meth:`prefill_figures` of ``n`` instances depends on: the problem's physics,
        the instance's prefill times, the rate, the routing and the count."""
        return (self._key, self._prefill_bytes(inst), rate, routing, n)

    def plan_ttft_key(self, plan: Plan) -> tuple:
        """What :meth:`plan_ttft_s` of a candidate (a plan the search has not finalized, see
        :meth:`~pddplan.solver.search.Solver.finalize`) depends on: plans of one key have the
        same TTFT figures (:func:`~pddplan.solver.search.better_plan` skips their comparison)."""
        inst, n = plan.roles["P"]  # type: ignore[misc]
        return self._figures_key(inst, n, plan.rate_rps, plan.routing)

    def has_figures(self, plan: Plan, key: tuple | None = None) -> bool:
        """Whether :meth:`plan_ttft_s` of a candidate is at hand (nothing to compute); ``key``:
        its :meth:`plan_ttft_key`, where the caller has it (the figures' memo key is that
        key's)."""
        ps = plan.prefill
        if ps.has_figures:
            return True
        if key is not None:
            return ("prefill-figures", *key) in self.cache
        inst = plan.roles["P"][0]  # type: ignore[index]
        return (
            self._prefill_figures_key(inst, ps.instances, plan.rate_rps, plan.route) in self.cache
        )

    def p99_side(self, plan: Plan, t_s: float, key: tuple | None = None) -> int:
        """Where a candidate's TTFT p99 (:meth:`plan_ttft_s`: its :meth:`prefill_figures`')
        lies against ``t_s``, without computing it: :func:`~pddplan.models.queueing.
        quantile_side` on the distribution those figures are computed on (-1 below, 1 above,
        0 where it cannot tell; 0 for a saturated pool, whose percentiles are infinite).

        Memoized on :meth:`plan_ttft_key` and ``t_s``: the search's tie-break
        (:meth:`~pddplan.solver.search.Solver._after_ties`) reads one candidate at another's p99
        once to find the plan it keeps and again to check it. ``key``: the candidate's
        :meth:`plan_ttft_key`, where the caller has it."""
        memo_key = ("p99-side", self.plan_ttft_key(plan) if key is None else key, t_s)
        return self.cache.get(memo_key, lambda: self._p99_side(plan, t_s))

    def _p99_side(self, plan: Plan, t_s: float) -> int:
        """:meth:`p99_side`, computed."""
        inst, n = plan.roles["P"][0], plan.prefill.instances  # type: ignore[index]
        rate = plan.rate_rps
        if self.prefill_utilization(inst, n, rate) >= 1:
            return 0
        offs, wts, _ = self.ttft_offsets(inst, plan.route)
        wait = self.prefill_wait(inst, n, rate)
        return queueing.quantile_side(
            PERCENTILES[-1], t_s, offs, wts, wait.wait_probability, wait.conditional
        )

    def pending_sizing(self, inst: Instance, count: PrefillCount, rate: float) -> PrefillSizing:
        """A count's :class:`PrefillSizing` without its TTFT figures (``has_figures`` False,
        NaN): a candidate plan's, until :meth:`with_figures`."""
        nan = math.nan
        util = self.prefill_utilization(inst, count.instances, rate)
        return PrefillSizing(
            count.instances, util, (nan, nan, nan), nan, count.bound_by, count.meets_ttft, False
        )

    def with_figures(self, plan: Plan) -> Plan:
        """``plan`` with its prefill sizing's TTFT figures (:meth:`prefill_figures`), and the
        percentile that binds a TTFT-bound count named in its binding constraints."""
        changes = self.figure_changes(plan)
        return changed(plan, **changes) if changes else plan

    def figure_changes(self, plan: Plan) -> dict[str, Any]:
        """What :meth:`with_figures` changes in ``plan`` (``prefill`` and ``binding``; nothing
        where its sizing has its figures), for a caller that changes more in one copy."""
        ps = plan.prefill
        if ps.has_figures:
            return {}
        figures = self._figures_of(plan)
        binding = plan.binding
        if figures.bound_by != ps.bound_by:
            was = f"P: {ps.bound_by}"
            binding = [f"P: {figures.bound_by}" if b == was else b for b in binding]
        return {"prefill": figures, "binding": binding}

    def plan_ttft_s(self, plan: Plan) -> tuple[float, float, float]:
        """A plan's TTFT p50/p90/p99 at its prefill sizing [s] (computed if need be; the plan
        is not rebuilt with them, as :meth:`with_figures` does)."""
        ps = plan.prefill
        return ps.ttft_s if ps.has_figures else self._figures_of(plan).ttft_s

    def _figures_of(self, plan: Plan) -> PrefillSizing:
        """The figures of a candidate's prefill sizing (:meth:`prefill_figures` of its count)."""
        ps = plan.prefill
        inst = plan.roles["P"][0]  # type: ignore[index]
        count = PrefillCount(ps.instances, ps.bound_by, ps.meets_ttft)
        return self.prefill_figures(inst, count, plan.rate_rps, plan.route)

    def prefill_cap_count(self, inst: Instance, rate: float) -> int:
        """The fewest ``inst`` prefill instances that serve ``rate`` within the utilization cap
        (at least one): where a prefill sizing starts, and no count below it is a plan's."""
        return max(1, units.whole_count(self.prefill_cap_load(inst, rate)))

    def prefill_cap_load(self, inst: Instance, rate: float) -> float:
        """[-] The ``inst`` prefill instances ``rate`` needs at the utilization cap, unrounded
        (below 1: one instance runs under the cap)."""
        return rate * self.mean_prefill_s(inst) / self.pb.prefill_utilization_cap

    def _size_prefill(
        self, inst: Instance, rate: float, route: Route, meets: bool | None = None
    ) -> PrefillCount | None:
        """:meth:`prefill_count`, computed (``meets``: whether the count at the utilization cap
        meets the TTFT targets, where the caller has read it: :meth:`prefill_counts_by_routing`,
        as :meth:`ttft_meets` reads it)."""
        pb = self.pb
        n = self.prefill_cap_count(inst, rate)
        offs, wts, _ = self.ttft_offsets(inst, route)

        if meets is None:
            meets = self.ttft_meets(inst, n, rate, offs, wts)
        if meets or not pb.enforce_ttft:
            below = self.prefill_cap_load(inst, rate) < 1.0
            return PrefillCount(n, ONE_INSTANCE_BOUND if below else CAP_BOUND, meets)
        if not self.cdf_meets(offs, wts):
            return None  # no count meets TTFT: transfer or prefill alone is too slow
        more = self.ttft_count_above(inst, n, rate, offs, wts)
        # the percentile that binds is named with the figures, where a plan needs them
        return None if more is None else PrefillCount(more, TTFT_BOUND, True)

    def ttft_count_above(self, inst: Instance, n: int, rate: float, offs, wts) -> int | None:
        """The fewest ``inst`` instances above ``n`` (which misses them) that meet the TTFT
        targets at ``rate`` with offsets ``offs`` and weights ``wts``; None past 2^20 (the
        targets are met from some count on)."""
        at: dict[int, bool] = {}

        def ok(count: int) -> bool:
            if count not in at:
                at[count] = self.ttft_meets(inst, count, rate, offs, wts)
            return at[count]

        # most counts that the cap leaves short of the targets need one instance more: tried
        # first, then doubling and halving
        if ok(n + 1):
            return n + 1
        lo, hi = n + 1, n * 2
        while not ok(hi):
            lo, hi = hi, hi * 2
            if hi > 1 << 20:
                return None
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if ok(mid):
                hi = mid
            else:
                lo = mid
        return hi

    # ---- decode pools
    def md_context_tokens(self) -> float:
        """Mean context of MD's sequences: input plus half the output [tokens]."""
        if self._md_ctx is None:
            self._md_ctx = self._md_context_tokens()
        return self._md_ctx

    def _md_context_tokens(self) -> float:
        """:meth:`md_context_tokens`, memoized on the request classes object and what of the
        topology :attr:`~pddplan.solver.problem.Problem.on_decode_side` reads (a verdict
        check's, a robust study's and a sweep's problems share the classes of a workload they do
        not change)."""
        pb = self.pb
        c, t = pb.classes, pb.topology
        return _MD_CONTEXT.get(
            c,
            (t.anomalous_filter, t.relay),
            lambda: timing.md_context_tokens(
                c.input_tokens, c.output_tokens, c.weight, pb.on_decode_side
            ),
        )

    def decode_load(self, route: Route, md: Instance, mode: str):
        """MD's per-class busy time and stall, and RLD's per-class occupancy, for one MD option:
        ``(MD context, MD busy, extend busy, MD stall, RLD busy, RLD tokens, RLD extra)``."""
        key = self._decode_key(route, md, mode)
        return self.cache.get(key, lambda: self._decode_load(route, md, mode))

    def _decode_key(self, route: Route, md: Instance, mode: str) -> tuple:
        return ("decode", self._key, md.physics_key, route.link_utilization, route.routing, mode)

    def _decode_load(self, route: Route, md: Instance, mode: str):
        ctx_md = self.md_context_tokens()
        e0, e1 = md.extend_affine(ctx_md)
        d = timing.decode_split(self.pb.paths, route, self.pb.classes.output_tokens, mode, e0, e1)
        return _load_of(ctx_md, d)

    def decode_loads(self, route: Route, mds: list[Instance], mode: str) -> list[tuple]:
        """:meth:`decode_load` of every MD option in ``mds``: those not memoized yet in one
        :func:`~pddplan.timing.decode_split` over their extend terms (a column each; the split
        is elementwise, so each option's row holds the values its own call gives)."""
        keys = [self._decode_key(route, m, mode) for m in mds]
        todo = (  # one option alone is split by its own call (decode_load)
            {k: m for k, m in zip(keys, mds, strict=True) if k not in self.cache}
            if len(mds) > 1
            else {}
        )
        if len(todo) > 1:
            ctx_md = self.md_context_tokens()
            terms = [m.extend_affine(ctx_md) for m in todo.values()]
            e0 = np.array([e[0] for e in terms])[:, None]
            e1 = np.array([e[1] for e in terms])[:, None]
            d = timing.decode_split(
                self.pb.paths, route, self.pb.classes.output_tokens, mode, e0, e1
            )
            shape = (len(todo), len(self.pb.classes))
            # each part broadcast to every option's row once; an option's tuple holds its rows
            ctx, *wide = _load_of(ctx_md, d, lambda a: np.broadcast_to(a, shape))
            for j, key in enumerate(todo):
                value = (ctx, *(a[j] for a in wide))
                self.cache.get(key, lambda v=value: v)  # type: ignore[misc]
        return [
            self.cache.get(k, lambda m=m: self._decode_load(route, m, mode))  # type: ignore[misc]
            for k, m in zip(keys, mds, strict=True)
        ]

    def decode_loads_by_routing(
        self,
        tls: timing.Timelines,
        routes: list[Route],
        rows: list[int],
        mds: list[Instance],
        mode: str,
    ) -> DecodeLoads | None:
        """Memoize :meth:`decode_load` of every MD option in ``mds`` on the routes ``rows`` of
        ``routes`` (the rows of ``tls``, :meth:`fresh_routes`), where it is not memoized yet:
        one :func:`~pddplan.timing.decode_split` of every routing of ``tls`` over the options'
        extend terms (as :meth:`decode_loads`, with a routing's rows behind each option's; the
        split is elementwise, so each (option, routing) row holds the values its own call
        gives). Returns the split's busy times, an option and a routing a row (what
        :meth:`decode_sums` reads), with each route's loads, or None where every value was
        memoized already."""
        keys = {
            (j, i): self._decode_key(routes[i], m, mode) for j, m in enumerate(mds) for i in rows
        }
        if all(k in self.cache for k in keys.values()):
            return None
        ctx_md = self.md_context_tokens()
        terms = [m.extend_affine(ctx_md) for m in mds]
        shape: tuple[int, ...] = tls.relay.shape
        if len(mds) > 1:  # one MD option a row, ahead of the routings' rows
            e0: Any = np.array([e[0] for e in terms])[:, None, None]
            e1: Any = np.array([e[1] for e in terms])[:, None, None]
            shape = (len(mds), *shape)
        else:  # one option: its own scalar terms, as decode_load takes them
            e0, e1 = terms[0]
        d = timing.decode_split(self.pb.paths, tls, self.pb.classes.output_tokens, mode, e0, e1)
        # each part on every (option,) routing's row (a part no routing changes is broadcast)
        ctx, *wide = _load_of(
            ctx_md, d, lambda a: a if a.shape == shape else np.broadcast_to(a, shape)
        )
        of_route: dict[int, list[tuple]] = {i: [] for i in rows}
        for (j, i), key in keys.items():
            if key in self.cache:
                of_route[i].append(self.decode_load(routes[i], mds[j], mode))
            else:
                at = (j, i) if len(mds) > 1 else (i,)
                value = (ctx, *(a[at] for a in wide))
                self.cache.put(key, value)
                of_route[i].append(value)
        md_busy_s, extend_busy_s, _stall, rld_busy_s, _tokens, _extra = wide
        return DecodeLoads(md_busy_s, extend_busy_s, rld_busy_s, of_route)

    def decode_sums(
        self, rate: float, md_busy_s: np.ndarray, extend_busy_s: np.ndarray, rld_busy_s: np.ndarray
    ) -> tuple[Any, Any, Any]:
        """The sums over the request classes that an MD option's decode sizing reads from its
        :meth:`decode_load`: ``(MD concurrency [-], mean extend busy time per request [s], RLD
        concurrency [-])`` (:meth:`decode_concurrency`; the extend time weighted by the classes'
        shares). Each part's last axis is the classes; any leading axes (options, routings) are
        kept, each row summed as alone (numpy sums a C-contiguous row of the products the same
        way whatever comes before it), so a batch's rows hold each row's own sums."""
        w = self.pb.classes.weight
        return (
            self.decode_concurrency(rate, md_busy_s),
            np.add.reduce(w * extend_busy_s, axis=-1),
            self.decode_concurrency(rate, rld_busy_s),
        )

    def decode_concurrency(self, rate: float, time_s: np.ndarray) -> Any:
        """Mean sequences in a decode pool [-]: Little's law per class, ``rate w_c T_c``, summed
        over the classes (the last axis of ``time_s``; leading axes kept, as
        :meth:`decode_sums`)."""
        w = self.pb.classes.weight
        return np.add.reduce(pipeline.little_concurrency(rate * w, time_s), axis=-1)

    def rld_context_tokens(self, route: Route) -> float:
        """Mean context of RLD's sequences on a route [tokens] (memoized)."""
        key = ("rld-ctx", self._key, route.link_utilization, route.routing)
        return self.cache.get(key, lambda: float(self._rld_context_tokens(route)))

    def rld_context_tokens_by_routing(self, tls: timing.Timelines) -> list[float]:
        """:meth:`rld_context_tokens` of every routing of ``tls`` in one set of array calls over
        a routing axis (the rule is elementwise over the classes and sums each routing's row as
        alone), not memoized: the batch of every routing's decode sizings reads them
        (``Solver.decode_sizings_by_routing``), and a route's own call computes the same."""
        tokens: list[float] = self._rld_context_tokens(tls).tolist()
        return tokens

    def _rld_context_tokens(self, tl: Route | timing.Timelines) -> Any:
        """Mean context of RLD's sequences, weighted by their time there (input + half the eager
        tokens; anomalous requests: input + half their output) [tokens]; where nothing waits on
        RLD, the mean input of the requests it takes (relayed or anomalous), for which it is
        sized. A :class:`~pddplan.timing.Timelines` gives one value a routing (its rows)."""
        pb = self.pb
        c = pb.classes
        w_relay = c.weight * tl.relay_wait_s
        w_anom = np.where(pb.on_decode_side, 0.0, c.weight * c.output_tokens)
        occ = w_relay + w_anom
        occ_sum = np.add.reduce(occ, axis=-1)
        ctx = np.where(
            pb.on_decode_side,
            c.input_tokens + tl.eager_tokens / 2,
            c.input_tokens + c.output_tokens / 2,
        )
        idle = occ_sum <= 0  # nothing waits on RLD: size it for the relayed inputs
        if not idle.any():
            return np.add.reduce(occ * ctx, axis=-1) / occ_sum
        sel = tl.relay | ~pb.on_decode_side
        inputs = np.add.reduce(c.weight * sel * c.input_tokens, axis=-1) / np.maximum(
            np.add.reduce(c.weight * sel, axis=-1), 1e-300
        )
        with np.errstate(divide="ignore", invalid="ignore"):  # the idle rows' are not used
            busy = np.add.reduce(occ * ctx, axis=-1) / occ_sum
        return np.where(idle, inputs, busy)

    def size_decode(
        self,
        inst: Instance,
        rate: float,
        time_s: np.ndarray,
        context_tokens: float,
        extra_busy: float = 0.0,
    ) -> DecodeSizing | None:
        """A decode pool of ``inst`` for sequences busy ``time_s`` per class at ``rate``
        (:meth:`decode_sizing_at` of their :meth:`decode_concurrency`)."""
        conc = float(self.decode_concurrency(rate, time_s))
        return self.decode_sizing_at(inst, rate, conc, context_tokens, extra_busy)

    def decode_sizing_at(
        self,
        inst: Instance,
        rate: float,
        conc: float,
        context_tokens: float,
        extra_busy_s: float = 0.0,
    ) -> DecodeSizing | None:
        """A decode pool of ``inst`` holding ``conc`` sequences [-] at ``context_tokens`` at
        ``rate``, with ``extra_busy_s`` of extend passes per request (None where not one
        sequence fits within the TPOT): enough instances for the sequences at the batch the
        TPOT allows, and enough slots that a sequence rarely waits for one (the extend passes
        hold whole instances). Scalar: the batch of every routing (Solver._by_routing) calls
        it for each routing's sums."""
        if conc <= 0:
            return DecodeSizing(0, 0, "-", 0.0, context_tokens)
        b_mem = inst.max_batch_memory(context_tokens)
        b = inst.max_batch_at_tpot(context_tokens, self.pb.tpot_s)
        if b < 1:
            return None
        n_cap = max(units.whole_count(conc / b + rate * extra_busy_s), 1)
        # extend passes hold whole instances: counted as slots of a sequence's load
        n = queueing.units_for_wait(
            conc + rate * extra_busy_s * b, b, self.pb.decode_slot_wait_probability_cap
        )
        bound = "memory" if b >= b_mem else "TPOT"
        if n > n_cap:
            bound = "slot wait"
        return DecodeSizing(max(n, n_cap), b, bound, conc, context_tokens)

    def ttft_by_pipeline(self, plan: Plan) -> dict[str, dict[str, float]]:
        """TTFT percentiles and request share per pipeline, plus the mean wait, for a plan."""
        p_inst, n = plan.roles["P"]  # type: ignore[misc]
        offs, wts, pids = self.ttft_offsets(p_inst, plan.route, *self.first_steps(plan))
        wait = self.prefill_wait(p_inst, n, plan.rate_rps)
        pw, cond = wait.wait_probability, wait.conditional
        out: dict[str, dict[str, float]] = {}
        for pid, name in timing.pipeline_names(self.pb.topology.cross_dc).items():
            mask = pids == pid
            if not np.any(mask):
                continue
            row = {"share": float(np.sum(wts[mask]) / np.sum(wts))}
            for p in PERCENTILES:
                row[f"p{int(p * 100)}"] = queueing.mixture_quantile(
                    p, offs[mask], wts[mask], pw, conditional=cond
                )
            out[name] = row
        out["_wait"] = {"mean_wait_s": wait.mean_wait_s, "wait_probability": pw}
        return out

    def class_ttft_mean_s(self, plan: Plan) -> np.ndarray:
        """Mean TTFT of each request class of a plan [s]: the prefill queue's mean wait plus
        :func:`pddplan.timing.class_first_token_mean_s` at the decode pools' working first
        steps (the same timeline as :meth:`ttft_by_pipeline`)."""
        p_inst, n = plan.roles["P"]  # type: ignore[misc]
        mean_wait = self.prefill_wait(p_inst, n, plan.rate_rps).mean_wait_s
        first = timing.class_first_token_mean_s(
            self.pb.paths, plan.route, self.prefill_s(p_inst), *self.first_steps(plan)
        )
        return mean_wait + first

    def reported_handover(
        self,
        route: Route,
        mode: str,
        md_inst: Instance,
        rld_tokens,
        extra,
        r_inst: Instance | None,
        rs: DecodeSizing | None,
    ) -> tuple[float, float]:
        """RLD's share of all output tokens and MD's longest hand-over stall [s], with RLD
        stepping at its working batch.

        Sizing counts eager tokens at the TPOT target (conservative for MD's decode load); a
        lightly loaded RLD steps faster, emits more of them before MD takes over and hands MD a
        longer extend, which is what the plan reports.

        Memoized on the route, the mode, both instances' physics, RLD's tokens and its sizing
        (a price sweep's points report the same plans).
        """
        tokens = np.asarray(rld_tokens, dtype=float)
        key = (
            "reported-handover",
            self._key,
            route.routing,
            route.link_utilization,
            mode,
            md_inst.physics_key,
            tokens.tobytes(),
            r_inst.physics_key if r_inst is not None else None,
            rs,
        )
        return self.cache.get(
            key, lambda: self._reported_handover(route, mode, md_inst, tokens, r_inst, rs)
        )

    def _reported_handover(
        self,
        route: Route,
        mode: str,
        md_inst: Instance,
        tokens: np.ndarray,
        r_inst: Instance | None,
        rs: DecodeSizing | None,
    ) -> tuple[float, float]:
        pb = self.pb
        c = pb.classes
        w = c.weight
        stall = 0.0
        if r_inst is None or rs is None or rs.instances <= 0 or not np.any(route.relay):
            return pipeline.rld_output_share(tokens, c.output_tokens, w), stall
        batch = min(max(rs.concurrency / rs.instances, 1.0), float(max(rs.batch_per_instance, 1)))
        step_s = self.capped_step(r_inst, batch, rs.context_tokens)
        e0, e1 = md_inst.extend_affine(self.md_context_tokens())
        relayed, stalls = timing.relayed_tokens_at_step(
            pb.paths, route, c.output_tokens, mode, e0, e1, step_s
        )
        tokens = np.where(route.relay, relayed, tokens)
        stall = float(np.max(stalls))
        return pipeline.rld_output_share(tokens, c.output_tokens, w), stall


#: :meth:`Sizing._md_context_tokens` by request classes object.
_MD_CONTEXT = IdentityMemo()


def _roles_key(plan: Plan) -> tuple:
    """Each role's instance physics and count (:meth:`Sizing.fleet_key`'s part)."""
    return tuple(
        (r, v[0].physics_key, v[1]) for r, v in sorted(plan.roles.items()) if v is not None
    )


def fixed_point(phi, start: float, tol: float, max_steps: int = 60) -> float:
    """The fixed point ``s = phi(s)`` of a contraction, from ``start``: Steffensen's
    acceleration of the iteration (Aitken's delta-squared on ``s, phi(s), phi(phi(s))``), which
    converges quadratically where the plain iteration converges linearly (MD's working step
    contracts by about 0.6 a step: 30 plain steps left it 1e-8 s short); two plain steps
    wherever the extrapolation turns back or jumps far. Returns the last ``phi(s)`` once it moves
    by at most ``tol``."""
    s = start
    for _ in range(max_steps):
        s1 = phi(s)
        if abs(s1 - s) <= tol:
            return s1
        s2 = phi(s1)
        if abs(s2 - s1) <= tol:
            return s2
        den = s2 - 2.0 * s1 + s
        acc = s - (s1 - s) ** 2 / den if den != 0.0 else s2
        # the extrapolation lies past s2 on a monotone approach; taken while it moves the way
        # the iterates move, and not more than a hundred times as far
        step = s2 - s
        moved = acc - s
        s = acc if math.isfinite(acc) and moved * step > 0 and abs(moved) <= 100 * abs(step) else s2
    return phi(s)


class DecodeLoads(NamedTuple):
    """MD options' decode loads on several routes (:meth:`Sizing.decode_loads_by_routing`): the
    parts that their sizings sum over the classes (:meth:`Sizing.decode_sums`), an option and a
    routing a row [s], and each route's :meth:`Sizing.decode_loads` (by its row)."""

    md_busy_s: np.ndarray
    extend_busy_s: np.ndarray
    rld_busy_s: np.ndarray
    of_route: dict[int, list[tuple]]


def _load_of(ctx_md: float, d: timing.DecodeSplit, row=lambda a: a) -> tuple:
    """:meth:`Sizing.decode_load`'s tuple of a split (``row`` picks one option's row of a split
    over several, :meth:`Sizing.decode_loads`)."""
    parts = (d.md_busy_s, d.extend_busy_s, d.md_stall_s, d.rld_busy_s, d.rld_tokens, d.rld_extra_s)
    return (ctx_md, *(row(a) for a in parts))
