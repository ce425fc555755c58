"""The result of ``robust`` over a topology file: the re-planned topology's distributions and the
point plan held fixed on the same samples."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pddplan.results.base import Report, Result, Row, Section
from pddplan.results.robust import _describe, distribution

if TYPE_CHECKING:
    from pddplan.robust.topology import TopologyRobustRun


@dataclass(frozen=True)
class TopologyRobustResult(Result):
    """``robust`` on a topology (:class:`pddplan.robust.topology.TopologyRobustRun`)."""

    run: TopologyRobustRun

    @property
    def sources(self) -> list[str]:
        return list(self.run.point.sources)

    def figures(self) -> dict[str, np.ndarray]:
        """Per figure its value on each sample (nan where no plan serves the sample): the
        re-planned cost, each source's TTFT p99 (``SOURCE_ttft_p99_s``), the single failures
        survived."""
        ss = self.run.samples
        out = {"cost_usd_per_hour": np.array([s.cost_usd_per_hour for s in ss])}
        for src in self.sources:
            out[f"{src}_ttft_p99_s"] = np.array([s.ttft_p99_s.get(src, np.nan) for s in ss])
        out["failures_survived"] = np.array(
            [np.nan if s.infeasible else s.failures_survived for s in ss], dtype=float
        )
        return out

    def point_values(self) -> dict[str, float]:
        """The same figures for the point plan."""
        tp = self.run.point
        row = tp.summary_row()
        out: dict[str, float] = {"cost_usd_per_hour": tp.cost_usd_per_hour}
        for src in self.sources:
            out[f"{src}_ttft_p99_s"] = max(
                float(o.plan.prefill.ttft_s[2]) for o in tp.chosen if o.source == src
            )
        out["failures_survived"] = float(row["failures_survived"])
        return out

    @property
    def point_meets_share(self) -> float:
        """The share of samples at which the point plan, held fixed, meets every source's SLA."""
        ss = self.run.samples
        return sum(s.point_meets_all for s in ss) / len(ss)

    def source_meets_share(self, source: str) -> float:
        ss = self.run.samples
        return sum(s.point_meets[source] for s in ss) / len(ss)

    @property
    def replanned_share(self) -> float:
        """The share of samples at which some plan serves every source."""
        ss = self.run.samples
        return sum(s.infeasible is None for s in ss) / len(ss)

    @property
    def structure_changes(self) -> int:
        """Samples whose re-planned flows differ from the point plan's."""
        flows = str(self.run.point.summary_row()["flows"])
        return sum(1 for s in self.run.samples if s.infeasible is None and s.flows != flows)

    def distribution_rows(self) -> list[Row]:
        point = self.point_values()
        rows: list[Row] = []
        for name, arr in self.figures().items():
            d = distribution(arr)
            finite = arr[np.isfinite(arr)]
            rows.append(
                {
                    "figure": name,
                    "point": point[name],
                    "mean": d["mean"],
                    "p5": d["p5"],
                    "p50": d["p50"],
                    "p95": d["p95"],
                    "min": float(finite.min()) if finite.size else float("nan"),
                    "max": float(finite.max()) if finite.size else float("nan"),
                }
            )
        return rows

    def held_rows(self) -> list[Row]:
        rows: list[Row] = [
            {"source": s, "point_plan_meets_share": self.source_meets_share(s)}
            for s in self.sources
        ]
        rows.append({"source": "every source", "point_plan_meets_share": self.point_meets_share})
        return rows

    def sample_rows(self) -> list[Row]:
        rows: list[Row] = []
        for s in self.run.samples:
            row: Row = {
                "sample": s.index,
                "cost_usd_per_hour": s.cost_usd_per_hour,
                "flows": s.flows or "-",
            }
            for src in self.sources:
                row[f"{src}_ttft_p99_s"] = s.ttft_p99_s.get(src, float("nan"))
            row["failures_survived"] = s.failures_survived
            row["failures"] = s.failures
            row["point_plan_meets"] = "yes" if s.point_meets_all else "no"
            row["infeasible"] = s.infeasible or "-"
            rows.append(row)
        return rows

    def answer(self) -> list[str]:
        run, n = self.run, len(self.run.samples)
        d = distribution(self.figures()["cost_usd_per_hour"])
        lines = [
            f"Re-planned at {n} samples of its estimated inputs, the {run.point.objective} plan "
            f"of {run.point.spec_name} costs {d['p50']:.4g} $/h at the median "
            f"({d['p5']:.4g} to {d['p95']:.4g}, p5 to p95; {run.point.cost_usd_per_hour:.4g} "
            "at the point estimate).",
            f"The point plan, held fixed, still meets every source's SLA at "
            f"{self.point_meets_share:.0%} of the samples.",
        ]
        changes = self.structure_changes
        if changes:
            lines.append(f"The least-cost flows change at {changes} of {n} samples.")
        if self.replanned_share < 1:
            lines.append(
                f"No plan serves every source at {n - round(self.replanned_share * n)} samples."
            )
        return lines

    def report(self) -> Report:
        run = self.run
        inputs: list[Row] = [
            {
                "input": i.path,
                "value": i.point,
                "distribution": _describe(i.dist),
                "kind": i.kind,
            }
            for i in run.inputs
        ]
        skipped = [{"input": s.path, "reason": s.reason} for s in run.not_sampled]
        sections = [
            Section("distribution", self.distribution_rows(), labels=("figure",)),
            Section("point plan held fixed", self.held_rows(), key="held"),
            Section("samples", self.sample_rows()),
            Section("inputs", inputs, columns=["input", "value", "distribution", "kind"]),
        ]
        if skipped:
            sections.append(Section("not sampled", skipped))
        payload: dict[str, Any] = {
            "scenario": run.point.spec_name,
            "samples": len(run.samples),
            "seed": run.seed,
            "resilient": run.resilient,
            "point_plan": {**run.point.summary_row(), **self.point_values()},
            "distribution": self.distribution_rows(),
            "point_plan_meets_share": {
                r["source"]: r["point_plan_meets_share"] for r in self.held_rows()
            },
            "sample_figures": self.sample_rows(),
            "inputs": inputs,
            "not_sampled": skipped,
        }
        notes = [
            "TTFT p99 is each source's highest over its pipelines, at the P site (the access "
            "RTT to it comes on top, as in `pddplan topology`); the point plan is held fixed as "
            "bought (its fleets rebuilt on each sample's chips and links), each pipeline at its "
            "share of the source's sampled rate"
        ]
        return Report("pddplan robust (topology)", sections, payload, notes, answer=self.answer())
