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

from pddplan import units
from pddplan.deployment import Instance
from pddplan.robust.evaluate import Config
from pddplan.solver import DecodeSizing, Plan, PrefillSizing, Solver
from pddplan.solver.plan import Route, build_plan
from pddplan.solver.problem import instance_key


@dataclass(frozen=True)
class PointConfig:
    """A configuration with its sizings and cost at the point estimate."""

    cfg: Config
    cost_usd_per_hour: float
    prefill: PrefillSizing
    md: DecodeSizing
    rld: DecodeSizing | None
    ttft_s: tuple[float, float, float]


def point_config(plan: Plan) -> Config:
    """The configuration and counts of a solved plan."""
    pb = plan.problem
    modes = pb.handover_modes if pb.topology.relay else ("one-shot",)
    mode = plan.handover if plan.handover in modes else modes[0]
    p, n_p = plan.roles["P"]  # type: ignore[misc]
    m, n_m = plan.roles["MD"]  # type: ignore[misc]
    rld = plan.roles.get("RLD")
    return Config(
        p=instance_key(p),
        rld=instance_key(rld[0]) if rld else None,
        md=instance_key(m),
        routing=plan.routing,
        mode=mode,
        base=(n_p, rld[1] if rld else 0, n_m),
    )


def enumerate_configs(solver: Solver, rate: float, limit: int = 64) -> list[PointConfig]:
    """Every configuration the search would size at ``rate``, with its point-estimate counts
    (the solver's own sizings, slot-wait bound included) and its cost (the plan builder's price,
    inventory included), cheapest first; at most ``limit``."""
    pb = solver.pb
    modes = pb.handover_modes if pb.topology.relay else ("one-shot",)
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
        for mode in modes if relays else modes[:1]:
            out.extend(_route_configs(solver, rate, route, mode, p_sized))
    out.sort(key=lambda c: (c.cost_usd_per_hour, tuple(reversed(c.ttft_s))))
    return out[:limit]


def _route_configs(
    solver: Solver,
    rate: float,
    route: Route,
    mode: str,
    p_sized: list[tuple[Instance, PrefillSizing]],
) -> list[PointConfig]:
    """The configurations of one route and hand-over mode: every prefill option with every
    (MD, RLD) pair the solver sizes (:meth:`Solver.decode_pairs`)."""
    pb = solver.pb
    out: list[PointConfig] = []
    for p, ps in p_sized:
        for m, md, rld, (stall, rld_tokens, extra) in solver.decode_pairs(rate, route, mode):
            plan = build_plan(
                pb,
                rate_rps=rate,
                route=route,
                mode=mode,
                prefill=(p, ps),
                md=(m, md),
                rld=rld,
                md_stall_s=stall,
                rld_tokens=rld_tokens,
                rld_extra_s=extra,
            )
            r, rs = rld if rld is not None else (None, None)
            cfg = Config(
                p=instance_key(p),
                rld=instance_key(r) if r is not None else None,
                md=instance_key(m),
                routing=route.routing,
                mode=mode,
                base=(ps.instances, rs.instances if rs else 0, md.instances),
            )
            out.append(PointConfig(cfg, plan.cost_usd_per_hour, ps, md, rs, ps.ttft_s))
    return out


@dataclass(frozen=True)
class CountChoice:
    counts: tuple[int, int, int]
    probability: float
    expected_cost_usd_per_hour: float


def cheapest_counts(
    needs: np.ndarray,
    cost: Callable[[tuple[int, int, int]], float],
    confidence: float,
    fits: Callable[[tuple[int, int, int]], bool] = lambda _c: True,
) -> CountChoice | None:
    """Counts of least expected cost that cover at least ``ceil(confidence N)`` samples.

    Parameters
    ----------
    needs : (N, 3) least P, RLD, MD counts per sample (inf: no count serves it).
    cost : [USD/h] expected cost of a (P, RLD, MD) count triple (line included); it grows with
        each count (owned chips first, then rented or bought ones).
    confidence : the probability to reach, in (0, 1].
    fits : whether a count triple is within the inventory limits.
    """
    n = needs.shape[0]
    k = max(1, units.whole_count(confidence * n))
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
            c = cost(counts)
            if best is not None and c >= best.expected_cost_usd_per_hour - 1e-9:
                continue
            if not fits(counts):
                continue
            prob = float(np.mean((r_p <= n_p) & (r_r <= n_r) & (r_m <= n_m)))
            best = CountChoice(counts, prob, c)
    return best


def coverage(needs: np.ndarray, counts: tuple[int, int, int]) -> np.ndarray:
    """Per sample: whether the counts cover its needs [bool]."""
    c = np.asarray(counts, dtype=float)
    return np.all(needs <= c[None, :], axis=1)
