"""The exact search: every chip, instance size, routing and hand-over mode, least counts.

How the search is exact within the model
---------------------------------------
TTFT depends on the prefill option, the line and the routing, never on the decode chips (the
first decode step is bounded by the TPOT target, which is what decode instances are sized
for). RLD's and MD's counts depend on each other only through the hand-over (MD's extend
pass). So for every (routing, hand-over mode) the cost splits into
``cost_P(p) + cost_RM(r, m) + line`` and the minimum is taken over every option triple; with
inventory limits the triples are visited in cost order until one fits.

Owned chips (a scenario's ``inventory``) break that separability: the cost of a chip kind is
piecewise linear in its total count (owned ones first, at their amortized or sunk price, then
rented or bought), and a kind used by two roles shares its owned chips between them. The search
therefore prices every (P option, RLD-MD pair) exactly, ``cost_P + cost_RM - owned_discount``
with the discount computed on the triple's total count of each owned kind
(:meth:`Problem.owned_discount`), before ordering; the route bound uses each chip's lowest price
(owned or not), so it stays a lower bound. A route whose cost lower bound exceeds the best plan
so far is skipped. Among plans of equal cost the one with the lower
TTFT p99 (then p90, p50) wins.

Within a route, prefill options are sized in the order of a lower bound on their cost (their
count at the utilization cap), and only while that bound plus the cheapest RLD-MD pair does not
exceed a combination already priced: the others cannot be reached before the cost-ordered visit
stops. The visit checks that it stopped short of the bound and otherwise sizes every option and
starts again, so the plan is the one the full enumeration returns. With owned chips every
option is sized (their discount can undercut the bound).

Searching one rate again at other prices
----------------------------------------
Everything above but the prices is the same when a price sweep (or a break-even on a price)
searches one problem's physics at one rate again. From the second such search the rate's
price-independent part is kept (:meth:`Solver._build_table`: each routing and hand-over mode
visited, the prefill options sized there, the decode combinations), and a new set of prices
picks the plan from it (:meth:`Solver._table_choice`): the candidates within
:data:`_TABLE_TIE` of the least cost, ranked by :func:`better_plan` as the search meets them.
A prefill option the table left unsized that might be cheapest at the new prices is sized
into it first. Where the choice cannot be shown to be the search's plan (a candidate just above
that window, costs whose rounding reaches it, owned chips, inventory limits, a priced prefix
cache), the search runs.

The solver never prints; it takes an optional progress callback and returns records.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from pddplan import units
from pddplan.deployment import Instance
from pddplan.errors import InfeasibleError
from pddplan.executors import Progress
from pddplan.models import queueing
from pddplan.solver.cache import HashedKey
from pddplan.solver.plan import (
    DecodeSizing,
    Plan,
    PrefillSizing,
    Route,
    build_plan,
    changed,
    handover_figures_of,
    roles_chips,
)
from pddplan.solver.problem import PERCENTILES
from pddplan.solver.sizing import DecodeLoads, PrefillCount, Sizing
from pddplan.timing import Routing


class Solver(Sizing):
    """Least-cost plans on one problem (see the module notes)."""

    #: :meth:`_pool_lower_bounds` of the last rate asked: ``(rate, (prefill, MD))``
    _pool_lb_at: tuple[float, tuple[float, float]] | None = None

    def solve_rate(self, rate: float, progress: Progress | None = None) -> Plan:
        """Least-cost plan that serves ``rate`` within SLA; raises InfeasibleError."""
        return self.finalized(self.candidate_rate(rate, progress))

    def finalized(self, candidate: Plan) -> Plan:
        """A candidate of :meth:`candidate_rate` as :meth:`solve_rate` returns it: with its
        figures (:meth:`with_figures`, then :meth:`finalize`, in one copy of the plan)."""
        return self.finalize(candidate, self.figure_changes(candidate))

    def candidate_rate(
        self, rate: float, progress: Progress | None = None, above: float = math.inf
    ) -> Plan:
        """The plan :meth:`solve_rate` returns, before its figures (:meth:`finalized`): its
        cost, fleet and routing are final; its TTFT figures are computed where a caller needs
        them (a tie with another problem's plan, say); raises InfeasibleError.

        ``above``: the cost of a plan the caller has in hand and compares this one with by
        :func:`better_plan` [USD/h]. A route whose lower bound proves every plan there dearer
        than it by more than :data:`COST_TIE_USD_PER_HOUR`, whatever the rounding of the sums
        (:func:`_past_tie`), is not searched, as one whose plans cost more than the search's
        own best is not: no plan there could beat the caller's. The plan returned is the same
        wherever it could beat that plan; where no plan could, the search may return another
        that costs more, or raise an error of binding ``cost`` that names no constraint."""
        if progress is None:
            tabled = self._priced_candidate(rate)
            if tabled is not None:
                return tabled
        return self._search(rate, progress, above)

    def _search(self, rate: float, progress: Progress | None, above: float = math.inf) -> Plan:
        """:meth:`candidate_rate` by the search itself (the rate's price table aside)."""
        pb = self.pb
        best: Plan | None = None
        ties: list[Plan] = []  # candidates after best of exactly its cost, not ranked yet
        reasons: dict[str, int] = {}
        routings = pb.routings
        modes = pb.handover_modes if pb.topology.relay else ("one-shot",)
        total = len(routings) * len(modes)
        step = 0

        def incumbent() -> float:
            """The cost to beat [USD/h]: the search's own best, or the caller's plan's."""
            return above if best is None else min(above, best.cost_usd_per_hour)

        self._by_routing(rate, routings, modes)
        for routing in routings:
            route = self.route(rate, routing)
            if pb.topology.cross_dc and route.link_utilization > pb.link_utilization_cap:
                reasons["line utilization"] = reasons.get("line utilization", 0) + 1
                step += len(modes)
                continue
            beat = incumbent()
            if beat < math.inf and self.lower_bound(rate, route) > _past_tie(beat):
                step += len(modes)  # no plan on this route can beat the incumbent
                continue
            p_opts = _PrefillOptions(self, rate, route)
            if not p_opts.any_feasible():
                reasons["TTFT"] = reasons.get("TTFT", 0) + 1
                step += len(modes)
                continue
            relays = bool(np.any(route.relay))
            for mode in modes if relays else modes[:1]:  # the mode only matters when relaying
                step += 1
                if progress:
                    progress(step, total)
                cand = self._best_for(rate, route, mode, p_opts, incumbent())
                if cand is _BEATEN:
                    continue  # every plan here costs more than the incumbent
                if cand is None:
                    reasons["decode"] = reasons.get("decode", 0) + 1
                    continue
                if best is None:
                    best = cand
                elif cand.cost_usd_per_hour == best.cost_usd_per_hour:
                    ties.append(cand)  # ranked by TTFT once it matters (_after_ties)
                else:
                    gap = abs(cand.cost_usd_per_hour - best.cost_usd_per_hour)
                    if ties and gap <= COST_TIE_USD_PER_HOUR:
                        best, ties = self._after_ties(best, ties), []
                    if better_plan(cand, best, self.plan_ttft_s, self.plan_ttft_key):
                        best, ties = cand, []  # cheaper than best and every tie of its cost
        if best is None:
            if above < math.inf:  # the caller's plan is better than any here, if any fits
                raise InfeasibleError(
                    f"no plan at {rate:.4g} req/s costs at most {above:.4g} $/h", binding="cost"
                )
            raise self._infeasible(rate, reasons)
        return self._after_ties(best, ties) if ties else best

    def _by_routing(self, rate: float, routings: list[Routing], modes: Sequence[str]) -> None:
        """Memoize the physics that :meth:`_search` reads routing by routing at ``rate``, for
        every routing whose route is not memoized yet, in one set of array calls a step (the
        rules are elementwise over the request classes, so each value is the one its own call
        gives; the search then finds them in the memo): the routes (:meth:`fresh_routes`), the
        TTFT offsets and sizing of the prefill option the search sizes first on each
        (:meth:`ttft_offsets_by_routing`, :meth:`prefill_counts_by_routing`), and the MD
        options' decode loads and every decode sizing in each hand-over mode the search visits
        there (:meth:`decode_loads_by_routing`, :meth:`decode_sizings_by_routing`, with RLD's
        context where anything goes to RLD, :meth:`rld_context_tokens_by_routing`: the first
        mode on every route, the others where it relays). Nothing more where the line runs
        above its utilization cap (the search skips every route). A routing that the search
        prunes has its values computed too: most are not pruned (a rate sweep's routings are
        nearly all cost ties), and a batch costs about what two routings' own calls cost."""
        pb = self.pb
        fresh = self.fresh_routes(rate, routings)
        if fresh is None:
            return
        tls, routes = fresh
        if pb.topology.cross_dc and tls.link_utilization > pb.link_utilization_cap:
            return
        order = _PrefillOptions.lower_bounds(self, rate)[2]
        if order:
            first = pb.options["P"][order[0]]
            self.ttft_offsets_by_routing(first, tls, routes)
            self.prefill_counts_by_routing(first, rate, routes)
        relays: list[bool] = np.any(tls.relay, axis=1).tolist()
        every = list(range(len(routes)))
        rld_rows = [i for i in every if _sizes_rld(pb, relays[i])]
        ctx_r: list[float | None] = [None] * len(routes)
        if rld_rows:
            tokens = self.rld_context_tokens_by_routing(tls)
            for i in rld_rows:
                ctx_r[i] = tokens[i]
        for k, mode in enumerate(modes):
            rows = every if k == 0 else [i for i in every if relays[i]]
            if rows:
                loads = self.decode_loads_by_routing(tls, routes, rows, pb.options["MD"], mode)
                if loads is not None:
                    self.decode_sizings_by_routing(rate, routes, rows, mode, loads, ctx_r)

    def _after_ties(self, best: Plan, ties: list[Plan]) -> Plan:
        """The plan that :func:`better_plan` keeps from ``best`` and then ``ties`` (candidates
        of exactly ``best``'s cost, in the search's order): their TTFT percentiles decide.

        A later routing relays more, and relaying hides transfer time: the last candidates most
        often have the lowest TTFT, and the first of several with the same percentiles wins on
        :func:`plan_key`. So the plan kept is looked for from the last one back
        (:meth:`_beats`, most often one CDF reading of each other candidate's TTFT, no root
        search for its percentiles), and then checked: where it beats every candidate before it
        and none after it beats it, it is the plan ``better_plan`` keeps in the search's order
        (it beats whichever is kept when it comes, and nothing displaces it after). Otherwise
        ``better_plan`` runs over them in order, as it would have. Either way the same plan."""
        group = [best, *ties]
        keys = [self.plan_ttft_key(p) for p in group]  # each one's, for every comparison

        def beats(i: int, j: int) -> bool:
            return self._beats(group[i], group[j], keys[i], keys[j])

        w = len(group) - 1
        for i in range(len(group) - 2, -1, -1):
            if beats(i, w):
                w = i
        win = group[w]
        if all(beats(w, i) for i in range(w)) and not any(
            beats(i, w) for i in range(w + 1, len(group))
        ):
            return win
        for cand in ties:
            if better_plan(cand, best, self.plan_ttft_s, self.plan_ttft_key):
                best = cand
        return best

    def _beats(
        self, a: Plan, b: Plan, key_a: tuple | None = None, key_b: tuple | None = None
    ) -> bool:
        """``better_plan(a, b)`` for two candidates of one cost, reading one candidate's TTFT
        CDF at the other's p99 (:meth:`p99_side`) where only the other's percentiles are at
        hand (``b``'s are computed where neither's are): a reading beyond
        :data:`TTFT_TIE_RTOL` of it answers as the comparison of the two p99s would (its margin
        exceeds the tie tolerance plus the percentiles' own precision); where it cannot tell,
        the comparison itself. ``key_a``, ``key_b``: the two candidates' :meth:`plan_ttft_key`,
        where the caller has them."""
        if key_a is None:
            key_a = self.plan_ttft_key(a)
        if key_b is None:
            key_b = self.plan_ttft_key(b)
        side = 0  # a's p99 against b's: -1 below beyond the tie tolerance, 1 above
        if key_a != key_b:
            known_a = self.has_figures(a, key_a)
            if known_a and not self.has_figures(b, key_b):  # b's p99 read against a's
                side = -self.p99_side(b, self.plan_ttft_s(a)[-1], key_b)
            elif not known_a:  # a's p99 read against b's (computed where need be)
                side = self.p99_side(a, self.plan_ttft_s(b)[-1], key_a)
        if side:
            return side < 0
        keys = {id(a): key_a, id(b): key_b}
        return better_plan(a, b, self.plan_ttft_s, lambda p: keys[id(p)])

    def finalize(self, plan: Plan, changes: dict[str, Any] | None = None) -> Plan:
        """The chosen plan with its TTFT at the decode pools' working first steps (see
        :meth:`reported_ttft`) and its hand-over figures at RLD's working step (see
        :meth:`reported_handover`); ``changes`` (:meth:`figure_changes`) made in the same copy
        (neither figure depends on the prefill sizing's own figures)."""
        q, att = self.reported_ttft(plan)
        changes = dict(changes or {})
        if all(math.isfinite(x) for x in q):
            prefill = changes.get("prefill", plan.prefill)
            changes["prefill"] = changed(prefill, ttft_s=q, attainment=att)
        if plan.handover_inputs is not None:
            mode, m, rld_tokens, extra, r_inst, rs = plan.handover_inputs
            share, stall_max = self.reported_handover(
                plan.route, mode, m, rld_tokens, extra, r_inst, rs
            )
            changes.update(
                rld_output_token_share=share,
                md_stall_s=max(stall_max, plan.md_stall_s),
                handover_inputs=None,
            )
        return changed(plan, **changes) if changes else plan  # one copy of the plan

    def lower_bound(self, rate: float, route: Route) -> float:
        """A cost no plan on this route can undercut [USD/h]: prefill at its utilization cap
        (TTFT can only add instances), MD for the tokens it must decode (without stalls or
        extend passes; with the slot-wait bound), one RLD instance when anything is relayed,
        and the line."""
        pb = self.pb
        p_lb, md_lb = self._pool_lower_bounds(rate)
        rld_lb = self._rld_lower_bound(_uses_rld(pb, bool(route.relay.any())))
        line = pb.line_cost_usd_per_hour
        return p_lb + md_lb + rld_lb + line

    def _rld_lower_bound(self, uses_rld: bool) -> float:
        """The RLD term of :meth:`lower_bound` [USD/h]: where anything goes to RLD
        (``uses_rld``: a relayed request, or an anomalous one that RLD finishes), a plan has at
        least one RLD instance (its sizing's count is at least 1), at the option's lowest unit
        price; else none."""
        pb = self.pb
        if not (pb.topology.relay and uses_rld):
            return 0.0
        return min((pb.unit_lb_usd_per_hour(r) for r in pb.options["RLD"]), default=0.0)

    def step_end_for_goodput(self, goodput_rps: float) -> float:
        """The highest rate ``x`` such that every fleet whose walk step ends by ``x`` (its
        ``e(F)`` of :func:`~pddplan.solver.modes.walk_fleets`: its goodput, or the rate at
        which its prefill pool or the line reaches its utilization cap) has a goodput of at
        most ``goodput_rps`` [requests/s].

        A step that ends at the goodput bounds it. One that ends at the prefill pool's cap
        ``u_P`` bounds it by ``x / u_P``, where the pool runs at 100% and meets no TTFT target;
        one that ends at the line's cap (:meth:`line_rate_limit`, past which ``x`` must then
        lie) by ``x / u``, ``u`` the lower of the two caps
        (:func:`~pddplan.solver.fleet.overload_rps`)."""
        pb = self.pb
        by_prefill = goodput_rps * pb.prefill_utilization_cap
        line = self.line_rate_limit()
        if by_prefill <= line:
            return by_prefill
        return max(line, goodput_rps * pb.lowest_utilization_cap)

    def cost_floor_for_goodput(self, goodput_rps: float) -> float:
        """A cost no fleet of this problem that meets every target at ``goodput_rps`` can
        undercut [USD/h], each pool counted at what the fleet check holds it to there
        (:func:`~pddplan.solver.fleet.check_fleet`):

        - prefill: the pool runs below 100%, so it has at least the instances its utilization
          cap asks at ``goodput_rps u_P`` (``u_P`` the cap), and it meets the TTFT targets, so
          at least those that meet them with each request's least offset
          (:meth:`_ttft_floor_count`);
        - MD: it covers MD's load, every output token on the decode side for at least the
          TPOT target (stalls and extend passes only add), at the batch the search sizes MD at
          (the TPOT-bound batch at MD's mean context, which no route changes), within the
          slot-wait bound: :meth:`size_decode`'s terms, so at least the MD count of
          :meth:`lower_bound` at ``goodput_rps``, less :data:`FLOOR_CHECK_RTOL` of the rate
          for the check's slack (:mod:`~pddplan.solver.sla`);
        - RLD: one instance at the least unit price where RLD finishes the anomalous
          requests, or where a fleet of that prefill option that relays nothing cannot meet
          TTFT (:meth:`_meets_ttft_unrelayed`): the check fails a fleet without RLD whose
          route gives RLD work;
        - the line.

        A fleet whose goodput is above ``goodput_rps`` meets every target there (its feasible
        rates are an interval from 0), so it costs at least as much."""
        pb = self.pb
        anomalous = bool(np.any(~pb.on_decode_side))
        p_rld_lb = min(
            max(
                self.prefill_cap_count(p, goodput_rps * pb.prefill_utilization_cap),
                self._ttft_floor_count(p, goodput_rps),
            )
            * pb.unit_lb_usd_per_hour(p)
            + self._rld_lower_bound(anomalous or not self._meets_ttft_unrelayed(p))
            for p in pb.options["P"]
        )
        md_lb = self._md_lower_bound(goodput_rps * (1.0 - FLOOR_CHECK_RTOL))
        return p_rld_lb + md_lb + pb.line_cost_usd_per_hour

    def goodput_bound_for_cost(self, cost_usd_per_hour: float, rate: float) -> float:
        """A goodput no fleet of this problem that costs ``cost_usd_per_hour`` and meets every
        target at ``rate`` can exceed [requests/s] (within 1/256 of the least such bound): where
        :meth:`cost_floor_for_goodput` passes the cost (found by growing from ``rate`` by a
        quarter, then halving), or where the line saturates (it runs below 100%)."""
        pb = self.pb
        line = self.line_rate_limit()
        saturated = line / pb.link_utilization_cap if math.isfinite(line) else math.inf

        def fits(y: float) -> bool:
            return self.cost_floor_for_goodput(y) <= cost_usd_per_hour

        lo = rate
        hi = lo * _BOUND_GROWTH
        while fits(hi):
            if hi >= saturated:
                return saturated
            lo, hi = hi, hi * _BOUND_GROWTH
        for _ in range(_BOUND_HALVINGS):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        return min(hi, saturated)

    def cost_floor(self, rate: float) -> float:
        """A cost no plan at ``rate`` or above can undercut, whatever its route [USD/h]:
        :meth:`lower_bound` with its RLD term where every route has one (RLD finishes the
        anomalous requests), else without it. Its prefill and MD terms grow with the rate
        (counts of a load proportional to it), so where it exceeds a budget no fleet the search
        returns at a higher rate fits either (:func:`~pddplan.solver.modes.solve_budget`),
        though the least cost itself can fall as the rate grows."""
        pb = self.pb
        p_lb, md_lb = self._pool_lower_bounds(rate)
        rld_lb = self._rld_lower_bound(bool(np.any(~pb.on_decode_side)))
        return p_lb + md_lb + rld_lb + pb.line_cost_usd_per_hour

    def _pool_lower_bounds(self, rate: float) -> tuple[float, float]:
        """The prefill and MD terms of :meth:`lower_bound` [USD/h]: each a count that grows
        with ``rate`` at the option's lowest unit price, the least over the options. Prefill
        at its utilization cap (:meth:`prefill_cap_count`); MD as :meth:`size_decode` sizes it
        on the least load any route gives it, every output token on the decode side at the
        TPOT target (no stall, no extend pass): none where nothing decodes there. Kept for
        the last rate asked (every routing of a search asks at one rate)."""
        kept = self._pool_lb_at
        if kept is not None and kept[0] == rate:
            return kept[1]
        out = self._pool_lower_bounds_at(rate)
        self._pool_lb_at = (rate, out)
        return out

    def _pool_lower_bounds_at(self, rate: float) -> tuple[float, float]:
        """:meth:`_pool_lower_bounds`, computed."""
        return self._prefill_lower_bound(rate), self._md_lower_bound(rate)

    def _prefill_lower_bound(self, rate: float) -> float:
        """The prefill term of :meth:`_pool_lower_bounds` at ``rate`` [USD/h]."""
        pb = self.pb
        return min(
            self.prefill_cap_count(p, rate) * pb.unit_lb_usd_per_hour(p) for p in pb.options["P"]
        )

    def _least_ttft_offsets(self, inst: Instance) -> tuple[np.ndarray, np.ndarray]:
        """(offsets, weights): the TTFT offsets (:meth:`ttft_offsets`, at the TPOT target's
        first steps, as the fleet check takes them) with every request on the decode side
        relayed, on an idle line. Each class's offset at each of the line's jitter points is
        then its prefill time, one step and the shorter of its RDMA copy and its transfer
        on an idle line (RLD's own requests: the RDMA copy), which no route at any rate
        undercuts (a route picks one of the two; a loaded line only lengthens a transfer)."""
        offs, wts, _ = self.ttft_offsets(inst, self.route(0.0, Routing.all()))
        return offs, wts

    def _meets_ttft_unrelayed(self, inst: Instance) -> bool:
        """Whether a fleet with ``inst`` prefill instances and no RLD can meet the TTFT
        targets at any rate: its route then relays nothing (the fleet check fails a route that
        sends RLD any work), and its TTFT is at least the offsets of a route that relays
        nothing on an idle line, without queueing."""
        offs, wts, _ = self.ttft_offsets(inst, self.route(0.0, Routing.none()))
        return self.cdf_meets(offs, wts)

    def _ttft_floor_count(self, inst: Instance, rate: float) -> float:
        """The fewest ``inst`` prefill instances whose TTFT distribution at ``rate`` meets
        every target with :meth:`_least_ttft_offsets` (inf where none does): a fleet that
        meets the TTFT targets at ``rate`` has at least as many, its own offsets being
        larger."""
        offs, wts = self._least_ttft_offsets(inst)
        mean_s = self.mean_prefill_s(inst)
        n = max(1, math.floor(rate * mean_s) + 1)  # the fewest the pool is stable with
        if not self.cdf_meets(offs, wts):
            return math.inf
        if self.ttft_meets(inst, n, rate, offs, wts):
            return float(n)
        more = self.ttft_count_above(inst, n, rate, offs, wts)
        return math.inf if more is None else float(more)

    def _md_lower_bound(self, rate: float) -> float:
        """The MD term of :meth:`_pool_lower_bounds` at ``rate`` [USD/h]."""
        pb = self.pb
        c = pb.classes
        least_s = np.where(pb.on_decode_side, c.output_tokens, 0.0) * pb.tpot_s
        ctx = self.md_context_tokens()
        md_lb = math.inf
        for m in pb.options["MD"]:
            md = self.size_decode(m, rate, least_s, ctx)
            if md is not None:
                md_lb = min(md_lb, md.instances * pb.unit_lb_usd_per_hour(m))
        return md_lb

    def _decode_sizings(self, rate: float, route: Route, mode: str):
        """MD and RLD sizings for every option (price-independent, so memoized).

        Returns ``(md_rows, pairs)``: ``md_rows[i] = (MD option index, MD sizing, stall,
        rld_time, rld_tokens, extra)``; ``pairs`` (:class:`_Pairs`) lists every feasible
        combination of an MD row with an RLD option (or with none).
        """
        key = self._decode_sizings_key(rate, route, mode)
        return self.cache.get(key, lambda: self._decode_sizings_compute(rate, route, mode))

    def _decode_sizings_key(self, rate: float, route: Route, mode: str) -> tuple:
        """:meth:`_decode_sizings`' memo key (each route's own call's and the batch's)."""
        pb = self.pb
        return (
            "decode-sizings",
            self._key,
            tuple(m.physics_key for m in pb.options["MD"]),
            tuple(r.physics_key for r in pb.options["RLD"]),
            rate,
            route.routing,
            route.link_utilization,
            mode,
        )

    def _decode_sizings_compute(self, rate: float, route: Route, mode: str):
        """:meth:`_decode_sizings` of one route: the sums over the classes of each MD option's
        load (:meth:`decode_sums`) and, where anything goes to RLD, RLD's context, sized by
        :meth:`_decode_sizings_of`."""
        pb = self.pb
        loads = self.decode_loads(route, pb.options["MD"], mode)
        sums = []
        for load in loads:
            md_conc, extra_s, rld_conc = self.decode_sums(rate, load[1], load[2], load[4])
            sums.append((float(md_conc), float(extra_s), float(rld_conc)))
        has_rld = _sizes_rld(pb, bool(route.relay.any()))
        ctx_r = self.rld_context_tokens(route) if has_rld else None
        return self._decode_sizings_of(rate, loads, sums, ctx_r)

    def decode_sizings_by_routing(
        self,
        rate: float,
        routes: list[Route],
        rows: list[int],
        mode: str,
        loads: DecodeLoads,
        rld_context_tokens: list[float | None],
    ) -> None:
        """Memoize :meth:`_decode_sizings` on the routes ``rows`` of ``routes`` in ``mode``,
        where not memoized yet, from ``loads`` (every MD option's loads on every route of
        ``routes``, :meth:`decode_loads_by_routing`) and each route's RLD context (None where
        nothing goes to RLD), with the values each route's own :meth:`_decode_sizings_compute`
        gives: the sums over the classes of every (option, routing) row in one
        :meth:`decode_sums` (each row summed as alone), each route's MD sizings
        (:meth:`_md_rows`, scalar), and the RLD counts of every route whose own search of them
        goes element by element in one :func:`_rld_counts` (the rules are elementwise; other
        routes' as their own call, :meth:`_rld_pairs`)."""
        keys = {i: self._decode_sizings_key(rate, routes[i], mode) for i in rows}
        todo = [i for i in rows if keys[i] not in self.cache]
        if not todo:
            return
        mds = self.pb.options["MD"]
        # every RLD option's batch at each route's RLD context, together
        contexts_tokens = [c for c in (rld_context_tokens[i] for i in todo) if c is not None]
        if contexts_tokens:
            for r in self.pb.options["RLD"]:
                r.max_batches_at_tpot(contexts_tokens, self.pb.tpot_s)
        # each sum an (option, routing) table of floats: one option's loads have no option axis
        md_conc, extra_s, rld_conc = (
            np.reshape(a, (len(mds), len(routes))).tolist()
            for a in self.decode_sums(rate, loads.md_busy_s, loads.extend_busy_s, loads.rld_busy_s)
        )
        # routes whose RLD counts are searched together: (MD rows, RLD options) -> routes
        together: dict[tuple[int, tuple[int, ...]], list[tuple]] = {}
        for i in todo:
            sums = [(md_conc[j][i], extra_s[j][i], rld_conc[j][i]) for j in range(len(mds))]
            md_rows, conc = self._md_rows(rate, loads.of_route[i], sums)
            ctx_r = rld_context_tokens[i]
            if ctx_r is None:
                self.cache.put(keys[i], (md_rows, _Pairs.md_only(len(md_rows))))
                continue
            batches = self._rld_batches(ctx_r)
            size = len(md_rows) * len(batches[2])
            if size and queueing.searches_by_element(size):
                key = (len(md_rows), tuple(batches[2]))
                together.setdefault(key, []).append((i, md_rows, conc, batches, ctx_r))
            else:
                self.cache.put(keys[i], (md_rows, self._rld_pairs(md_rows, conc, ctx_r)))
        cap = self.pb.decode_slot_wait_probability_cap
        for (n_md, r_ok), group in together.items():
            conc_g = np.array([g[2] for g in group])
            b_g = np.array([[g[3][0][ri] for ri in r_ok] for g in group], dtype=float)
            n_g = _rld_counts(conc_g, b_g, cap, True)
            # every route's (MD row, RLD option) in row-major order: one pair of arrays they
            # share, read only
            rows_g, ris_g = _pair_indices(n_md, list(r_ok))
            rows_g.flags.writeable = ris_g.flags.writeable = False
            for k, (i, md_rows, _, (b_r, bound, _), ctx_r) in enumerate(group):
                pairs = _Pairs(rows_g, ris_g, n_g[k].ravel(), conc_g[k], b_r, bound, ctx_r)
                self.cache.put(keys[i], (md_rows, pairs))

    def _decode_sizings_of(
        self,
        rate: float,
        loads: list[tuple],
        sums: list[tuple[float, float, float]],
        ctx_r: float | None,
    ):
        """:meth:`_decode_sizings` of a route from each MD option's :meth:`decode_load` and its
        sums (:meth:`decode_sums`, as floats) and RLD's context [tokens] (None where nothing
        goes to RLD): each MD option's sizing (:meth:`_md_rows`), then every feasible (MD row,
        RLD option) pair's RLD count (:meth:`_rld_pairs`)."""
        md_rows, conc = self._md_rows(rate, loads, sums)
        if ctx_r is None:
            return md_rows, _Pairs.md_only(len(md_rows))
        return md_rows, self._rld_pairs(md_rows, conc, ctx_r)

    def _md_rows(
        self, rate: float, loads: list[tuple], sums: list[tuple[float, float, float]]
    ) -> tuple[list[tuple], list[float]]:
        """The rows of the MD options that fit (:meth:`decode_sizing_at` of each option's sums)
        and RLD's concurrency [-] on each row."""
        md_rows = []
        rld_conc = []
        for oi, (m, load, (md_conc, extra_busy_s, conc_r)) in enumerate(
            zip(self.pb.options["MD"], loads, sums, strict=True)
        ):
            ctx, _md_time, _ext_busy, stall, rld_time, rld_tokens, extra = load
            md = self.decode_sizing_at(m, rate, md_conc, ctx, extra_busy_s)
            if md is not None:
                md_rows.append((oi, md, stall, rld_time, rld_tokens, extra))
                rld_conc.append(conc_r)
        return md_rows, rld_conc

    def _rld_batches(self, ctx_r: float) -> tuple[list[int], list[str], list[int]]:
        """Each RLD option's batch at RLD's context ``ctx_r`` [tokens], what bounds it, and the
        options where at least one sequence fits."""
        pb = self.pb
        r_opts = pb.options["RLD"]
        b_r = [r.max_batch_at_tpot(ctx_r, pb.tpot_s) for r in r_opts]
        b_mem_r = [r.max_batch_memory(ctx_r) for r in r_opts]
        r_ok = [ri for ri in range(len(r_opts)) if b_r[ri] >= 1]
        bound = ["memory" if b_r[ri] >= b_mem_r[ri] else "TPOT" for ri in range(len(r_opts))]
        return b_r, bound, r_ok

    def _rld_pairs(self, md_rows: list, rld_conc: list[float], ctx_r: float) -> _Pairs:
        """Every (MD row, RLD option) pair of a route and its RLD count, from RLD's concurrency
        on each MD row and its context [tokens]."""
        b_r, bound, r_ok = self._rld_batches(ctx_r)
        conc = np.array(rld_conc)
        b = np.array([b_r[ri] for ri in r_ok], dtype=float)
        # an RLD count depends on the MD row only through its RLD concurrency, and on the RLD
        # option only through its batch, which many rows and options share (MD options that
        # differ in nothing RLD sees, RLD options of one batch): each distinct pair is sized once
        shares = len(conc) > 1 or len(b) > 1  # one row and one option: nothing to share
        if shares:
            conc_u, row_u = np.unique(conc, return_inverse=True)
            b_u, col_u = np.unique(b, return_inverse=True)
        else:
            conc_u, b_u = conc, b
        n_u = _rld_counts(conc_u, b_u, self.pb.decode_slot_wait_probability_cap)
        # every (MD row, RLD option) in row-major order
        n_r = n_u[np.ix_(row_u.ravel(), col_u.ravel())] if shares else n_u
        rows, ris = _pair_indices(len(md_rows), r_ok)
        return _Pairs(rows, ris, n_r.ravel(), conc, b_r, bound, ctx_r)

    def decode_pairs(self, rate: float, route: Route, mode: str):
        """Every feasible (MD, RLD) pair the search sizes on a route and hand-over mode:
        ``(md_instance, md_sizing, (rld_instance, rld_sizing) or None, (md_stall_s, rld_tokens,
        rld_extra_s))`` per pair, with the search's own sizings (slot-wait bound included)."""
        pb = self.pb
        md_rows, pairs = self._decode_sizings(rate, route, mode)
        for k in range(len(pairs.rows)):
            oi, md, stall, _rld_time, rld_tokens, extra = md_rows[int(pairs.rows[k])]
            ri = int(pairs.rld[k])
            rs = pairs.sizing(k)
            rld = (pb.options["RLD"][ri], rs) if ri >= 0 and rs is not None else None
            yield pb.options["MD"][oi], md, rld, (stall, rld_tokens, extra)

    def _best_for(
        self,
        rate: float,
        route: Route,
        mode: str,
        p_opts: _PrefillOptions,
        incumbent: float = math.inf,
    ) -> Plan | None:
        """The least-cost plan of one route and hand-over mode (None where no decode
        combination fits); :data:`_BEATEN` where every plan there costs more than
        ``incumbent`` [USD/h] by more than :data:`COST_TIE_USD_PER_HOUR`: its cheapest
        decode combination, the least lower bound of the prefill options
        (:class:`_PrefillOptions`) and the line already exceed it, whatever the rounding of
        the sums (:func:`_past_tie`; as :meth:`lower_bound` prunes a route, with the route's
        own decode sizings)."""
        pb = self.pb
        md_rows, pairs = self._decode_sizings(rate, route, mode)
        if not md_rows or not len(pairs.rows):
            return None
        rm_costs = _combination_costs(
            md_rows, pairs, _unit_prices(pb, "MD"), _unit_prices(pb, "RLD")
        )
        owned = pb.pricing is not None and bool(pb.pricing.owned)
        rm_min = float(rm_costs.min())
        if (
            not owned
            and incumbent < math.inf
            and p_opts.least_lower_bound() + rm_min + pb.line_cost_usd_per_hour
            > _past_tie(incumbent)
        ):
            return _BEATEN
        if owned:  # the owned discount can undercut a prefill option's lower bound
            p_ok, bound = p_opts.all(), math.inf
        else:
            p_ok, bound = p_opts.up_to(rm_min)
        chosen = self._visit(rate, route, mode, p_ok, md_rows, pairs, rm_costs, owned, bound)
        if chosen is _INCOMPLETE:  # the pruned prefill options might matter: take them all
            chosen = self._visit(
                rate, route, mode, p_opts.all(), md_rows, pairs, rm_costs, owned, math.inf
            )
        assert chosen is not _INCOMPLETE
        return chosen  # type: ignore[return-value]

    def _visit(
        self,
        rate: float,
        route: Route,
        mode: str,
        p_ok: list[tuple[Instance, PrefillCount]],
        md_rows: list,
        pairs: _Pairs,
        rm_costs: np.ndarray,
        owned: bool,
        bound: float,
    ) -> Any:
        """The best plan among the (P option, RLD/MD combination) pairs, visited in cost order
        until one is chosen and the rest cost more; :data:`_INCOMPLETE` when the visit would
        reach ``bound`` (beyond which prefill options were left out) before it can stop."""
        pb = self.pb
        p_costs = np.array([s.instances * pb.unit_usd_per_hour(p) for p, s in p_ok])
        if owned:
            md_opts = pb.options["MD"]
            r_opts = pb.options["RLD"]
            rm_chips: list[dict[str, int]] = []
            for row_i, ri, n_r in zip(
                pairs.rows.tolist(), pairs.rld.tolist(), pairs.rld_instances.tolist(), strict=True
            ):
                oi, md = md_rows[row_i][0], md_rows[row_i][1]
                chips = {md_opts[oi].chip.name: md.instances * md_opts[oi].tensor_parallel}
                if ri >= 0:
                    name = r_opts[ri].chip.name
                    chips[name] = chips.get(name, 0) + n_r * r_opts[ri].tensor_parallel
                rm_chips.append(chips)
            tot = p_costs[:, None] + rm_costs[None, :]
            p_chips = [{p.chip.name: s.instances * p.tensor_parallel} for p, s in p_ok]
            tot = tot - pb.owned_discount(p_chips, rm_chips)  # exact on shared owned kinds
            order = _cost_order(tot)
        else:
            order = _sum_order(p_costs, rm_costs)
        link_cost = pb.line_cost_usd_per_hour
        chosen: Plan | None = None
        for pi, ci, cost in order:
            if cost > bound:
                # every combination left, the options left out included, costs more than this
                if (
                    chosen is not None
                    and chosen.cost_usd_per_hour - link_cost + COST_TIE_USD_PER_HOUR < bound
                ):
                    return chosen
                return _INCOMPLETE
            if (
                chosen is not None
                and cost > chosen.cost_usd_per_hour - link_cost + COST_TIE_USD_PER_HOUR
            ):
                break  # every cheaper-or-equal combination has been seen
            ri = int(pairs.rld[ci])
            combo = (int(pairs.rows[ci]), ri if ri >= 0 else None, pairs.sizing(ci))
            cand = self._plan_of(rate, route, mode, p_ok[pi], combo, md_rows)
            if cand is None:
                continue
            # equal cost: the order of the option lists must not decide (better_plan's key)
            if chosen is None or better_plan(cand, chosen, self.plan_ttft_s, self.plan_ttft_key):
                chosen = cand
        else:
            if bound < math.inf and not (
                chosen is not None
                and chosen.cost_usd_per_hour - link_cost + COST_TIE_USD_PER_HOUR < bound
            ):
                return _INCOMPLETE
        return chosen

    # ---- the price table: a search's price-independent part, kept for the next prices
    def _priced_candidate(self, rate: float) -> Plan | None:
        """:meth:`candidate_rate`'s plan from the rate's price table (:class:`_PriceTable`),
        or None where the search must run: the first search of this problem's physics at this
        rate (its table is built at the second, so that a single solve never pays for it),
        owned chips or inventory limits (their prices are not linear in the counts), a priced
        prefix cache on the P nodes (a plan's cost then has a term the search's sums leave
        out, which its visit settles on the plans' own costs), or a choice the table cannot
        prove to be the search's (:meth:`_table_choice`)."""
        pb = self.pb
        if pb.max_chips or (pb.pricing is not None and pb.pricing.owned):
            return None
        if pb.cache_cost_usd_per_hour(1) != 0.0:
            return None
        key = self._table_key(rate)
        if key not in self.cache:
            seen = ("price-table-seen", key)
            if seen not in self.cache:
                self.cache.get(seen, lambda: True)
                return None
        table: _PriceTable = self.cache.get(key, lambda: self._build_table(rate))
        if not table.entries:
            # nothing fits at any price: the search's error, kept (its reasons and figures
            # are the physics', not the prices')
            if table.error is None:
                try:
                    self._search(rate, None)
                except InfeasibleError as exc:
                    table.error = (str(exc), exc.binding, exc.relaxation)
                    raise
                return None  # pragma: no cover - an empty table is a search with no plan
            msg, binding, relaxation = table.error
            raise InfeasibleError(msg, binding=binding, relaxation=relaxation)
        plan = self._table_choice(key, table, rate)
        if isinstance(plan, _Unsized):
            # prefill options the table left unsized may be cheapest at these prices: size
            # them (as the search would) into the table, kept for the next prices
            table = self._with_sized(table, rate, plan.options)
            self.cache.put(key, table)
            plan = self._table_choice(key, table, rate)
        return None if isinstance(plan, _Unsized) else plan

    def _table_key(self, rate: float) -> tuple:
        """What a rate's price table depends on: the problem's physics, the routings tried,
        each option's physics and chip (by position: the table holds option indices), the
        rate; never a price."""
        return ("price-table", self._key, _tried_key(self.pb), rate)

    def _build_table(self, rate: float) -> _PriceTable:
        """Every (routing, hand-over mode) the search prices at ``rate``, with the prefill
        options it sizes there at the current prices (and the utilization-cap counts of the
        others, which bound their cost at any price) and its decode combinations."""
        pb = self.pb
        modes = pb.handover_modes if pb.topology.relay else ("one-shot",)
        md_unit, r_unit = _unit_prices(pb, "MD"), _unit_prices(pb, "RLD")
        entries: list[_TableEntry] = []
        for routing in pb.routings:
            route = self.route(rate, routing)
            if pb.topology.cross_dc and route.link_utilization > pb.link_utilization_cap:
                continue
            p_opts = _PrefillOptions(self, rate, route)
            if not p_opts.any_feasible():
                continue
            relays = bool(np.any(route.relay))
            combos = []
            for mode in modes if relays else modes[:1]:
                md_rows, pairs = self._decode_sizings(rate, route, mode)
                if not md_rows or not len(pairs.rows):
                    continue
                rm = _combination_costs(md_rows, pairs, md_unit, r_unit)
                p_opts.up_to(float(np.min(rm)))  # sizes what the search sizes at these prices
                combos.append((mode, md_rows, pairs))
            sized = p_opts.sized_at()
            unsized = p_opts.unsized_at()
            for mode, md_rows, pairs in combos:
                entries.append(
                    _TableEntry(
                        route=route,
                        mode=mode,
                        p_idx=np.array([i for i, _ in sized], dtype=np.int64),
                        p_counts=[c for _, c in sized],
                        p_n=np.array([c.instances for _, c in sized], dtype=np.int64),
                        lb_idx=np.array([i for i, _ in unsized], dtype=np.int64),
                        lb_n=np.array([n for _, n in unsized], dtype=np.int64),
                        md_rows=md_rows,
                        pairs=pairs,
                    )
                )
        return _PriceTable(entries)

    def _table_choice(self, key: tuple, table: _PriceTable, rate: float) -> Plan | _Unsized | None:
        """The plan the search returns at the current prices, from ``table``; None where the
        table cannot tell.

        Every candidate's cost is the sum the search computes (the same products and sums,
        to the bit). The search's plan is the one :func:`better_plan` ranks first among the
        candidates within :data:`_TABLE_TIE` of the least cost, taken route by route in the
        search's order, each route's in its visit order (cost, then index): any other costs
        more than 1e-9 above every one of them, so it never wins a comparison. When a
        candidate costs between :data:`_TABLE_TIE` and :data:`_TABLE_GAP` above the least, or
        the least cost is so large that its rounding reaches them (:data:`_TABLE_ROUNDING`),
        the search decides instead (None); when a prefill option the table left unsized could
        cost at most :data:`_TABLE_GAP` above it (its utilization-cap count at its price), the
        answer is :class:`_Unsized`, naming the options to size first. Ties are ranked by TTFT
        and :func:`plan_key` (cost apart, nothing a price changes), so the winner of one
        ordered tie set is kept and its plan alone is built next time."""
        if not table.entries:
            return None
        pb = self.pb
        units_ = (_unit_prices(pb, "P"), _unit_prices(pb, "MD"), _unit_prices(pb, "RLD"))
        line = pb.line_cost_usd_per_hour
        # the same prices choose the same plan (a baseline whose chips a sweep leaves alone)
        prices = (*(u.tobytes() for u in units_), line)
        if prices in table.chosen:
            at = table.chosen[prices]
            return None if at is None else self._table_plan(rate, table, *at)
        got = self._table_pick(key, table, rate, units_, line)
        if isinstance(got, _Unsized):
            return got
        table.chosen[prices] = None if got is None else got[0]
        return None if got is None else got[1]

    def _table_pick(
        self,
        key: tuple,
        table: _PriceTable,
        rate: float,
        units_: tuple[np.ndarray, np.ndarray, np.ndarray],
        line: float,
    ) -> tuple[tuple[int, int, int], Plan] | _Unsized | None:
        """:meth:`_table_choice` at unit prices ``units_`` (P, MD, RLD) and the line's price:
        the winner (entry, prefill option, combination) and its plan."""
        t = table
        p_unit, md_unit, r_unit = units_
        a = t.p_n * p_unit[t.p_idx]
        b = _combination_costs_of(t.combinations, md_unit, r_unit)
        got = _flat_members(t, a, b, line) if t.flat else _members(t, a, b, p_unit, line)
        if got is None or isinstance(got, _Unsized):
            return got
        if isinstance(got, tuple):  # the lone candidate
            return got, self._table_plan(rate, t, *got)
        members = got
        won = ("price-table-winner", key, members.tobytes())
        if won in self.cache:
            wk, wi, wj = self.cache.get(won, lambda: (0, 0, 0))
            return (wk, wi, wj), self._table_plan(rate, t, wk, wi, wj)
        best: Plan | None = None
        best_at = (0, 0, 0)
        ranked = (self.plan_ttft_s, self.plan_ttft_key)
        for ek in dict.fromkeys(members[:, 0].tolist()):
            chosen: Plan | None = None
            chosen_at = best_at
            for _k, mi, mj in members[members[:, 0] == ek].tolist():
                cand = self._table_plan(rate, t, ek, mi, mj)
                if chosen is None or better_plan(cand, chosen, *ranked):
                    chosen, chosen_at = cand, (ek, mi, mj)
            assert chosen is not None
            if best is None or better_plan(chosen, best, *ranked):
                best, best_at = chosen, chosen_at
        self.cache.get(won, lambda: best_at)
        assert best is not None
        return best_at, best

    def _with_sized(
        self, table: _PriceTable, rate: float, options: set[tuple[int, int]]
    ) -> _PriceTable:
        """``table`` with the prefill ``options`` (entry, option index) sized (the search's
        own sizing, :meth:`prefill_count`; those that miss the TTFT targets dropped)."""
        opts = self.pb.options["P"]
        entries = []
        for k, e in enumerate(table.entries):
            counts = dict(zip(e.p_idx.tolist(), e.p_counts, strict=True))
            left = []
            for i, n in zip(e.lb_idx.tolist(), e.lb_n.tolist(), strict=True):
                if (k, i) not in options:
                    left.append((i, n))
                    continue
                c = self.prefill_count(opts[i], rate, e.route)
                if c is not None:
                    counts[i] = c
            idx = sorted(counts)
            entries.append(
                replace(
                    e,
                    p_idx=np.array(idx, dtype=np.int64),
                    p_counts=[counts[i] for i in idx],
                    p_n=np.array([counts[i].instances for i in idx], dtype=np.int64),
                    lb_idx=np.array([i for i, _ in left], dtype=np.int64),
                    lb_n=np.array([n for _, n in left], dtype=np.int64),
                )
            )
        return _PriceTable(entries)

    def _table_plan(self, rate: float, t: _PriceTable, k: int, i: int, j: int) -> Plan:
        """The plan of prefill option ``i`` (its index among the problem's) and combination
        ``j`` of entry ``k`` of table ``t``, built by :meth:`_plan_of` on this problem (its
        prices) as the search builds it. What does not depend on the prices (the prefill
        count and its sizing before its figures, :meth:`pending_sizing`; RLD's sizing; the
        hand-over figures, :func:`~pddplan.solver.plan.handover_figures_of`) is kept in the
        table for its next prices."""
        pb = self.pb
        e = t.entries[k]
        parts = t.parts.get((k, i, j))
        if parts is None:
            ri = int(e.pairs.rld[j])
            combo = (int(e.pairs.rows[j]), ri if ri >= 0 else None, e.pairs.sizing(j))
            at = int(e.p_idx.searchsorted(i))
            assert at < len(e.p_idx) and int(e.p_idx[at]) == i
            count = e.p_counts[at]
            _oi, _md, stall, _rld_time, rld_tokens, _extra = e.md_rows[combo[0]]
            parts = t.parts[(k, i, j)] = (
                count,
                combo,
                self.pending_sizing(pb.options["P"][i], count, rate),
                handover_figures_of(pb, stall, rld_tokens),
            )
        count, combo, pending, figures = parts
        plan = self._plan_of(
            rate, e.route, e.mode, (pb.options["P"][i], count), combo, e.md_rows, pending, figures
        )
        assert plan is not None  # no inventory limits: every combination fits
        return plan

    def _plan_of(
        self,
        rate: float,
        route: Route,
        mode: str,
        p_entry,
        combo,
        md_rows,
        pending: PrefillSizing | None = None,
        figures: tuple[float, float] | None = None,
    ):
        """The plan of one (P option, RLD/MD combination), or None when it breaks inventory
        (``pending``: the P count's :meth:`pending_sizing`, ``figures``: the combination's
        :func:`~pddplan.solver.plan.handover_figures_of`, where the caller has them)."""
        pb = self.pb
        row_i, ri, rs = combo
        oi, md, stall, _rld_time, rld_tokens, extra = md_rows[row_i]
        m = pb.options["MD"][oi]
        rld = (pb.options["RLD"][ri], rs) if ri is not None and rs is not None else None
        p_inst, p_count = p_entry
        plan = build_plan(
            pb,
            rate_rps=rate,
            route=route,
            mode=mode,
            prefill=(
                p_inst,
                pending if pending is not None else self.pending_sizing(p_inst, p_count, rate),
            ),
            md=(m, md),
            rld=rld,
            md_stall_s=stall,
            rld_tokens=rld_tokens,
            rld_extra_s=extra,
            handover_figures=figures,
        )
        return plan if self._fits_inventory(plan.roles) else None

    def _fits_inventory(self, roles: dict[str, tuple[Instance, int] | None]) -> bool:
        # no limits: every fleet fits (what ``within_limits`` finds over no limit)
        return not self.pb.max_chips or self.pb.fits_inventory(roles_chips(roles))

    def _infeasible(self, rate: float, reasons: dict[str, int]) -> InfeasibleError:
        pb = self.pb
        if "line utilization" in reasons and len(reasons) == 1:
            need = rate * pb.mean_wan_bytes / pb.link_utilization_cap
            gbit = units.bytes_per_s_to_gbit_per_s(
                need
                / (
                    pb.wan.goodput_bytes_per_s
                    / units.gbit_per_s_to_bytes_per_s(pb.wan.bandwidth_gbit_per_s)
                )
            )
            return InfeasibleError(
                f"no plan fits at {rate:.4g} req/s: the line would run above its utilization cap "
                f"{pb.link_utilization_cap:.0%}; it needs a line of at least {gbit:.1f} Gbit/s, or a rate of at most "
                f"{self.line_rate_limit():.4g} req/s",
                binding="line utilization",
            )
        if "TTFT" in reasons and "decode" not in reasons:
            # no routing met TTFT (when one did, decode or inventory is what failed)
            best_q = None
            for routing in pb.routings:
                route = self.route(rate, routing)
                for p in pb.options["P"]:
                    offs, wts, _ = self.ttft_offsets(p, route)
                    q = [queueing.mixture_quantile(pp, offs, wts) for pp in PERCENTILES]
                    if best_q is None or q[2] < best_q[2]:
                        best_q = q
            assert best_q is not None
            worst = max(range(3), key=lambda i: best_q[i] / pb.ttft_targets_s[i])
            name = f"p{int(PERCENTILES[worst] * 100)}"
            return InfeasibleError(
                f"no plan fits at {rate:.4g} req/s: TTFT {name} needs at least {best_q[worst]:.3g} s "
                f"(target {pb.ttft_targets_s[worst]:.3g} s) even with unlimited prefill; relax the TTFT "
                f"{name} target, or use a faster line or prefill chip",
                binding=f"TTFT {name}",
            )
        if pb.max_chips:
            limits = ", ".join(f"{c} <= {n}" for c, n in pb.max_chips.items())
            return InfeasibleError(
                f"no plan fits at {rate:.4g} req/s within the inventory limits ({limits}); raise "
                "them (--max-chips CHIP=N), allow other chips (--set roles.ROLE.chips=...) or "
                "lower the rate",
                binding="inventory",
            )
        return InfeasibleError(
            f"no plan fits at {rate:.4g} req/s: no decode option meets the TPOT target of "
            f"{pb.tpot_s * 1e3:.4g} ms within memory; relax TPOT or use larger instances",
            binding="TPOT",
        )

    # ---- scale
    def line_rate_limit(self) -> float:
        """The rate at which the line reaches its utilization cap [req/s] (inf in one
        datacenter); memoized on the problem's physics (every input is in it: the classes,
        the model's KV size, the topology, the cap, the line's goodput)."""
        return self.cache.get(("line-rate-limit", self._key), self._line_rate_limit)

    def _line_rate_limit(self) -> float:
        pb = self.pb
        if not pb.topology.cross_dc:
            return math.inf
        per_req = pb.mean_wan_bytes
        return (
            math.inf
            if per_req <= 0
            else pb.link_utilization_cap * pb.wan.goodput_bytes_per_s / per_req
        )


#: A candidate within this of the least cost ties with it in a price table's choice [USD/h]
#: (:meth:`Solver._table_choice`); :func:`better_plan` ties costs within 1e-9.
_TABLE_TIE = 0.5e-9
#: No candidate may cost more than :data:`_TABLE_TIE` and at most this above the least, or the
#: search decides [USD/h]: every candidate then either ties or loses by more than 1e-9.
_TABLE_GAP = 2.5e-9


class _Unsized(NamedTuple):
    """:meth:`Solver._table_choice`'s answer when prefill options the table left unsized might
    be cheapest at the current prices: those options, as (entry, option index)."""

    options: set[tuple[int, int]]


#: A table answers only where this many units in the last place of the least cost (the line's
#: included) stay within :data:`_TABLE_TIE`: the search's sums and a plan's cost are rounded
#: differently, and far larger costs (above 131,072 $/h) round by more than its 1e-9 tolerance.
_TABLE_ROUNDING = 32
#: Candidate pairs a price table's choice examines in one route at most (beyond: the search).
_TABLE_MAX_TIES = 4096


@dataclass(frozen=True)
class _TableEntry:
    """One (routing, hand-over mode) of a price table: its prefill options sized (indices into
    the problem's P options, in their order, with their counts), the others' utilization-cap
    counts, and its decode combinations."""

    route: Route
    mode: str
    p_idx: np.ndarray
    p_counts: list[PrefillCount]
    p_n: np.ndarray
    lb_idx: np.ndarray
    lb_n: np.ndarray
    md_rows: list
    pairs: _Pairs


class _PriceTable:
    """What the search prices at one rate, price-independent (:meth:`Solver._build_table`):
    a price sweep's points choose from it without searching again. The entries' prefill
    options and combinations are also laid end to end, so that a choice prices them all in a
    few array operations."""

    def __init__(self, entries: list[_TableEntry]) -> None:
        self.entries = entries
        #: with no entry: the search's error (message, binding, relaxation), once it has run
        self.error: tuple[str, str, str] | None = None
        #: the choice at each set of prices met (their bytes; None: the search decided)
        self.chosen: dict[tuple, tuple[int, int, int] | None] = {}
        #: what :meth:`Solver._table_plan` keeps of each (entry, prefill option, combination)
        #: a plan was built of: the price-independent parts of its plan
        self.parts: dict[tuple[int, int, int], tuple] = {}
        if not entries:
            return
        cat = np.concatenate
        self.p_idx = cat([e.p_idx for e in entries])
        self.p_n = cat([e.p_n for e in entries])
        a_len = np.array([len(e.p_idx) for e in entries], dtype=np.int64)
        self.a_start = np.cumsum(a_len) - a_len
        self.a_entry = np.repeat(np.arange(len(entries)), a_len)
        md_oi, md_n, rld_n, rld_oi = [], [], [], []
        for e in entries:
            n, oi = _combination_md(e.md_rows, e.pairs)
            md_n.append(n)
            md_oi.append(oi)
            rld_oi.append(np.asarray(e.pairs.rld, dtype=np.int64))
            rld_n.append(np.asarray(e.pairs.rld_instances, dtype=np.int64))
        self.md_oi, self.md_n = cat(md_oi), cat(md_n)
        self.rld_oi, self.rld_n = cat(rld_oi), cat(rld_n)
        self.combinations = _combinations(self.md_n, self.md_oi, self.rld_n, self.rld_oi)
        self.b_len = np.array([len(e.pairs.rows) for e in entries], dtype=np.int64)
        self.b_start = np.cumsum(self.b_len) - self.b_len
        self.b_entry = np.repeat(np.arange(len(entries)), self.b_len)
        # the options left unsized, each entry's closed by one that costs nothing to skip
        self.has_lb = any(len(e.lb_idx) for e in entries)
        #: every entry holds one prefill option sized and one combination, none unsized
        #: (a route of one chip each): a candidate per entry, ``a[k] + b[k]``
        self.flat = not self.has_lb and bool(
            np.logical_and.reduce(a_len == 1) and np.logical_and.reduce(self.b_len == 1)
        )
        inf = np.array([np.inf])
        self.lb_n = cat([cat((e.lb_n.astype(float), inf)) for e in entries])
        self.lb_idx = cat([cat((e.lb_idx, [0])) for e in entries]).astype(np.int64)
        lb_len = np.array([len(e.lb_idx) + 1 for e in entries], dtype=np.int64)
        self.lb_start = np.cumsum(lb_len) - lb_len
        self.lb_entry = np.repeat(np.arange(len(entries)), lb_len)


def _members(
    t: _PriceTable, a: np.ndarray, b: np.ndarray, p_unit: np.ndarray, line: float
) -> np.ndarray | tuple[int, int, int] | _Unsized | None:
    """The candidates :meth:`Solver._table_pick` ranks, at prefill costs ``a`` and combination
    costs ``b`` (``p_unit``: the P options' unit prices, for the options left unsized): the
    (entry, prefill option, combination) rows within :data:`_TABLE_TIE` of the least cost, in
    the visit's order (entry, cost, index); or the lone candidate (:func:`_lone_candidate`); or
    :class:`_Unsized`; or None where the search decides."""
    a_min = np.minimum.reduceat(a, t.a_start)
    b_min = np.minimum.reduceat(b, t.b_start)
    mins = a_min + b_min
    # the ufuncs' own reductions and methods throughout: numpy's function forms (np.min,
    # np.flatnonzero, np.repeat) add a Python dispatch to each call, on arrays this small
    least = float(np.minimum.reduce(mins))
    if not _table_answers(least, line):
        # costs so large that their rounding reaches the search's 1e-9 tolerance: its
        # comparisons then depend on how each sum was rounded, which the table does not
        # follow
        return None
    tie, top = least + _TABLE_TIE, least + _TABLE_GAP
    if t.has_lb:
        lb_cost = t.lb_n * p_unit[t.lb_idx]
        lb = np.fmin.reduceat(lb_cost, t.lb_start)
        if np.logical_or.reduce(lb + b_min <= top):
            # an option the search sizes at these prices might be cheapest
            reach = (lb_cost + b_min[t.lb_entry] <= top).nonzero()[0]
            return _Unsized(
                set(zip(t.lb_entry[reach].tolist(), t.lb_idx[reach].tolist(), strict=True))
            )
    # every (prefill option, combination) of one entry whose sum can reach ``top``
    sa = (a + b_min[t.a_entry] <= top).nonzero()[0]
    sb = (a_min[t.b_entry] + b <= top).nonzero()[0]
    lone = _lone_candidate(t, a, b, sa, sb, least)
    if lone is not None:
        return lone
    ea, eb = t.a_entry[sa], t.b_entry[sb]
    nb = np.bincount(eb, minlength=len(t.entries))
    reps = nb[ea]
    if int(np.add.reduce(reps)) > _TABLE_MAX_TIES:
        return None
    ai = sa.repeat(reps)
    first_b = nb.cumsum() - nb  # where each entry's selected combinations start in sb
    within = np.arange(len(ai)) - (reps.cumsum() - reps).repeat(reps)
    bi = sb[first_b[ea].repeat(reps) + within]
    sums = a[ai] + b[bi]
    if np.logical_or.reduce((sums > tie) & (sums <= top)):
        return None  # a near tie: the search's own comparisons decide it
    keep = sums <= tie
    ai, bi, sums = ai[keep], bi[keep], sums[keep]
    k = t.a_entry[ai]
    i = t.p_idx[ai]  # the prefill option (its index among the problem's, as the table's
    # entries list theirs in that order: the visit's order)
    j = bi - t.b_start[k]
    flat = i * t.b_len[k] + j
    order = np.lexsort((flat, sums, k))
    return np.array((k[order], i[order], j[order])).T.copy()  # np.stack's rows, sooner


def _tried_key(pb: Any) -> HashedKey:
    """:meth:`Solver._table_key`'s part that names what the search tries: the routings
    (:attr:`Problem.routings_key`) and each role's options by physics and chip (by position: a
    table holds option indices), as one hashed part (the key is hashed at every lookup of the
    table and its winners, and a tuple's hash calls each part's ``__hash__`` again).

    Kept by the identity of those objects (:data:`_TRIED`, which holds them, so that no other
    object meets their ``id``): a sweep point's problems (its variant without the anomalous
    filter, its baselines) share the scenario's option objects, and those that relay nothing
    one routing. Few are kept: a point's own are all it needs, and each entry holds a point's
    instances alive."""
    opts = pb.options
    routings = pb.routings_key
    p, md, rld = opts["P"], opts["MD"], opts["RLD"]
    ids = (id(routings), tuple(map(id, p)), tuple(map(id, md)), tuple(map(id, rld)))
    kept = _TRIED.get(ids)
    if kept is not None:
        return kept[1]
    held = (routings, tuple(p), tuple(md), tuple(rld))
    tried = HashedKey.of(
        (routings, tuple(tuple((o.physics_key, o.chip.name) for o in role) for role in held[1:]))
    )
    if len(_TRIED) >= _TRIED_MAX:
        _TRIED.clear()
    _TRIED[ids] = (held, tried)
    return tried


#: :func:`_tried_key` by the ids of the objects it names, with those objects (held).
_TRIED: dict[tuple, tuple[tuple, HashedKey]] = {}
_TRIED_MAX = 64


def _table_answers(least: float, line: float) -> bool:
    """Whether a price table may choose at a least cost of ``least`` (the line's price
    ``line`` apart) [USD/h]: a finite cost whose rounding, :data:`_TABLE_ROUNDING` units in the
    last place with the line's, stays within :data:`_TABLE_TIE`."""
    return math.isfinite(least) and _TABLE_ROUNDING * math.ulp(abs(least) + abs(line)) <= _TABLE_TIE


def _flat_members(
    t: _PriceTable, a: np.ndarray, b: np.ndarray, line: float
) -> np.ndarray | tuple[int, int, int] | None:
    """:func:`_members` of a flat table (:attr:`_PriceTable.flat`), in fewer array operations.

    Each entry's least prefill cost and least combination cost are then its one option's and
    its one combination's (``a_min`` is ``a`` and ``b_min`` is ``b``: single-value segments),
    so the least cost is the least of ``a + b``, the prefill options and the combinations
    within reach of :data:`_TABLE_GAP` are both those of the entries whose sum is within it
    (one such entry: the lone candidate), each entry's one pair is ``(k, p_idx[k], 0)``, and
    the visit's order of the ties is the entries' (no table leaves options unsized here)."""
    sums = a + b
    if len(sums) == 1:  # one entry: its pair is the lone candidate wherever a table chooses
        return (0, int(t.p_idx[0]), 0) if _table_answers(float(sums[0]), line) else None
    least = float(np.minimum.reduce(sums))
    if not _table_answers(least, line):
        return None
    reach = (sums <= least + _TABLE_GAP).nonzero()[0]
    if len(reach) == 1:
        k = int(reach[0])
        return k, int(t.p_idx[k]), 0
    if len(reach) > _TABLE_MAX_TIES:
        return None
    if np.logical_or.reduce(sums[reach] > least + _TABLE_TIE):
        return None  # a near tie: the search's own comparisons decide it
    return np.array((reach, t.p_idx[reach], np.zeros(len(reach), dtype=np.int64))).T.copy()


def _lone_candidate(
    t: _PriceTable, a: np.ndarray, b: np.ndarray, sa: np.ndarray, sb: np.ndarray, least: float
) -> tuple[int, int, int] | None:
    """The (entry, prefill option, combination) of the least cost where it is the only
    candidate within reach of :data:`_TABLE_GAP` (``sa``, ``sb``: the one prefill option and
    the one combination that can reach it, :meth:`Solver._table_pick`'s), else None.

    The least cost's entry holds a prefill option and a combination of that entry's least
    costs, and each can reach it; so when only one of each can, they are those two, their sum
    is the least cost, and they are the one member of the ties the general rule would rank
    (most prices in a sweep: the rule's dozen array operations are then skipped)."""
    if len(sa) != 1 or len(sb) != 1:
        return None
    k = int(t.a_entry[sa[0]])
    assert int(t.b_entry[sb[0]]) == k and a[sa[0]] + b[sb[0]] == least
    return k, int(t.p_idx[sa[0]]), int(sb[0]) - int(t.b_start[k])


def _unit_prices(pb: Any, role: str) -> np.ndarray:
    """:meth:`Problem.unit_usd_per_hour` of each of a role's options [USD/h] (read-only).

    Without an inventory a unit's price is its instance's own rental, so the array is kept by
    the identity of the option objects (:data:`_RENTALS`, which holds them): a sweep point's
    problems share the scenario's options, and their chips' prices never change."""
    opts = pb.options[role]
    if pb.pricing is not None:
        return np.array([pb.unit_usd_per_hour(o) for o in opts], dtype=float)
    ids = tuple(map(id, opts))
    kept = _RENTALS.get(ids)
    if kept is not None:
        return kept[1]
    units_ = np.array([pb.unit_usd_per_hour(o) for o in opts], dtype=float)
    units_.flags.writeable = False
    if len(_RENTALS) >= _RENTALS_MAX:
        _RENTALS.clear()
    _RENTALS[ids] = (tuple(opts), units_)
    return units_


#: :func:`_unit_prices` without an inventory, by the ids of the options (held with them; few,
#: as for :data:`_TRIED`).
_RENTALS: dict[tuple[int, ...], tuple[tuple[Instance, ...], np.ndarray]] = {}
_RENTALS_MAX = 64


def _combination_costs(
    md_rows: list, pairs: _Pairs, md_unit: np.ndarray, r_unit: np.ndarray
) -> np.ndarray:
    """The cost of each (MD, RLD) combination of ``pairs`` [USD/h] (see
    :func:`_combination_costs_of`)."""
    md_n, md_oi = _combination_md(md_rows, pairs)
    combos = _combinations(md_n, md_oi, pairs.rld_instances, pairs.rld)
    return _combination_costs_of(combos, md_unit, r_unit)


def _combination_md(md_rows: list, pairs: _Pairs) -> tuple[np.ndarray, np.ndarray]:
    """Each combination's MD instances and MD option index."""
    n = np.array([row[1].instances for row in md_rows], dtype=np.int64)
    oi = np.array([row[0] for row in md_rows], dtype=np.int64)
    return n[pairs.rows], oi[pairs.rows]


class _Combinations(NamedTuple):
    """(MD, RLD) combinations as :func:`_combination_costs_of` prices them: each one's MD
    instances (``md_n`` of option ``md_oi``) and RLD instances (``rld_n`` of option ``rld_oi``,
    -1 for none), with what does not depend on the prices (:func:`_combinations`), which a
    price table works out once for all the prices it meets."""

    md_n: np.ndarray
    md_oi: np.ndarray
    rld_n: np.ndarray
    has_rld: np.ndarray  # ``rld_oi >= 0``
    rld_at: np.ndarray  # ``rld_oi`` where it has RLD, else 0 (an index that exists)
    any_rld: bool


def _combinations(md_n, md_oi, rld_n, rld_oi) -> _Combinations:
    """:class:`_Combinations` of these arrays."""
    has_r = rld_oi >= 0
    return _Combinations(
        md_n, md_oi, rld_n, has_r, np.where(has_r, rld_oi, 0), bool(np.logical_or.reduce(has_r))
    )


def _combination_costs_of(c: _Combinations, md_unit, r_unit) -> np.ndarray:
    """The cost of each (MD, RLD) combination [USD/h]: its MD instances at their unit price,
    plus its RLD instances where it has RLD; ``md_unit``, ``r_unit``: :func:`_unit_prices`."""
    costs = c.md_n * md_unit[c.md_oi]
    if c.any_rld:
        with_r = costs + c.rld_n * r_unit[c.rld_at]
        costs = np.where(c.has_rld, with_r, costs)
    return costs


_HANDOVER_RANK = {"-": 0, "one-shot": 1, "catch-up": 2}


def plan_key(plan: Plan) -> tuple:
    """A total order on plans of equal cost and TTFT, independent of any list's order: the
    routing, hand-over mode, anomalous filter and, per role, chip name, chips per instance and
    count."""
    roles = tuple(
        (r, v[0].chip.name, v[0].tensor_parallel, v[1]) if v is not None else (r, "", 0, 0)
        for r, v in sorted(plan.roles.items())
    )
    topo = getattr(plan.problem, "topology", None)
    return (
        plan.routing.hit_rate,
        plan.routing.relay_all,
        _HANDOVER_RANK.get(plan.handover, 9),  # the simpler hand-over first
        plan.handover,
        bool(topo.anomalous_filter) if topo is not None else False,
        roles,
    )


#: [USD/h] Two costs closer than this tie in :func:`better_plan` (the TTFT percentiles then
#: decide); the search's pruning and visit stop only past it.
COST_TIE_USD_PER_HOUR = 1e-9
#: [-] Two TTFT percentiles closer than this (relative) tie in :func:`better_plan`: below what
#: a CDF reading tells apart (:data:`~pddplan.models.queueing.QUANTILE_SIDE_RTOL` less the
#: percentiles' own precision, :data:`~pddplan.models.queueing.QUANTILE_RTOL`), so that
#: :meth:`Solver._beats` reads the order ``better_plan`` gives.
TTFT_TIE_RTOL = 1e-9


def _sizing_ttft_s(plan: Plan) -> tuple[float, float, float]:
    return plan.prefill.ttft_s


def better_plan(
    a: Plan,
    b: Plan,
    ttft_s: Callable[[Plan], tuple[float, float, float]] = _sizing_ttft_s,
    ttft_key: Callable[[Plan], Hashable] | None = None,
) -> bool:
    """Lower cost wins (by more than :data:`COST_TIE_USD_PER_HOUR`); at equal cost, the lower
    TTFT p99, then p90, then p50 (relative tolerance :data:`TTFT_TIE_RTOL`); then
    :func:`plan_key`, so that no list's order decides.

    ``ttft_s`` reads a plan's TTFT percentiles (its prefill sizing's by default; the search
    passes :meth:`Sizing.plan_ttft_s`, which computes a candidate's only when a tie needs it).
    ``ttft_key``, where given, names what ``ttft_s`` depends on: two plans of one key have the
    same percentiles, so they are not computed (:meth:`Sizing.plan_ttft_key`)."""
    if not costs_tie(a, b):
        return a.cost_usd_per_hour < b.cost_usd_per_hour
    if ttft_key is None or ttft_key(a) != ttft_key(b):
        qa, qb = ttft_s(a), ttft_s(b)
        i = ttft_decider(qa, qb)
        if i is not None:
            return qa[i] < qb[i]
    return plan_key(a) < plan_key(b)


def costs_tie(a: Plan, b: Plan) -> bool:
    """Whether two plans' costs tie in :func:`better_plan` (within
    :data:`COST_TIE_USD_PER_HOUR`; a cost that is not a number ties, as no comparison
    separates it): their TTFT percentiles then decide."""
    return not abs(a.cost_usd_per_hour - b.cost_usd_per_hour) > COST_TIE_USD_PER_HOUR


def ttft_decider(qa: tuple[float, float, float], qb: tuple[float, float, float]) -> int | None:
    """The TTFT percentile that :func:`better_plan` ranks two plans of equal cost by: the
    index (0: p50, 1: p90, 2: p99) of the first of p99, p90, p50 on which ``qa`` and ``qb``
    [s] differ by more than :data:`TTFT_TIE_RTOL` (the lower one wins); None where all three
    tie (:func:`plan_key` then decides)."""
    for i in (2, 1, 0):
        x, y = qa[i], qb[i]
        if abs(x - y) > TTFT_TIE_RTOL * max(abs(x), abs(y), 1e-12):
            return i
    return None


#: Returned by :meth:`Solver._visit` when prefill options it was not given might matter.
_INCOMPLETE: Any = object()
#: Returned by :meth:`Solver._best_for` where no plan can beat the search's incumbent.
_BEATEN: Any = object()
#: [-] Relative rounding a lower bound may carry against a plan's cost: the bound and the
#: cost add the same terms in another order, a few units in the last place of the cost
#: (about 2e-16 of it each), which past about 4e6 $/h exceed :data:`COST_TIE_USD_PER_HOUR`.
COST_ROUNDING_RTOL = 1e-12


#: [-] :meth:`Solver.cost_floor_for_goodput` takes MD's count at the goodput less this share of
#: it: a fleet passes the check's comparisons within their slack (:data:`~pddplan.solver.sla.
#: SLA_RELATIVE_SLACK` of a count or a slot-wait probability, and
#: :data:`~pddplan.solver.sla.COUNT_ABSOLUTE_SLACK`), which a load smaller by this share
#: covers, so the count so taken is one the fleet has.
FLOOR_CHECK_RTOL = 1e-4


#: [-] :meth:`Solver.goodput_bound_for_cost` grows its bracket by this factor a step, then
#: halves it :data:`_BOUND_HALVINGS` times: the bound is within 1/256 of the least one (a
#: looser bound only makes a max-BCR walk go back over a stretch it could have passed over).
_BOUND_GROWTH = 1.25
_BOUND_HALVINGS = 6


def _uses_rld(pb: Any, relays: bool) -> bool:
    """Whether anything on a route goes to RLD: a relayed request (``relays``: whether the
    route relays any), or an anomalous one that RLD finishes (``any(relay | ~on_decode_side)``,
    without the arrays)."""
    return relays or not bool(pb.on_decode_side.all())


def _sizes_rld(pb: Any, relays: bool) -> bool:
    """Whether a route's decode sizings size RLD: the topology relays and something on the
    route goes to RLD (:func:`_uses_rld`; ``relays``: whether the route relays any request)."""
    return bool(pb.topology.relay) and _uses_rld(pb, relays)


def _past_tie(cost: float) -> float:
    """The least lower bound that proves every plan dearer than a plan of ``cost`` [USD/h] by
    more than :data:`COST_TIE_USD_PER_HOUR`, whatever the order of the sums
    (:data:`COST_ROUNDING_RTOL`): what every pruning of a route or hand-over mode compares
    with, against the search's own best as against a caller's plan (inf for none)."""
    return cost + COST_TIE_USD_PER_HOUR + COST_ROUNDING_RTOL * abs(cost)


class _PrefillOptions:
    """The prefill options of one rate and route, sized on demand in the order of a lower bound
    on their cost (their instances at the utilization cap; TTFT can only add instances).

    The search needs only those whose lower bound, plus the cheapest RLD/MD combination, does
    not exceed the cost of a combination already in hand (:meth:`up_to`): no combination of the
    others can be visited before the search stops (:meth:`Solver._visit` checks it, and falls
    back to every option when it cannot tell).
    """

    def __init__(self, solver: Solver, rate: float, route: Route) -> None:
        pb = solver.pb
        self._solver, self._rate, self._route = solver, rate, route
        self._opts = pb.options["P"]
        self._unit, self._lb_n, self._order, self._lb = self.lower_bounds(solver, rate)
        self._next = 0  # position in _order of the next option to size
        self._sized: dict[int, PrefillCount | None] = {}

    @staticmethod
    def lower_bounds(
        solver: Solver, rate: float
    ) -> tuple[list[float], list[int], list[int], list[float]]:
        """``(unit prices, counts, order, lower bounds)`` of the problem's prefill options at
        ``rate`` (no route changes them): each option's unit price [USD/h] and count at the
        utilization cap, the options' indices in the order they are sized (lower bound, then
        index), and each one's lower bound [USD/h]."""
        pb = solver.pb
        unit = [pb.unit_usd_per_hour(p) for p in pb.options["P"]]
        lb = []
        lb_n: list[int] = []  # each option's count at the utilization cap
        for p, u in zip(pb.options["P"], unit, strict=True):
            n = solver.prefill_cap_count(p, rate)
            lb_n.append(n)
            lb.append(n * u)
        order = sorted(range(len(lb)), key=lambda i: (lb[i], i))
        return unit, lb_n, order, lb

    def _size_next(self) -> PrefillCount | None:
        i = self._order[self._next]
        self._next += 1
        s = self._solver.prefill_count(self._opts[i], self._rate, self._route)
        self._sized[i] = s
        return s

    def least_lower_bound(self) -> float:
        """A cost no option's sizing undercuts [USD/h]: the least option's count at the
        utilization cap at its unit price (TTFT can only add instances)."""
        return self._lb[self._order[0]] if self._order else math.inf

    def any_feasible(self) -> bool:
        """Whether any option meets the TTFT targets (sizing options until one does)."""
        if any(s is not None for s in self._sized.values()):
            return True
        while self._next < len(self._order):
            if self._size_next() is not None:
                return True
        return False

    def _ok(self) -> list[tuple[Instance, PrefillCount]]:
        return [(self._opts[i], s) for i, s in sorted(self._sized.items()) if s is not None]

    def sized_at(self) -> list[tuple[int, PrefillCount]]:
        """The options sized so far that meet the TTFT targets, by their index among the
        problem's P options (an option listed twice is two options), in that order."""
        return [(i, s) for i, s in sorted(self._sized.items()) if s is not None]

    def unsized_at(self) -> list[tuple[int, int]]:
        """The options not sized yet, by index, each with its count at the utilization cap
        (no count below it meets the targets), in the options' order."""
        return [(i, n) for i, n in enumerate(self._lb_n) if i not in self._sized]

    def all(self) -> list[tuple[Instance, PrefillCount]]:
        """Every option that meets the TTFT targets, with its sizing, in the options' order."""
        while self._next < len(self._order):
            self._size_next()
        return self._ok()

    def up_to(self, rm_min: float) -> tuple[list[tuple[Instance, PrefillCount]], float]:
        """``(options, bound)``: the options that meet the TTFT targets among those sized, after
        sizing every option whose lower bound plus ``rm_min`` is at most ``bound``; every option
        left out costs more than ``bound`` with any combination (``inf``: none left out)."""
        best = min(
            (s.instances * self._unit[i] + rm_min for i, s in self._sized.items() if s is not None),
            default=math.inf,
        )
        while self._next < len(self._order):
            bound = best + 1e-6 * max(1.0, abs(best))
            if self._lb[self._order[self._next]] + rm_min > bound:
                return self._ok(), bound
            i = self._order[self._next]
            s = self._size_next()
            if s is not None:
                best = min(best, s.instances * self._unit[i] + rm_min)
        return self._ok(), math.inf


def _rld_counts(
    conc: np.ndarray, b: np.ndarray, wait_probability_max: float, by_element: bool | None = None
) -> np.ndarray:
    """RLD's count [-] for each RLD concurrency of ``conc`` (its last axis; MD rows) and batch of
    ``b`` (its last axis; RLD options), an (MD row, RLD option) table behind any leading axes
    the two share (routings): ``max(whole_count(C / b), 1)``, and enough slots that a relayed
    request rarely waits for one (the slot-wait bound; ``by_element`` as
    :func:`~pddplan.models.queueing.units_for_wait_array` takes it). Elementwise: a row of
    several routings' table holds the counts of that routing's own."""
    # n_R = max(whole_count(C / b), 1)
    n = np.maximum(np.ceil(conc[..., :, None] / b[..., None, :] - units.COUNT_ROUNDING), 1.0)
    n = n.astype(np.int64)
    # and enough slots that a relayed request rarely waits for one (the slot-wait bound)
    return queueing.units_for_wait_array(
        conc[..., :, None],  # broadcast against the counts there
        b[..., None, :],
        n,
        wait_probability_max,
        by_element,
    )


def _pair_indices(n_md: int, r_ok: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The MD row and RLD option of every (MD row, RLD option) pair in row-major order."""
    rows = np.repeat(np.arange(n_md), len(r_ok))
    ris = np.array(r_ok * n_md, dtype=np.int64)  # np.tile's, without its calls
    return rows, ris


class _Pairs:
    """Every feasible (MD row, RLD option) combination of one route and hand-over mode, as
    arrays in row-major order (RLD option ``-1``: no RLD)."""

    def __init__(self, rows, rld, rld_instances, conc, b_r, bound, ctx_r) -> None:
        self.rows = rows  # MD row index per combination
        self.rld = rld  # RLD option index per combination, -1 for none
        self.rld_instances = rld_instances  # RLD instances per combination
        self._conc = conc  # RLD's concurrency per MD row
        self._b_r = b_r  # RLD's batch per option
        self._bound = bound  # what bounds that batch per option
        self._ctx_r = ctx_r  # RLD's mean context

    @classmethod
    def md_only(cls, n_rows: int) -> _Pairs:
        none = np.full(n_rows, -1, dtype=np.int64)
        return cls(np.arange(n_rows), none, np.zeros(n_rows, dtype=np.int64), None, [], [], 0.0)

    def sizing(self, k: int) -> DecodeSizing | None:
        """RLD's sizing in combination ``k`` (None without RLD)."""
        ri = int(self.rld[k])
        if ri < 0:
            return None
        conc = float(self._conc[int(self.rows[k])])
        n = int(self.rld_instances[k])
        b = int(self._b_r[ri])
        bound = self._bound[ri]
        if n > max(units.whole_count(conc / b), 1):
            bound = "slot wait"
        return DecodeSizing(n, b, bound, conc, self._ctx_r)


#: Combinations ranked first by a partial sort; the rest only if none of those is chosen.
_FIRST_COMBINATIONS = 256


def _cost_order(tot: np.ndarray):
    """``(row, column, cost)`` of ``tot`` in increasing cost, ties by flat index (a stable
    argsort), lazily: the cheapest few by a partial sort, then the full order only if the search
    gets past them (inventory limits can reject many)."""
    for flat in _flat_cost_order(tot):
        i, j = divmod(int(flat), tot.shape[1])
        yield i, j, float(tot[i, j])


def _flat_cost_order(tot: np.ndarray):
    flat = tot.ravel()
    n = flat.size
    if n <= 4 * _FIRST_COMBINATIONS:
        yield from np.argsort(flat, kind="stable")
        return
    k = _FIRST_COMBINATIONS
    first = np.argpartition(flat, k - 1)[:k]
    kth = flat[first].max()
    # every index as cheap as the k-th, so that equal costs keep their stable order
    first = np.flatnonzero(flat <= kth)
    first = first[np.argsort(flat[first], kind="stable")]
    yield from first
    rest = np.argsort(flat, kind="stable")
    yield from rest[len(first) :]


#: :func:`_sum_order` sorts at most this many sums in one go.
_FEW_SUMS = 16


def _sum_order(a: np.ndarray, b: np.ndarray):
    """``(i, j, a[i] + b[j])`` in the order of :func:`_cost_order` on the matrix
    ``a[:, None] + b[None, :]`` (increasing sum, ties by ``i * len(b) + j``), without building
    the matrix: the sums up to a bound, then up to a wider one, and so on.

    A rounded sum never decreases when either term grows, so the pairs whose sum is at most
    ``hi`` are, for each ``i``, the ``j`` of the first few smallest ``b``; a margin above
    ``hi - a[i]`` finds them and the exact sums decide.
    """
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        yield from _cost_order(a[:, None] + b[None, :])
        return
    nb = len(b)
    if len(a) * nb <= _FEW_SUMS:  # every sum at once: the windows below cost more
        av, bv = a.tolist(), b.tolist()
        sums = [(x + y, i * nb + j, i, j) for i, x in enumerate(av) for j, y in enumerate(bv)]
        for v, _flat, i, j in sorted(sums):
            yield i, j, v
        return
    b_order = np.argsort(b, kind="stable")
    b_sorted = b[b_order]
    top = float(np.max(a) + b_sorted[-1])
    v0 = float(np.min(a) + b_sorted[0])
    step = max(abs(v0) * 1e-9, 1e-9)
    lo = -math.inf
    hi = v0 + step
    while True:
        margin = (abs(hi) + np.abs(a)) * 1e-12 + 1e-300
        counts = np.searchsorted(b_sorted, hi - a + margin, side="right")
        rows = np.flatnonzero(counts > 0)
        if len(rows):
            ii = np.repeat(rows, counts[rows])
            starts = np.cumsum(counts[rows]) - counts[rows]
            pos = np.arange(len(ii)) - np.repeat(starts, counts[rows])
            jj = b_order[pos]
            vals = a[ii] + b[jj]
            keep = (vals > lo) & (vals <= hi)
            ii, jj, vals = ii[keep], jj[keep], vals[keep]
            flat = ii * nb + jj
            for k in np.lexsort((flat, vals)):
                yield int(ii[k]), int(jj[k]), float(vals[k])
        if hi >= top:
            return
        lo = hi
        step *= 16.0
        hi = v0 + step
