"""The robust plan: the cheapest fleet that meets every SLA target with probability >= P.

Every configuration (chips, instance sizes, routing, hand-over mode) the solver would consider
at the point estimate is a candidate, with its point-estimate counts (the solver's sizing rules)
as the least it may have. On the samples (the same samples for every candidate: common random
numbers) each candidate gets a least count per role per sample (:mod:`.evaluate`); a fleet meets
a sample when each count covers that sample's. :func:`cheapest_counts` finds the counts of
least expected cost covering at least ``ceil(P N)`` samples: for each P count and RLD count among
the values samples ask for, the MD count is the ``k``-th smallest among the samples those two
cover.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pddplan.deployment import Instance
from pddplan.robust.evaluate import Config
from pddplan.solver import DecodeSizing, Plan, PrefillSizing, Solver


@dataclass(frozen=True)
class PointConfig:
    """A configuration with its sizings and cost at the point estimate."""

    cfg: Config
    cost_usd_per_hour: float
    prefill: PrefillSizing
    md: DecodeSizing
    rld: DecodeSizing | None
    ttft_s: tuple[float, float, float]


def _key(inst: Instance) -> tuple[str, int]:
    return (inst.chip.name, inst.tensor_parallel)


def point_config(plan: Plan) -> Config:
    """The configuration and counts of a solved plan."""
    pb = plan.problem
    modes = pb.handover_modes if pb.topology.relay else ("one-shot",)
    mode = plan.handover if plan.handover in modes else modes[0]
    p, n_p = plan.roles["P"]  # type: ignore[misc]
    m, n_m = plan.roles["MD"]  # type: ignore[misc]
    rld = plan.roles.get("RLD")
    return Config(
        p=_key(p),
        rld=_key(rld[0]) if rld else None,
        md=_key(m),
        routing=plan.routing,
        mode=mode,
        base=(n_p, rld[1] if rld else 0, n_m),
    )


def enumerate_configs(solver: Solver, rate: float, limit: int = 64) -> list[PointConfig]:
    """Every configuration the search would size at ``rate``, with its point-estimate counts
    (the solver's own sizing rules), cheapest first; at most ``limit``."""
    pb = solver.pb
    w = pb.classes.weight
    modes = pb.handover_modes if pb.topology.relay else ("one-shot",)
    line = pb.wan.price_usd_per_hour if pb.topology.cross_dc else 0.0
    out: list[PointConfig] = []
    for routing in pb.routings:
        route = solver.route(rate, routing)
        if pb.topology.cross_dc and route.link_utilization > pb.link_utilization_cap:
            continue
        p_ok = [(p, solver.size_prefill(p, rate, route)) for p in pb.options["P"]]
        p_sized = [(p, s) for p, s in p_ok if s is not None]
        if not p_sized:
            continue
        relays = bool(np.any(route.relay))
        has_rld = pb.topology.relay and bool(np.any(route.relay | ~pb.on_decode_side))
        for mode in modes if relays else modes[:1]:
            for m in pb.options["MD"]:
                ctx, md_time, ext, _stall, rld_time, _tok, _extra = solver.decode_load(
                    route, m, mode
                )
                md = solver.size_decode(m, rate, md_time, ctx, float(np.sum(w * ext)))
                if md is None:
                    continue
                rlds: list[tuple[Instance | None, DecodeSizing | None]] = [(None, None)]
                if has_rld:
                    rlds = []
                    ctx_r = solver.rld_context_tokens(route)
                    conc = float(np.sum(rate * w * rld_time))
                    for r_inst in pb.options["RLD"]:
                        b_r = r_inst.max_batch_at_tpot(ctx_r, pb.tpot_s)
                        if b_r < 1:
                            continue
                        n_r = max(math.ceil(conc / b_r - 1e-9), 1)
                        bound = "memory" if b_r >= r_inst.max_batch_memory(ctx_r) else "TPOT"
                        rlds.append((r_inst, DecodeSizing(n_r, int(b_r), bound, conc, ctx_r)))
                for p, ps in p_sized:
                    for r, rs in rlds:
                        cost = ps.instances * p.price_usd_per_hour
                        cost += md.instances * m.price_usd_per_hour + line
                        if r is not None and rs is not None:
                            cost += rs.instances * r.price_usd_per_hour
                        cfg = Config(
                            p=_key(p),
                            rld=_key(r) if r is not None else None,
                            md=_key(m),
                            routing=routing,
                            mode=mode,
                            base=(ps.instances, rs.instances if rs else 0, md.instances),
                        )
                        out.append(PointConfig(cfg, cost, ps, md, rs, ps.ttft_s))
    out.sort(key=lambda c: (c.cost_usd_per_hour, tuple(reversed(c.ttft_s))))
    return out[:limit]


@dataclass(frozen=True)
class CountChoice:
    counts: tuple[int, int, int]
    probability: float
    expected_cost_usd_per_hour: float


def cheapest_counts(
    needs: np.ndarray,
    unit_cost: tuple[float, float, float],
    fixed_cost: float,
    confidence: float,
    fits: Callable[[tuple[int, int, int]], bool] = lambda _c: True,
) -> CountChoice | None:
    """Counts of least expected cost that cover at least ``ceil(confidence N)`` samples.

    Parameters
    ----------
    needs : (N, 3) least P, RLD, MD counts per sample (inf: no count serves it).
    unit_cost : [USD/h] expected price of one P, RLD and MD instance.
    fixed_cost : [USD/h] expected cost that does not scale with counts (the line).
    confidence : the probability to reach, in (0, 1].
    fits : whether a count triple is within the inventory limits.
    """
    n = needs.shape[0]
    k = max(1, math.ceil(confidence * n - 1e-9))
    r_p, r_r, r_m = needs[:, 0], needs[:, 1], needs[:, 2]
    best: CountChoice | None = None
    for n_p in np.unique(r_p[np.isfinite(r_p)]):
        mask_p = r_p <= n_p
        if int(mask_p.sum()) < k:
            continue
        for n_r in np.unique(r_r[mask_p & np.isfinite(r_r)]):
            mask = mask_p & (r_r <= n_r)
            if int(mask.sum()) < k:
                continue
            n_m = float(np.sort(r_m[mask])[k - 1])
            if not math.isfinite(n_m):
                continue
            counts = (int(n_p), int(n_r), int(n_m))
            cost = (
                counts[0] * unit_cost[0]
                + counts[1] * unit_cost[1]
                + counts[2] * unit_cost[2]
                + fixed_cost
            )
            if best is not None and cost >= best.expected_cost_usd_per_hour - 1e-9:
                continue
            if not fits(counts):
                continue
            prob = float(np.mean((r_p <= n_p) & (r_r <= n_r) & (r_m <= n_m)))
            best = CountChoice(counts, prob, cost)
    return best


def coverage(needs: np.ndarray, counts: tuple[int, int, int]) -> np.ndarray:
    """Per sample: whether the counts cover its needs [bool]."""
    c = np.asarray(counts, dtype=float)
    return np.all(needs <= c[None, :], axis=1)
