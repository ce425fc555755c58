"""The results of ``sweep``, ``breakeven`` and ``chips rank``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pddplan.results.base import Report, Result, Row, Section
from pddplan.results.tables import TABLES as _TABLES

if TYPE_CHECKING:
    from pddplan.whatif.topology import TopologyBreakEven

#: The sweep report's tables, by ``--table`` name.
SWEEP_TABLES = _TABLES["sweep"]


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
        points = [sweep_point(r) for r in self.points]
        notes = [f"{len(self.points)} points, {self.feasible_points} feasible"]
        if any("ratio_undefined" in r for r in points):
            notes.append(
                f"{UNBOUNDED_RATIO} where its baseline serves no rate within every SLA target "
                "(goodput 0)"
                + (
                    ", or where PDD's fleet costs nothing"
                    if any(free_point(r) for r in points)
                    else ""
                )
            )
        if any(free_point(r) for r in points):
            notes.append(f"a BCR is '-' (empty in CSV, null in JSON) where {_free_point_reason()}")
        said = ("ratio_undefined", "bcr_undefined")
        cols = [k for k in _columns(list(self.axes), points) if k not in said]
        table = [{k: r.get(k) for k in cols} for r in points]
        # a plan's columns are empty where no point has a plan: the table and markdown leave
        # them out, CSV and JSON keep them (one schema); a BCR ratio's dashes say something
        # (its baseline serves nothing) and stay
        from pddplan.whatif import PLAN_COLUMNS

        planned = tuple(k for k in cols if k in PLAN_COLUMNS and k not in self.axes)
        return Report(
            "pddplan sweep",
            [
                Section(
                    "points",
                    table,
                    omit_empty=planned,
                    omit_empty_name="every plan column (no point has a plan)",
                )
            ],
            {
                "axes": [{"path": p, "values": v} for p, v in self.axes.items()],
                "points": points,
            },
            notes=notes,
            answer=self.answer(),
        )

    def _where(self, row: Row) -> str:
        return ", ".join(f"{p}={row.get(p)}" for p in self.axes)

    def answer(self) -> list[str]:
        """The sweep in a few sentences: where PDD loses to a baseline first, then how many
        points are feasible, the cheapest and what binds it."""
        from pddplan.solver.fleet import loses_by_ratio

        feasible = [r for r in self.points if r.get("feasible")]
        out: list[str] = []
        ratios = sorted({k for r in feasible for k in r if k.startswith("bcr_ratio_vs_")})
        wins = []
        for k in ratios:
            vals = [
                (r[k], r)
                for r in feasible
                if isinstance(r.get(k), float | int) and math.isfinite(r[k])
            ]
            if not vals:
                continue
            base = k.removeprefix("bcr_ratio_vs_")
            # a ratio within the goodputs' precision of 1 is a tie, not a loss
            lose = [(v, r) for v, r in vals if loses_by_ratio(v)]
            lo, hi = min(v for v, _ in vals), max(v for v, _ in vals)
            if lose:
                v, r = min(lose, key=lambda t: t[0])
                out.insert(
                    0,
                    f"PDD loses to {base} at {len(lose)} of {len(vals)} points (BCR ratio "
                    f"down to {v:.3g}x, at {self._where(r)}).",
                )
            wins.append(f"{base} {lo:.3g}x to {hi:.3g}x")
        out.append(f"{len(feasible)} of {len(self.points)} points feasible.")
        if feasible:
            # a point that costs nothing is the cheapest, not one of unknown cost
            best = min(
                feasible,
                key=lambda r: (
                    math.inf if r.get("cost_usd_per_hour") is None else r["cost_usd_per_hour"]
                ),
            )
            cost = f"{best.get('cost_usd_per_hour', 0):,.1f} $/h"
            if "bcr_requests_per_usd" not in best:  # a topology's point: its plan in one row
                out.append(
                    f"Cheapest at {self._where(best)}: {cost} over {best.get('pipelines')} "
                    f"pipelines ({best.get('flows')})."
                )
            else:
                from pddplan.results.solve import bcr_text

                words = bcr_text(best.get("bcr_requests_per_usd", 0), "BCR ")
                out.append(
                    f"Cheapest at {self._where(best)}: {cost}, {words}, bound "
                    f"by {best.get('binding') or 'nothing'}."
                )
        if wins:
            out.append("PDD's BCR over the baselines: " + "; ".join(wins) + ".")
        return out


def _columns(axes: list[str], points: list[Row]) -> list[str]:
    """A sweep table's columns, the same whichever of its points have a plan: the swept paths,
    a plan's columns (:data:`~pddplan.whatif.PLAN_COLUMNS`), the BCR ratios to the baselines,
    then the rest (whether the point fits, what binds, a cache's columns), each group in the
    order of its first feasible point and then of the points as met."""
    from pddplan.whatif import PLAN_COLUMNS

    first = next((r for r in points if r.get("feasible")), points[0] if points else {})
    met = dict.fromkeys(k for r in [first, *points] for k in r)

    def group(k: str) -> int:
        if k in axes:
            return 0
        if k in PLAN_COLUMNS:
            return 1
        return 2 if k.startswith("bcr_ratio_vs_") else 3

    return sorted(met, key=group)


def _ratio_text(x: float) -> str:
    """A BCR ratio for a note: ``unbounded`` where the baseline's goodput is 0."""
    return f"{x:.4g}" if math.isfinite(x) else "unbounded"


#: How a report shows a BCR ratio whose baseline's goodput is 0 (:func:`_unbounded_to_null`).
UNBOUNDED_RATIO = "a BCR ratio is '-' (empty in CSV, null in JSON)"


def _unbounded_to_null(row: Row, keys: list[str]) -> tuple[Row, list[str]]:
    """``row`` with each BCR ratio of ``keys`` that is unbounded (not finite: the baseline's
    goodput is 0) set to None, and those keys."""
    undefined = [k for k in keys if isinstance(row[k], float) and not math.isfinite(row[k])]
    return {k: None if k in undefined else v for k, v in row.items()}, undefined


def _free_point_reason() -> str:
    """Why a sweep point's BCR is null: PDD's plan there costs nothing (the free fleet's reason,
    :data:`~pddplan.solver.plan.FREE_FLEET_BCR`, said of PDD's plan)."""
    from pddplan.solver.plan import FREE_FLEET_BCR

    return "PDD's plan" + FREE_FLEET_BCR.removeprefix("the fleet")


def free_point(row: Row) -> bool:
    """Whether a sweep point's PDD plan costs nothing (its BCR unbounded)."""
    bcr = row.get("bcr_requests_per_usd")
    return isinstance(bcr, float) and math.isinf(bcr) or "bcr_undefined" in row


def sweep_point(row: Row) -> Row:
    """A sweep point as ``sweep`` reports it, in every format, and as the plan report's sweep
    table reads it: an unbounded BCR ratio (the baseline's goodput is 0) is null, with why in
    ``ratio_undefined``; where PDD's plan costs nothing, its BCR is null with why in
    ``bcr_undefined``, and so is every ratio to a baseline (no number: PDD's BCR is
    unbounded)."""
    ratios = [k for k in row if k.startswith("bcr_ratio_vs_")]
    if free_point(row):
        from pddplan.solver.plan import FREE_PDD_RATIO

        out = {k: None if k in ratios else v for k, v in row.items()}
        out["bcr_requests_per_usd"] = None
        out["bcr_undefined"] = _free_point_reason()
        if ratios:
            out["ratio_undefined"] = FREE_PDD_RATIO
        return out
    out, keys = _unbounded_to_null(row, ratios)
    undefined = [k.removeprefix("bcr_ratio_vs_") for k in keys]
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
    #: the ratios either side of ``value`` where the ratio jumps over 1 there (a fleet step,
    #: :func:`pddplan.whatif.ratio_jump`); None where it equals 1 within the tolerance
    jump: tuple[float, float] | None = None

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
                f"{self.against} baseline's at both ends (ratios "
                f"{_ratio_text(self.bcr_ratio_at_lo)} and {_ratio_text(self.bcr_ratio_at_hi)})"
            )
        elif self.jump is not None:
            below, above = self.jump
            note = (
                f"PDD's BCR ratio to the {self.against} baseline's crosses 1 at {self.param} = "
                f"{self.value:.6g} (jumps from {_ratio_text(below)} to {_ratio_text(above)}: a "
                "step of the plans, such as an instance more in a fleet), equal at no value"
            )
        else:
            note = (
                f"PDD's BCR equals the {self.against} baseline's at {self.param} = {self.value:.6g}"
            )
        notes = [note]
        # an unbounded ratio (the baseline's goodput is 0 at that end): null in JSON, '-' in a
        # table, as in a sweep's points
        row, undefined = _unbounded_to_null(row, ["bcr_ratio_at_lo", "bcr_ratio_at_hi"])
        if undefined:
            why = (
                f"the {self.against} baseline serves no rate within every SLA target at "
                f"{' and '.join(k.removeprefix('bcr_ratio_at_') for k in undefined)} (goodput 0)"
            )
            notes.append(f"{UNBOUNDED_RATIO}: {why}")
            doc = {"breakeven": {**row, "ratio_undefined": why}}
        else:
            doc = {"breakeven": row}
        if self.jump is not None:
            doc["breakeven"] = {
                **doc["breakeven"],
                "bcr_ratio_jump": {"below": self.jump[0], "above": self.jump[1]},
            }
        return Report("pddplan breakeven", [Section("break-even", [row])], doc, notes)


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
        from pddplan.whatif import reference_row

        if reference_row(self.chips, self.reference) is not None:
            advantage = f"advantage = {self.reference}'s cost / the chip's cost on that role"
        else:
            ref = next((r for r in self.chips if r["chip"] == self.reference), {})
            why = ref.get("note") or ""
            what = (
                "is unpriced"  # its note says why
                if ref.get("chips_per_instance")
                else f"holds no instance of {self.model}"
            )
            why = why.removeprefix("unpriced: ")
            advantage = (
                f"advantages and best roles are blank: the reference {self.reference} {what}"
                + (f" ({why})" if why else "")
                + "; name another with --reference"
            )
        notes = [
            f"model {self.model}, workload {self.workload}, TPOT target {self.tpot_ms:g} ms; "
            + advantage,
            *self.notes,
        ]
        return Report(
            "pddplan chips rank", [Section("chips", self.chips)], {"chips": self.chips}, notes
        )


