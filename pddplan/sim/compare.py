"""Closed-form predictions for a simulated fleet, the side-by-side table, and a regime warning.

The closed forms are the solver's own (``Solver.route``, ``ttft_offsets``, ``ttft_at``,
``ttft_by_pipeline``, ``decode_load``), evaluated for the simulated fleet at the simulated
rate, so a fleet read from a plan file or run at another rate is compared like for like.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pddplan.sim.engine import SimResult
from pddplan.sim.plan import SimPlan
from pddplan.solver import DecodeSizing, Plan, PrefillSizing, Problem, Solver

#: Gap above which a simulated figure is flagged as disagreeing with its closed form [%].
GAP_FLAG_PCT = 10.0


def closed_form_plan(problem: Problem, splan: SimPlan, rate_rps: float) -> Plan:
    """The solver's :class:`~pddplan.solver.Plan` figures for a fixed fleet at ``rate_rps``.

    When ``splan`` came from a solved plan at the same rate, that plan is returned as is.
    """
    if splan.plan is not None and math.isclose(splan.plan.rate_rps, rate_rps, rel_tol=1e-12):
        return splan.plan
    solver = Solver(problem)
    route = solver.route(rate_rps, splan.threshold)
    p = splan.roles["P"]
    offs, wts, _ = solver.ttft_offsets(p.instance, route)
    q, att, util = solver.ttft_at(p.instance, p.instances, rate_rps, offs, wts)
    prefill = PrefillSizing(p.instances, util, q, att, "given fleet")
    md = splan.roles["MD"]
    mode = splan.handover if splan.handover in ("one-shot", "catch-up") else "one-shot"
    ctx, md_time, _ext, stall, rld_time, rld_tokens, extra = solver.decode_load(
        route, md.instance, mode
    )
    w = problem.classes.weight
    share = float(np.sum(w * rld_tokens) / np.sum(w * problem.classes.output_tokens))
    decode: dict[str, DecodeSizing | None] = {
        "MD": DecodeSizing(
            md.instances, md.batch_per_instance, "given", float(np.sum(rate_rps * w * md_time)), ctx
        ),
        "RLD": None,
    }
    roles: dict[str, Any] = {"P": (p.instance, p.instances), "MD": (md.instance, md.instances)}
    rr = splan.rld
    roles["RLD"] = (rr.instance, rr.instances) if rr is not None else None
    if rr is not None:
        decode["RLD"] = DecodeSizing(
            rr.instances, rr.batch_per_instance, "given", float(np.sum(rate_rps * w * rld_time)), 0.0
        )
    role_cost = {
        k: (v[0].price_usd_per_hour * v[1] if v is not None else 0.0) for k, v in roles.items()
    }
    link_cost = problem.wan.price_usd_per_hour if problem.topology.cross_dc else 0.0
    return Plan(
        topology=problem.topology.name,
        rate_rps=rate_rps,
        threshold=splan.threshold,
        handover=splan.handover,
        roles=roles,
        cost_usd_per_hour=sum(role_cost.values()) + link_cost,
        role_cost_usd_per_hour=role_cost,
        link_cost_usd_per_hour=link_cost,
        prefill=prefill,
        decode=decode,
        route=route,
        md_stall_s=float(np.max(stall)) if len(stall) else 0.0,
        rld_extra_s=extra,
        rld_output_token_share=share,
        meets_sla=all(
            qi <= ti * (1 + 1e-9) for qi, ti in zip(q, problem.ttft_targets_s, strict=True)
        ),
        binding=[],
    )


def closed_form_figures(problem: Problem, plan: Plan) -> dict[str, float]:
    """The closed forms' figures, keyed like :attr:`SimResult.figures`."""
    solver = Solver(problem)
    by_pipe = solver.ttft_by_pipeline(plan)
    wait = by_pipe.pop("_wait")
    out: dict[str, float] = {
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
        "md_mean_slot_wait_s": 0.0,
    }
    for name, row in by_pipe.items():
        out[f"pipeline:{name}:share"] = row["share"]
        for p in (50, 90, 99):
            out[f"pipeline:{name}:ttft_p{p}_s"] = row[f"p{p}"]
    return out


#: Rows of the comparison, in order, with what the closed form's number means.
COMPARED: tuple[tuple[str, str], ...] = (
    ("ttft_p50_s", "prediction"),
    ("ttft_p90_s", "prediction"),
    ("ttft_p99_s", "prediction"),
    ("prefill_utilization", "prediction"),
    ("prefill_wait_probability", "prediction"),
    ("prefill_mean_wait_s", "prediction"),
    ("link_utilization", "prediction"),
    ("rld_output_token_share", "prediction"),
    ("tpot_mean_s", "SLA bound (decode sized so that no step exceeds it)"),
    ("md_stall_max_s", "prediction"),
    ("md_mean_slot_wait_s", "assumed zero"),
)


def gap_pct(closed: float, simulated: float) -> float:
    """``100 (simulated - closed) / closed`` [%]; nan when the closed form is 0 or not finite."""
    if not (math.isfinite(closed) and math.isfinite(simulated)) or closed == 0:
        return math.nan
    return 100.0 * (simulated - closed) / closed


def comparison_rows(closed: dict[str, float], res: SimResult) -> list[dict[str, Any]]:
    """Rows ``metric, closed_form, simulated, gap_pct, flag, closed_form_is``."""
    sim = res.figures
    keys = [k for k, _ in COMPARED]
    what = dict(COMPARED)
    pipes = sorted({k.split(":")[1] for k in list(closed) + list(sim) if k.startswith("pipeline:")})
    for name in pipes:
        keys += [f"pipeline:{name}:ttft_p{p}_s" for p in (50, 90, 99)]
    rows = []
    for k in keys:
        c = closed.get(k, math.nan)
        s = sim.get(k, math.nan)
        if not (math.isfinite(c) or math.isfinite(s)):
            continue
        g = gap_pct(c, s)
        flag = "" if not math.isfinite(g) else ("> 10%" if abs(g) > GAP_FLAG_PCT else "")
        rows.append(
            {
                "metric": k.replace("pipeline:", "").replace(":", " "),
                "closed_form": c,
                "simulated": s,
                "gap_pct": g,
                "flag": flag,
                "closed_form_is": what.get(k, "prediction"),
            }
        )
    return rows


