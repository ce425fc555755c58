"""Fixed fleets evaluated on sampled scenarios: SLA, cost, goodput, and the counts each needs.

A *configuration* is everything about a plan but its counts: P, RLD and MD chips and instance
sizes, the routing threshold and the hand-over mode. On one sample (a scenario with sampled
inputs, built into a problem of the point plan's topology) a fleet of a configuration meets
every SLA target when :func:`pddplan.solver.fleet.check_fleet` says so, with each decode pool
stepping at the largest batch that meets the TPOT target on the sampled chip.

Each condition of ``check_fleet`` depends on one count only, and is monotone in it, so a sample
asks for a least count per role (:func:`requirements`); a fleet meets the sample exactly when
each of its counts is at least that. The search over counts then needs no more model calls.
Requirements never go below the configuration's counts at the point estimate (the solver's
sizing rules, utilization caps included), so with no uncertainty the robust plan is the
solver's plan.

Tasks (:func:`evaluate_chunk`) are pure functions of their arguments and run on any executor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from pddplan.deployment import Instance
from pddplan.errors import OverrideError, ProfileError
from pddplan.io import physics_disk
from pddplan.io.loader import Registry, YamlDoc
from pddplan.io.overrides import ScenarioSource
from pddplan.solver import DecodeSizing, Plan, PrefillSizing, Solver, Topology, build_problem, sla
from pddplan.solver.fleet import (
    GOODPUT_RTOL,
    FleetCheck,
    check_fleet,
    decode_need,
    goodput_rps,
    line_overloaded,
    slots_ok,
)
from pddplan.solver.plan import build_plan, changed, chips_cost_usd_per_hour
from pddplan.solver.problem import InstanceKey, Pricing, instance_key, rental_usd_per_chip_hour
from pddplan.spec.scenario import ResolvedScenario
from pddplan.timing import Routing

#: A sample that needs more than this many times a configuration's P count is not served.
P_COUNT_FACTOR = 8

Key = InstanceKey  # (chip, chips per instance, layout label)


@dataclass(frozen=True)
class Config:
    """A plan without its counts, and its counts at the point estimate (``base``: P, RLD, MD)."""

    p: Key
    rld: Key | None
    md: Key
    routing: Routing
    mode: str
    base: tuple[int, int, int]

    @property
    def ident(self) -> tuple[Any, ...]:
        return (self.p, self.rld, self.md, self.routing, self.mode)

    def chips(self, counts: tuple[int, int, int]) -> dict[str, int]:
        """Chips per kind of this configuration's fleet with ``counts`` (P, RLD, MD)."""
        out: dict[str, int] = {}
        for key, n in zip((self.p, self.rld, self.md), counts, strict=True):
            if key is not None and n > 0:
                out[key[0]] = out.get(key[0], 0) + n * key[1]
        return out


@dataclass(frozen=True)
class Setup:
    """What every task needs: the scenario's parsed document and how to build a problem."""

    doc: YamlDoc
    registry: Registry
    overrides: dict[str, Any]
    topology: Topology
    max_chips: dict[str, int]
    token: str
    goodput_rtol: float = GOODPUT_RTOL
    #: with ``cache:`` tiers, the point's scenario at the capacity chosen and the scenario as
    #: resolved before (:func:`pddplan.tiers.sized_like`): every sample keeps that capacity
    sized: tuple[ResolvedScenario, ResolvedScenario] | None = None


@dataclass
class SampleRecord:
    """One sample's figures: the point plan's (when asked) and each configuration's needs."""

    index: int
    meets: bool = False
    margin: float = 0.0
    cost_usd_per_hour: float = math.nan
    goodput_rps: float = 0.0
    kv_transfer_max_s: float = math.nan
    needs: list[tuple[float, float, float]] = field(default_factory=list)
    prices: SamplePrices | None = None


