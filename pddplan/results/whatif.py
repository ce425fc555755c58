"""The results of ``sweep``, ``breakeven`` and ``chips rank``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pddplan.results.base import Report, Result, Row, Section


@dataclass(frozen=True)
class SweepResult(Result):
    """One row per grid point, in the grid's order: the swept values, then the plan's figures
    (or ``feasible: False`` and the binding constraint).

    Attributes
    ----------
    axes : the swept PATHs and their values, in the order given.
    points : the rows.
    """

    axes: dict[str, list[Any]]
    points: list[Row]

    @property
    def feasible_points(self) -> int:
        return sum(1 for r in self.points if r.get("feasible"))

    def report(self) -> Report:
        return Report(
            "pddplan sweep",
            [Section("points", self.points)],
            {
                "axes": [{"path": p, "values": v} for p, v in self.axes.items()],
                "points": [_json_point(r) for r in self.points],
            },
            notes=[f"{len(self.points)} points, {self.feasible_points} feasible"],
        )


def _json_point(row: Row) -> Row:
    """A sweep point for JSON: an unbounded BCR ratio (the baseline's goodput is 0) is null,
    with why in ``ratio_undefined``."""
    out = dict(row)
    undefined = []
    for k, v in row.items():
        if k.startswith("bcr_ratio_vs_") and isinstance(v, float) and not math.isfinite(v):
            out[k] = None
            undefined.append(k.removeprefix("bcr_ratio_vs_"))
    if undefined:
        out["ratio_undefined"] = (
            f"baseline {', '.join(undefined)} serves no rate within every SLA target (goodput 0)"
        )
    return out


@dataclass(frozen=True)
class BreakevenResult(Result):
    """The value of ``param`` in ``[lo, hi]`` where PDD's BCR equals the ``against`` baseline's.

    ``value`` is None when the BCR ratio does not cross 1 in the interval.
    """

    param: str
    against: str
    lo: float
    hi: float
    value: float | None
    bcr_ratio_at_lo: float
    bcr_ratio_at_hi: float
    iterations: int

    def row(self) -> Row:
        return {
            "param": self.param,
            "against": self.against,
            "lo": self.lo,
            "hi": self.hi,
            "bcr_ratio_at_lo": self.bcr_ratio_at_lo,
            "bcr_ratio_at_hi": self.bcr_ratio_at_hi,
            "breakeven_value": self.value,
            "iterations": self.iterations,
        }

    def report(self) -> Report:
        row = self.row()
        if self.value is None:
            side = "above" if self.bcr_ratio_at_lo > 1 else "below"
            note = (
                f"no crossing in [{self.lo:g}, {self.hi:g}]: PDD's BCR is {side} the "
                f"{self.against} baseline's at both ends (ratios {self.bcr_ratio_at_lo:.4g} and "
                f"{self.bcr_ratio_at_hi:.4g})"
            )
        else:
            note = (
                f"PDD's BCR equals the {self.against} baseline's at {self.param} = {self.value:.6g}"
            )
        return Report(
            "pddplan breakeven", [Section("break-even", [row])], {"breakeven": row}, [note]
        )


@dataclass(frozen=True)
class ChipsRankResult(Result):
    """Every chip's prefill and decode cost, the role it suits, its advantage over a reference.

    ``chips`` is sorted best first; ``notes`` says which model, workload and TPOT target.
    """

    chips: list[Row]
    model: str
    workload: str
    reference: str
    tpot_ms: float
    notes: list[str] = field(default_factory=list)

    def report(self) -> Report:
        notes = [
            f"model {self.model}, workload {self.workload}, TPOT target {self.tpot_ms:g} ms; "
            f"advantage = {self.reference}'s cost / the chip's cost on that role",
            *self.notes,
        ]
        return Report(
            "pddplan chips rank", [Section("chips", self.chips)], {"chips": self.chips}, notes
        )
