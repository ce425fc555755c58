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

The solver never prints; it takes an optional progress callback and returns records.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from pddplan import units
from pddplan.deployment import Instance
from pddplan.errors import InfeasibleError
from pddplan.models import queueing
from pddplan.solver.plan import DecodeSizing, Plan, Route, role_costs
from pddplan.solver.problem import PERCENTILES, Progress
from pddplan.solver.sizing import Sizing


class Solver(Sizing):
    """Least-cost plans on one problem (see the module notes)."""

    def solve_rate(self, rate: float, progress: Progress | None = None) -> Plan:
        """Least-cost plan that serves ``rate`` within SLA; raises InfeasibleError."""
        pb = self.pb
        best: Plan | None = None
        reasons: dict[str, int] = {}
        routings = pb.routings
        modes = pb.handover_modes if pb.topology.relay else ("one-shot",)
        total = len(routings) * len(modes)
        step = 0
        for routing in routings:
            route = self.route(rate, routing)
            if pb.topology.cross_dc and route.link_utilization > pb.link_utilization_cap:
                reasons["line utilization"] = reasons.get("line utilization", 0) + 1
                step += len(modes)
                continue
            if best is not None and self.lower_bound(rate, route) > best.cost_usd_per_hour + 1e-9:
                step += len(modes)  # no plan on this route can beat the incumbent
                continue
            p_sizes = [(p, self.size_prefill(p, rate, route)) for p in pb.options["P"]]
            p_ok = [(p, s) for p, s in p_sizes if s is not None]
            if not p_ok:
                reasons["TTFT"] = reasons.get("TTFT", 0) + 1
                step += len(modes)
                continue
            relays = bool(np.any(route.relay))
            for mode in modes if relays else modes[:1]:  # the mode only matters when relaying
                step += 1
                if progress:
                    progress(step, total)
                cand = self._best_for(rate, route, mode, p_ok)
                if cand is None:
                    reasons["decode"] = reasons.get("decode", 0) + 1
                    continue
                if best is None or better_plan(cand, best):
                    best = cand
        if best is None:
            raise self._infeasible(rate, reasons)
        return self.finalize(best)

    def finalize(self, plan: Plan) -> Plan:
        """The chosen plan with its TTFT at the decode pools' working first steps (see
        :meth:`reported_ttft`) and its hand-over figures at RLD's working step (see
        :meth:`reported_handover`)."""
        q, att = self.reported_ttft(plan)
        if all(math.isfinite(x) for x in q):
            plan = replace(plan, prefill=replace(plan.prefill, ttft_s=q, attainment=att))
        if plan.handover_inputs is None:
            return plan
        mode, m, rld_tokens, extra, r_inst, rs = plan.handover_inputs
        share, stall_max = self.reported_handover(
            plan.route, mode, m, rld_tokens, extra, r_inst, rs
        )
        return replace(
            plan,
            rld_output_token_share=share,
            md_stall_s=max(stall_max, plan.md_stall_s),
            handover_inputs=None,
        )

    def lower_bound(self, rate: float, route: Route) -> float:
        """A cost no plan on this route can undercut [USD/h]: prefill at its utilization cap
        (TTFT can only add instances), MD for the tokens it must decode (without stalls or
        extend passes), one RLD instance when anything is relayed, and the line."""
        pb = self.pb
        c = pb.classes
        w = c.weight
        p_lb = min(
            max(
                1,
                math.ceil(
                    rate * float(np.sum(w * self.prefill_s(p))) / pb.prefill_utilization_cap - 1e-9
                ),
            )
            * pb.unit_lb_usd_per_hour(p)
            for p in pb.options["P"]
        )
        md_tokens = np.where(pb.on_decode_side, c.output_tokens, 0.0)
        ctx = self.md_context_tokens()
        conc = float(np.sum(rate * w * md_tokens * pb.tpot_s))
        md_lb = math.inf
        for m in pb.options["MD"]:
            b = m.max_batch_at_tpot(ctx, pb.tpot_s)
            if b >= 1:
                md_lb = min(md_lb, max(1, math.ceil(conc / b - 1e-9)) * pb.unit_lb_usd_per_hour(m))
        has_rld = pb.topology.relay and bool(np.any(route.relay | ~pb.on_decode_side))
        rld_lb = (
            min((pb.unit_lb_usd_per_hour(r) for r in pb.options["RLD"]), default=0.0)
            if has_rld
            else 0.0
        )
        line = pb.wan.price_usd_per_hour if pb.topology.cross_dc else 0.0
        return p_lb + md_lb + rld_lb + line

    def _decode_sizings(self, rate: float, route: Route, mode: str):
        """MD and RLD sizings for every option (price-independent, so memoized).

        Returns ``(md_rows, pairs)``: ``md_rows[i] = (MD option index, MD sizing, stall,
        rld_time, rld_tokens, extra)``; ``pairs`` lists ``(md row, RLD option index or None, RLD
        sizing or None)`` for every feasible combination.
        """
        pb = self.pb
        key = (
            "decode-sizings",
            self._key,
            tuple(m.physics_key for m in pb.options["MD"]),
            tuple(r.physics_key for r in pb.options["RLD"]),
            rate,
            route.routing,
            route.link_utilization,
            mode,
        )
        return self.cache.get(key, lambda: self._decode_sizings_compute(rate, route, mode))

    def _decode_sizings_compute(self, rate: float, route: Route, mode: str):
        pb = self.pb
        w = pb.classes.weight
        has_rld = pb.topology.relay and bool(np.any(route.relay | ~pb.on_decode_side))
        md_rows = []
        for oi, m in enumerate(pb.options["MD"]):
            ctx, md_time, ext_busy, stall, rld_time, rld_tokens, extra = self.decode_load(
                route, m, mode
            )
            md = self.size_decode(m, rate, md_time, ctx, float(np.sum(w * ext_busy)))
            if md is not None:
                md_rows.append((oi, md, stall, rld_time, rld_tokens, extra))
        pairs: list[tuple[int, int | None, DecodeSizing | None]] = []
        if not has_rld:
            return md_rows, [(i, None, None) for i in range(len(md_rows))]
        r_opts = pb.options["RLD"]
        ctx_r = self.rld_context_tokens(route)
        b_r = [r.max_batch_at_tpot(ctx_r, pb.tpot_s) for r in r_opts]
        b_mem_r = [r.max_batch_memory(ctx_r) for r in r_opts]
        for i, row in enumerate(md_rows):
            conc = float(np.sum(rate * w * row[3]))
            for ri in range(len(r_opts)):
                if b_r[ri] < 1:
                    continue
                n_r = max(math.ceil(conc / b_r[ri] - 1e-9), 1)
                bound = "memory" if b_r[ri] >= b_mem_r[ri] else "TPOT"
                n_w = queueing.units_for_wait(conc, b_r[ri], pb.decode_slot_wait_probability_cap)
                if n_w > n_r:
                    n_r, bound = n_w, "slot wait"
                pairs.append((i, ri, DecodeSizing(n_r, int(b_r[ri]), bound, conc, ctx_r)))
        return md_rows, pairs

    def _best_for(self, rate: float, route: Route, mode: str, p_ok) -> Plan | None:
        pb = self.pb
        md_rows, pairs = self._decode_sizings(rate, route, mode)
        if not md_rows or not pairs:
            return None
        md_opts = pb.options["MD"]
        r_opts = pb.options["RLD"]
        combos = []
        rm_chips: list[dict[str, int]] = []
        for row_i, ri, sizing in pairs:
            oi, md = md_rows[row_i][0], md_rows[row_i][1]
            cost = md.instances * pb.unit_usd_per_hour(md_opts[oi])
            chips = {md_opts[oi].chip.name: md.instances * md_opts[oi].tensor_parallel}
            if ri is not None and sizing is not None:
                cost += sizing.instances * pb.unit_usd_per_hour(r_opts[ri])
                name = r_opts[ri].chip.name
                chips[name] = chips.get(name, 0) + sizing.instances * r_opts[ri].tensor_parallel
            combos.append((cost, row_i, ri, sizing))
            rm_chips.append(chips)
        p_costs = np.array([s.instances * pb.unit_usd_per_hour(p) for p, s in p_ok])
        rm_costs = np.array([c[0] for c in combos])
        tot = p_costs[:, None] + rm_costs[None, :]
        if pb.pricing is not None and pb.pricing.owned:
            p_chips = [{p.chip.name: s.instances * p.tensor_parallel} for p, s in p_ok]
            tot = tot - pb.owned_discount(p_chips, rm_chips)  # exact on shared owned kinds
        link_cost = pb.wan.price_usd_per_hour if pb.topology.cross_dc else 0.0
        chosen: Plan | None = None
        for flat in _cost_order(tot):
            pi, ci = np.unravel_index(flat, tot.shape)
            if chosen is not None and tot[pi, ci] > chosen.cost_usd_per_hour - link_cost + 1e-9:
                break  # every cheaper-or-equal combination has been seen
            cand = self._plan_of(
                rate, route, mode, p_ok[pi], combos[ci], md_rows, link_cost, float(tot[pi, ci])
            )
            if cand is None:
                continue
            # equal cost: the order of the option lists must not decide (better_plan's key)
            if chosen is None or better_plan(cand, chosen):
                chosen = cand
        return chosen

    def _plan_of(
        self, rate: float, route: Route, mode: str, p_entry, combo, md_rows, link_cost, fleet_cost
    ):
        """The plan of one (P option, RLD/MD combination), or None when it breaks inventory."""
        pb = self.pb
        p, ps = p_entry
        rm_cost, row_i, ri, rs = combo
        oi, md, stall, _rld_time, rld_tokens, extra = md_rows[row_i]
        m = pb.options["MD"][oi]
        r_inst = pb.options["RLD"][ri] if ri is not None else None
        roles: dict[str, tuple[Instance, int] | None] = {
            "P": (p, ps.instances),
            "RLD": (r_inst, rs.instances)
            if r_inst is not None and rs is not None and rs.instances > 0
            else None,
            "MD": (m, md.instances),
        }
        if not self._fits_inventory(roles):
            return None
        role_cost = role_costs(roles, pb.pricing)
        w = pb.classes.weight
        binding = [f"P: {ps.bound_by}", f"MD: {md.batch_bound_by}"]
        if rs is not None and rs.instances > 0:
            binding.append(f"RLD: {rs.batch_bound_by}")
        if pb.topology.cross_dc and route.link_utilization > 0.9 * pb.link_utilization_cap:
            binding.append("line utilization")
        ttft_ok = all(
            q <= t * (1 + 1e-9) for q, t in zip(ps.ttft_s, pb.ttft_targets_s, strict=True)
        )
        return Plan(
            problem=pb,
            topology=pb.topology.name,
            rate_rps=rate,
            routing=route.routing,
            handover=mode if roles["RLD"] else "-",
            roles=roles,
            cost_usd_per_hour=fleet_cost + link_cost,
            role_cost_usd_per_hour=role_cost,
            link_cost_usd_per_hour=link_cost,
            prefill=ps,
            decode={"RLD": rs if roles["RLD"] else None, "MD": md},
            route=route,
            md_stall_s=float(np.max(stall)) if len(stall) else 0.0,
            rld_extra_s=extra,
            rld_output_token_share=float(
                np.sum(w * rld_tokens) / np.sum(w * pb.classes.output_tokens)
            ),
            handover_inputs=(mode, m, rld_tokens, extra, r_inst, rs),
            meets_sla=ttft_ok,
            binding=binding,
        )

    def _fits_inventory(self, roles: dict[str, tuple[Instance, int] | None]) -> bool:
        if not self.pb.max_chips:
            return True
        used: dict[str, int] = {}
        for v in roles.values():
            if v is not None:
                used[v[0].chip.name] = used.get(v[0].chip.name, 0) + v[1] * v[0].tensor_parallel
        return all(used.get(c, 0) <= lim for c, lim in self.pb.max_chips.items())

    def _infeasible(self, rate: float, reasons: dict[str, int]) -> InfeasibleError:
        pb = self.pb
        if "line utilization" in reasons and len(reasons) == 1:
            need = rate * float(np.sum(pb.classes.weight * pb.wan_bytes)) / pb.link_utilization_cap
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
        pb = self.pb
        if not pb.topology.cross_dc:
            return math.inf
        per_req = float(np.sum(pb.classes.weight * pb.wan_bytes))
        return (
            math.inf
            if per_req <= 0
            else pb.link_utilization_cap * pb.wan.goodput_bytes_per_s / per_req
        )

    def solve_budget(self, budget_usd_per_hour: float, hi_rate: float) -> Plan:
        """Most goodput within a budget (and inventory): see :func:`modes.solve_budget`."""
        from pddplan.solver.modes import solve_budget

        return solve_budget(self, budget_usd_per_hour, hi_rate)

    def solve_max_bcr(self, hi_rate: float, points: int = 24) -> Plan:
        """The plan of highest BCR for rates up to ``hi_rate``: see :func:`modes.solve_max_bcr`."""
        from pddplan.solver.modes import solve_max_bcr

        return solve_max_bcr(self, hi_rate, points)


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


def better_plan(a: Plan, b: Plan) -> bool:
    """Lower cost wins; at equal cost, the lower TTFT p99, then p90, then p50 (relative
    tolerance 1e-9); then :func:`plan_key`, so that no list's order decides."""
    if abs(a.cost_usd_per_hour - b.cost_usd_per_hour) > 1e-9:
        return a.cost_usd_per_hour < b.cost_usd_per_hour
    for qa, qb in zip(reversed(a.prefill.ttft_s), reversed(b.prefill.ttft_s), strict=True):
        if abs(qa - qb) > 1e-9 * max(abs(qa), abs(qb), 1e-12):
            return qa < qb
    return plan_key(a) < plan_key(b)


#: Combinations ranked first by a partial sort; the rest only if none of those is chosen.
_FIRST_COMBINATIONS = 256


def _cost_order(tot: np.ndarray):
    """Flat indexes of ``tot`` in increasing cost, ties by index (a stable argsort), lazily:
    the cheapest few by a partial sort, then the full order only if the search gets past them
    (inventory limits can reject many)."""
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