@dataclass(frozen=True)
class SamplePrices:
    """What chips and the line cost on one sample: each kind's rental [USD/(chip h)], the
    inventory's pricing (:class:`~pddplan.solver.problem.Pricing`, None without one) and the
    line [USD/h]. Costs are linear in these, so the expected cost of a fleet is its cost at the
    mean prices (:func:`mean_prices`)."""

    rental_usd_per_chip_hour: dict[str, float]
    pricing: Pricing | None
    line_usd_per_hour: float
    #: one P node's prefix cache (:meth:`~pddplan.solver.problem.Problem.
    #: cache_cost_usd_per_hour` of one node; 0 without ``cache:`` tiers)
    cache_usd_per_p_node_hour: float = 0.0

    def fleet_cost_usd_per_hour(self, cfg: Config, counts: tuple[int, int, int]) -> float:
        """Cost of ``cfg``'s fleet with ``counts`` (P, RLD, MD instances): the solver's price
        of chips, plus the line and the P nodes' cache [USD/h], as the plan builder prices it."""
        chips = cfg.chips(counts)
        cost = chips_cost_usd_per_hour(chips, self.rental_usd_per_chip_hour, self.pricing)
        return cost + self.line_usd_per_hour + counts[0] * self.cache_usd_per_p_node_hour


def mean_prices(prices: list[SamplePrices]) -> SamplePrices:
    """The samples' mean prices: a fleet's cost at them is its expected cost (costs are
    linear in prices for fixed counts)."""

    def mean(dicts: list[dict[str, float]]) -> dict[str, float]:
        return {k: float(np.mean([d[k] for d in dicts])) for k in dicts[0]}

    first = prices[0].pricing
    pricing = None
    if first is not None:
        pricings = [p.pricing for p in prices if p.pricing is not None]
        pricing = replace(
            first,
            owned_usd_per_chip_hour=mean([p.owned_usd_per_chip_hour for p in pricings]),
            extra_usd_per_chip_hour=mean([p.extra_usd_per_chip_hour for p in pricings]),
            rental_usd_per_chip_hour=mean([p.rental_usd_per_chip_hour for p in pricings]),
        )
    return SamplePrices(
        mean([p.rental_usd_per_chip_hour for p in prices]),
        pricing,
        float(np.mean([p.line_usd_per_hour for p in prices])),
        float(np.mean([p.cache_usd_per_p_node_hour for p in prices])),
    )


# ----------------------------------------------------------------- per-process sample cache

_SOURCES: dict[str, ScenarioSource] = {}
_SOLVERS: dict[tuple[str, int], tuple[Solver, dict[str, float]]] = {}


def sample_solver(
    setup: Setup, index: int, overrides: dict[str, Any]
) -> tuple[Solver, dict[str, float]]:
    """The solver on sample ``index`` and the rental of each of the sample's chips
    [USD/(chip h)] (:func:`~pddplan.solver.problem.rental_usd_per_chip_hour`: every chip the
    scenario loaded, also one no option of the sample fits), built once per process and run."""
    key = (setup.token, index)
    if key in _SOLVERS:
        return _SOLVERS[key]
    if setup.token not in _SOURCES:
        _SOURCES.clear()
        _SOLVERS.clear()
        _SOURCES[setup.token] = ScenarioSource(doc=setup.doc, registry=setup.registry)
    src = _SOURCES[setup.token]
    try:
        rs = src.resolve({**setup.overrides, **overrides})
    except OverrideError as exc:  # each input's range is valid alone (check_inputs), not all
        # the draws of the key blamed and of its siblings (a rule across keys: sla's order)
        parent = exc.key.rpartition(".")[0]
        near = {k: v for k, v in overrides.items() if k.rpartition(".")[0] == parent}
        drawn = ", ".join(f"{k}={v:.6g}" for k, v in (near or overrides).items())
        raise ProfileError(
            f"sample {index} draws {drawn}, which the scenario does not allow together: "
            f"{exc.detail} (each input's range is allowed alone; narrow them so that every "
            "combination is)",
            file=src.file,
            key="uncertainty.inputs",
        ) from None
    if setup.sized is not None:
        from pddplan.tiers import sized_like

        rs = sized_like(rs, *setup.sized)
    pb = build_problem(rs, setup.topology)
    pb.max_chips = {**pb.max_chips, **setup.max_chips}
    solver = Solver(pb)
    _SOLVERS[key] = (solver, rental_usd_per_chip_hour(rs))
    return _SOLVERS[key]


