"""A topology plan simulated: each pipeline run by the discrete-event simulator, beside the
closed forms.

Every pipeline of a plan is an ordinary two-site (or one-site) scenario with its own fleet, so
it is simulated as ``pddplan simulate`` simulates a plan (:func:`pddplan.sim.simulate`) at the
rate it carries, and compared with the closed forms at that rate by the one comparison of
``simulate`` (:func:`pddplan.sim.compare.closed_forms_beside`). Under a single line failure
the pipelines that take the lost share are simulated again at their rate after the failure
(:func:`pddplan.topology.line_failures`); the others run as in the plan.

A pipeline meets its SLA in the simulation when its simulated TTFT p50, p90 and p99 are within
its source's targets less the access RTT (the targets it was sized against); decode slots
(TPOT) and the line are the fleet check's, which the failure evaluation already applies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pddplan.topology import TopologyPlan
    from pddplan.topology.pipelines import Option


@dataclass(frozen=True)
class SimulatedPipeline:
    """One pipeline simulated at one rate: in the plan (``line_down`` None) or after a line
    failure."""

    line_down: str | None
    pipeline: str
    rate_rps: float
    requests: int
    closed_ttft_s: tuple[float, float, float]
    simulated_ttft_s: tuple[float, float, float]
    gap_pct: tuple[float, float, float]
    #: the comparison's flag per percentile: "", "> 10%" or "> 10% (noise)"
    flags: tuple[str, str, str]
    #: the TTFT targets the pipeline was sized against [s]
    targets_s: tuple[float, float, float]
    #: ``line_down`` names a partial failure (``a-b at 50% bandwidth``), not a line down
    partial: bool = False

    @property
    def case(self) -> str:
        """``plan``, ``LINE down`` or the partial failure's label."""
        if self.line_down is None:
            return "plan"
        return self.line_down if self.partial else f"{self.line_down} down"

    @property
    def off(self) -> bool:
        """Some TTFT percentile more than 10% off its closed form."""
        return any(self.flags)

    @property
    def meets_sla(self) -> bool:
        """Whether every simulated TTFT percentile is within its target (the SLA's one
        comparison, :func:`pddplan.solver.sla.meets_targets`)."""
        from pddplan.solver import sla

        return sla.meets_targets(self.simulated_ttft_s, self.targets_s)

    def warnings(self) -> list[str]:
        from pddplan.solver.sla import TTFT_LABELS

        return [
            f"{self.case}: {self.pipeline}: simulated {label} {s:.4g} s is {g:+.1f}% off the closed "
            f"form {c:.4g} s ({flag})"
            for label, c, s, g, flag in zip(
                TTFT_LABELS,
                self.closed_ttft_s,
                self.simulated_ttft_s,
                self.gap_pct,
                self.flags,
                strict=True,
            )
            if flag
        ]


@dataclass(frozen=True)
class FailureSim:
    """One line down, simulated: the pipelines that took more traffic, at their new rates."""

    line: str
    pipelines: list[SimulatedPipeline]
    #: the failure evaluation's verdict (traffic unserved or a fleet check failing: False)
    evaluated_survives: bool

    @property
    def meets_sla(self) -> bool:
        return self.evaluated_survives and all(p.meets_sla for p in self.pipelines)


@dataclass(frozen=True)
class TopologySim:
    requests: int
    seed: int
    plan: list[SimulatedPipeline]
    #: each single line failure of a resilient plan (empty for a plan that need not survive)
    failures: list[FailureSim]

    def all_pipelines(self) -> list[SimulatedPipeline]:
        return [*self.plan, *(p for f in self.failures for p in f.pipelines)]


def simulate_pipeline(
    o: Option,
    rate_rps: float,
    requests: int,
    seed: int,
    line_down: str | None = None,
    fleet: tuple[Any, Any] | None = None,
    partial: bool = False,
) -> SimulatedPipeline:
    """Option ``o``'s fleet simulated at ``rate_rps``, beside the closed forms there; ``fleet``:
    its (plan, problem) degraded by a partial failure instead of its own."""
    from pddplan.sim import SimConfig, SimPlan, simulate
    from pddplan.sim.compare import closed_forms_beside
    from pddplan.solver.sla import TTFT_TARGET_KEYS  # the comparison's TTFT rows, in order

    plan, problem = fleet if fleet is not None else (o.plan, o.plan.problem)
    splan = SimPlan.of(plan)
    res = simulate(problem, splan, SimConfig(requests=requests, seed=seed, rate_rps=rate_rps))
    _, _, rows, _ = closed_forms_beside(problem, splan, res)
    by = {r["metric"]: r for r in rows}
    nan = {"closed_form": math.nan, "simulated": math.nan, "gap_pct": math.nan, "flag": ""}
    got = [by.get(m, nan) for m in TTFT_TARGET_KEYS]
    t = problem.ttft_targets_s
    return SimulatedPipeline(
        line_down=line_down,
        pipeline=o.pipeline,
        rate_rps=rate_rps,
        requests=requests,
        closed_ttft_s=(got[0]["closed_form"], got[1]["closed_form"], got[2]["closed_form"]),
        simulated_ttft_s=(got[0]["simulated"], got[1]["simulated"], got[2]["simulated"]),
        gap_pct=(got[0]["gap_pct"], got[1]["gap_pct"], got[2]["gap_pct"]),
        flags=(got[0]["flag"], got[1]["flag"], got[2]["flag"]),
        targets_s=(float(t[0]), float(t[1]), float(t[2])),
        partial=partial,
    )


def check_requests(requests: int) -> None:
    """The requests a pipeline is simulated with: at least 1, at most the cap (OptionError)."""
    from pddplan import limits
    from pddplan.errors import OptionError

    if requests < 1:
        raise OptionError("simulate", f"is the requests per pipeline: at least 1, not {requests}")
    limits.SIM_REQUESTS.check(requests, option="simulate")


def simulate_topology(tp: TopologyPlan, requests: int, seed: int = 0) -> TopologySim:
    """Every pipeline of ``tp`` simulated at the rate it carries; for a resilient plan, each
    single line failure too (the pipelines that take the lost share, at their new rates)."""
    check_requests(requests)
    by_pipe = {o.pipeline: o for o in tp.chosen}
    plan = [
        simulate_pipeline(
            o, tp.carried_share[o.pipeline] * tp.sources[o.source].rate_rps, requests, seed
        )
        for o in tp.chosen
    ]
    failures: list[FailureSim] = []
    if tp.resilient:
        for f in tp.failures:
            hit = f.degraded or {}
            runs: dict[str, tuple[float, tuple[Any, Any] | None]] = {
                name: (rate, None) for name, rate in f.moved_to.items()
            }
            runs.update({name: (r, (p, pb)) for name, (r, p, pb) in hit.items() if r > 0})
            sims = [
                simulate_pipeline(
                    by_pipe[name], rate, requests, seed, f.label, fleet, f.kind != "line"
                )
                for name, (rate, fleet) in sorted(runs.items())
            ]
            failures.append(FailureSim(f.label, sims, f.survives))
    return TopologySim(requests, seed, plan, failures)
