"""The ``bathtub`` report: the curve, its valleys, singular points and advice."""

from __future__ import annotations

import math
from typing import Any

from pddplan.bathtub import BathtubResult, curve_rows
from pddplan.results import Report, Section

CHART_WIDTH = 60
CHART_HEIGHT = 12


def text_chart(
    xs: list[float], ys: list[float], shade: list[tuple[float, float]], title: str
) -> str:
    """A compact terminal chart of ``y(x)``: one column per x bucket, valleys marked below."""
    pts = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None and math.isfinite(y)]
    if not pts:
        return ""
    lo = min(y for _, y in pts)
    hi = max(y for _, y in pts)
    span = hi - lo or 1.0
    cols: list[float | None] = []
    for c in range(CHART_WIDTH):
        x0, x1 = c / CHART_WIDTH, (c + 1) / CHART_WIDTH
        vals = [y for x, y in pts if x0 <= x < x1 or (c == CHART_WIDTH - 1 and x == 1.0)]
        cols.append(sum(vals) / len(vals) if vals else None)
    rows = []
    for r in range(CHART_HEIGHT, 0, -1):
        level = lo + span * (r - 0.5) / CHART_HEIGHT
        line = "".join("█" if v is not None and v >= level else " " for v in cols)
        label = (
            f"{lo + span * r / CHART_HEIGHT:10.4g} |" if r in (CHART_HEIGHT, 1) else " " * 10 + " |"
        )
        rows.append(label + line)
    marks = "".join(
        "~" if any(a <= (c + 0.5) / CHART_WIDTH <= b for a, b in shade) else "-"
        for c in range(CHART_WIDTH)
    )
    rows.append(" " * 10 + " +" + marks)
    rows.append(
        " " * 12
        + "0"
        + " " * (CHART_WIDTH // 2 - 2)
        + "0.5"
        + " " * (CHART_WIDTH // 2 - 4)
        + "1  hit rate"
    )
    return f"{title} (~ marks valleys)\n" + "\n".join(rows)


def _valley_rows(found) -> list[dict[str, Any]]:
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


def bathtub_report(res: BathtubResult) -> Report:
    rows = curve_rows(res)
    valleys = _valley_rows(res.valleys)
    re_valleys = _valley_rows(res.reprovisioned_valleys)
    summary: list[dict[str, Any]] = [
        {"figure": "metric", "value": res.metric},
        {"figure": "input_tokens", "value": res.input_tokens},
        {"figure": "output_tokens", "value": res.output_tokens},
        {"figure": "chunk_size_tokens", "value": res.chunk_size_tokens},
        {"figure": "valleys", "value": len(res.valleys)},
        {"figure": "valley_traffic_share", "value": res.valley_traffic_share},
    ]
    if not res.valleys:
        summary.append({"figure": "no_valley_reason", "value": res.no_valley_reason})
    sections = [
        Section("summary", summary),
        Section(
            "valleys",
            valleys,
            columns=list(valleys[0])
            if valleys
            else ["start_hit_rate", "end_hit_rate", "depth_fraction"],
        ),
        Section(
            "valleys of the re-provisioned view",
            re_valleys,
            columns=list(re_valleys[0])
            if re_valleys
            else ["start_hit_rate", "end_hit_rate", "depth_fraction"],
        ),
        Section("singular points (tail chunks)", res.singular),
        Section("singular points by chunk size and input length", res.singular_moves),
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
    chart = text_chart(
        [r["hit_rate"] for r in rows],
        [r[res.metric] for r in rows],
        [(v.start_x, v.end_x) for v in res.valleys],
        f"{res.metric} against hit rate (marginal, on the solved plan)",
    )
    return Report("pddplan bathtub", sections, payload, chart=chart)
