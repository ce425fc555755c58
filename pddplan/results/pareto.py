"""The result of ``pareto``: the frontier of plans over cost, goodput and TTFT p99, PDD and its
baselines, each plan with its cost per million input and output tokens beside its BCR."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pddplan.results.base import Report, Result, Row, Section

if TYPE_CHECKING:
    from pddplan.solver.pareto import Frontier, ParetoPoint

#: How the cost per million tokens is computed, said once in the JSON document.
TOKEN_COST_BASIS = (
    "cost [$/h] / (goodput [req/s] x mean tokens per request x 3600) x 1e6, for input and for "
    "output tokens, each carrying the whole fleet's cost (not to be added); input counts every "
    "prompt token, cached or not (kubernetes-sigs/inference-perf issue #139)"
)


def point_row(p: ParetoPoint, *, topology: bool = True) -> Row:
    """One plan's figures (None where the point has no plan)."""
    plan = p.plan
    cost_in, cost_out = p.cost_usd_per_mtok
    row: Row = {"topology": p.topology} if topology else {}
    row.update(
        {
            "target_rate_rps": p.rate_rps,
            "cost_usd_per_hour": plan.cost_usd_per_hour if plan else None,
            "goodput_rps": plan.goodput_rps if plan else None,
            "ttft_p99_s": float(plan.prefill.ttft_s[2]) if plan else None,
            # None also where the fleet costs nothing (its BCR unbounded: no JSON number)
            "bcr_requests_per_usd": (
                plan.bcr_requests_per_usd
                if plan and math.isfinite(plan.bcr_requests_per_usd)
                else None
            ),
            "input_cost_usd_per_mtok": cost_in,
            "output_cost_usd_per_mtok": cost_out,
        }
    )
    return row


def fleet_text(p: ParetoPoint) -> str | None:
    """The plan's fleet by role, ``P 24 gpu-a, RLD 8 gpu-a, MD 24 gpu-b`` (same-dc: ``D``)."""
    if p.plan is None:
        return None
    parts = []
    for role, v in p.plan.roles.items():
        if v is not None:
            inst, n = v
            name = "D" if role == "MD" and p.topology == "same-dc" else role
            parts.append(f"{name} {n * inst.tensor_parallel} {inst.chip.name}")
    return ", ".join(parts)


@dataclass(frozen=True)
class ParetoResult(Result):
    """The frontier (:class:`pddplan.solver.pareto.Frontier`) and the rows made from it.

    Attributes
    ----------
    frontier : every point of the grid, each topology, with its frontier flags.
    """

    frontier: Frontier

    @property
    def points(self) -> list[ParetoPoint]:
        """PDD's frontier, cheapest first."""
        return self.frontier.frontier()

    def report(self) -> Report:
        from pddplan.solver.sla import PERCENTILE_NAMES

        f = self.frontier
        pb = f.problem
        pdd_rows = [
            {
                **point_row(p, topology=False),
                "beaten_by": p.dominated_by or None,
                "fleet": fleet_text(p),
            }
            for p in f.frontier()
        ]
        base_rows = [
            {**point_row(p), "on_joint_frontier": p.on_joint_frontier, "fleet": fleet_text(p)}
            for t in f.topologies()[1:]
            for p in f.frontier(t)
        ]
        every = [
            {
                **point_row(p),
                "meets_sla": p.meets_sla,
                "on_frontier": p.on_frontier,
                "on_joint_frontier": p.on_joint_frontier,
                "beaten_by": p.dominated_by or None,
                "why_no_plan": p.reason or None,
            }
            for p in f.points
        ]
        sections = [
            Section("PDD's frontier", pdd_rows, key="frontier"),
            Section(
                "baselines on their frontiers",
                base_rows,
                key="baselines",
                columns=list(base_rows[0]) if base_rows else ["topology", "target_rate_rps"],
            ),
            Section("every plan of the grid", every, key="points"),
        ]
        wan = pb.wan
        title = (
            f"pddplan pareto: scenario {f.scenario_name}, model {pb.model.name}, line {wan.name} "
            f"({wan.bandwidth_gbit_per_s:.4g} Gbit/s)"
        )
        answer = self.answer()
        payload: dict[str, Any] = {
            "scenario": f.scenario_name,
            "model": pb.model.name,
            "line": {"name": wan.name, "bandwidth_gbit_per_s": wan.bandwidth_gbit_per_s},
            "sla": {
                "ttft_s": dict(zip(PERCENTILE_NAMES, pb.ttft_targets_s, strict=True)),
                "tpot_ms": pb.tpot_s * 1e3,
            },
            "grid": {"rates_rps": list(f.rates_rps), "top": f.upper},
            "objectives": "lower cost_usd_per_hour, higher goodput_rps, lower ttft_p99_s "
            "(TTFT p99 at the point's target rate); only plans meeting every SLA target",
            "token_cost_basis": TOKEN_COST_BASIS,
            "answer": answer,
            "frontier": pdd_rows,
            "baselines": {
                t: [r for r in base_rows if r["topology"] == t] for t in f.topologies()[1:]
            },
            "points": every,
        }
        return Report(title, sections, payload, [*answer, *f.notes])

    def answer(self) -> list[str]:
        """What the frontier says, in sentences: PDD's span, and each baseline against it."""
        from pddplan.solver.pareto import dominates, same_figures

        f = self.frontier
        front = f.frontier()
        n_ok = sum(1 for p in f.points if p.topology == "pdd" and p.meets_sla)
        lo, hi = front[0], front[-1]
        p99 = sorted(p.objectives[2] for p in front)
        r = f.rates_rps
        out = [
            f"Over {len(r)} target rates from {r[0]:.4g} to {r[-1]:.4g} req/s, the top being "
            f"the {f.upper}, PDD's frontier holds {len(front)} of its {n_ok} plans: from "
            f"{lo.objectives[0]:.4g} $/h for {lo.objectives[1]:.4g} req/s of goodput to "
            f"{hi.objectives[0]:.4g} $/h for {hi.objectives[1]:.4g} req/s, TTFT p99 "
            f"{p99[0]:.3g} to {p99[-1]:.3g} s (target {f.problem.ttft_targets_s[2]:.3g} s)."
        ]
        for t in f.topologies()[1:]:
            theirs = [p for p in f.points if p.topology == t]
            ok = [p for p in theirs if p.meets_sla]
            beaten = [p for p in front if any(dominates(o.objectives, p.objectives) for o in ok)]
            if not ok:
                out.append(
                    f"Against {t}: it meets the SLA at none of the {len(theirs)} rates it was "
                    "sized at, so PDD's frontier has no rival there."
                )
            elif beaten:
                n = len(beaten)
                where = "every plan" if n == len(front) else f"{n} plan{'s' if n > 1 else ''}"
                out.append(
                    f"Against {t}: PDD loses at {where} of its frontier ({len(beaten)} of "
                    f"{len(front)}): a {t} plan costs no more, serves no less and has no higher "
                    "TTFT p99 (see 'beaten by')."
                )
            else:
                same = [
                    p for p in front if any(same_figures(o.objectives, p.objectives) for o in ok)
                ]
                tie = (
                    f"; at {len(same)} of PDD's frontier plans it is the very plan PDD chose"
                    if same
                    else ""
                )
                out.append(
                    f"Against {t}: none of its plans dominates one of PDD's frontier ({len(ok)} "
                    f"of its {len(theirs)} plans meet the SLA{tie})."
                )
        return out