def instance(solver: Solver, role: str, key: Key | None) -> Instance | None:
    if key is None:
        return None
    for inst in solver.pb.options[role]:
        if instance_key(inst) == key:
            return inst
    return None


def config_instances(
    solver: Solver, cfg: Config
) -> tuple[Instance, Instance, Instance | None] | None:
    """``cfg``'s (P, MD, RLD) instances on the solver's problem; None when one no longer fits."""
    p = instance(solver, "P", cfg.p)
    m = instance(solver, "MD", cfg.md)
    r = instance(solver, "RLD", cfg.rld)
    if p is None or m is None or (cfg.rld is not None and r is None):
        return None
    return p, m, r


def fleet_plan(
    solver: Solver, cfg: Config, counts: tuple[int, int, int], rate: float
) -> Plan | None:
    """The fleet (``cfg`` with ``counts``) on the solver's problem, its decode pools stepping at
    the largest batch that meets TPOT there, built and priced by the solver's plan builder
    (:func:`~pddplan.solver.plan.build_plan`: the inventory's prices); None when a pool cannot
    meet TPOT at any batch or an instance no longer fits."""
    pb = solver.pb
    found = config_instances(solver, cfg)
    if found is None:
        return None
    p, m, r = found
    route = solver.route(rate, cfg.routing)
    ctx_m = solver.md_context_tokens()
    b_m = m.max_batch_at_tpot(ctx_m, pb.tpot_s)
    if b_m < 1:
        return None
    n_p, n_r, n_m = counts
    rld: tuple[Instance, DecodeSizing] | None = None
    if r is not None and n_r > 0:
        ctx_r = solver.rld_context_tokens(route)
        b_r = r.max_batch_at_tpot(ctx_r, pb.tpot_s)
        if b_r < 1:
            return None
        rld = (r, DecodeSizing(n_r, int(b_r), "TPOT", 0.0, ctx_r))
    none = np.zeros(len(pb.classes))
    plan = build_plan(
        pb,
        rate_rps=rate,
        route=route,
        mode=cfg.mode,
        prefill=(p, PrefillSizing(n_p, 0.0, (0.0, 0.0, 0.0), 0.0, "fixed fleet", True)),
        md=(m, DecodeSizing(n_m, int(b_m), "TPOT", 0.0, ctx_m)),
        rld=rld,
        md_stall_s=none,
        rld_tokens=none,
        rld_extra_s=none,
    )
    return changed(plan, binding=[], handover_inputs=None)


def fleet_margin(solver: Solver, plan: Plan, rate: float) -> tuple[bool, float, FleetCheck]:
    """Whether the fleet meets every SLA target at ``rate`` (check_fleet), its margin: the
    smallest of target / TTFT percentile, instances / instances needed per decode pool and
    1 / line utilization (at least 1 when it meets them), and the check itself."""
    fc = check_fleet(solver, plan, rate)
    pb = solver.pb
    ratios = [
        t / q if q > 0 else math.inf for t, q in zip(pb.ttft_targets_s, fc.ttft_s, strict=True)
    ]
    md_role = plan.roles["MD"]
    n_m = md_role[1] if md_role is not None else 0
    if fc.md_slots_needed > 0:
        ratios.append(n_m / fc.md_slots_needed)
    rld_role = plan.roles.get("RLD")
    n_r = rld_role[1] if rld_role is not None else 0
    if fc.rld_slots_needed > 0:
        ratios.append(n_r / fc.rld_slots_needed)
    elif not fc.meets_decode and n_r == 0:
        ratios.append(0.0)
    if pb.topology.cross_dc and fc.link_utilization > 0:
        ratios.append(1.0 / fc.link_utilization)
    return fc.meets_sla, float(min(ratios)), fc


