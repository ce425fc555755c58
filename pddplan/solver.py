"""Search for plans: chips, instance sizes, counts, routing threshold and hand-over mode.

The solver never prints; it takes an optional progress callback and returns records.

How the search is exact within the model
---------------------------------------
TTFT depends on the prefill option, the line and the routing threshold, never on the decode
chips (the first decode step is bounded by the TPOT target, which is what decode instances are
sized for). RLD's and MD's counts depend on each other only through the hand-over (MD's extend
pass). So for every (threshold, hand-over mode) the cost splits into
``cost_P(p) + cost_RM(r, m) + line`` and the minimum is taken over every option triple; with
inventory limits the triples are visited in cost order until one fits. A route whose cost lower
bound exceeds the best plan so far is skipped. Among plans of equal cost the one with the lower
TTFT p99 (then p90, p50) wins.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from pddplan import timing, units
from pddplan.deployment import (
    Instance,
    LinkNumbers,
    ModelNumbers,
    RequestClasses,
    model_numbers,
    request_classes,
)
from pddplan.errors import InfeasibleError
from pddplan.loader import ResolvedScenario, role_chip_names
from pddplan.models import pipeline, queueing
from pddplan.timing import Routing, Timeline

ROLES = ("P", "RLD", "MD")
PERCENTILES = (0.5, 0.9, 0.99)
HANDOVER_MODES = timing.HANDOVER_MODES
#: Routing thresholds tried for a continuous hit-rate distribution (between class points).
MAX_ROUTING_THRESHOLDS = 8
Progress = Callable[[int, int], None]


# ---------------------------------------------------------------------------------- problem


@dataclass(frozen=True)
class Topology:
    """Which architecture is being sized."""

    name: str  # "pdd", "same-dc", "no-relay"
    cross_dc: bool  # KV goes over the WAN line to the decode pool
    relay: bool  # RLD exists
    anomalous_filter: bool


PDD = Topology("pdd", cross_dc=True, relay=True, anomalous_filter=True)
SAME_DC = Topology("same-dc", cross_dc=False, relay=False, anomalous_filter=False)
NO_RELAY = Topology("no-relay", cross_dc=True, relay=False, anomalous_filter=False)


@dataclass
class Problem:
    """Everything the search holds fixed, in numbers."""

    model: ModelNumbers
    classes: RequestClasses
    options: dict[str, list[Instance]]
    wan: LinkNumbers
    rdma: LinkNumbers
    topology: Topology
    ttft_targets_s: tuple[float, float, float]
    tpot_s: float
    chunk_size_tokens: int
    prefill_utilization_cap: float
    link_utilization_cap: float
    handover_modes: tuple[str, ...]
    catch_up_threshold_tokens: int
    routing: str
    max_chips: dict[str, int] = field(default_factory=dict)
    enforce_ttft: bool = True

    # --- chip-independent per-class arrays
    @cached_property
    def paths(self) -> timing.Paths:
        return timing.Paths(
            kv_bytes_per_token=self.model.kv_bytes_per_token,
            wan=self.wan,
            rdma=self.rdma,
            cross_dc=self.topology.cross_dc,
            tpot_s=self.tpot_s,
            catch_up_threshold_tokens=self.catch_up_threshold_tokens,
        )

    @cached_property
    def wan_bytes(self) -> np.ndarray:
        c = self.classes
        return timing.decode_side_bytes(self.paths, c.input_tokens, c.hit_rate, self.on_decode_side)

    @cached_property
    def on_decode_side(self) -> np.ndarray:
        """Classes whose decode runs on MD (or D): all but the filtered anomalous ones."""
        return ~(self.classes.anomalous & self.topology.anomalous_filter & self.topology.relay)

    @cached_property
    def routings(self) -> list[Routing]:
        """Routings tried: relay nothing, relay below each interior hit-rate edge, relay all."""
        if not (self.topology.relay and self.topology.cross_dc) or self.routing == "no-relay":
            return [Routing.none()]
        if self.routing == "all-relay":
            return [Routing.all()]
        h = np.unique(self.classes.hit_rate[~self.classes.anomalous])
        edges = self.classes.routing_edges
        if edges is not None:
            # route by the workload's own hit-rate bins: their interior edges
            mids = edges[(edges > h.min()) & (edges <= h.max())]
        else:
            mids = (h[:-1] + h[1:]) / 2
            if len(mids) > MAX_ROUTING_THRESHOLDS:
                mids = np.quantile(mids, np.linspace(0, 1, MAX_ROUTING_THRESHOLDS))
        return [
            Routing.none(),
            *(Routing.below(x) for x in sorted({float(x) for x in mids})),
            Routing.all(),
        ]

    def physics_key(self) -> tuple[Any, ...]:
        """Everything the search's timings depend on, prices and inventory excluded."""
        return (
            self.classes.key,
            replace(self.wan, price_usd_per_hour=0.0),
            replace(self.rdma, price_usd_per_hour=0.0),
            self.topology,
            self.ttft_targets_s,
            self.tpot_s,
            self.chunk_size_tokens,
            self.prefill_utilization_cap,
            self.link_utilization_cap,
            self.handover_modes,
            self.catch_up_threshold_tokens,
            self.routing,
            self.enforce_ttft,
            self.model,
        )

    def relay_mask(self, routing: Routing) -> np.ndarray:
        return routing.relays(self.classes.hit_rate) & self.on_decode_side


