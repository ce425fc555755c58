"""The ``solve`` report: plan per role, economics, TTFT per pipeline, baselines, explain rows."""

from __future__ import annotations

from typing import Any

from pddplan.results import Report, Row, Section
from pddplan.solver import Outcome, Plan, Solver, ratio

DATACENTER = {"P": "A", "RLD": "A", "MD": "B"}


def _role_rows(plan: Plan) -> list[Row]:
    rows: list[Row] = []
    for role, v in plan.roles.items():
        dec = plan.decode.get(role) if role != "P" else None
        if v is None:
            continue
        inst, n = v
        dc = DATACENTER[role] if plan.topology != "same-dc" else "A"
        name = (
            role
            if plan.topology == "pdd" or role == "P"
            else "D"
            if plan.topology == "same-dc"
            else role
        )
        rows.append(
            {
                "role": name,
                "datacenter": dc,
                "chip": inst.chip.name,
                "chips_per_instance": inst.tensor_parallel,
                "instances": n,
                "chips": n * inst.tensor_parallel,
                "cost_usd_per_hour": plan.role_cost_usd_per_hour[role],
                "batch_per_instance": dec.batch_per_instance if dec else None,
                "utilization": plan.prefill.utilization if role == "P" else None,
                "bound_by": plan.prefill.bound_by
                if role == "P"
                else (dec.batch_bound_by if dec else None),
            }
        )
    if plan.link_cost_usd_per_hour:
        rows.append(
            {"role": "line", "datacenter": "A-B", "cost_usd_per_hour": plan.link_cost_usd_per_hour}
        )
    return rows


def _figures(plan: Plan) -> dict[str, Any]:
    return {
        "rate_rps": plan.rate_rps,
        "goodput_rps": plan.goodput_rps,
        "cost_usd_per_hour": plan.cost_usd_per_hour,
        "bcr_requests_per_usd": plan.bcr_requests_per_usd,
        "chips": plan.chips_of(),
        "ttft_s": dict(zip(("p50", "p90", "p99"), plan.prefill.ttft_s, strict=True)),
        "meets_sla": plan.meets_sla,
    }


def _roles_json(plan: Plan) -> dict[str, Any]:
    roles: dict[str, Any] = {}
    for role, v in plan.roles.items():
        if v is None:
            roles[role] = None
            continue
        inst, n = v
        dec = plan.decode.get(role) if role != "P" else None
        roles[role] = {
            "chip": inst.chip.name,
            "chips_per_instance": inst.tensor_parallel,
            "instances": n,
            "datacenter": DATACENTER[role] if plan.topology != "same-dc" else "A",
            "cost_usd_per_hour": plan.role_cost_usd_per_hour[role],
            "batch_per_instance": dec.batch_per_instance if dec else None,
        }
    return roles


def _plan_json(plan: Plan, solver: Solver) -> dict[str, Any]:
    roles = _roles_json(plan)
    by_pipe = solver.ttft_by_pipeline(plan)
    wait = by_pipe.pop("_wait")
    return {
        **_figures(plan),
        "roles": roles,
        "line_cost_usd_per_hour": plan.link_cost_usd_per_hour,
        "link_utilization": plan.route.link_utilization,
        "rld_output_token_share": plan.rld_output_token_share,
        "routing_threshold_hit_rate": plan.routing.hit_rate,
        "handover": plan.handover,
        "md_stall_s": plan.md_stall_s,
        "ttft_by_pipeline_s": by_pipe,
        "prefill_mean_wait_s": wait["mean_wait_s"],
        "binding": plan.binding,
    }


def explain_rows(plan: Plan, solver: Solver) -> list[Row]:
    pb = solver.pb
    c = pb.classes
    r = plan.route
    p_inst, n = plan.roles["P"]  # type: ignore[misc]
    pre = solver.prefill_s(p_inst)
    mean_wait = solver.ttft_by_pipeline(plan)["_wait"]["mean_wait_s"]
    rows = []
    for k in range(len(c)):
        if not pb.on_decode_side[k]:
            route = "P-RLD (anomalous)"
        elif r.relay[k]:
            route = "P-RLD-MD"
        else:
            route = "P-MD" if pb.topology.cross_dc else "P-D"
        first = pb.tpot_s
        if route == "P-MD" or route == "P-D":
            ttft = mean_wait + pre[k] + r.wan_s[k] + first
        else:
            ttft = mean_wait + pre[k] + min(r.rdma_s[k], r.wan_s[k]) + first
        rows.append(
            {
                "hit_rate": float(c.hit_rate[k]),
                "input_tokens": float(c.input_tokens[k]),
                "output_tokens": float(c.output_tokens[k]),
                "share": float(c.weight[k]),
                "route": route,
                "prefill_s": float(pre[k]),
                "wan_bytes": float(pb.wan_bytes[k]),
                "wan_s": float(r.wan_s[k]),
                "ttft_mean_s": float(ttft),
                "eager_tokens": float(r.eager_tokens[k]),
            }
        )
    return rows