def _count_with_slots(pb: Any, need: float, batch: int) -> float:
    """:func:`~pddplan.solver.sla.least_count` raised until the pool meets the slot-wait bound
    (:func:`pddplan.solver.fleet.slots_ok`, the same test :func:`check_fleet` applies)."""
    n = sla.least_count(need)
    if not math.isfinite(n):
        return n
    while not slots_ok(pb, need * batch, int(n), batch):
        n += 1.0
    return n


def requirements(
    solver: Solver, cfg: Config, rate: float, memo: dict[Any, bool] | None = None
) -> tuple[float, float, float]:
    """The least (P, RLD, MD) counts, each at least ``cfg.base``'s, with which ``cfg``'s fleet
    meets every SLA target on this sample (inf: no count does).

    ``memo``: the TTFT checks of one sample, shared by configurations with the same P option
    and routing (they give the same answer; only the work is saved)."""
    inf = (math.inf, math.inf, math.inf)
    pb = solver.pb
    found = config_instances(solver, cfg)
    if found is None:
        return inf
    p, m, r = found
    route = solver.route(rate, cfg.routing)
    if line_overloaded(pb, route.link_utilization):
        return inf
    w = pb.classes.weight
    _ctx, md_time, ext_busy, _stall, rld_time, _tok, _extra = solver.decode_load(route, m, cfg.mode)
    b_m = m.max_batch_at_tpot(solver.md_context_tokens(), pb.tpot_s)
    if b_m < 1:
        return inf
    md_need = decode_need(pb, rate, md_time, b_m, ext_busy)
    n_m = max(float(cfg.base[2]), _count_with_slots(pb, md_need, b_m))
    if r is not None:
        b_r = r.max_batch_at_tpot(solver.rld_context_tokens(route), pb.tpot_s)
        if b_r < 1:
            return inf
        n_r = max(
            float(cfg.base[1]),
            _count_with_slots(pb, decode_need(pb, rate, rld_time, b_r), b_r),
        )
    elif float(np.add.reduce(w * rld_time)) > 0:
        return inf  # the routing relays requests but the configuration has no RLD
    else:
        n_r = 0.0
    n_p = _least_prefill(solver, p, rate, route, cfg.base[0], memo, (cfg.p, cfg.routing))
    if not math.isfinite(n_p):
        return inf
    return (n_p, n_r, n_m)


def by_routing(solver: Solver, configs: list[Config], rate: float) -> None:
    """Memoize what :func:`requirements` reads route by route for ``configs`` at ``rate``, for
    every routing among them whose route is not memoized yet, in one set of array calls a
    step, as the search does (``Solver._by_routing``; the rules are elementwise over the
    request classes, so each value is the one its own call gives): the routes
    (:meth:`~pddplan.solver.sizing.Sizing.fresh_routes`), each P option's TTFT offsets on them
    (:meth:`~pddplan.solver.sizing.Sizing.ttft_offsets_by_routing`) and, in each hand-over
    mode, the MD options' decode loads there
    (:meth:`~pddplan.solver.sizing.Sizing.decode_loads_by_routing`). Only the configurations
    whose instances fit the sample; nothing more where the line is overloaded
    (:func:`requirements` then needs nothing of the routes). And each RLD option's batch at
    the RLD context of every routing it is used on, together
    (:meth:`~pddplan.deployment.chips.Instance.max_batches_at_tpot`: a decode-step call a
    stage for every context its chips have not met yet)."""
    found = [(c, config_instances(solver, c)) for c in configs]
    used = [(c, f) for c, f in found if f is not None]
    routings = list(dict.fromkeys(c.routing for c, _ in used))
    fresh = solver.fresh_routes(rate, routings)
    if fresh is None:
        return
    tls, routes = fresh
    if line_overloaded(solver.pb, tls.link_utilization):
        return
    row = {r.routing: i for i, r in enumerate(routes)}
    for p in {id(f[0]): f[0] for _, f in used}.values():  # instances are not hashable
        solver.ttft_offsets_by_routing(p, tls, routes)
    # each RLD option's batch at the RLD context of every routing it is used on, together
    tpot_s = solver.pb.tpot_s
    for r in {id(f[2]): f[2] for _, f in used if f[2] is not None}.values():
        contexts_tokens = [
            solver.rld_context_tokens(routes[row[c.routing]])
            for c, f in used
            if f[2] is r and c.routing in row
        ]
        r.max_batches_at_tpot(contexts_tokens, tpot_s)
    for mode in dict.fromkeys(c.mode for c, _ in used):
        rows = sorted({row[c.routing] for c, _ in used if c.mode == mode and c.routing in row})
        mds = list({id(f[1]): f[1] for c, f in used if c.mode == mode}.values())
        if rows:
            solver.decode_loads_by_routing(tls, routes, rows, mds, mode)


