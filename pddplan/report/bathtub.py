"""The bathtub's compact terminal chart, drawn from a :class:`pddplan.results.base.Chart`."""

from __future__ import annotations

import math

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