# ------------------------------------------------------------------------- regime warning


@dataclass(frozen=True)
class RegimeLimits:
    """Where the closed forms were seen to stay within 10% of the simulation (docs/simulate.md).

    Attributes
    ----------
    max_prefill_utilization : [-] above it the prefill queue's exponential-tail approximation
        was not checked (the planner caps prefill utilization at 0.85 by default).
    max_link_utilization : [-] above it the WAN's processor-sharing slowdown ``1 / (1 - rho)``
        makes P-MD transfer times long and variable, and TTFT percentiles of transfer-bound
        classes depart from the mean-times-jitter model.
    max_relay_wait_over_decode : [-] when the relay wait of relayed requests approaches their
        decode time on RLD, the relay turns into P-RLD in practice and the eager-token count (and
        RLD's token share) departs from ``ceil(wait / tpot)``.
    min_wait_probability : [-] below it the wait term is too small to matter; not a limit, kept
        so the caller can ignore lightly loaded pools.
    """

    max_prefill_utilization: float = 0.8
    max_link_utilization: float = 0.7
    max_relay_wait_over_decode: float = 0.5
    min_wait_probability: float = 0.0


DEFAULT_LIMITS = RegimeLimits()


def closed_form_regime_warning(
    prefill_utilization: float,
    link_utilization: float,
    prefill_service_scv: float,
    prefill_instances: int,
    relay_wait_s: float = 0.0,
    rld_decode_s: float = math.inf,
    limits: RegimeLimits = DEFAULT_LIMITS,
) -> list[str]:
    """Warnings for a plan whose figures sit where the closed forms were seen to drift.

    A pure function of numbers, for ``pddplan solve`` to call on its plan.

    Parameters
    ----------
    prefill_utilization : [-] ``lambda E[S] / n_P``.
    link_utilization : [-] the WAN line's offered load.
    prefill_service_scv : [-] squared coefficient of variation of the prefill time.
    prefill_instances : [-] ``n_P``.
    relay_wait_s : [s] mean relay wait of relayed requests (0 without relay).
    rld_decode_s : [s] their full decode time on RLD (output tokens times the step time).
    limits : the thresholds (see :class:`RegimeLimits`).

    Returns
    -------
    One sentence per regime the plan is in; empty when none applies.
    """
    out: list[str] = []
    if prefill_utilization > limits.max_prefill_utilization:
        out.append(
            f"prefill utilization {prefill_utilization:.2f} is above "
            f"{limits.max_prefill_utilization:.2f}: the TTFT percentiles come from an "
            "exponential-tail approximation of the prefill queue that was not validated there; "
            "check with `pddplan simulate`"
        )
    if link_utilization > limits.max_link_utilization:
        out.append(
            f"line utilization {link_utilization:.2f} is above {limits.max_link_utilization:.2f}: "
            "transfer times under processor sharing vary far more than the closed forms' "
            "mean-times-jitter model, so TTFT p90/p99 of transfer-bound requests can be off by "
            "more than 10%; check with `pddplan simulate`"
        )
    if relay_wait_s > 0 and math.isfinite(rld_decode_s) and rld_decode_s > 0:
        ratio = relay_wait_s / rld_decode_s
        if ratio > limits.max_relay_wait_over_decode:
            out.append(
                f"relayed requests wait {relay_wait_s:.3g} s for their KV, {ratio:.0%} of their "
                "decode time on RLD: RLD generates most of their tokens, and RLD's token share "
                "and load exceed the closed forms' estimate; check with `pddplan simulate`"
            )
    _ = (prefill_service_scv, prefill_instances)
    return out


def regime_warning_for_plan(problem: Problem, plan: Plan) -> list[str]:
    """:func:`closed_form_regime_warning` with its numbers taken from a solved plan."""
    solver = Solver(problem)
    p_inst, n_p = plan.roles["P"]  # type: ignore[misc]
    pre = solver.prefill_s(p_inst)
    w = problem.classes.weight
    mean_s = float(np.sum(w * pre))
    scv = float(np.sum(w * pre**2) / mean_s**2 - 1.0) if mean_s > 0 else 0.0
    relay = plan.route.relay
    wait = 0.0
    decode_s = math.inf
    rr = plan.roles.get("RLD")
    if np.any(relay) and rr is not None:
        wr = w * relay
        wait = float(np.sum(wr * plan.route.relay_wait_s) / np.sum(wr))
        out_tok = float(np.sum(wr * problem.classes.output_tokens) / np.sum(wr))
        ctx = float(np.sum(wr * problem.classes.input_tokens) / np.sum(wr))
        dec = plan.decode.get("RLD")
        b = max(dec.batch_per_instance if dec is not None else 1, 1)
        decode_s = out_tok * float(rr[0].decode_step_s(b, ctx))
    return closed_form_regime_warning(
        plan.prefill.utilization, plan.route.link_utilization, scv, n_p, wait, decode_s
    )


def with_rate(splan: SimPlan, rate_rps: float) -> SimPlan:
    """The same fleet at another rate (its solved plan, if any, no longer applies)."""
    if math.isclose(rate_rps, splan.rate_rps, rel_tol=1e-12):
        return splan
    return replace(splan, rate_rps=rate_rps, plan=None)
