"""The result of ``report``: one document a planner can send to procurement.

It gathers the solved plan (chips owned, rented and bought; the baselines; the hit-rate
classes), the bathtub, a line-bandwidth x hit-rate-shift sweep, the assumptions with their
sources (estimates flagged) and the warnings. :mod:`pddplan.report.html` renders it as one
self-contained HTML page or a markdown file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pddplan.results.base import Report, Result, Row, Section

if TYPE_CHECKING:
    from pddplan.results.bathtub import BathtubResult
    from pddplan.results.solve import SolveResult
    from pddplan.results.whatif import SweepResult

BANDWIDTH_PATH = "link.bandwidth_gbit_per_s"
SHIFT_PATH = "workload.hit_rate.shift"


@dataclass(frozen=True)
class PlanReportResult(Result):
    """Everything the procurement report shows, computed when it was built.

    Attributes
    ----------
    solve : the plan and its baselines (with the hit-rate classes).
    bathtub : the return against hit rate on that plan.
    sweep : the plan over line bandwidth [Gbit/s] x hit-rate shift [-].
    assumptions : one row per sourced group of numbers the plan rests on.
    warnings : the solve's warnings and notes, and the sweep's infeasible points.
    """

    solve: SolveResult
    bathtub: BathtubResult
    sweep: SweepResult
    assumptions: list[Row]
    warnings: list[str] = field(default_factory=list)

    @property
    def title(self) -> str:
        return self.solve.report().title.replace("pddplan solve: ", "Capacity plan: ")

    def sweep_rows(self) -> list[Row]:
        from pddplan.results.whatif import sweep_point

        keep = (BANDWIDTH_PATH, SHIFT_PATH, "feasible", "cost_usd_per_hour", "goodput_rps")
        out = []
        for r in map(sweep_point, self.sweep.points):  # as the sweep shows it (null ratios)
            row = {k: r.get(k) for k in keep}
            row["bcr_ratio_vs_same_dc"] = r.get("bcr_ratio_vs_same-dc")
            row["binding"] = r.get("binding") if not r.get("feasible") else None
            out.append(row)
        return out

    def answer(self) -> list[str]:
        """The solve's answer, with the share of the cost that rests on estimated prices."""
        return self.solve.answer(estimated_prices=True)

    def estimated_cost_json(self) -> dict[str, Any]:
        """The part of the cost on estimated prices (:func:`~pddplan.solver.plan.
        estimated_cost`) as JSON data."""
        from pddplan.solver.plan import estimated_cost

        ec = estimated_cost(self.solve.plan)
        return {
            "estimated_usd_per_hour": ec.estimated_usd_per_hour,
            "cost_usd_per_hour": ec.total_usd_per_hour,
            "estimated_share": ec.share,
            "items": [{"price": w, "usd_per_hour": v} for w, v in ec.items],
        }

    def bathtub_rows(self) -> list[Row]:
        return [r for r in self.bathtub.report().sections if r.title == "summary"][0].rows

    def report(self) -> Report:
        sol = self.solve.report()
        by = {s.slug: s for s in sol.sections}
        sections = [
            Section("plan", by["plan"].rows, key="plan"),
            Section("summary", by["summary"].rows, key="summary", labels=("figure",)),
            Section("chips: owned, rented, bought", by["procurement"].rows, key="procurement"),
            Section("baselines at the same rate", by["baselines"].rows, key="baselines"),
            Section("hit-rate classes", self.solve.classes or [], key="classes"),
            Section("bathtub", self.bathtub_rows(), key="bathtub"),
            Section("line bandwidth x hit-rate shift", self.sweep_rows(), key="sweep"),
            Section("assumptions", self.assumptions, key="assumptions"),
            Section("warnings", [{"warning": w} for w in self.warnings], key="warnings"),
        ]
        payload: dict[str, Any] = {
            "solve": self.solve.to_json(),
            "bathtub": {"summary": self.bathtub_rows(), "valleys": self.bathtub.valleys},
            "sweep": self.sweep.to_json(),
            "estimated_cost": self.estimated_cost_json(),
            "assumptions": self.assumptions,
            "warnings": self.warnings,
        }
        return Report(
            self.title,
            sections,
            payload,
            answer=self.answer(),
            warning_action=self.solve.report().warning_action,
        )