def _least_prefill(
    solver: Solver,
    p: Instance,
    rate: float,
    route: Any,
    base: int,
    memo: dict[Any, bool] | None = None,
    key: Any = None,
) -> float:
    cache: dict[Any, bool] = memo if memo is not None else {}
    offs_wts: list[Any] = []

    def ok(n: int) -> bool:
        k = (key, n) if key is not None else None
        if k is not None and k in cache:
            return cache[k]
        if not offs_wts:
            offs, wts, _ = solver.ttft_offsets(p, route)
            offs_wts.extend((offs, wts))
        res = solver.ttft_meets(p, n, rate, offs_wts[0], offs_wts[1])
        if k is not None:
            cache[k] = res
        return res

    lo = max(base, 1)
    if ok(lo):
        return float(lo)
    cap = max(lo * P_COUNT_FACTOR, lo + 32)
    hi = lo * 2
    while not ok(hi):
        lo, hi = hi, hi * 2
        if lo >= cap:
            return math.inf
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return float(hi)


def evaluate_chunk(
    chunk: list[tuple[int, dict[str, Any]]],
    *,
    setup: Setup,
    point: tuple[Config, tuple[int, int, int]] | None,
    configs: list[Config],
) -> list[SampleRecord]:
    """Evaluate samples (index, overrides): the point fleet's SLA, margin, cost and goodput (when
    ``point`` is given), each configuration's least counts, and the instances' prices."""
    physics_disk.transient()  # each sample's chips are its own: none is kept for a later run
    out: list[SampleRecord] = []
    for index, ov in chunk:
        solver, rental = sample_solver(setup, index, ov)
        pb = solver.pb
        rate = float(pb_rate(solver, setup, ov))
        rec = SampleRecord(index)
        by_routing(solver, configs, rate)  # the point fleet's routing among them
        rec.prices = SamplePrices(
            rental, pb.pricing, pb.line_cost_usd_per_hour, pb.cache_cost_usd_per_hour(1)
        )
        if point is not None:
            cfg, counts = point
            plan = fleet_plan(solver, cfg, counts, rate)
            if plan is not None:
                rec.meets, rec.margin, checked = fleet_margin(solver, plan, rate)
                rec.cost_usd_per_hour = plan.cost_usd_per_hour
                rec.goodput_rps = goodput_rps(solver, plan, setup.goodput_rtol, first=checked)
                wan = plan.route.wan_s[pb.on_decode_side] if pb.topology.cross_dc else np.zeros(0)
                rec.kv_transfer_max_s = float(np.max(wan)) if wan.size else 0.0
            else:
                rec.cost_usd_per_hour = rec.prices.fleet_cost_usd_per_hour(cfg, counts)
        memo: dict[Any, bool] = {}
        rec.needs = [requirements(solver, c, rate, memo) for c in configs]
        out.append(rec)
    return out


def pb_rate(solver: Solver, setup: Setup, ov: dict[str, Any]) -> float:
    """The sample's target rate [requests/s]."""
    if "rate_rps" in ov:
        return float(ov["rate_rps"])
    if "rate_rps" in setup.overrides:
        return float(setup.overrides["rate_rps"])
    src = _SOURCES[setup.token]
    rate = src.base.scenario.rate_rps
    assert rate is not None
    return float(rate)
