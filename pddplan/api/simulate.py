"""``simulate``: a plan simulated request by request, beside the closed forms' figures."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pddplan.api.command_options import SimulateOptions
from pddplan.api.options import validate_args
from pddplan.api.scenario import (
    Overrides,
    PathLike,
    Profiles,
    ScenarioLike,
    load,
    with_inventory,
)
from pddplan.errors import OptionError
from pddplan.executors import Progress

if TYPE_CHECKING:
    from pddplan.io.loader import ResolvedScenario
    from pddplan.results import SimulateResult, SolveResult
    from pddplan.sim import SimConfig, SimPlan
    from pddplan.sim.requests import Requests
    from pddplan.solver import Problem

_D = SimulateOptions()


def simulate(
    scenario: ScenarioLike = None,
    *,
    plan: PathLike | Mapping[str, Any] | SolveResult | None = None,
    requests: int = _D.requests,
    seed: int = _D.seed,
    rate_rps: float | None = _D.rate_rps,
    policy: str = _D.policy,
    handover: str = _D.handover,
    sample: str = _D.sample,
    trace: PathLike | None = None,
    warmup_fraction: float = _D.warmup_fraction,
    block_tokens: int = _D.block_tokens,
    own: Mapping[str, int] | None = None,
    max_chips: Mapping[str, int] | None = None,
    overrides: Overrides = None,
    profiles: Profiles = None,
    progress: Progress | None = None,
) -> SimulateResult:
    """Simulate a plan request by request, beside the closed forms' figures.

    Parameters
    ----------
    plan : a plan (``solve`` JSON file or document, or a :class:`SolveResult`); default: solve
        the scenario now (at ``rate_rps`` if given).
    requests : requests to simulate.
    seed : random seed (same seed, same run).
    rate_rps : [req/s] arrival rate (default: the plan's).
    policy : ``allowed`` or ``p-rld`` (relayed requests finish on RLD, to see RLD overload).
    handover : ``plan``, ``one-shot``, ``catch-up`` or ``adaptive``.
    sample : ``classes`` (the solver's request classes) or ``workload`` (its distributions).
    trace : replay a trace's arrivals, lengths and prefix hits (unbounded cache).
    warmup_fraction : [-] share of the first requests left out of the statistics.
    block_tokens : [tokens] per hash-id block of a JSONL ``trace`` (as ``hitrate`` reads it).
    own, max_chips : owned chips and inventory limits, chip name -> chips, checked as ``solve``
        checks them (:func:`~pddplan.api.scenario.chip_limits`) and put into the scenario.
    """
    o = validate_args(SimulateOptions, locals())
    cfg = _config(o, trace)
    from pddplan.results.simulate import SimulateResult, stability_verdict
    from pddplan.sim import simulate as run_simulation
    from pddplan.sim.compare import closed_forms_beside
    from pddplan.sim.policies import resolve_handover

    ls, _limits = with_inventory(load(scenario, overrides, profiles), max_chips, own)
    rs = ls.resolved
    problem, splan, source = _plan(rs, plan, cfg.rate_rps)
    simulated_handover = resolve_handover(cfg.handover, splan.handover)
    reqs = None
    if trace is not None:
        reqs = _trace_requests(Path(trace), problem, cfg, o.block_tokens)
        cfg = replace(cfg, requests=len(reqs), rate_rps=None, sample="trace")
    res = run_simulation(
        problem, splan, cfg, requests=reqs, workload=rs.workload, progress=progress
    )
    closed, figures, rows, notes = closed_forms_beside(problem, splan, res, simulated_handover)
    notes = [*_elsewhere(splan, ls.name, rs.link.name), *notes]
    name = str(scenario) if isinstance(scenario, str | os.PathLike) else ls.name
    return SimulateResult(res, figures, closed, rows, stability_verdict(res), name, source, notes)


def _elsewhere(splan: SimPlan, scenario: str, line: str) -> list[str]:
    """A note where the plan was solved for another scenario or line than the one it is
    simulated on (a what-if: the fleet on a changed scenario; the closed forms beside it are
    the changed scenario's too, not the figures the plan file gives)."""
    was_scenario, was_line = splan.solved_for
    out = []
    if was_line is not None and was_line != line:
        out.append(
            f"the plan was solved for line {was_line}; it is simulated on line {line}, and the "
            "closed forms are that line's (give the plan's scenario and line to check its own "
            "figures)"
        )
    if was_scenario is not None and was_scenario != scenario:
        out.append(
            f"the plan was solved for scenario {was_scenario}; it is simulated on scenario "
            f"{scenario}, and the closed forms are that scenario's"
        )
    return out


def _config(o: SimulateOptions, trace: PathLike | None) -> SimConfig:
    """The options checked further (before anything is solved), as a
    :class:`~pddplan.sim.SimConfig`."""
    from pddplan import limits
    from pddplan.sim import SimConfig
    from pddplan.sim.policies import check_policy, resolve_handover

    check_policy(o.policy)
    resolve_handover(o.handover, "one-shot")  # reject a bad hand-over before solving
    limits.SIM_REQUESTS.check(o.requests, option="requests")
    if trace is not None and o.sample != "classes":
        raise OptionError("sample", "does not apply to a trace, which replays its own requests")
    if trace is None and o.block_tokens != SimulateOptions().block_tokens:
        raise OptionError("block_tokens", "applies to a trace's hash ids: give a trace too")
    return SimConfig(**o.model_dump(exclude={"block_tokens"}))


def _plan(
    rs: ResolvedScenario,
    plan: PathLike | Mapping[str, Any] | SolveResult | None,
    rate_rps: float | None,
) -> tuple[Problem, SimPlan, str]:
    """The problem and plan to simulate, and where the plan comes from: the given plan (a
    ``solve`` JSON file or document, a :class:`SolveResult`) or one solved now."""
    from pddplan import tiers
    from pddplan.sim import SimPlan
    from pddplan.sim.plan import plan_from_json, read_plan_file
    from pddplan.solver import PDD, build_problem, check_options
    from pddplan.solver.problem import PDD_UNFILTERED

    if plan is None:
        out = tiers.solve(rs, rate_rps=rate_rps, baselines=False)
        splan = SimPlan.of(out.plan)
        return out.problem, splan, f"solved now at {splan.rate_rps:.4g} req/s"
    problem = build_problem(rs, PDD)
    check_options(problem)
    from pddplan.results.solve import SolveResult

    if isinstance(plan, SolveResult):
        splan = plan_from_json(plan.to_json(), problem, "<SolveResult>")
        source = "a SolveResult"
    elif isinstance(plan, Mapping):
        splan = plan_from_json(dict(plan), problem, "<plan>")
        source = "a plan document"
    else:
        splan = read_plan_file(Path(plan), problem)
        source = str(plan)
    if (splan.rld is None or splan.anomalous_filter is False) and (
        problem.topology.anomalous_filter
    ):
        # a plan without RLD sends every request, anomalous ones included, over the line, and
        # one solved without the filter relays them as any other (the instances are the same
        # options of the same chips: only the classes change)
        problem = build_problem(rs, PDD_UNFILTERED)
    return problem, splan, source


def _trace_requests(path: Path, problem: Problem, cfg: SimConfig, block_tokens: int) -> Requests:
    """Requests replayed from a trace: arrivals, lengths and hits (unbounded prefix cache,
    hash ids of ``block_tokens`` tokens)."""
    import numpy as np

    from pddplan.sim.requests import replay
    from pddplan.trace.arrivals import trace_arrivals

    tr = trace_arrivals(path, cfg.requests, cfg.rate_rps, block_tokens=block_tokens)
    cv = problem.wan.jitter_cv if problem.topology.cross_dc else 0.0
    return replay(
        tr.arrival_s,
        tr.hit_rate,
        tr.input_tokens,
        tr.output_tokens,
        cv,
        np.random.default_rng(cfg.seed),
    )
