"""The result of ``robust``: the point plan under uncertainty, the robust plan, the sensitivity."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pddplan.results.base import Report, Result, Row, Section
from pddplan.results.tables import TABLES as _TABLES

if TYPE_CHECKING:
    from pddplan.results.solve import SolveResult
    from pddplan.robust import RobustRun

PERCENTILES = (5, 50, 95)


def distribution(values: np.ndarray) -> dict[str, float]:
    """Mean and the 5th, 50th and 95th percentiles of the finite values."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return {"mean": math.nan, "p5": math.nan, "p50": math.nan, "p95": math.nan}
    q = np.percentile(v, PERCENTILES)
    return {
        "mean": float(np.mean(v)),
        **{f"p{p}": float(x) for p, x in zip(PERCENTILES, q, strict=True)},
    }


def _describe(d: Any) -> str:
    """A distribution in words: ``uniform 2.4..2.6``, ``x triangular 0.8..1..1.05``."""
    if d.uniform is not None:
        return f"uniform {d.uniform.low:g}..{d.uniform.high:g}"
    if d.triangular is not None:
        t = d.triangular
        return f"triangular {t.low:g}..{t.mode:g}..{t.high:g}"
    if d.normal is not None:
        n = d.normal
        mean = "value" if n.mean is None else f"{n.mean:g}"
        return f"normal {mean} sd {n.sd:g}"
    if d.lognormal is not None:
        return f"lognormal cv {d.lognormal.cv:g}"
    if d.relative is not None:
        r = d.relative
        return f"x triangular {r.low:g}..{r.mode:g}..{r.high:g}"
    if d.log_uniform is not None:
        return f"log-uniform {d.log_uniform.low:g}..{d.log_uniform.high:g}"
    return "fixed"


#: The robust report's tables, by ``--table`` name (``not-sampled`` only when an input is left
#: out).
TABLES = _TABLES["robust"]


#: [-] A cost premium within this of 0 is 0: the robust plan's and the point plan's expected
#: costs are means of the same costs summed in another order when the plans are one plan
#: (2.2e-16 seen), far below any premium a fleet step makes.
PREMIUM_RTOL = 1e-9


