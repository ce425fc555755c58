"""Closed-form predictions for a simulated fleet, the side-by-side table, and a regime warning.

The closed forms are the solver's own (``Solver.route``, ``ttft_offsets``, ``ttft_at``,
``ttft_by_pipeline``, ``decode_load``), evaluated for the simulated fleet at the simulated
rate, so a fleet read from a plan file or run at another rate is compared like for like.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from pddplan import timing
from pddplan.models import queueing
from pddplan.sim.figures import PERCENTILES, PipelineFigures, SimFigures
from pddplan.solver import DecodeSizing, Plan, Problem, Solver
from pddplan.solver.plan import build_plan

if TYPE_CHECKING:
    from pddplan.sim.engine import SimResult
    from pddplan.sim.plan import SimPlan

#: Gap above which a simulated figure is flagged as disagreeing with its closed form [%].
GAP_FLAG_PCT = 10.0
#: Two figures closer than this, in their own unit (1 ns of a time, 1e-9 of a share), agree:
#: their gap is 0, not a relative gap of a closed form that is a rounding residue of 0 (an
#: Erlang C slot wait of 6e-15 s against a simulated 0 read as -100%).
GAP_ABSOLUTE_FLOOR = 1e-9


def closed_form_plan(
    problem: Problem, splan: SimPlan, rate_rps: float, handover: str | None = None
) -> Plan:
    """The solver's :class:`~pddplan.solver.Plan` figures for a fixed fleet at ``rate_rps``,
    its hand-over ``handover`` (``one-shot`` or ``catch-up``; the plan's where None).

    When ``splan`` came from a solved plan at the same rate and hand-over, that plan is
    returned as is.
    """
    mode = handover or splan.handover
    if (
        splan.plan is not None
        and math.isclose(splan.plan.rate_rps, rate_rps, rel_tol=1e-12)
        and mode == splan.plan.handover
    ):
        return splan.plan
    solver = Solver(problem)
    route = solver.route(rate_rps, splan.routing)
    p = splan.roles["P"]
    offs, wts, _ = solver.ttft_offsets(p.instance, route)
    # at TPOT steps, for now
    prefill = solver.prefill_sizing(p.instance, p.instances, rate_rps, offs, wts, "given fleet")
    md = splan.roles["MD"]
    mode = timing.handover_mode(mode)
    ctx, md_time, _ext, stall, rld_time, rld_tokens, extra = solver.decode_load(
        route, md.instance, mode
    )
    w = problem.classes.weight
    md_sizing = DecodeSizing(
        md.instances, md.batch_per_instance, "given", float(np.sum(rate_rps * w * md_time)), ctx
    )
    rr = splan.rld
    rld = None
    if rr is not None:
        rld_sizing = DecodeSizing(
            rr.instances,
            rr.batch_per_instance,
            "given",
            float(np.sum(rate_rps * w * rld_time)),
            solver.rld_context_tokens(route),
        )
        rld = (rr.instance, rld_sizing)
    plan = build_plan(
        problem,
        rate_rps=rate_rps,
        route=route,
        mode=mode,
        prefill=(p.instance, prefill),
        md=(md.instance, md_sizing),
        rld=rld,
        md_stall_s=stall,
        rld_tokens=rld_tokens,
        rld_extra_s=extra,
    )
    # the first token and the hand-over at the working decode steps, as a solved plan reports
    return replace(solver.finalize(plan), handover=mode, binding=[])


def slot_waits(problem: Problem, plan: Plan) -> dict[str, tuple[float, float]]:
    """Per decode pool, ``(P(wait), mean wait [s])`` for a slot, slots taken as M/M/c servers.

    Notes
    -----
    ``c = n b`` slots; the offered load is the pool's closed-form concurrency, MD's scaled from
    the TPOT target to its working step (:meth:`Sizing.first_steps`). ``P(wait)`` is Erlang C
    and the mean wait ``C T / (c - a)``, with ``T = a / lambda`` the mean slot time (Erlang's
    M/M/c; continuous batching holds a slot for a sequence's whole decode). The closed forms
    do not add this wait to TTFT: a pool where it matters is flagged by
    :func:`regime_warning_for_plan`.
    """
    solver = Solver(problem)
    md_step, _ = solver.first_steps(plan)
    out: dict[str, tuple[float, float]] = {}
    for role in ("MD", "RLD"):
        r = plan.roles.get(role)
        dec = plan.decode.get(role)
        if r is None or dec is None or dec.batch_per_instance <= 0 or r[1] <= 0:
            continue
        a = dec.concurrency
        if role == "MD" and md_step is not None:
            a *= md_step / problem.tpot_s
        c = r[1] * dec.batch_per_instance
        if a <= 0:
            out[role] = (0.0, 0.0)
            continue
        if a >= c:
            out[role] = (1.0, math.inf)
            continue
        pw = queueing.erlang_c(c, a)
        hold_s = a / plan.rate_rps if plan.rate_rps > 0 else 0.0
        out[role] = (pw, pw * hold_s / (c - a))
    return out


def closed_form_figures(problem: Problem, plan: Plan) -> SimFigures:
    """The closed forms' figures, named like the simulation's (:class:`SimFigures`)."""
    solver = Solver(problem)
    waits = slot_waits(problem, plan)
    by_pipe = solver.ttft_by_pipeline(plan)
    wait = by_pipe.pop("_wait")
    scalars: dict[str, float] = {
        "ttft_p50_s": plan.prefill.ttft_s[0],
        "ttft_p90_s": plan.prefill.ttft_s[1],
        "ttft_p99_s": plan.prefill.ttft_s[2],
        "prefill_utilization": plan.prefill.utilization,
        "prefill_mean_wait_s": wait["mean_wait_s"],
        "prefill_wait_probability": wait["wait_probability"],
        "link_utilization": plan.route.link_utilization,
        "rld_output_token_share": plan.rld_output_token_share,
        "tpot_mean_s": problem.tpot_s,
        "md_stall_max_s": plan.md_stall_s,
        "md_mean_slot_wait_s": waits.get("MD", (0.0, 0.0))[1],
        "rld_mean_slot_wait_s": waits.get("RLD", (0.0, 0.0))[1],
    }
    pipes = {
        name: PipelineFigures(row["share"], {p: row[f"p{p}"] for p in PERCENTILES})
        for name, row in by_pipe.items()
    }
    return SimFigures(scalars, {}, pipes)


#: Rows of the comparison, in order, with what the closed form's number means.
COMPARED: tuple[tuple[str, str], ...] = (
    ("ttft_p50_s", "prediction"),
    ("ttft_p90_s", "prediction"),
    ("ttft_p99_s", "prediction"),
    ("prefill_utilization", "prediction"),
    ("prefill_wait_probability", "prediction"),
    ("prefill_mean_wait_s", "prediction"),
    ("link_utilization", "prediction (bytes carried over the line's capacity)"),
    ("line_busy_fraction", "simulated only (share of time a flow is on the line)"),
    ("rld_output_token_share", "prediction"),
    ("tpot_mean_s", "SLA bound (decode sized so that no step exceeds it)"),
    ("md_stall_max_s", "prediction"),
    ("md_mean_slot_wait_s", "Erlang C estimate (not added to TTFT)"),
    ("rld_mean_slot_wait_s", "Erlang C estimate (not added to TTFT)"),
)


def gap_pct(closed: float, simulated: float) -> float:
    """``100 (simulated - closed) / closed`` [%]; 0 when the two are within
    :data:`GAP_ABSOLUTE_FLOOR` of each other; nan when the closed form is 0 or not finite."""
    if not (math.isfinite(closed) and math.isfinite(simulated)) or closed == 0:
        return math.nan
    if abs(simulated - closed) <= GAP_ABSOLUTE_FLOOR:
        return 0.0
    return 100.0 * (simulated - closed) / closed


def comparison_rows(closed: SimFigures, res: SimResult | SimFigures) -> list[dict[str, Any]]:
    """Rows ``metric, closed_form, simulated, simulated_ci95, gap_pct, flag, closed_form_is``.

    ``simulated_ci95`` is the batch-means 95% half-width of a simulated percentile (blank for
    other figures). ``flag`` is ``> 10%`` when the gap exceeds :data:`GAP_FLAG_PCT` and the whole
    confidence interval lies beyond it, ``> 10% (noise)`` when the interval still reaches back
    within 10%.
    """
    sim = res if isinstance(res, SimFigures) else SimFigures.from_engine(res.figures)
    # (metric label, closed form, simulated, simulated CI, what the closed form is)
    items: list[tuple[str, float, float, float, str]] = [
        (k, closed.get(k), sim.get(k), sim.ci95.get(k, math.nan), what) for k, what in COMPARED
    ]
    for name in sorted(set(closed.pipelines) | set(sim.pipelines)):
        c_pipe = closed.pipelines.get(name)
        s_pipe = sim.pipelines.get(name)
        for p in PERCENTILES:
            items.append(
                (
                    f"{name} ttft_p{p}_s",
                    c_pipe.ttft_s[p] if c_pipe else math.nan,
                    s_pipe.ttft_s[p] if s_pipe else math.nan,
                    s_pipe.ci95_s(p) if s_pipe else math.nan,
                    "prediction",
                )
            )
    rows = []
    for label, c, s, ci, what in items:
        if not (math.isfinite(c) or math.isfinite(s)):
            continue
        g = gap_pct(c, s)
        flag = ""
        if math.isfinite(g) and abs(g) > GAP_FLAG_PCT:
            ci_pct = 100.0 * ci / abs(c) if math.isfinite(ci) else 0.0
            flag = "> 10%" if abs(g) - ci_pct > GAP_FLAG_PCT else "> 10% (noise)"
        rows.append(
            {
                "metric": label,
                "closed_form": c,
                "simulated": s,
                "simulated_ci95": ci if math.isfinite(ci) else None,
                "gap_pct": g,
                "flag": flag,
                "closed_form_is": what,
            }
        )
    return rows


# ------------------------------------------------------------------------- regime warning


@dataclass(frozen=True)
class RegimeLimits:
    """Where the closed forms were measured to stay within 10% of the simulation.

    Thresholds from the study in ``docs/simulate.md`` (bundled scenarios, prefill utilization
    0.1-0.85, line utilization 0.09-0.78, 4 x 200,000 simulated requests per point).

    Attributes
    ----------
    max_link_utilization : [-] above it, when P-MD requests carry long transfers (see
        ``min_pmd_transfer_s``), the closed forms' TTFT p90/p99 of P-MD requests were 10-28%
        below the simulation (0.38: +10%, 0.47: +14-21%, 0.63: +18-28%, 0.78: +27%): the
        transfer time is taken as its processor-sharing mean times the network jitter, but under
        sharing it varies much more than that, both ways: on the second grid of
        ``benchmarks/bench_closed_form_grid.py`` (kept apart from the first) a chat plan on a
        10 Gbit/s line at 0.77 had p90/p99 13-22% *below* the prediction, and chat on 10G in
        the first grid p50 8-11% below and p99 11% above; the warning says "either way". (The
        thresholds come from the measurements above, not from a model of the spread; the
        second grid checks them on plans they were not written against.)
    max_link_utilization_any : [-] above it the line warning applies whatever the P-MD
        transfers: on the closed-form grid, with short P-MD flows only, the 10G plan at line
        utilization 0.49 had TTFT p90 10.5% above the prediction (+-3%) and the chat workload
        on 10G at 0.44-0.54 had p99 11-13% above it (processor sharing spreads a flow's time
        more than the line's jitter alone; not in the closed forms).
    min_pmd_transfer_s : [s] the line warning applies when the longest mean transfer of a P-MD
        class exceeds this; plans that relay every low-hit class leave P-MD only short flows,
        and their P-MD tails were within 5% up to line utilization 0.78.
    wait_probability_error : [-] the accuracy of Erlang C as the prefill pool's probability of
        waiting (an M/G/c pool, where Erlang C is exact only for exponential service): in the
        seeded FCFS simulations of ``tests/unit/models/test_queueing.py`` (service mixtures and
        deterministic service, 2 and 4 servers, load 0.5-0.8) it was within 0.021 of the
        simulated probability (the test allows 0.03); on the default plan 0.489 against 0.496
        (100,000 simulated requests).
    max_onset_spread : [-] a TTFT percentile at the onset of the prefill wait is one that moves
        by more than this share (half its range) when the wait probability moves by
        ``wait_probability_error`` either way: the percentile then sits where the no-wait
        requests give way to the waiting ones, and the error of Erlang C alone can put it more
        than 10% off. (The former rule, ``|1 - p - P(wait)| < 0.05``, stood for this without
        the distribution; the 20-26% p50 gaps it was written for came from the shape of the
        conditional wait, a two-moment gamma with too little mass at short waits, not from
        Erlang C's wait probability, which was right; the conditional wait is now the first of
        the ``c`` residual completions plus an exponential remainder,
        :func:`pddplan.models.queueing.wait_distribution`.)
    min_rld_step_over_tpot : [-] when RLD's decode step at its working batch is shorter than
        this share of the TPOT target, RLD emits more eager tokens than ``ceil(wait / tpot)``:
        RLD's token share (and its load) was 2.3-4.4x the closed form's on every relaying plan.
    max_rld_wait_probability : [-] above it relayed requests queue for an RLD slot, which the
        closed forms do not count: with 1 x 7 RLD slots at a closed-form concurrency of 4.1
        (Erlang C 0.15) P-RLD-MD TTFT p90/p99 were 22-26% above the prediction; at Erlang C
        0.014 and below they were within 4%.
    max_md_wait_probability : [-] above it (Erlang C of MD's slots at its working-step
        concurrency, :func:`slot_waits`) P-MD requests queue for an MD slot, which the closed
        forms do not add to TTFT. On the closed-form grid (docs/simulate.md) every point with
        MD's Erlang C of 0.33 or more had a TTFT percentile 15% to 50x above the prediction
        (chat at 20 req/s: one MD instance, 405 slots, collapses); at 0.05 and below every
        point was within 10% on MD's account.
    max_prefill_utilization : [-] validated up to the planner's default cap.
    """

    max_link_utilization: float = 0.35
    min_pmd_transfer_s: float = 0.5
    max_link_utilization_any: float = 0.4
    wait_probability_error: float = 0.03
    max_onset_spread: float = 0.1
    min_rld_step_over_tpot: float = 0.8
    max_rld_wait_probability: float = 0.05
    max_md_wait_probability: float = 0.1
    max_prefill_utilization: float = 0.85


DEFAULT_LIMITS = RegimeLimits()


def closed_form_regime_warning(
    prefill_utilization: float,
    link_utilization: float,
    ttft_p50_s: float,
    relayed_share: float = 0.0,
    rld_step_s: float = math.inf,
    tpot_s: float = math.inf,
    rld_wait_probability: float = 0.0,
    pmd_max_transfer_s: float = math.inf,
    limits: RegimeLimits = DEFAULT_LIMITS,
    md_wait_probability: float = 0.0,
    md_mean_wait_s: float = 0.0,
    prefill_wait_probability: float = 0.0,
    onset_spread: tuple[float, ...] = (),
) -> list[str]:
    """Warnings for a plan whose figures sit where the closed forms and the simulation disagree
    by more than 10%.

    A pure function of numbers, for ``pddplan solve`` to call on its plan (see
    :func:`regime_warning_for_plan` for the numbers of a solved plan).

    Parameters
    ----------
    prefill_utilization : [-] ``lambda E[S] / n_P``.
    link_utilization : [-] the WAN line's offered load.
    ttft_p50_s : [s] the closed forms' TTFT p50.
    relayed_share : [-] share of requests on P-RLD-MD.
    rld_step_s : [s] RLD's decode step at its working batch and context.
    tpot_s : [s] the TPOT target.
    rld_wait_probability : [-] Erlang C of RLD's slots (``n_R b_R`` servers) at the closed
        forms' RLD concurrency: the chance that a relayed request finds RLD full.
    pmd_max_transfer_s : [s] the longest mean WAN transfer of a P-MD class (``inf`` when not
        known: the line warning then depends on the utilization alone).
    limits : the thresholds (see :class:`RegimeLimits`).
    md_wait_probability : [-] Erlang C of MD's slots at its working-step concurrency.
    md_mean_wait_s : [s] the M/M/c mean wait for an MD slot (:func:`slot_waits`).
    prefill_wait_probability : [-] Erlang C of the prefill pool.
    onset_spread : [-] per TTFT percentile (p50, p90, p99), half the relative range it moves
        over when the prefill wait probability moves by ``limits.wait_probability_error``
        either way (:func:`onset_spread`).

    Returns
    -------
    One sentence per regime the plan is in; empty when none applies.
    """
    warnings = (
        _line_warning(link_utilization, pmd_max_transfer_s, limits),
        _onset_warning(prefill_wait_probability, onset_spread, limits),
        _rld_step_warning(relayed_share, rld_step_s, tpot_s, limits),
        _rld_wait_warning(rld_wait_probability, limits),
        _md_wait_warning(md_wait_probability, md_mean_wait_s, limits),
        _prefill_warning(prefill_utilization, limits),
    )
    return [w for w in warnings if w is not None]


def _line_warning(
    link_utilization: float, pmd_max_transfer_s: float, limits: RegimeLimits
) -> str | None:
    if link_utilization > limits.max_link_utilization_any or (
        link_utilization > limits.max_link_utilization
        and pmd_max_transfer_s > limits.min_pmd_transfer_s
    ):
        return (
            f"line utilization {link_utilization:.2f} is above "
            f"{limits.max_link_utilization:.2f}: TTFT p50/p90/p99 may be 10-30% off either way "
            "(the closed forms take each transfer at its processor-sharing mean times the "
            "jitter; on a shared line a transfer that finds the line free is faster and one "
            "that meets many flows slower, which moves low percentiles down and high ones up); "
            "check with `pddplan simulate`"
        )
    return None


def _onset_warning(
    prefill_wait_probability: float, onset_spread: tuple[float, ...], limits: RegimeLimits
) -> str | None:
    at_onset = [
        (p, s)
        for p, s in zip(PERCENTILES, onset_spread, strict=False)
        if s > limits.max_onset_spread
    ]
    if not at_onset:
        return None
    names = "/".join(f"p{p}" for p, _ in at_onset)
    worst = max(s for _, s in at_onset)
    return (
        f"TTFT {names} sits at the onset of the prefill wait (P(wait) "
        f"{prefill_wait_probability:.2f}): an error of {limits.wait_probability_error:.2f} in "
        f"the wait probability moves it by up to {100 * worst:.0f}%, so it may differ from "
        "the prediction by that much either way; check with `pddplan simulate`"
    )


def onset_spread(
    problem: Problem, plan: Plan, limits: RegimeLimits = DEFAULT_LIMITS
) -> tuple[float, ...]:
    """Half the relative range of each TTFT percentile (p50, p90, p99) of a plan when the
    prefill wait probability moves by ``limits.wait_probability_error`` either way [-].

    The same quantiles as the plan reports (:meth:`Solver.reported_ttft`'s offsets and
    conditional wait), with only the wait probability moved.
    """
    solver = Solver(problem)
    p_inst, n_p = plan.roles["P"]  # type: ignore[misc]
    wait = solver.prefill_wait(p_inst, n_p, plan.rate_rps)
    if wait.conditional is None:
        return (0.0, 0.0, 0.0)
    offs, wts, _ = solver.ttft_offsets(p_inst, plan.route, *solver.first_steps(plan))
    pw, dp = wait.wait_probability, limits.wait_probability_error
    at = [
        queueing.mixture_quantiles(
            [p / 100 for p in PERCENTILES], offs, wts, x, conditional=wait.conditional
        )
        for x in (pw, max(pw - dp, 0.0), min(pw + dp, 1.0))
    ]
    return tuple(
        (hi - lo) / (2.0 * mid) if mid > 0 else 0.0 for mid, lo, hi in zip(*at, strict=True)
    )


def _rld_step_warning(
    relayed_share: float, rld_step_s: float, tpot_s: float, limits: RegimeLimits
) -> str | None:
    if relayed_share > 0 and rld_step_s < limits.min_rld_step_over_tpot * tpot_s:
        return (
            f"RLD decodes a step in {rld_step_s * 1e3:.3g} ms, not the {tpot_s * 1e3:.3g} ms TPOT "
            "target: relayed requests hand more eager tokens to MD than MD was sized for, so MD's "
            "extend stalls are longer than the plan's md_stall figure (RLD's token share is "
            "reported at its working step); check with `pddplan simulate`"
        )
    return None


def _rld_wait_warning(rld_wait_probability: float, limits: RegimeLimits) -> str | None:
    if rld_wait_probability > limits.max_rld_wait_probability:
        return (
            f"a relayed request finds every RLD slot taken with probability "
            f"{rld_wait_probability:.2f}: its wait for RLD is not in the closed forms, so "
            "P-RLD-MD TTFT p90/p99 may be 20% or more higher than predicted; more RLD slots "
            "remove it; check with `pddplan simulate`"
        )
    return None


def _md_wait_warning(
    md_wait_probability: float, md_mean_wait_s: float, limits: RegimeLimits
) -> str | None:
    if md_wait_probability > limits.max_md_wait_probability:
        return (
            f"a request finds every MD slot taken with probability {md_wait_probability:.2f} "
            f"(mean slot wait about {md_mean_wait_s:.3g} s): that wait is not in the closed "
            "forms, so TTFT of P-MD requests may be far higher than predicted, and MD can "
            "collapse near its slot count; more MD instances remove it; check with "
            "`pddplan simulate`"
        )
    return None


def _prefill_warning(prefill_utilization: float, limits: RegimeLimits) -> str | None:
    if prefill_utilization > limits.max_prefill_utilization:
        return (
            f"prefill utilization {prefill_utilization:.2f} is above "
            f"{limits.max_prefill_utilization:.2f}, where the TTFT percentiles were not "
            "validated against the simulation"
        )
    return None


def regime_warning_for_plan(problem: Problem, plan: Plan) -> list[str]:
    """:func:`closed_form_regime_warning` with its numbers taken from a solved plan."""
    c = problem.classes
    w = c.weight
    relay = plan.route.relay
    relayed = float(np.sum(w * relay))
    solver = Solver(problem)
    rld_step = math.inf
    rld_wait = 0.0
    rr = plan.roles.get("RLD")
    dec = plan.decode.get("RLD")
    if rr is not None and dec is not None and dec.batch_per_instance > 0:
        n_r = max(rr[1], 1)
        rld_wait = queueing.erlang_c(n_r * dec.batch_per_instance, dec.concurrency)
        # RLD's working step, as the plan's first token and hand-over figures read it
        step = solver.first_steps(plan)[1]
        if relayed > 0 and step is not None:
            rld_step = step
    direct = problem.on_decode_side & ~relay
    pmd_transfer = float(np.max(plan.route.wan_s[direct])) if np.any(direct) else 0.0
    md_wait = slot_waits(problem, plan).get("MD", (0.0, 0.0))
    p_inst, n_p = plan.roles["P"]  # type: ignore[misc]
    prefill_pw = solver.prefill_wait(p_inst, n_p, plan.rate_rps).wait_probability
    spread = onset_spread(problem, plan)
    return closed_form_regime_warning(
        plan.prefill.utilization,
        plan.route.link_utilization if problem.topology.cross_dc else 0.0,
        plan.prefill.ttft_s[0],
        relayed,
        rld_step,
        problem.tpot_s,
        rld_wait,
        pmd_transfer,
        md_wait_probability=md_wait[0],
        md_mean_wait_s=md_wait[1],
        prefill_wait_probability=prefill_pw,
        onset_spread=spread,
    )


def with_rate(splan: SimPlan, rate_rps: float) -> SimPlan:
    """The same fleet at another rate (its solved plan, if any, no longer applies)."""
    if math.isclose(rate_rps, splan.rate_rps, rel_tol=1e-12):
        return splan
    return replace(splan, rate_rps=rate_rps, plan=None)


def closed_forms_beside(
    problem: Problem, splan: SimPlan, res: Any, handover: str | None = None
) -> tuple[Any, Any, Any, list[str]]:
    """The closed forms at the simulated rate beside the simulation's figures: ``(closed,
    figures, comparison rows, regime notes)``; the rows are
    :func:`pddplan.sim.compare.comparison_rows` (``metric, closed_form, simulated, gap_pct,
    flag, ...``). The one comparison of ``simulate`` and ``topology --simulate``.

    ``handover``: the hand-over simulated, where it is not the plan's (``one-shot`` or
    ``catch-up``: the closed forms are taken at it; ``adaptive`` has none, so they stay at the
    plan's, and a note says so)."""
    at_rate = with_rate(splan, res.rate_rps)
    closed_mode = handover if handover in timing.HANDOVER_MODES else None
    cf_plan = closed_form_plan(problem, at_rate, res.rate_rps, closed_mode)
    closed = closed_form_figures(problem, cf_plan)
    figures = SimFigures.from_engine(res.figures)
    rows = comparison_rows(closed, figures)
    notes = [
        "closed forms: " + w.replace("; check with `pddplan simulate`", "")
        for w in regime_warning_for_plan(problem, cf_plan)
    ]
    if handover is not None and closed_mode is None:
        notes.append(
            f"closed forms at the plan's hand-over ({cf_plan.handover}): {handover} has none"
        )
    return closed, figures, rows, notes


# ------------------------------------------------------------ judging warnings against gaps
#: Percentiles of TTFT a regime warning can name (the SLA's, as the figures report them).
TTFT_PERCENTILES = PERCENTILES

#: Short names of the regime warnings (a phrase of the warning, its tag, whether it is about
#: TTFT); a warning matching none is tagged ``other`` and taken as about TTFT.
WARNING_TAGS: tuple[tuple[str, str, bool], ...] = (
    ("line utilization", "line", True),
    ("onset of the prefill wait", "onset", True),
    ("RLD decodes a step", "rld-step", False),
    ("every RLD slot", "rld-slot", True),
    ("every MD slot", "md-slot", True),
    ("prefill utilization", "p-util", True),
)


@dataclass(frozen=True)
class WarningTag:
    """What a regime warning says about TTFT.

    Attributes
    ----------
    tag : its short name (:data:`WARNING_TAGS`).
    ttft : whether it is about TTFT.
    percentiles : the TTFT percentiles it names (all of :data:`TTFT_PERCENTILES` when none).
    direction : ``higher`` or ``lower`` (than predicted), or ``either``.
    """

    tag: str
    ttft: bool
    percentiles: frozenset[int]
    direction: str


def warning_tags(warnings: list[str]) -> list[WarningTag]:
    """Each warning's :class:`WarningTag`, read from its sentence."""
    out = []
    for w in warnings:
        tag, ttft = "other", True
        for phrase, t, is_ttft in WARNING_TAGS:
            if phrase in w:
                tag, ttft = t, is_ttft
                break
        named = frozenset(int(p) for p in re.findall(r"\bp(50|90|99)\b", w))
        if "higher than predicted" in w:
            direction = "higher"
        elif "lower than predicted" in w:
            direction = "lower"
        else:  # "either way", or no direction stated
            direction = "either"
        out.append(WarningTag(tag, ttft, named or frozenset(TTFT_PERCENTILES), direction))
    return out


def gap_named(gap_pct_value: float, percentile: int, tags: list[WarningTag]) -> bool:
    """Whether a TTFT warning names ``percentile`` with the direction of its gap
    (``(simulated - closed) / closed`` in percent: positive means higher than predicted)."""
    want = "higher" if gap_pct_value > 0 else "lower"
    return any(
        t.ttft and percentile in t.percentiles and t.direction in (want, "either") for t in tags
    )


def closed_forms_at(
    problem: Problem, plan: Plan, factor: float
) -> tuple[SimPlan, Plan, SimFigures, list[str]]:
    """A solved plan's fleet run at ``factor`` times its rate: the fleet to simulate, the
    closed forms' plan and figures at that rate, and the plan's regime warnings there."""
    from pddplan.sim.plan import SimPlan

    rate = plan.rate_rps * factor
    splan = with_rate(SimPlan.of(plan), rate)
    closed_plan = closed_form_plan(problem, splan, rate)
    closed = closed_form_figures(problem, closed_plan)
    return splan, closed_plan, closed, regime_warning_for_plan(problem, closed_plan)
