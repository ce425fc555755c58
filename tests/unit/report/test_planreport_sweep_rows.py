"""The plan report's sweep table reads each point as ``sweep`` reports it: a BCR ratio to a
baseline that serves no rate (its goodput 0, the ratio unbounded) is blank there as in the
sweep's tables and JSON, not ``inf``."""

from __future__ import annotations

import math
from types import SimpleNamespace

from pddplan.results.planreport import BANDWIDTH_PATH, SHIFT_PATH, PlanReportResult
from pddplan.results.whatif import sweep_point


def test_an_unbounded_ratio_is_blank_in_the_plan_report_as_in_the_sweep() -> None:
    row = {
        BANDWIDTH_PATH: 10.0,
        SHIFT_PATH: 0.0,
        "feasible": True,
        "cost_usd_per_hour": 100.0,
        "goodput_rps": 2.0,
        "bcr_requests_per_usd": 72.0,
        "bcr_ratio_vs_same-dc": math.inf,
    }
    assert sweep_point(row)["bcr_ratio_vs_same-dc"] is None
    fake = SimpleNamespace(sweep=SimpleNamespace(points=[row]))
    (got,) = PlanReportResult.sweep_rows(fake)  # type: ignore[arg-type]
    assert got["bcr_ratio_vs_same_dc"] is None
    assert got["cost_usd_per_hour"] == 100.0 and got["goodput_rps"] == 2.0
    finite = dict(row, **{"bcr_ratio_vs_same-dc": 1.25})
    (got,) = PlanReportResult.sweep_rows(SimpleNamespace(sweep=SimpleNamespace(points=[finite])))  # type: ignore[arg-type]
    assert got["bcr_ratio_vs_same_dc"] == 1.25
