"""Where relay starts to pay: the line bandwidth and the hit-rate shift at which it would.

Relay (RLD decoding beside P while the KV cache crosses the line) pays when transfers are long
against the TTFT targets: on a slower line, or when more requests hit the prefix cache less and
so ship more KV. When the plan ``solve`` chooses has no relay, :func:`relay_edges` walks each of
these two levers away from the scenario's value, in the direction that favours relay, until the
best plan with RLD has at least the BCR of the best plan without (the no-relay baseline at the
same rate), then narrows the crossing by bisection.

The ratio is a step function of each lever (instance counts are whole), so the crossing is
located to within a factor (bandwidth) or a step (shift) given by the search's precision, and
the walk stops at the edge of the lever's range or when neither plan can be sized any longer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from pddplan.errors import InfeasibleError
from pddplan.solver.modes import PlanSearch, baseline_at_rate, with_goodput
from pddplan.solver.problem import NO_RELAY, PDD, PDD_UNFILTERED, RELAY_ONLY, build_problem
from pddplan.solver.sla import TTFT_TARGET_KEYS
from pddplan.spec.base import MIN_GBIT_PER_S
from pddplan.spec.scenario import ResolvedScenario

#: Bandwidths tried below the scenario's: the line's rate divided by these factors [-].
BANDWIDTH_DIVISORS = (2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
#: Hit-rate shifts tried (added to every request's hit rate, clipped to [0, 1]) [-].
HIT_SHIFTS = (-0.02, -0.05, -0.1, -0.2, -0.35, -0.5)
#: Factors the TTFT targets (p50, p90, p99 alike) are multiplied by [-].
TTFT_FACTORS = (0.75, 0.5, 0.35, 0.25, 0.15, 0.1)
#: Bisection steps between the last lever value where relay does not pay and the first where it
#: does.
BISECTION_STEPS = 3
#: Narrowest line the walk tries [Gbit/s] (the scenario schema's lower bound).
MIN_BANDWIDTH_GBIT_PER_S = MIN_GBIT_PER_S


@dataclass(frozen=True)
class RelayEdge:
    """Where one lever makes relay pay at the plan's rate."""

    lever: str  # the override path: "link.bandwidth_gbit_per_s" or "workload.hit_rate.shift"
    current: float  # the scenario's value
    value: float | None  # where relay starts to pay; None when not within the walk
    searched_to: float  # how far the walk went
    bcr_ratio: float | None  # relaying / not relaying BCR at ``value`` (None when not found)
    evaluations: int
    unsizable: float | None = None  # first value tried at which neither plan can be sized


def relay_bcr_ratio(
    rs: ResolvedScenario, rate: float, max_chips: dict[str, int] | None = None
) -> float | None:
    """BCR of the best plan with RLD over the no-relay baseline's, both at ``rate``.

    ``inf`` when only the relaying plan meets the SLA; ``None`` when neither can be sized (the
    line cannot carry the rate); 0 when no plan with RLD can be sized.
    """

    pb = build_problem(rs, PDD)
    problems = [replace(pb, routing=RELAY_ONLY)]
    if pb.topology.anomalous_filter:
        problems.append(replace(build_problem(rs, PDD_UNFILTERED), routing=RELAY_ONLY))
    for p in problems:
        if max_chips:
            p.max_chips = {**p.max_chips, **max_chips}
    try:
        relaying = with_goodput(PlanSearch(problems).solve_rate(rate))
    except InfeasibleError:
        relaying = None
    try:
        without = baseline_at_rate(rs, NO_RELAY, rate, max_chips=max_chips)
    except InfeasibleError:
        without = None
    if relaying is None:
        return None if without is None else 0.0
    if without is None or without.bcr_requests_per_usd <= 0:
        return math.inf if relaying.bcr_requests_per_usd > 0 else None
    return relaying.bcr_requests_per_usd / without.bcr_requests_per_usd


