"""The result of ``bathtub``: the curve, its valleys, singular points and advice."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pddplan.results.base import Chart, Report, Result, Row, Section

if TYPE_CHECKING:
    from pddplan.bathtub import BathtubResult as BathtubAnalysis


def _valley_rows(found: Any) -> list[Row]:
    return [
        {
            "start_hit_rate": v.start_x,
            "end_hit_rate": v.end_x,
            "deepest_hit_rate": v.deepest_x,
            "deepest_value": v.deepest_y,
            "depth": v.depth,
            "depth_fraction": v.depth_fraction,
            "left_peak_hit_rate": v.left_peak_x,
            "right_peak_hit_rate": v.right_peak_x,
        }
        for v in found
    ]


@dataclass(frozen=True)
class BathtubResult(Result):
    """The bathtub analysis and the rows computed from it.

    Attributes
    ----------
    analysis : the analysis (:class:`pddplan.bathtub.BathtubResult`): plan, points, valleys.
    curve : one row per hit rate of the grid.
    traffic_hit_rate : [-] hit rate of each request class served on the decode side.
    traffic_weight : [-] its share of the traffic (for the plot's histogram).
    """

    analysis: BathtubAnalysis
    curve: list[Row]
    traffic_hit_rate: np.ndarray
    traffic_weight: np.ndarray

    @property
    def valleys(self) -> list[Row]:
        return _valley_rows(self.analysis.valleys)

    def report(self) -> Report:
        res = self.analysis
        rows = self.curve
        valleys = _valley_rows(res.valleys)
        re_valleys = _valley_rows(res.reprovisioned_valleys)
        from pddplan.bathtub import MARGINAL_VIEW, REPROVISIONED_VIEW, view_verdicts
        from pddplan.labels import figure_label

        verdict = view_verdicts(res)
        summary: list[Row] = [
            {"figure": "marginal view", "value": verdict["marginal"]},
            {"figure": "re-provisioned view", "value": verdict["reprovisioned"]},
            {"figure": "the views", "value": f"{MARGINAL_VIEW}; {REPROVISIONED_VIEW}"},
            {"figure": "return measured as", "value": figure_label(res.metric)},
            {"figure": "mean input [tokens]", "value": res.input_tokens},
            {"figure": "mean output [tokens]", "value": res.output_tokens},
            {"figure": "prefill chunk size [tokens]", "value": res.chunk_size_tokens},
        ]
        empty = ["start_hit_rate", "end_hit_rate", "depth_fraction"]
        sections = [
            Section("summary", summary, labels=("figure",)),
            Section(
                "valleys of the marginal view",
                valleys,
                columns=list(valleys[0]) if valleys else empty,
                key="valleys",
            ),
            Section(
                "valleys of the re-provisioned view",
                re_valleys,
                columns=list(re_valleys[0]) if re_valleys else empty,
            ),
            Section("singular points (tail chunks)", res.singular),
            Section(
                "singular points by chunk size and input length",
                [
                    {**r, "hit_rates": ", ".join(f"{h:.3f}" for h in r["hit_rates"])}
                    for r in res.singular_moves
                ],
            ),
            Section("chunk sizes", res.chunk_advice),
            Section("advice", [{"advice": a} for a in res.advice]),
            Section("curve", rows),
        ]
        payload: dict[str, Any] = {
            "metric": res.metric,
            "input_tokens": res.input_tokens,
            "output_tokens": res.output_tokens,
            "chunk_size_tokens": res.chunk_size_tokens,
            "valleys": valleys,
            "reprovisioned_valleys": re_valleys,
            "no_valley_reason": res.no_valley_reason or None,
            "valley_traffic_share": res.valley_traffic_share,
            "reprovisioned_no_valley_reason": res.reprovisioned_no_valley_reason or None,
            "reprovisioned_valley_traffic_share": res.reprovisioned_valley_traffic_share,
            "reprovisioned_valleys_at_plan_steps": res.reprovisioned_steps,
            "verdict": {
                "marginal": f"{MARGINAL_VIEW}: {verdict['marginal']}",
                "reprovisioned": f"{REPROVISIONED_VIEW}: {verdict['reprovisioned']}",
            },
            "singular_points": res.singular,
            "singular_points_by_chunk_and_input": res.singular_moves,
            "chunk_sizes": res.chunk_advice,
            "price_fraction_without_valley": res.price_fraction_without_valley,
            "capacity_advice": res.capacity_advice,
            "advice": res.advice,
            "plan": {
                "rate_rps": res.outcome.plan.rate_rps,
                "cost_usd_per_hour": res.outcome.plan.cost_usd_per_hour,
            },
            "curve": rows,
        }
        chart = Chart(
            [r["hit_rate"] for r in rows],
            [r[res.metric] for r in rows],
            [(v.start_x, v.end_x) for v in res.valleys],
            f"{figure_label(res.metric)} against hit rate ({MARGINAL_VIEW})",
        )
        return Report("pddplan bathtub", sections, payload, chart=chart, answer=self.answer())

    def answer(self) -> list[str]:
        """The bathtub in a few sentences: the plan, its valleys in both views, the advice."""
        res = self.analysis
        plan = res.outcome.plan
        from pddplan.bathtub import view_verdicts
        from pddplan.labels import figure_label

        verdict = view_verdicts(res)
        out = [
            f"On the plan for {plan.rate_rps:.4g} req/s ({plan.cost_usd_per_hour:,.1f} $/h), "
            f"{figure_label(res.metric)} against the prefix hit rate.",
            f"Marginal view (the plan's fleet held): {verdict['marginal']}.",
            f"Re-provisioned view (the fleet re-sized at each hit rate): "
            f"{verdict['reprovisioned']}.",
        ]
        out += [str(a) for a in res.advice[:1]]
        return out