@dataclass(frozen=True)
class TopologyBreakevenResult(Result):
    """``breakeven`` on a topology (:class:`pddplan.whatif.topology.TopologyBreakEven`)."""

    be: TopologyBreakEven

    def plan_rows(self) -> list[Row]:
        be = self.be
        rows: list[Row] = []
        for where, p in (("lo", be.lo), ("below", be.below), ("above", be.above), ("hi", be.hi)):
            if p is None:
                continue
            rows.append(
                {
                    "at": where,
                    "value": p.value,
                    # no plan serves every source there (cost inf): '-' in a table, null in
                    # JSON, and the reason in the flows column
                    "cost_usd_per_hour": (
                        p.cost_usd_per_hour if math.isfinite(p.cost_usd_per_hour) else None
                    ),
                    "lines_leased": p.lines_leased,
                    "flows": p.flows,
                }
            )
        return rows

    def row(self) -> Row:
        be = self.be
        return {
            "param": be.path,
            "question": be.question,
            "against_cost_usd_per_hour": be.target_usd_per_hour,
            "lo": be.lo.value,
            "hi": be.hi.value,
            "breakeven_value": be.value,
            "iterations": be.iterations,
        }

    def answer(self) -> list[str]:
        be = self.be
        span = f"[{be.lo.value:g}, {be.hi.value:g}]"
        if be.value is None:
            if be.question == "structure":
                return [f"The least-cost plan keeps one structure over {be.path} in {span}."]
            side = "above" if be.lo.cost_usd_per_hour > (be.target_usd_per_hour or 0) else "below"
            return [
                f"The topology's cost stays {side} {be.target_usd_per_hour:g} $/h over "
                f"{be.path} in {span}."
            ]
        assert be.below is not None and be.above is not None
        if be.question == "structure":
            return [
                f"The least-cost plan changes its structure at {be.path} = {be.value:.6g}: "
                f"{be.below.flows} below, {be.above.flows} above."
            ]
        return [
            f"The topology's cost crosses {be.target_usd_per_hour:g} $/h at "
            f"{be.path} = {be.value:.6g} ({be.below.cost_usd_per_hour:.4g} $/h below, "
            f"{be.above.cost_usd_per_hour:.4g} above: chips come whole, so the cost steps)."
        ]

    def report(self) -> Report:
        row = self.row()
        plans = self.plan_rows()
        infeasible = [r["at"] for r in plans if r["cost_usd_per_hour"] is None]
        notes = (
            [
                f"no plan serves every source at {' and '.join(infeasible)}: its cost is '-' "
                "(empty in CSV, null in JSON), and its flows say why"
            ]
            if infeasible
            else []
        )
        return Report(
            "pddplan breakeven (topology)",
            [Section("break-even", [row]), Section("plans", plans)],
            {"breakeven": row, "plans": plans},
            notes,
            answer=self.answer(),
        )
