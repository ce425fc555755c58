"""A sweep's answer counts a loss only beyond the goodputs' precision (a tie is no loss)."""

from __future__ import annotations

from pddplan.results.whatif import SweepResult
from pddplan.solver.fleet import GOODPUT_RTOL, within_goodput_precision


def _sweep(ratios: list[float]) -> SweepResult:
    points = [
        {"rate_rps": 1.0 + i, "feasible": True, "cost_usd_per_hour": 100.0, "bcr_ratio_vs_x": r}
        for i, r in enumerate(ratios)
    ]
    return SweepResult({"rate_rps": [p["rate_rps"] for p in points]}, points)


def test_a_ratio_within_the_goodputs_precision_is_not_a_loss() -> None:
    tie = 1.0 - GOODPUT_RTOL  # the goodputs are known to about 2 GOODPUT_RTOL
    assert within_goodput_precision(tie) and not within_goodput_precision(1 - 3 * GOODPUT_RTOL)
    assert not any("loses" in s for s in _sweep([tie, 1.2]).answer())
    lost = [s for s in _sweep([tie, 0.9, 1.2]).answer() if "loses" in s]
    assert lost == ["PDD loses to x at 1 of 3 points (BCR ratio down to 0.9x, at rate_rps=2.0)."]
