"""``solve``: size P / RLD / MD and compare with the baselines; the result of an outcome."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pddplan.api.options import SolveOptions, validate
from pddplan.api.scenario import (
    Overrides,
    Profiles,
    ScenarioLike,
    load,
    trace_rate_note,
    with_inventory,
)
from pddplan.errors import UsageError

if TYPE_CHECKING:
    from pddplan.results import SolveResult
    from pddplan.robust.verdict import VerdictCheck
    from pddplan.solver import Outcome
    from pddplan.spec.scenario import ResolvedScenario

_D = SolveOptions()


def solve(
    scenario: ScenarioLike = None,
    *,
    overrides: Overrides = None,
    profiles: Profiles = None,
    rate_rps: float | None = _D.rate_rps,
    budget_usd_per_hour: float | None = _D.budget_usd_per_hour,
    max_chips: Mapping[str, int] | None = None,
    max_rate_rps: float | None = _D.max_rate_rps,
    max_bcr: bool = _D.max_bcr,
    explain: bool = _D.explain,
    baselines: bool = _D.baselines,
    own: Mapping[str, int] | None = None,
    verdict_check: bool = _D.verdict_check,
) -> SolveResult:
    """Size P / RLD / MD and compare with the same-datacenter and no-relay baselines.

    Without ``rate_rps`` or ``budget_usd_per_hour`` the scenario's rate is the target;
    ``max_bcr`` (or a scenario without a rate) asks for the plan of highest BCR.

    Parameters
    ----------
    rate_rps : [req/s] target rate: the least-cost plan serving it.
    budget_usd_per_hour : [USD/h] the plan with the most goodput within it.
    max_chips : inventory limits, chip name -> chips (the baselines obey them too).
    own : chips owned, chip name -> chips (the scenario's ``inventory.owned``): used first, at
        their amortized capex (or opex only when ``inventory.owned_cost`` is ``sunk``).
    max_rate_rps : [req/s] upper bound on the rate when no target is given.
    max_bcr : ignore the scenario's rate: the plan of highest BCR.
    explain : add one row per hit-rate class (``classes``).
    baselines : also size the baselines at the plan's rate.
    verdict_check : name the estimated inputs whose plausible range reverses PDD's verdict
        against each baseline (:func:`pddplan.robust.verdict.check_verdict`: the solve's fleets
        re-evaluated with one input at each end of its range; ``verdict`` of the result).

    The result's ``trace_rate_note`` says when the workload records its trace's rate and the
    scenario's rate, planned for, differs (:func:`~pddplan.api.scenario.trace_rate_note`; not
    when ``rate_rps``, ``budget_usd_per_hour`` or ``max_bcr`` chose the target).

    Raises
    ------
    InfeasibleError : no plan meets the SLA within the limits.
    """
    if sum((rate_rps is not None, budget_usd_per_hour is not None, bool(max_bcr))) > 1:
        raise UsageError("give one of rate_rps, budget_usd_per_hour and max_bcr")
    o = validate(
        SolveOptions,
        rate_rps=rate_rps,
        budget_usd_per_hour=budget_usd_per_hour,
        max_rate_rps=max_rate_rps,
        max_bcr=max_bcr,
        explain=explain,
        baselines=baselines,
        verdict_check=verdict_check,
    )
    ls = load(scenario, overrides, profiles)
    ls, limits = with_inventory(ls, max_chips, own)  # the baselines obey them too
    from pddplan import tiers
    from pddplan.solver.plan import FREE_FLEET_BCR

    out = tiers.solve(  # with cache: tiers, at the capacity it chooses (out.cache)
        ls.resolved,
        explain_relay=True,
        max_chips=limits,
        **o.model_dump(exclude={"explain", "verdict_check"}),
    )
    rs, cache = out.scenario or ls.resolved, out.cache
    verdict = None
    if o.verdict_check and out.baselines and out.plan.cost_usd_per_hour <= 0:
        # the verdict compares BCRs, and the plan's is unbounded: there is none to check
        out = replace(out, notes=[*out.notes, f"no verdict check: {FREE_FLEET_BCR}"])
    elif o.verdict_check and out.baselines:
        from pddplan.robust.verdict import check_verdict

        def resolve(ov: Mapping[str, Any]) -> ResolvedScenario:
            again = ls.source.resolve({**ls.overrides, **ov})
            if cache is None:
                return again
            from pddplan.tiers import sized_like

            return sized_like(again, rs, ls.resolved)

        verdict = check_verdict(resolve, rs, out)
    res = solve_result(out, explain=o.explain, verdict=verdict)
    if cache is not None:
        res = replace(res, cache=cache)
    chosen = rate_rps is not None or budget_usd_per_hour is not None or max_bcr
    note = None if chosen else trace_rate_note(ls)
    return replace(res, trace_rate_note=note) if note else res


def solve_result(
    out: Outcome, *, explain: bool = False, verdict: VerdictCheck | None = None
) -> SolveResult:
    """The :class:`SolveResult` of a planner outcome: TTFT by pipeline, the classes (with
    ``explain``), the closed forms' regime warnings, computed now, and the verdict check
    (``verdict``) when one was made."""
    from pddplan.results.solve import SolveResult
    from pddplan.sim.compare import regime_warning_for_plan
    from pddplan.solver import Solver

    solver = Solver(out.problem)
    by_pipe = solver.ttft_by_pipeline(out.plan)
    wait = by_pipe.pop("_wait")
    classes = _class_rows(out, solver) if explain else None
    warns = [f"closed forms: {w}" for w in regime_warning_for_plan(out.problem, out.plan)]
    return SolveResult(out, by_pipe, wait["mean_wait_s"], classes, warns, verdict)


def _class_rows(out: Outcome, solver: Any) -> list[dict[str, Any]]:
    """One row per hit-rate class: its route, prefill, WAN transfer and mean TTFT (the solver's
    timeline, :meth:`~pddplan.solver.Solver.class_ttft_mean_s`)."""
    plan = out.plan
    pb = solver.pb
    c = pb.classes
    r = plan.route
    p_inst, _n = plan.roles["P"]  # type: ignore[misc]
    pre = solver.prefill_s(p_inst)
    ttft = solver.class_ttft_mean_s(plan)
    from pddplan import timing

    names = timing.pipeline_names(pb.topology.cross_dc)
    return [
        {
            "hit_rate": float(c.hit_rate[k]),
            "input_tokens": float(c.input_tokens[k]),
            "output_tokens": float(c.output_tokens[k]),
            "share": float(c.weight[k]),
            "route": names[int(r.pipeline[k])],
            "prefill_s": float(pre[k]),
            "wan_bytes": float(pb.wan_bytes[k]),
            "wan_s": float(r.wan_s[k]),
            "rdma_s": float(r.rdma_s[k]),
            "ttft_mean_s": float(ttft[k]),
            "eager_tokens": float(r.eager_tokens[k]),
        }
        for k in range(len(c))
    ]