def _walk(
    lever: str,
    current: float,
    steps: list[float],
    at: Callable[[float], ResolvedScenario],
    rate: float,
    max_chips: dict[str, int] | None,
    log_scale: bool,
) -> RelayEdge:
    n = 0

    def pays(x: float) -> tuple[bool, float | None]:
        nonlocal n
        n += 1
        r = relay_bcr_ratio(at(x), rate, max_chips)
        return (r is not None and r >= 1.0), r

    last_no = current
    reached = current
    for x in steps:
        ok, r = pays(x)
        if r is None:  # neither plan can be sized at this point
            return RelayEdge(lever, current, None, reached, None, n, x)
        reached = x
        if not ok:
            last_no = x
            continue
        hit, hit_ratio = x, r
        a, b = last_no, x
        for _ in range(BISECTION_STEPS):
            m = math.sqrt(a * b) if log_scale else (a + b) / 2
            ok_m, r_m = pays(m)
            if ok_m and r_m is not None:
                b, hit, hit_ratio = m, m, r_m
            else:
                a = m
        return RelayEdge(lever, current, hit, reached, hit_ratio, n)
    return RelayEdge(lever, current, None, reached, None, n)


def relay_edges(
    rs: ResolvedScenario, rate: float, max_chips: dict[str, int] | None = None
) -> list[RelayEdge]:
    """The line bandwidth and the hit-rate shift at which relay would pay at ``rate``."""
    bw0 = float(rs.link.bandwidth_gbit_per_s)
    bws = [max(bw0 / d, MIN_BANDWIDTH_GBIT_PER_S) for d in BANDWIDTH_DIVISORS]

    def at_bandwidth(x: float) -> ResolvedScenario:
        return replace(rs, link=rs.link.model_copy(update={"bandwidth_gbit_per_s": x}))

    hr = rs.workload.hit_rate
    s0 = float(hr.shift)
    shifts = [s0 + d for d in HIT_SHIFTS if s0 + d >= -1.0]

    def at_shift(x: float) -> ResolvedScenario:
        w = rs.workload.model_copy(update={"hit_rate": hr.model_copy(update={"shift": x})})
        return replace(rs, workload=w)

    sla = rs.scenario.sla
    ttft_keys = [k for k in TTFT_TARGET_KEYS if getattr(sla, k)]

    def at_ttft(f: float) -> ResolvedScenario:
        tight = sla.model_copy(update={k: getattr(sla, k) * f for k in ttft_keys})
        return replace(rs, scenario=rs.scenario.model_copy(update={"sla": tight}))

    out = [
        _walk("link.bandwidth_gbit_per_s", bw0, bws, at_bandwidth, rate, max_chips, True),
        _walk("workload.hit_rate.shift", s0, shifts, at_shift, rate, max_chips, False),
    ]
    if ttft_keys:
        out.append(_walk("sla.ttft_scale", 1.0, list(TTFT_FACTORS), at_ttft, rate, max_chips, True))
    return out


def describe(edges: list[RelayEdge]) -> str:
    """One sentence for the solve note: the levers that make relay pay, then those that do not."""
    pays: list[str] = []
    nots: list[str] = []
    for e in edges:
        bw = e.lever == "link.bandwidth_gbit_per_s"
        ttft = e.lever.startswith("sla.ttft")

        def show(x: float, bw: bool = bw, ttft: bool = ttft, e: RelayEdge = e) -> str:
            if bw:
                return f"a {x:.3g} Gbit/s line"
            if ttft:
                return f"TTFT targets {x:.2g}x the scenario's"
            return f"hit rates shifted by {x - e.current:+.3g}"

        if e.value is not None and e.bcr_ratio is not None:
            if math.isfinite(e.bcr_ratio):
                pays.append(f"{show(e.value)} (BCR {e.bcr_ratio:.3g}x the plan without RLD)")
            else:
                pays.append(f"{show(e.value)} (only the plan with RLD meets the SLA there)")
        elif e.unsizable is not None:
            nots.append(f"{show(e.unsizable)} cannot serve the rate at all")
        else:
            nots.append(f"not even with {show(e.searched_to)}")
    head = (
        "relay would pay with " + "; or ".join(pays) if pays else "relay pays with no lever tried"
    )
    return head + (" (" + "; ".join(nots) + ")" if nots else "")
