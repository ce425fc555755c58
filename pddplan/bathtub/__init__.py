"""The bathtub: the return on serving a request against its prefix hit rate.

Two views over a grid of hit rates:

- **marginal**: one request of hit rate ``h`` served by the solved plan. Its cost is the
  instance-time it occupies on P (its prefill), on RLD and MD (its share of a decode batch for as
  long as it decodes there) and on the line (its transfer time), each priced at the plan's $/s;
  its revenue follows the scenario's API prices, with cached input billed at a fraction.
- **re-provisioned**: the best plan if all traffic had hit rate ``h`` (one solve per point),
  read as BCR (requests within SLA per dollar) and as revenue per cost.

Valleys come from :func:`pddplan.models.vmath.find_valleys`; nothing about a particular hit
rate is assumed. Singular points come from the tail-chunk arithmetic of chunked prefill.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from pddplan import tiers, timing, units
from pddplan.deployment import cached_prefix_tokens
from pddplan.errors import InfeasibleError
from pddplan.io.loader import ResolvedScenario
from pddplan.models import valleys as vmath
from pddplan.solver import PDD, Outcome, Plan, Solver, build_problem
from pddplan.solver.plan import require_priced, role_costs
from pddplan.solver.token_cost import TOKENS_PER_MTOK
from pddplan.spec import Revenue
from pddplan.timing import Routing

if TYPE_CHECKING:
    from pddplan.executors import Progress


@dataclass(frozen=True)
class CurvePoint:
    hit_rate: float
    prefill_s: float
    cost_usd: float  # marginal cost of one request on the solved plan
    revenue_usd: float | None
    requests_per_usd: float  # 1 / cost: the marginal BCR
    revenue_per_cost: float | None
    prefill_tokens_per_s: float  # uncached tokens per second of prefill (chunking visible)
    reprovisioned_bcr_requests_per_usd: float | None = None
    reprovisioned_revenue_per_cost: float | None = None
    reprovisioned_rate_rps: float | None = None
    reprovisioned_cost_usd_per_hour: float | None = None  # the best plan's cost at this hit rate


@dataclass
class BathtubResult:
    outcome: Outcome
    input_tokens: float
    output_tokens: float
    chunk_size_tokens: int
    points: list[CurvePoint]
    metric: str  # which curve the valleys are found on
    valleys: list[vmath.Valley]
    reprovisioned_valleys: list[vmath.Valley]
    valley_traffic_share: float
    no_valley_reason: str
    singular: list[dict[str, float]]
    advice: list[str] = field(default_factory=list)
    chunk_advice: list[dict[str, float]] = field(default_factory=list)
    price_fraction_without_valley: float | None = None
    capacity_advice: list[dict[str, float]] = field(default_factory=list)
    singular_moves: list[dict[str, Any]] = field(default_factory=list)
    reprovisioned_no_valley_reason: str = ""
    reprovisioned_valley_traffic_share: float = 0.0
    reprovisioned_steps: int = 0  # re-provisioned valleys with a rim where the best plan changes
    #: [tokens] the least capacity of the capacity curve whose mean hit rate leaves the valley
    capacity_needed_tokens: float | None = None


def hit_rate_grid(step: float, extra: list[float]) -> np.ndarray:
    n = int(round(1.0 / step))
    grid = np.linspace(0.0, 1.0, n + 1)
    return np.unique(np.clip(np.concatenate([grid, np.asarray(extra, dtype=float)]), 0.0, 1.0))


def revenue_usd(revenue: Revenue, input_tokens, hit_rate, output_tokens):
    """Revenue of one request [USD]: uncached input at full price, cached input at a fraction.

    Notes
    -----
    ``R = (L (1 - h) p_in + L h f p_in + O p_out) / 10^6`` with prices per million tokens.
    """
    h = np.asarray(hit_rate, dtype=float)
    p_in = revenue.uncached_input_usd_per_mtok / TOKENS_PER_MTOK
    p_out = revenue.output_usd_per_mtok / TOKENS_PER_MTOK
    return (
        input_tokens * ((1 - h) * p_in + h * revenue.cached_input_price_fraction * p_in)
        + output_tokens * p_out
    )


def _unit_prices(plan: Plan, pb: Any) -> dict[str, float]:
    """Per role, the plan's price of one instance [USD/h]: its role's cost in the plan's
    (:func:`~pddplan.solver.plan.role_costs`, owned and bought chips at the inventory's prices)
    over its count; an instance's rental where the scenario has no inventory, and the price of
    one instance beyond the owned chips (:meth:`~pddplan.solver.problem.Problem.
    unit_usd_per_hour`) for a role of none. A P instance's price includes its node's prefix
    cache (:meth:`~pddplan.solver.problem.Problem.cache_cost_usd_per_hour`), as the plan's cost
    does."""
    pricing = pb.pricing
    costs = role_costs(plan.roles, pricing) if pricing is not None else {}
    out: dict[str, float] = {}
    for role, v in plan.roles.items():
        if v is None:
            out[role] = 0.0
            continue
        inst, n = v
        if pricing is None:
            out[role] = inst.price_usd_per_hour
        else:
            out[role] = costs[role] / n if n > 0 else pb.unit_usd_per_hour(inst)
    if plan.roles.get("P") is not None:
        out["P"] = out["P"] + pb.cache_cost_usd_per_hour(1)
    return out


def marginal_costs(plan: Plan, solver: Solver, input_tokens: float, output_tokens: float, hit_rate):
    """Marginal cost of one request at each hit rate on a solved plan [USD], and its prefill [s].

    Notes
    -----
    ``c = t_P (price_P / 3600) + t_MD / b_MD (price_MD / 3600) + t_RLD / b_RLD (price_RLD / 3600)
    + t_line (price_line / 3600)``, where ``t_P`` is the request's prefill time, ``t_MD`` and
    ``t_RLD`` its decode time on each pool shared by a batch of ``b``, and ``t_line`` its WAN
    bytes over the line's goodput. Requests whose hit rate is below the plan's routing threshold
    are relayed: RLD decodes them until MD holds their KV. The decode times are the sizing's own
    (:func:`~pddplan.timing.decode_split` at the plan's hand-over: MD's every output token at
    the TPOT plus its hand-over stall, RLD's wait and hand-over), so a request's share of a pool
    is what the plan sized that pool for. Each role's price is what the plan
    pays per instance of it: with an inventory, owned chips at their owned cost (the roles take
    them in the order P, RLD, MD, as the plan's cost does), the rest at the extra price.
    """
    pb = solver.pb
    unit = _unit_prices(plan, pb)
    h = np.asarray(hit_rate, dtype=float)
    p_inst, _ = plan.roles["P"]  # type: ignore[misc]
    cached = cached_prefix_tokens(input_tokens, h)
    uncached = input_tokens - cached
    pre = np.asarray(
        timing.prefill_s(p_inst, uncached, cached, pb.chunk_size_tokens, pb.cache), dtype=float
    )
    cost = pre * unit["P"] / units.SECONDS_PER_HOUR
    n = h.shape
    on = np.ones(n, dtype=bool)
    routing = plan.routing if plan.roles["RLD"] is not None else Routing.none()
    tl = timing.timeline(
        pb.paths,
        routing,
        np.full(n, float(input_tokens)),
        h,
        np.full(n, float(output_tokens)),
        on,
        plan.route.link_utilization,
    )
    if pb.topology.cross_dc:
        line_busy_s = tl.wan_bytes / pb.wan.goodput_bytes_per_s
        cost = cost + line_busy_s * pb.wan.price_usd_per_hour / units.SECONDS_PER_HOUR
    md_role = plan.roles["MD"]
    e0, e1 = (0.0, 0.0) if md_role is None else md_role[0].extend_affine(solver.md_context_tokens())
    mode = timing.handover_mode(plan.handover)
    split = timing.decode_split(pb.paths, tl, np.full(n, float(output_tokens)), mode, e0, e1)
    md = plan.decode["MD"]
    if md is not None and md.batch_per_instance:
        md_s = split.md_busy_s
        cost = cost + md_s / md.batch_per_instance * unit["MD"] / units.SECONDS_PER_HOUR
    rld = plan.decode.get("RLD")
    if plan.roles["RLD"] is not None and rld is not None and rld.batch_per_instance:
        rld_s = split.rld_busy_s
        cost = cost + rld_s / rld.batch_per_instance * unit["RLD"] / units.SECONDS_PER_HOUR
    return cost, pre, uncached


#: Points per bin (and for a continuous distribution) at which :func:`traffic_share` reads the
#: workload's hit-rate distribution: the solver's few class points (3 per bin) put a valley
#: between two of them at 0% of the traffic.
SHARE_POINTS_PER_BIN = 400


def traffic_share(
    valleys: list[vmath.Valley], dist: Any, anomalous: tuple[float, float] | None = None
) -> float:
    """The share of the requests over the line whose hit rate is in a valley [-]: the
    workload's hit-rate distribution (``dist``, its shift and mixes applied, as the solver's
    classes are made: :func:`pddplan.deployment.workloads.hit_rate_points`) read at
    :data:`SHARE_POINTS_PER_BIN` points per bin, not at the solver's class points; with
    ``anomalous`` (their hit rate and share, where they cross the line too) beside it."""
    if not valleys:
        return 0.0
    from pddplan.deployment.workloads import hit_rate_points

    h, w = hit_rate_points(dist, SHARE_POINTS_PER_BIN, SHARE_POINTS_PER_BIN * 10)
    if anomalous is not None:
        h_a, share_a = anomalous
        h, w = np.append(h, h_a), np.append(w * (1.0 - share_a), share_a)
    return vmath.share_in_intervals(valleys, h, w)


def analyze(
    rs: ResolvedScenario,
    *,
    step: float = 0.01,
    tolerance: float = 0.02,
    reprovision: bool = True,
    capacity_curve: dict[str, np.ndarray] | None = None,
    rate_rps: float | None = None,
    progress: Progress | None = None,
) -> BathtubResult:
    """Compute both views of the bathtub, its valleys, singular points and advice.

    ``progress(done, total)`` is told of each hit rate the re-provisioned view solves.
    """
    out = tiers.solve(rs, rate_rps=rate_rps, baselines=False)
    plan = out.plan
    solver = Solver(out.problem)
    pb = out.problem
    keep = pb.on_decode_side
    w = pb.classes.weight * keep
    l_in = float(np.sum(w * pb.classes.input_tokens) / np.sum(w))
    l_out = float(np.sum(w * pb.classes.output_tokens) / np.sum(w))
    chunk = pb.chunk_size_tokens
    sing = vmath.singular_hit_rates(max(1, int(round(l_in))), chunk)
    grid = hit_rate_grid(step, [s.hit_rate for s in sing])
    cost, pre, uncached = marginal_costs(plan, solver, l_in, l_out, grid)
    require_priced(float(np.min(cost)), "a request on the plan's fleet", "$")
    rev = revenue_usd(rs.scenario.revenue, l_in, grid, l_out) if rs.scenario.revenue else None
    tok_per_s = np.where(pre > 0, uncached / np.maximum(pre, 1e-12), np.nan)

    re_bcr: list[float | None] = [None] * len(grid)
    re_rpc: list[float | None] = [None] * len(grid)
    re_rate: list[float | None] = [None] * len(grid)
    re_cost: list[float | None] = [None] * len(grid)
    if reprovision:
        # at the cache capacity the plan was sized at (out.scenario), each hit rate's plan
        # pays for the cache and loads its hits from it as the plan does
        re_bcr, re_rpc, re_rate, re_cost = _reprovisioned(
            out.scenario or rs, grid, plan.rate_rps, l_in, l_out, progress
        )

    points = [
        CurvePoint(
            hit_rate=float(h),
            prefill_s=float(pre[i]),
            cost_usd=float(cost[i]),
            revenue_usd=float(rev[i]) if rev is not None else None,
            requests_per_usd=float(1.0 / cost[i]),
            revenue_per_cost=float(rev[i] / cost[i]) if rev is not None else None,
            prefill_tokens_per_s=float(tok_per_s[i]),
            reprovisioned_bcr_requests_per_usd=re_bcr[i],
            reprovisioned_revenue_per_cost=re_rpc[i],
            reprovisioned_rate_rps=re_rate[i],
            reprovisioned_cost_usd_per_hour=re_cost[i],
        )
        for i, h in enumerate(grid)
    ]
    metric = "revenue_per_cost" if rev is not None else "requests_per_usd"
    y = np.array([getattr(p, metric) for p in points], dtype=float)
    found = vmath.find_valleys(grid, y, tolerance=tolerance)
    wl = (out.scenario or rs).workload
    # anomalous requests count where they cross the line (the filter off), at their hit rate
    crossing = bool(np.any(pb.classes.anomalous & keep))
    odd = (wl.anomalous.hit_rate, wl.anomalous.share) if crossing and wl.anomalous else None
    share = traffic_share(found, wl.hit_rate, odd)
    re_metric = (
        "reprovisioned_revenue_per_cost"
        if rev is not None
        else "reprovisioned_bcr_requests_per_usd"
    )
    re_y = np.array(
        [np.nan if getattr(p, re_metric) is None else getattr(p, re_metric) for p in points],
        dtype=float,
    )
    re_found = (
        vmath.find_valleys(grid, re_y, tolerance=tolerance)
        if np.sum(np.isfinite(re_y)) >= 3
        else []
    )
    reason = ""
    if not found:
        reason = _no_valley_reason(y, tolerance, metric)
    re_reason = ""
    if not reprovision:
        re_reason = "not computed (a plan per hit rate was not asked for)"
    elif np.sum(np.isfinite(re_y)) < 3:
        re_reason = f"a plan is feasible at only {int(np.sum(np.isfinite(re_y)))} hit rates"
    elif not re_found:
        ok = np.isfinite(re_y)
        re_reason = _no_valley_reason(re_y[ok], tolerance, re_metric)
    re_share = traffic_share(re_found, wl.hit_rate, odd)
    res = BathtubResult(
        outcome=out,
        input_tokens=l_in,
        output_tokens=l_out,
        chunk_size_tokens=chunk,
        points=points,
        metric=metric,
        valleys=found,
        reprovisioned_valleys=re_found,
        valley_traffic_share=share,
        no_valley_reason=reason,
        singular=_singular_rows(sing, grid, tok_per_s),
        reprovisioned_no_valley_reason=re_reason,
        reprovisioned_valley_traffic_share=re_share,
        reprovisioned_steps=_plan_steps(re_found, points),
    )
    res.singular_moves = singular_moves(l_in, chunk)
    _advise(res, rs, solver, plan, tolerance, capacity_curve)
    return res


def _plan_steps(found: list[vmath.Valley], points: list[CurvePoint]) -> int:
    """How many re-provisioned valleys have a rim where the best plan changes: the plan's cost
    or rate differs between a rim and the grid point next to it on the valley's side."""
    xs = [p.hit_rate for p in points]

    def plan(i: int) -> tuple[float | None, float | None]:
        return points[i].reprovisioned_cost_usd_per_hour, points[i].reprovisioned_rate_rps

    n = 0
    for v in found:
        lo, hi = xs.index(v.left_peak_x), xs.index(v.right_peak_x)
        if (lo + 1 < len(xs) and plan(lo) != plan(lo + 1)) or (hi > 0 and plan(hi) != plan(hi - 1)):
            n += 1
    return n


#: The two views, as the summary and the plot explain them.
MARGINAL_VIEW = "marginal view: one more request, priced on the solved plan"
REPROVISIONED_VIEW = "re-provisioned view: the best plan if all traffic had that hit rate"


def _valleys_phrase(found: list[vmath.Valley], share: float) -> str:
    deepest = max(found, key=lambda v: v.depth_fraction)
    where = (
        f"{deepest.start_x:.2f}-{deepest.end_x:.2f}, {deepest.depth_fraction:.1%} deep at "
        f"h = {deepest.deepest_x:.2f}"
    )
    if len(found) == 1:
        head = f"1 valley, {where}"
    else:
        head = f"{len(found)} valleys, the deepest {where}"
    return f"{head}; {share:.0%} of the traffic in {'it' if len(found) == 1 else 'them'}"


def view_verdicts(res: BathtubResult) -> dict[str, str]:
    """One verdict per view, ``{"marginal": ..., "reprovisioned": ...}``: how many valleys,
    the deepest, the traffic in them, or why there is none (the view's name,
    :data:`MARGINAL_VIEW` and :data:`REPROVISIONED_VIEW`, goes before it).

    The two views can disagree (a smooth marginal curve and a re-provisioned one that steps
    where a whole instance is added); each sentence names its view, so neither reads as the
    verdict of both.
    """
    if res.valleys:
        marginal = _valleys_phrase(res.valleys, res.valley_traffic_share)
    else:
        marginal = f"no valley: {res.no_valley_reason}"
    found = res.reprovisioned_valleys
    if found:
        re = _valleys_phrase(found, res.reprovisioned_valley_traffic_share)
        if res.reprovisioned_steps:
            k = res.reprovisioned_steps
            re += (
                f"; {k} of {len(found)} have a rim where the best plan changes (an instance more "
                "or fewer, or another fleet: steps of whole-instance sizing, not a trend of the "
                "return)"
            )
    else:
        re = f"no valley: {res.reprovisioned_no_valley_reason}"
    return {"marginal": marginal, "reprovisioned": re}


def singular_moves(input_tokens: float, chunk_size_tokens: int) -> list[dict[str, Any]]:
    """Where the singular points sit for other chunk sizes and input lengths.

    They sit just past ``h = 1 - k C / L`` for whole ``k``: ``C / L`` apart, so they move apart
    as the chunk grows or the prompt shrinks, and vanish when ``C >= L``.
    """
    rows = []
    for scale in (0.5, 1.0, 2.0):
        l_in = max(1, int(round(input_tokens * scale)))  # a 1-token prompt halves to 1
        for c in sorted({chunk_size_tokens // 2, chunk_size_tokens, chunk_size_tokens * 2}):
            pts = vmath.singular_hit_rates(l_in, c)
            rows.append(
                {
                    "input_tokens": l_in,
                    "chunk_size_tokens": c,
                    "singular_points": len(pts),
                    "spacing_hit_rate": c / l_in,
                    "hit_rates": [round(p.hit_rate, 3) for p in pts],
                }
            )
    return rows


def _no_valley_reason(y: np.ndarray, tolerance: float, metric: str) -> str:
    d = np.diff(y)
    if np.all(d >= -1e-12):
        shape = "rises monotonically with the hit rate"
    elif np.all(d <= 1e-12):
        shape = "falls monotonically with the hit rate"
    else:
        shape = "has no dip deeper than the tolerance"
    from pddplan.labels import figure_label

    return f"{figure_label(metric)} {shape} (tolerance {tolerance:.0%} of the enclosing peaks)"


def _reprovisioned(
    rs: ResolvedScenario,
    grid: np.ndarray,
    rate: float,
    l_in: float,
    l_out: float,
    progress: Progress | None = None,
):
    """Best plan per hit rate: at the scenario's rate, or at 95% of what the line carries when
    the line cannot carry the scenario's rate at that hit rate; each the solve's own answer
    (:func:`pddplan.tiers.solve`: its variants, its goodput, so its BCR, and ``rs``'s cache)."""
    bcr: list[float | None] = []
    rpc: list[float | None] = []
    rates: list[float | None] = []
    costs: list[float | None] = []
    base = rs.workload
    for i, h in enumerate(grid):
        if progress:
            progress(i, len(grid))
        dist = base.hit_rate.model_copy(
            update={
                "bins": None,
                "beta": None,
                "samples": [float(h)],
                "shift": 0.0,
                "scale": 1.0,
                "mix_weight": 0.0,
                "mix_with": None,
            }
        )
        rs_h = replace(rs, workload=base.model_copy(update={"hit_rate": dist}))
        try:
            r_h = min(rate, 0.95 * Solver(build_problem(rs_h, PDD)).line_rate_limit())
            p = tiers.solve(rs_h, rate_rps=r_h, baselines=False).plan
        except InfeasibleError:
            bcr.append(None)
            rpc.append(None)
            rates.append(None)
            costs.append(None)
            continue
        require_priced(p.cost_usd_per_hour, f"the plan re-provisioned at hit rate {h:.2f}")
        bcr.append(p.bcr_requests_per_usd)
        rates.append(r_h)
        costs.append(p.cost_usd_per_hour)
        if rs.scenario.revenue is not None:
            r = float(revenue_usd(rs.scenario.revenue, l_in, h, l_out))
            rpc.append(r * p.bcr_requests_per_usd)  # revenue per request times BCR
        else:
            rpc.append(None)
    if progress:
        progress(len(grid), len(grid))
    return bcr, rpc, rates, costs


def _singular_rows(
    sing: list[vmath.SingularPoint], grid: np.ndarray, tok_per_s: np.ndarray
) -> list[dict[str, float]]:
    rows = []
    for s in sing:
        i = int(np.searchsorted(grid, s.hit_rate))
        i = min(max(i, 1), len(grid) - 1)
        before = float(tok_per_s[i - 1]) if grid[i] >= s.hit_rate else float("nan")
        at = float(tok_per_s[i]) if abs(grid[i] - s.hit_rate) < 1e-12 else float("nan")
        # the point just past a chunk boundary against the grid point just below it
        drop = 1.0 - at / before if before and not math.isnan(at) else float("nan")
        rows.append(
            {
                "hit_rate": s.hit_rate,
                "full_chunks": s.chunks_full,
                "tail_tokens": s.tail_tokens,
                "interval_lo": s.interval_lo,
                "interval_hi": s.interval_hi,
                "prefill_tokens_per_s": at,
                "prefill_tokens_per_s_below": before,
                "throughput_drop": drop,
            }
        )
    return rows


def _advise(
    res: BathtubResult,
    rs: ResolvedScenario,
    solver: Solver,
    plan: Plan,
    tolerance: float,
    curve: dict[str, np.ndarray] | None,
) -> None:
    adv = res.advice
    # chunk sizes: the worst tail-chunk penalty across the workload's hit rates for each size
    p_inst, _ = plan.roles["P"]  # type: ignore[misc]
    pb = solver.pb
    keep = pb.on_decode_side
    hits = pb.classes.hit_rate[keep]
    wts = pb.classes.weight[keep] / pb.classes.weight[keep].sum()
    l_in = res.input_tokens
    for c in (2048, 4096, 8192, 16384, 32768):
        cached = cached_prefix_tokens(l_in, hits)
        unc = l_in - cached
        # the plan's prefill, hits loaded from its cache tiers (timing.prefill_s, the one
        # home: the advice left the load out, 0.348 s where the plan's prefill is 0.371 s)
        t_c = np.asarray(timing.prefill_s(p_inst, unc, cached, c, pb.cache), dtype=float)
        t_inf = np.asarray(timing.prefill_s(p_inst, unc, cached, 1 << 30, pb.cache), dtype=float)
        res.chunk_advice.append(
            {
                "chunk_size_tokens": c,
                "mean_prefill_s": float(np.sum(wts * t_c)),
                "chunking_overhead": float(np.sum(wts * t_c) / np.sum(wts * t_inf) - 1.0),
                "singular_points": len(vmath.singular_hit_rates(max(1, int(round(l_in))), c)),
            }
        )
    best = min(res.chunk_advice, key=lambda r: r["mean_prefill_s"])
    adv.append(
        f"chunk size: {best['chunk_size_tokens']} tokens gives the lowest mean prefill time on this "
        f"workload ({best['mean_prefill_s']:.3g} s, {best['chunking_overhead']:+.1%} against unchunked); "
        f"the scenario uses {res.chunk_size_tokens}"
    )
    if not res.valleys:
        adv.append(f"no valley: {res.no_valley_reason}")
        return
    deepest = max(res.valleys, key=lambda v: v.depth_fraction)
    adv.append(
        f"valley {deepest.start_x:.2f}-{deepest.end_x:.2f} (deepest at {deepest.deepest_x:.2f}, "
        f"{deepest.depth_fraction:.1%} below its rims) holds {res.valley_traffic_share:.1%} of the traffic"
    )
    adv.append(
        f"escape it: traffic in the valley needs a hit rate of at least {deepest.end_x:.2f} to be back at "
        "the level of the rims"
    )
    if rs.scenario.revenue is not None and res.metric == "revenue_per_cost":
        frac = _price_without_valley(res, rs.scenario.revenue, tolerance)
        res.price_fraction_without_valley = frac
        if frac is not None:
            adv.append(
                f"make it shallower: at a cached-token price of {frac:.0%} of the uncached price "
                f"(now {rs.scenario.revenue.cached_input_price_fraction:.0%}) the valley disappears"
            )
        else:
            adv.append("no cached-token price fraction in [0, 1] removes the valley")
    if curve is not None:
        need = deepest.end_x
        cap = np.asarray(curve["capacity_tokens"], dtype=float)
        mean = np.asarray(curve["mean_hit_rate"], dtype=float)
        ok = np.nonzero(mean >= need)[0]
        if len(ok):
            adv.append(
                f"cache capacity: {cap[ok[0]]:.4g} tokens brings the trace's mean hit rate to "
                f"{mean[ok[0]]:.2f}, out of the valley{_capacity_price(rs, plan, cap[ok[0]])}"
            )
            res.capacity_needed_tokens = float(cap[ok[0]])
        else:
            adv.append(
                f"cache capacity: no capacity in the curve reaches a mean hit rate of {need:.2f} "
                f"(best {mean.max():.2f})"
            )
        res.capacity_advice = [
            {"capacity_tokens": float(c), "mean_hit_rate": float(m)}
            for c, m in zip(cap, mean, strict=False)
        ]


def capacity_price(rs: ResolvedScenario, capacity_tokens: float) -> tuple[str, float, float] | None:
    """``(tier, GB, USD/h)`` per P node of holding ``capacity_tokens`` of the scenario's KV in
    the first tier of its ``cache:`` section (None without one)."""
    section = rs.scenario.cache
    if section is None or not section.tiers or not rs.caches:
        return None
    from pddplan.deployment import model_numbers

    spec = rs.caches[section.tiers[0].profile]
    gb = capacity_tokens * model_numbers(rs.model).kv_bytes_per_token / units.gb_to_bytes(1.0)
    return spec.name, gb, gb * spec.price.usd_per_gb_hour_amortized


def _capacity_price(rs: ResolvedScenario, plan: Plan, capacity_tokens: float) -> str:
    """The advice's price of a capacity: per P node in the first cache tier, and for the
    plan's P nodes ('' without a ``cache:`` section)."""
    got = capacity_price(rs, capacity_tokens)
    if got is None or not math.isfinite(capacity_tokens):
        return ""
    tier, gb, usd = got
    n = plan.prefill.instances
    return (
        f"; in {tier}: {gb:.4g} GB per P node at {usd:.4g} $/h, {usd * n:.4g} $/h for the "
        f"plan's {n} P nodes"
    )


def _price_without_valley(res: BathtubResult, revenue: Revenue, tolerance: float) -> float | None:
    grid = np.array([p.hit_rate for p in res.points])
    cost = np.array([p.cost_usd for p in res.points])

    def has_valley(frac: float) -> bool:
        rv = revenue.model_copy(update={"cached_input_price_fraction": frac})
        y = revenue_usd(rv, res.input_tokens, grid, res.output_tokens) / cost
        return bool(vmath.find_valleys(grid, y, tolerance=tolerance))

    # the fraction nearest to today's price at which no valley is left
    fracs = np.linspace(0.0, 1.0, 101)
    free = [float(f) for f in fracs if not has_valley(float(f))]
    if not free:
        return None
    now = revenue.cached_input_price_fraction
    return min(free, key=lambda f: abs(f - now))


def curve_rows(res: BathtubResult) -> list[dict[str, Any]]:
    return [
        {
            "hit_rate": p.hit_rate,
            "prefill_s": p.prefill_s,
            "prefill_tokens_per_s": p.prefill_tokens_per_s,
            "cost_usd": p.cost_usd,
            "revenue_usd": p.revenue_usd,
            "requests_per_usd": p.requests_per_usd,
            "revenue_per_cost": p.revenue_per_cost,
            "reprovisioned_bcr_requests_per_usd": p.reprovisioned_bcr_requests_per_usd,
            "reprovisioned_revenue_per_cost": p.reprovisioned_revenue_per_cost,
            "reprovisioned_rate_rps": p.reprovisioned_rate_rps,
            "reprovisioned_cost_usd_per_hour": p.reprovisioned_cost_usd_per_hour,
        }
        for p in res.points
    ]