def solve_report(out: Outcome, explain: bool = False) -> Report:
    plan = out.plan
    solver = Solver(out.problem)
    pj = _plan_json(plan, solver)
    sla = out.problem.ttft_targets_s
    summary: list[Row] = [
        {"figure": "mode", "value": out.mode, "target": None},
        {"figure": "rate_rps", "value": plan.rate_rps, "target": None},
        {"figure": "goodput_rps", "value": plan.goodput_rps, "target": None},
        {"figure": "cost_usd_per_hour", "value": plan.cost_usd_per_hour, "target": None},
        {"figure": "bcr_requests_per_usd", "value": plan.bcr_requests_per_usd, "target": None},
        {"figure": "ttft_p50_s", "value": plan.prefill.ttft_s[0], "target": sla[0]},
        {"figure": "ttft_p90_s", "value": plan.prefill.ttft_s[1], "target": sla[1]},
        {"figure": "ttft_p99_s", "value": plan.prefill.ttft_s[2], "target": sla[2]},
        {
            "figure": "tpot_ms",
            "value": out.problem.tpot_s * 1e3,
            "target": out.problem.tpot_s * 1e3,
        },
        {"figure": "rld_output_token_share", "value": plan.rld_output_token_share, "target": None},
        {
            "figure": "link_utilization",
            "value": plan.route.link_utilization,
            "target": out.problem.link_utilization_cap,
        },
        {"figure": "routing", "value": _routing_text(plan), "target": None},
        {"figure": "handover", "value": plan.handover, "target": None},
        {"figure": "md_stall_ms", "value": plan.md_stall_s * 1e3, "target": None},
        {"figure": "binding", "value": "; ".join(plan.binding), "target": None},
    ]
    if out.mode != "rate":
        summary.append({"figure": "scale_bound", "value": out.scale_bound, "target": None})
    pipes = [
        {
            "pipeline": k,
            "share": v["share"],
            "ttft_p50_s": v["p50"],
            "ttft_p90_s": v["p90"],
            "ttft_p99_s": v["p99"],
        }
        for k, v in pj["ttft_by_pipeline_s"].items()
    ]
    base_rows: list[Row] = []
    base_json = []
    for b in out.baselines:
        row = {
            "name": b.topology,
            "chips": ", ".join(f"{n} {c}" for c, n in b.chips_of().items()),
            "cost_usd_per_hour": b.cost_usd_per_hour,
            "goodput_rps": b.goodput_rps,
            "bcr_requests_per_usd": b.bcr_requests_per_usd,
            "ttft_p50_s": b.prefill.ttft_s[0],
            "ttft_p90_s": b.prefill.ttft_s[1],
            "ttft_p99_s": b.prefill.ttft_s[2],
            "meets_sla": b.meets_sla,
            "bcr_ratio": ratio(plan.bcr_requests_per_usd, b.bcr_requests_per_usd),
            "cost_ratio": ratio(plan.cost_usd_per_hour, b.cost_usd_per_hour),
            "goodput_ratio": ratio(plan.goodput_rps, b.goodput_rps),
        }
        base_rows.append(row)
        bj = {"name": b.topology, **_figures(b), "roles": _roles_json(b)}
        bj.update({k: row[k] for k in ("bcr_ratio", "cost_ratio", "goodput_ratio")})
        base_json.append(bj)
    sections = [
        Section("plan", _role_rows(plan)),
        Section("summary", summary),
        Section("ttft by pipeline", pipes),
        Section("baselines at the same rate", base_rows),
    ]
    payload: dict[str, Any] = {
        "scenario": out.scenario_name,
        "model": out.problem.model.name,
        "mode": out.mode,
        "scale_bound": out.scale_bound,
        "plan": pj,
        "sla": {
            "ttft_s": dict(zip(("p50", "p90", "p99"), sla, strict=True)),
            "tpot_ms": out.problem.tpot_s * 1e3,
        },
        "baselines": base_json,
    }
    if explain:
        rows = explain_rows(plan, solver)
        sections.append(Section("hit-rate classes", rows))
        payload["classes"] = rows
    notes = list(out.notes)
    from pddplan.sim.compare import regime_warning_for_plan

    warnings = [f"closed forms: {w}" for w in regime_warning_for_plan(out.problem, plan)]
    for b in out.baselines:
        if not b.meets_sla:
            notes.append(
                f"baseline {b.topology} cannot meet the TTFT targets at this rate with any prefill count; "
                "it is sized for capacity and its goodput is the highest rate at which its fleet meets every target"
            )
    return Report("pddplan solve", sections, payload, notes, warnings=warnings)


def _routing_text(plan: Plan) -> str:
    if plan.topology != "pdd":
        return "P-D" if plan.topology == "same-dc" else "all P-MD"
    r = plan.routing
    if r.relay_all:
        return "all P-RLD-MD"
    if r.threshold <= 0:
        return "all P-MD (no relay)"
    return f"hit rate < {r.threshold:.4g}: P-RLD-MD; else P-MD"