# -------------------------------------------------------------------------------- evaluation


#: Per-class mean timings for one rate and routing (chip independent).
Route = Timeline


@dataclass(frozen=True)
class PrefillSizing:
    instances: int
    utilization: float
    ttft_s: tuple[float, float, float]
    attainment: float
    bound_by: str


@dataclass(frozen=True)
class DecodeSizing:
    instances: int
    batch_per_instance: int
    batch_bound_by: str  # "TPOT" or "memory"
    concurrency: float
    context_tokens: float


@dataclass(frozen=True)
class Plan:
    topology: str
    rate_rps: float
    routing: Routing
    handover: str
    roles: dict[str, tuple[Instance, int] | None]
    cost_usd_per_hour: float
    role_cost_usd_per_hour: dict[str, float]
    link_cost_usd_per_hour: float
    prefill: PrefillSizing
    decode: dict[str, DecodeSizing | None]
    route: Route
    md_stall_s: float
    rld_extra_s: np.ndarray
    rld_output_token_share: float
    meets_sla: bool
    binding: list[str]
    # what the reported hand-over figures need, filled in once the plan is chosen
    handover_inputs: tuple[Any, ...] | None = field(default=None, repr=False, compare=False)

    @property
    def goodput_rps(self) -> float:
        return self.rate_rps * self.prefill.attainment

    @property
    def bcr_requests_per_usd(self) -> float:
        """BCR: requests served within SLA per dollar of hardware (and line) cost."""
        if self.cost_usd_per_hour <= 0:
            return math.inf
        return self.goodput_rps * units.SECONDS_PER_HOUR / self.cost_usd_per_hour

    def chips_of(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for role in self.roles.values():
            if role is not None:
                inst, n = role
                out[inst.chip.name] = out.get(inst.chip.name, 0) + n * inst.tensor_parallel
        return out


#: Memo of the search's pure, price-independent pieces across solves (what-if sweeps that
#: change prices or inventory reuse them). Bounded; cleared when full.
_MEMO: dict[tuple[Any, ...], Any] = {}
_MEMO_MAX = 20_000


def _memo(key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
    if key in _MEMO:
        return _MEMO[key]
    if len(_MEMO) >= _MEMO_MAX:
        _MEMO.clear()
    value = _MEMO[key] = compute()
    return value


class Solver:
    def __init__(self, problem: Problem) -> None:
        self.pb = problem
        self._key = problem.physics_key()
        self._md_ctx: float | None = None

    # ---- per-option quantities
    def prefill_s(self, inst: Instance) -> np.ndarray:
        """Prefill time of every class on an instance [s] (memoized by physics and classes)."""
        c = self.pb.classes
        table = inst.cache("prefill")
        key = (c.key, self.pb.chunk_size_tokens)
        if key not in table:
            table[key] = np.asarray(
                inst.prefill_s(c.uncached_tokens, c.cached_tokens, self.pb.chunk_size_tokens),
                dtype=float,
            )
        return table[key]

    # ---- route (rate, threshold)
    def route(self, rate: float, routing: Routing) -> Route:
        pb = self.pb
        c = pb.classes
        util = timing.line_utilization(
            pb.paths.decode_link, rate, float(np.sum(c.weight * pb.wan_bytes))
        )
        return timing.timeline(
            pb.paths, routing, c.input_tokens, c.hit_rate, c.output_tokens, pb.on_decode_side, util
        )

    def ttft_offsets(
        self, inst: Instance, route: Route
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(offsets, weights, pipeline id) of TTFT before queueing; jitter expands WAN classes."""
        return timing.first_token_points(
            self.pb.paths, route, self.prefill_s(inst), self.pb.classes.weight
        )

    def ttft_at(
        self, inst: Instance, n: int, rate: float, offs, wts
    ) -> tuple[tuple[float, float, float], float, float]:
        pre = self.prefill_s(inst)
        w = self.pb.classes.weight
        mean_s = float(np.sum(w * pre))
        scv = float(np.sum(w * pre**2) / mean_s**2 - 1.0) if mean_s > 0 else 0.0
        util = rate * mean_s / n
        if util >= 1:
            return (math.inf, math.inf, math.inf), 0.0, util
        pw, theta, _ = queueing.waiting_time_params(rate, n, mean_s, max(scv, 0.0))
        q = tuple(queueing.mixture_quantiles(PERCENTILES, offs, wts, pw, theta))
        att = float(queueing.mixture_cdf(self.pb.ttft_targets_s[2], offs, wts, pw, theta))
        return q, att, util  # type: ignore[return-value]

    def size_prefill(self, inst: Instance, rate: float, route: Route) -> PrefillSizing | None:
        """Fewest prefill instances meeting the utilization cap and the TTFT targets."""
        key = ("prefill", self._key, inst.physics_key, rate, route.routing)
        return _memo(key, lambda: self._size_prefill(inst, rate, route))

    def _size_prefill(self, inst: Instance, rate: float, route: Route) -> PrefillSizing | None:
        pb = self.pb
        pre = self.prefill_s(inst)
        mean_s = float(np.sum(pb.classes.weight * pre))
        n = max(1, math.ceil(rate * mean_s / pb.prefill_utilization_cap - 1e-9))
        offs, wts, _ = self.ttft_offsets(inst, route)
        targets = pb.ttft_targets_s

        def ok(q: tuple[float, ...]) -> bool:
            return all(qi <= ti * (1 + 1e-9) for qi, ti in zip(q, targets, strict=True))

        q, att, util = self.ttft_at(inst, n, rate, offs, wts)
        if ok(q) or not pb.enforce_ttft:
            return PrefillSizing(n, util, q, att, "prefill capacity (utilization cap)")
        floor_q = tuple(queueing.mixture_quantiles(PERCENTILES, offs, wts))
        if not ok(floor_q):
            return None  # no count meets TTFT: transfer or prefill alone is too slow
        lo, hi = n, n * 2
        while True:
            q, att, util = self.ttft_at(inst, hi, rate, offs, wts)
            if ok(q):
                break
            lo, hi = hi, hi * 2
            if hi > 1 << 20:
                return None
        while hi - lo > 1:
            mid = (lo + hi) // 2
            qm, _, _ = self.ttft_at(inst, mid, rate, offs, wts)
            if ok(qm):
                hi = mid
            else:
                lo = mid
        q, att, util = self.ttft_at(inst, hi, rate, offs, wts)
        worst = max(range(3), key=lambda i: q[i] / targets[i])
        return PrefillSizing(hi, util, q, att, f"TTFT p{int(PERCENTILES[worst] * 100)}")

    # ---- decode pools
    def md_context_tokens(self) -> float:
        """Mean context of MD's sequences: input plus half the output [tokens]."""
        if self._md_ctx is None:
            self._md_ctx = self._md_context_tokens()
        return self._md_ctx

    def _md_context_tokens(self) -> float:
        c = self.pb.classes
        return timing.md_context_tokens(
            c.input_tokens, c.output_tokens, c.weight, self.pb.on_decode_side
        )

    def decode_load(self, route: Route, md: Instance, mode: str):
        """MD's per-class busy time and stall, and RLD's per-class occupancy, for one MD option."""
        key = ("decode", self._key, md.physics_key, route.link_utilization, route.routing, mode)
        return _memo(key, lambda: self._decode_load(route, md, mode))

    def _decode_load(self, route: Route, md: Instance, mode: str):
        ctx_md = self.md_context_tokens()
        e0, e1 = md.extend_affine(ctx_md)
        d = timing.decode_split(self.pb.paths, route, self.pb.classes.output_tokens, mode, e0, e1)
        return (
            ctx_md,
            d.md_busy_s,
            d.extend_busy_s,
            d.md_stall_s,
            d.rld_busy_s,
            d.rld_tokens,
            d.rld_extra_s,
        )

    def rld_context_tokens(self, route: Route) -> float:
        """Mean context of RLD's sequences on a route [tokens] (memoized)."""
        key = ("rld-ctx", self._key, route.link_utilization, route.routing)
        return float(_memo(key, lambda: self._rld_context_tokens(route)))

    def _rld_context_tokens(self, route: Route) -> float:
        """Mean context of RLD's sequences, weighted by their time there (input + half the eager
        tokens; anomalous requests: input + half their output)."""
        pb = self.pb
        c = pb.classes
        w_relay = c.weight * route.relay_wait_s
        w_anom = np.where(pb.on_decode_side, 0.0, c.weight * c.output_tokens)
        occ = w_relay + w_anom
        if np.sum(occ) <= 0:  # nothing waits on RLD: size it for the relayed inputs
            sel = route.relay | ~pb.on_decode_side
            return float(
                np.sum(c.weight * sel * c.input_tokens) / max(np.sum(c.weight * sel), 1e-300)
            )
        ctx = np.where(
            pb.on_decode_side,
            c.input_tokens + route.eager_tokens / 2,
            c.input_tokens + c.output_tokens / 2,
        )
        return float(np.sum(occ * ctx) / np.sum(occ))

    def size_decode(
        self,
        inst: Instance,
        rate: float,
        time_s: np.ndarray,
        context_tokens: float,
        extra_busy: float = 0.0,
    ) -> DecodeSizing | None:
        w = self.pb.classes.weight
        conc = float(np.sum(pipeline.little_concurrency(rate * w, time_s)))
        if conc <= 0:
            return DecodeSizing(0, 0, "-", 0.0, context_tokens)
        b_mem = inst.max_batch_memory(context_tokens)
        b = inst.max_batch_at_tpot(context_tokens, self.pb.tpot_s)
        if b < 1:
            return None
        n = math.ceil(conc / b + rate * extra_busy - 1e-9)
        return DecodeSizing(max(n, 1), b, "memory" if b >= b_mem else "TPOT", conc, context_tokens)

    # ---- search
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
                if best is None or _better(cand, best):
                    best = cand
        if best is None:
            raise self._infeasible(rate, reasons)
        return self.finalize(best)

    def finalize(self, plan: Plan) -> Plan:
        """The chosen plan with its hand-over figures at RLD's working step (see
        :meth:`reported_handover`)."""
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
            * p.price_usd_per_hour
            for p in pb.options["P"]
        )
        md_tokens = np.where(
            pb.on_decode_side, np.maximum(c.output_tokens - route.eager_tokens, 0.0), 0.0
        )
        conc = float(np.sum(rate * w * md_tokens * pb.tpot_s))
        ctx = float(
            np.sum(w * pb.on_decode_side * (c.input_tokens + c.output_tokens / 2))
            / max(np.sum(w * pb.on_decode_side), 1e-300)
        )
        md_lb = math.inf
        for m in pb.options["MD"]:
            b = m.max_batch_at_tpot(ctx, pb.tpot_s)
            if b >= 1:
                md_lb = min(md_lb, max(1, math.ceil(conc / b - 1e-9)) * m.price_usd_per_hour)
        has_rld = pb.topology.relay and bool(np.any(route.relay | ~pb.on_decode_side))
        rld_lb = (
            min((r.price_usd_per_hour for r in pb.options["RLD"]), default=0.0) if has_rld else 0.0
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
        return _memo(key, lambda: self._decode_sizings_compute(rate, route, mode))

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
        for row_i, ri, sizing in pairs:
            oi, md = md_rows[row_i][0], md_rows[row_i][1]
            cost = md.instances * md_opts[oi].price_usd_per_hour
            if ri is not None and sizing is not None:
                cost += sizing.instances * r_opts[ri].price_usd_per_hour
            combos.append((cost, row_i, ri, sizing))
        p_costs = np.array([s.instances * p.price_usd_per_hour for p, s in p_ok])
        rm_costs = np.array([c[0] for c in combos])
        tot = p_costs[:, None] + rm_costs[None, :]
        order = np.argsort(tot, axis=None, kind="stable")
        link_cost = pb.wan.price_usd_per_hour if pb.topology.cross_dc else 0.0
        for flat in order:
            pi, ci = np.unravel_index(flat, tot.shape)
            p, ps = p_ok[pi]
            _, row_i, ri, rs = combos[ci]
            oi, md, stall, _rld_time, rld_tokens, extra = md_rows[row_i]
            m = md_opts[oi]
            r_inst = r_opts[ri] if ri is not None else None
            roles: dict[str, tuple[Instance, int] | None] = {
                "P": (p, ps.instances),
                "RLD": (r_inst, rs.instances)
                if r_inst is not None and rs is not None and rs.instances > 0
                else None,
                "MD": (m, md.instances),
            }
            if not self._fits_inventory(roles):
                continue
            role_cost = {
                k: (v[0].price_usd_per_hour * v[1] if v else 0.0) for k, v in roles.items()
            }
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
                topology=pb.topology.name,
                rate_rps=rate,
                routing=route.routing,
                handover=mode if roles["RLD"] else "-",
                roles=roles,
                cost_usd_per_hour=float(tot[pi, ci]) + link_cost,
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
        return None

    def ttft_by_pipeline(self, plan: Plan) -> dict[str, dict[str, float]]:
        """TTFT percentiles and request share per pipeline, plus the mean wait, for a plan."""
        p_inst, n = plan.roles["P"]  # type: ignore[misc]
        offs, wts, pids = self.ttft_offsets(p_inst, plan.route)
        pre = self.prefill_s(p_inst)
        w = self.pb.classes.weight
        mean_s = float(np.sum(w * pre))
        scv = float(np.sum(w * pre**2) / mean_s**2 - 1.0) if mean_s > 0 else 0.0
        pw, theta, mean_wait = queueing.waiting_time_params(plan.rate_rps, n, mean_s, max(scv, 0.0))
        out: dict[str, dict[str, float]] = {}
        names = {
            0: "P-MD" if self.pb.topology.cross_dc else "P-D",
            1: "P-RLD-MD",
            2: "P-RLD (anomalous)",
        }
        for pid, name in names.items():
            mask = pids == pid
            if not np.any(mask):
                continue
            row = {"share": float(np.sum(wts[mask]) / np.sum(wts))}
            for p in PERCENTILES:
                row[f"p{int(p * 100)}"] = queueing.mixture_quantile(
                    p, offs[mask], wts[mask], pw, theta
                )
            out[name] = row
        out["_wait"] = {"mean_wait_s": mean_wait, "wait_probability": pw}
        return out

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
        """
        pb = self.pb
        c = pb.classes
        w = c.weight
        tokens = np.asarray(rld_tokens, dtype=float)
        stall = 0.0
        if r_inst is None or rs is None or rs.instances <= 0 or not np.any(route.relay):
            return pipeline.rld_output_share(tokens, c.output_tokens, w), stall
        batch = min(max(rs.concurrency / rs.instances, 1.0), float(max(rs.batch_per_instance, 1)))
        step_s = min(float(r_inst.decode_step_s(batch, rs.context_tokens)), pb.tpot_s)
        e0, e1 = md_inst.extend_affine(self.md_context_tokens())
        relayed, stalls = timing.relayed_tokens_at_step(
            pb.paths, route, c.output_tokens, mode, e0, e1, step_s
        )
        tokens = np.where(route.relay, relayed, tokens)
        stall = float(np.max(stalls))
        return pipeline.rld_output_share(tokens, c.output_tokens, w), stall

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
        if "TTFT" in reasons:
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
            return InfeasibleError(
                f"no plan fits at {rate:.4g} req/s within the inventory limits {pb.max_chips}",
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
        """Most goodput within a budget (and inventory): bisection on the rate."""
        lo_plan: Plan | None = None
        lo, hi = 0.0, hi_rate
        try:
            plan = self.solve_rate(hi)
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
                plan = self.solve_rate(mid)
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

    def solve_max_bcr(self, hi_rate: float, points: int = 24) -> Plan:
        """The plan of highest BCR for rates up to ``hi_rate``."""
        rates = np.geomspace(hi_rate / 64, hi_rate, points)
        best: Plan | None = None
        for r in rates:
            try:
                p = self.solve_rate(float(r))
            except InfeasibleError:
                continue
            if best is None or p.bcr_requests_per_usd > best.bcr_requests_per_usd:
                best = p
        if best is None:
            return self.solve_rate(float(rates[0]))
        # refine: the highest rate that the best plan's counts still serve
        lo, hi = best.rate_rps, min(hi_rate, best.rate_rps * (rates[1] / rates[0]))
        for _ in range(20):
            mid = (lo + hi) / 2
            try:
                p = self.solve_rate(mid)
            except InfeasibleError:
                hi = mid
                continue
            if p.bcr_requests_per_usd >= best.bcr_requests_per_usd:
                best, lo = p, mid
            else:
                hi = mid
        return best


def _better(a: Plan, b: Plan) -> bool:
    """Lower cost wins; at equal cost, the lower TTFT p99, then p90, then p50."""
    if abs(a.cost_usd_per_hour - b.cost_usd_per_hour) > 1e-9:
        return a.cost_usd_per_hour < b.cost_usd_per_hour
    return tuple(reversed(a.prefill.ttft_s)) < tuple(reversed(b.prefill.ttft_s))


# ------------------------------------------------------------------------------ construction


def build_problem(
    rs: ResolvedScenario, topology: Topology = PDD, wan_bandwidth_scale: float = 1.0
) -> Problem:
    scen = rs.scenario
    sv = scen.serving
    model = model_numbers(rs.model)
    classes = request_classes(
        rs.workload,
        sv.hit_rate_points_per_bin,
        sv.length_points,
        anomalous_filter=sv.anomalous_filter,
    )
    options: dict[str, list[Instance]] = {}
    if topology.name == "same-dc":
        assert scen.baseline is not None
        chip = rs.chips[scen.baseline.chip]
        inst = Instance(chip, model, scen.baseline.chips_per_instance, sv.decode_memory_utilization)
        options = {"P": [inst], "RLD": [], "MD": [inst]}
    else:
        for role in ROLES:
            choice = getattr(scen.roles, role)
            opts = [
                Instance(rs.chips[name], model, tp, sv.decode_memory_utilization)
                for name in role_chip_names(rs, role)
                for tp in choice.chips_per_instance
            ]
            options[role] = [o for o in opts if o.fits]
    modes = HANDOVER_MODES if sv.handover == "auto" else (sv.handover,)
    topo = topology
    if topology.name == "pdd" and not sv.anomalous_filter:
        topo = replace(topology, anomalous_filter=False)
    return Problem(
        model=model,
        classes=classes,
        options=options,
        wan=LinkNumbers.of(rs.link, wan_bandwidth_scale),
        rdma=LinkNumbers.of(rs.rdma),
        topology=topo,
        ttft_targets_s=(scen.sla.ttft_p50_s, scen.sla.ttft_p90_s, scen.sla.ttft_p99_s),
        tpot_s=units.ms_to_s(scen.sla.tpot_ms),
        chunk_size_tokens=sv.chunk_size_tokens,
        prefill_utilization_cap=sv.prefill_utilization_cap,
        link_utilization_cap=sv.link_utilization_cap,
        handover_modes=modes,
        catch_up_threshold_tokens=sv.catch_up_threshold_tokens,
        routing=sv.routing,
        max_chips=dict(scen.limits.max_chips),
    )


def check_options(pb: Problem) -> None:
    for role in ("P", "MD"):
        if not pb.options[role]:
            raise InfeasibleError(
                f"no {role} option holds the model's weights in memory; use more chips per instance",
                binding="memory",
            )
    if pb.topology.relay and not pb.options["RLD"]:
        raise InfeasibleError(
            "no RLD option holds the model's weights in memory; use more chips per instance",
            binding="memory",
        )


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