@dataclass(frozen=True)
class RobustResult(Result):
    """The figures of a ``robust`` run.

    Attributes
    ----------
    run : every computed array (inputs, samples, point plan per sample, robust plan).
    point : the point-estimate plan as ``solve`` reports it.
    robust_plan : the robust plan as ``solve`` reports it (None: no plan reaches the confidence).
    """

    run: RobustRun
    point: SolveResult
    robust_plan: SolveResult | None

    @property
    def sla_probability(self) -> float:
        """The probability that the point plan meets every SLA target."""
        return self.run.sla_probability

    @property
    def sensitivity(self) -> list[dict[str, Any]]:
        return self.run.sensitivity

    @property
    def cost_premium(self) -> float | None:
        """Expected cost of the robust plan over the point plan's, minus 1 [-]; 0 within
        :data:`PREMIUM_RTOL` (the same plan's two means differ by rounding alone)."""
        r = self.run.robust
        if r is None:
            return None
        base = float(np.nanmean(self.run.cost_usd_per_hour))
        if base <= 0:
            return math.inf
        premium = r.expected_cost_usd_per_hour / base - 1.0
        return 0.0 if abs(premium) <= PREMIUM_RTOL else premium

    @property
    def mean_bcr_requests_per_usd(self) -> float:
        """[requests/USD] the point plan's mean BCR over the samples with a finite BCR."""
        bcr = self.run.bcr_requests_per_usd
        return float(np.mean(bcr[np.isfinite(bcr)]))

    @property
    def tornado_title(self) -> str:
        run = self.run
        return (
            f"{run.scenario_name}: what moves the point plan ({run.samples} samples, seed "
            f"{run.seed})"
        )

    def _point_json(self) -> dict[str, Any]:
        run = self.run
        return {
            **self.point._plan_json(),
            "sla_probability": run.sla_probability,
            "bcr_requests_per_usd_distribution": distribution(run.bcr_requests_per_usd),
            "cost_usd_per_hour_distribution": distribution(run.cost_usd_per_hour),
            "goodput_rps_distribution": distribution(run.goodput_rps),
            "kv_transfer_max_s_distribution": distribution(run.kv_transfer_max_s),
        }

    def _robust_json(self) -> dict[str, Any] | None:
        r = self.run.robust
        if r is None or self.robust_plan is None:
            return None
        return {
            **self.robust_plan._plan_json(),
            "sla_probability": r.probability,
            "expected_cost_usd_per_hour": r.expected_cost_usd_per_hour,
            "cost_usd_per_hour_distribution": distribution(r.cost_usd_per_hour),
            "cost_premium_over_point": self.cost_premium,
        }

    def report(self) -> Report:
        run = self.run
        point = self.point.plan
        summary: list[Row] = [
            {"figure": "samples", "value": run.samples},
            {"figure": "seed", "value": run.seed},
            {"figure": "confidence", "value": run.confidence},
            {"figure": "point_plan.chips", "value": _chips(point.chips_of())},
            {"figure": "point_plan.cost_usd_per_hour", "value": point.cost_usd_per_hour},
            {"figure": "point_plan.sla_probability", "value": run.sla_probability},
            {"figure": "sensitivity.noise_index", "value": run.sensitivity_noise_index},
        ]
        # the point plan's figures over the samples, as numbers (they were one text, rounded
        # to four digits in every format, CSV and JSON tables too)
        spread: list[Row] = [
            {"figure": f"point_plan.{name}", **distribution(arr)}
            for name, arr in (
                ("bcr_requests_per_usd", run.bcr_requests_per_usd),
                ("cost_usd_per_hour", run.cost_usd_per_hour),
                ("goodput_rps", run.goodput_rps),
                ("kv_transfer_max_s", run.kv_transfer_max_s),
            )
        ]
        rj = self._robust_json()
        notes: list[str] = []
        if rj is not None and self.robust_plan is not None and run.robust is not None:
            rp = self.robust_plan.plan
            summary += [
                {"figure": "robust_plan.chips", "value": _chips(rp.chips_of())},
                {"figure": "robust_plan.cost_usd_per_hour", "value": rp.cost_usd_per_hour},
                {"figure": "robust_plan.sla_probability", "value": run.robust.probability},
                {
                    "figure": "robust_plan.expected_cost_usd_per_hour",
                    "value": run.robust.expected_cost_usd_per_hour,
                },
                {"figure": "robust_plan.cost_premium_over_point", "value": self.cost_premium},
            ]
        else:
            notes.append(
                f"no plan among the {run.configs_evaluated} configurations evaluated meets every "
                f"SLA target with probability >= {run.confidence:g}"
            )
        notes.append(
            f"{run.configs_evaluated} of {run.configs_total} configurations evaluated on the "
            "same samples; the others cost more at their point-estimate counts than the robust "
            "plan"
        )
        inputs: list[Row] = [
            {
                "input": i.path,
                "value": i.point,
                "distribution": _describe(i.dist),
                "kind": i.kind,
                "reason": i.reason,
            }
            for i in run.inputs
        ]
        kinds: list[Row] = []
        for i in run.inputs:
            if all(k["kind"] != i.kind or k["reason"] != i.reason for k in kinds):
                kinds.append({"kind": i.kind, "reason": i.reason})
        skipped = [{"input": s.path, "reason": s.reason} for s in run.not_sampled]
        sections = [
            Section("summary", summary, labels=("figure",)),
            Section(
                "distribution",
                spread,
                columns=["figure", "mean", "p5", "p50", "p95"],
                labels=("figure",),
            ),
            Section(
                "sensitivity",
                run.sensitivity,
                columns=[
                    "input",
                    "index",
                    "above_noise",
                    "bcr_rank_correlation",
                    "sla_margin_rank_correlation",
                    "sla_probability_low_decile",
                    "sla_probability_high_decile",
                ],
            ),
            Section("robust plan", self.robust_plan.sections()[0].rows if self.robust_plan else []),
            # each kind's reasoning said once, in its own table
            Section("inputs", inputs, columns=["input", "value", "distribution", "kind"]),
            Section("input kinds", kinds, columns=["kind", "reason"], key="kinds"),
        ]
        if skipped:
            sections.append(Section("not sampled", skipped))
        payload: dict[str, Any] = {
            "scenario": run.scenario_name,
            "samples": run.samples,
            "seed": run.seed,
            "confidence": run.confidence,
            "point_plan": self._point_json(),
            "robust_plan": rj,
            "sensitivity": run.sensitivity,
            "sensitivity_noise_index": _finite_or_none(run.sensitivity_noise_index),
            "inputs": inputs,
            "not_sampled": skipped,
            "configurations": {"total": run.configs_total, "evaluated": run.configs_evaluated},
        }
        return Report("pddplan robust", sections, payload, notes, answer=self.answer())

    def answer(self) -> list[str]:
        """The robust run in a few sentences: how often the point plan meets the SLA, the
        plan that meets it at the confidence asked and its premium, the inputs that matter."""
        run = self.run
        point = self.point.plan
        out = [
            f"The point-estimate plan ({_chips(point.chips_of())}, "
            f"{point.cost_usd_per_hour:,.1f} $/h) meets every SLA target in "
            f"{100 * run.sla_probability:.3g}% of {run.samples} sampled scenarios."
        ]
        if self.robust_plan is not None and run.robust is not None:
            rp = self.robust_plan.plan
            premium = self.cost_premium
            # the premium is on the expected costs over the samples (their prices vary), not
            # on the two costs at the point's prices the sentence gives
            more = (
                f" ({100 * premium:+.3g}% in expected cost over the samples against the point plan)"
                if premium is not None
                else ""
            )
            out.append(
                f"Deploy {_chips(rp.chips_of())} at {rp.cost_usd_per_hour:,.1f} $/h{more}: it "
                f"meets them with probability {run.robust.probability:.3g} (asked "
                f">= {run.confidence:g})."
            )
        else:
            out.append(
                f"No plan among the {run.configs_evaluated} evaluated meets every SLA target "
                f"with probability >= {run.confidence:g}."
            )
        sentence = self._sensitivity_sentence()
        if sentence is not None:
            out.append(sentence)
        return out

    @property
    def noise_phrase(self) -> str | None:
        """The index chance reaches, in words (None where it cannot be told)."""
        noise = self.run.sensitivity_noise_index
        if not math.isfinite(noise):
            return None
        return f"chance's {noise:.2g} at {self.run.samples} samples"

    def _sensitivity_sentence(self) -> str | None:
        """The inputs that move the point plan most, those whose index is above what chance
        reaches over these samples (:func:`~pddplan.robust.run.noise_index`); or that none is."""
        run = self.run
        chance = self.noise_phrase
        if not run.sensitivity:
            return None  # no input sampled
        if chance is None:
            return f"{run.samples} samples are too few to tell which input moves it."
        top = [r for r in run.sensitivity if r["above_noise"]][:3]
        if not top:
            return (
                f"No input moves it beyond chance: every sensitivity index is at or below "
                f"{chance}, so the ranking is noise; more samples would rank them."
            )
        return (
            "The inputs that move it most: "
            + ", ".join(str(r["input"]) for r in top)
            + f" (sensitivity index above {chance})."
        )


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _chips(chips: dict[str, int]) -> str:
    return ", ".join(f"{n} {c}" for c, n in chips.items())
