"""``pddplan simulate``: a discrete-event simulation of a plan, side by side with the closed forms."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pddplan.cli import common
from pddplan.cli.solve_cmd import ScenarioArg

if TYPE_CHECKING:
    from pddplan.loader import Registry
    from pddplan.sim.requests import Requests
    from pddplan.solver import Problem


def simulate_cmd(
    scenario: ScenarioArg = None,
    plan: Annotated[
        Path | None,
        typer.Option(
            "--plan",
            help="Plan from `pddplan solve --format json` (default: solve the scenario now).",
            dir_okay=False,
        ),
    ] = None,
    requests: Annotated[
        int, typer.Option("--requests", "-n", help="Requests to simulate.", min=1)
    ] = 20_000,
    seed: Annotated[int, typer.Option("--seed", help="Random seed (same seed, same run).")] = 0,
    rate: Annotated[
        float | None,
        typer.Option(
            "--rate",
            help="Arrival rate [req/s] (default: the plan's). Without --plan the scenario is "
            "solved at this rate; with --plan the plan's fleet runs at it.",
            min=0.0,
        ),
    ] = None,
    policy: Annotated[
        str,
        typer.Option(
            "--policy",
            help="allowed: P-MD and P-RLD-MD (anomalous traffic on RLD); p-rld: relayed requests "
            "finish on RLD (the excluded pipeline, to see RLD overload).",
            metavar="allowed|p-rld",
        ),
    ] = "allowed",
    handover: Annotated[
        str,
        typer.Option(
            "--handover",
            help="plan (the plan's mode), one-shot, catch-up, or adaptive (Catch-Up while RLD "
            "is less than half full).",
            metavar="plan|one-shot|catch-up|adaptive",
        ),
    ] = "plan",
    sample: Annotated[
        str,
        typer.Option(
            "--sample",
            help="classes: draw the solver's discretized request classes by weight; workload: "
            "draw from the workload's continuous distributions.",
            metavar="classes|workload",
        ),
    ] = "classes",
    trace: Annotated[
        Path | None,
        typer.Option(
            "--trace",
            help="Replay a trace (JSONL with hash ids, or CSV with cached tokens): its arrival "
            "times, lengths and prefix hits (unbounded cache). --rate rescales its clock.",
            dir_okay=False,
        ),
    ] = None,
    warmup: Annotated[
        float,
        typer.Option(
            "--warmup", help="Share of the first requests left out of the statistics.", min=0.0
        ),
    ] = 0.05,
    set_: Annotated[
        list[str],
        typer.Option(
            "--set",
            help="PATH=VALUE scenario change, as in `pddplan sweep` (repeatable), e.g. "
            "--set link=wan-10g-cross-city --set rate_rps=0.6.",
        ),
    ] = [],  # noqa: B006
    fmt: common.FormatOpt = "table",
    output: common.OutputOpt = None,
) -> None:
    """Simulate a plan request by request and compare TTFT, TPOT, RLD's token share and the
    line's utilization with the closed forms.

    Poisson arrivals (or a trace), FCFS chunked prefill, RDMA and a processor-sharing WAN with
    jitter, RLD relay with One-Shot or Catch-Up hand-over, continuous batching on RLD and MD.
    The same physics as `pddplan solve`, so the gaps come from queueing and batching alone.

    Example: pddplan simulate --requests 20000 --seed 1
    """
    import sys
    from dataclasses import replace

    from pddplan.errors import UsageError
    from pddplan.loader import load_scenario
    from pddplan.sim import SimConfig, SimPlan, simulate
    from pddplan.sim.compare import (
        closed_form_figures,
        closed_form_plan,
        comparison_rows,
        regime_warning_for_plan,
        with_rate,
    )
    from pddplan.sim.plan import read_plan_file
    from pddplan.sim.policies import check_policy, resolve_handover
    from pddplan.sim.report import simulate_report
    from pddplan.solver import PDD, build_problem, check_options, solve_scenario

    common.check_format(fmt)
    check_policy(policy)
    resolve_handover(handover, "one-shot")  # reject a bad --handover before solving
    if sample not in ("classes", "workload"):
        raise UsageError(f"--sample must be classes or workload, not {sample!r}")
    if not 0.0 <= warmup < 1.0:
        raise UsageError("--warmup must be at least 0 and below 1")
    if rate is not None and rate <= 0:
        raise UsageError("--rate must be above 0")
    reg = common.registry()
    rs = load_scenario(scenario, reg, _patch(scenario, reg, set_) if set_ else None)
    if plan is not None:
        problem = build_problem(rs, PDD)
        check_options(problem)
        splan = read_plan_file(plan, problem)
        if splan.rld is None and problem.topology.anomalous_filter:
            # a plan without RLD sends every request, anomalous ones included, over the line
            problem = build_problem(rs, replace(PDD, anomalous_filter=False))
            splan = read_plan_file(plan, problem)
        source = str(plan)
    else:
        out = solve_scenario(rs, rate_rps=rate, baselines=False)
        problem, splan = out.problem, SimPlan.of(out.plan)
        source = f"solved now at {splan.rate_rps:.4g} req/s"
    resolve_handover(handover, splan.handover)
    cfg = SimConfig(
        requests=requests,
        seed=seed,
        rate_rps=rate,
        policy=policy,
        handover=handover,
        sample=sample,
        warmup_fraction=warmup,
    )
    reqs = None
    if trace is not None:
        if sample != "classes":
            raise UsageError("--trace replays the trace's own requests; drop --sample")
        reqs = _trace_requests(trace, problem, rate, requests, seed)
        cfg = replace(cfg, requests=len(reqs), rate_rps=None, sample="trace")
    total = len(reqs) if reqs is not None else requests

    progress = None
    bar = None
    if sys.stderr.isatty() and total >= 5_000:
        from rich.console import Console
        from rich.progress import Progress

        bar = Progress(console=Console(stderr=True), transient=True)
        task = bar.add_task("simulating", total=total)
        bar.start()

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done)

    try:
        res = simulate(problem, splan, cfg, requests=reqs, workload=rs.workload, progress=progress)
    finally:
        if bar is not None:
            bar.stop()
    at_rate = with_rate(splan, res.rate_rps)
    cf_plan = closed_form_plan(problem, at_rate, res.rate_rps)
    rows = comparison_rows(closed_form_figures(problem, cf_plan), res)
    rep = simulate_report(res, rows, scenario or rs.scenario.name, source)
    for w in regime_warning_for_plan(problem, cf_plan):
        rep.notes.append("closed forms: " + w.replace("; check with `pddplan simulate`", ""))
    common.emit(rep, fmt, output)


#: Scenario keys that name a profile; ``--set KEY=NAME`` swaps the profile.
_PROFILE_NAMES = ("link", "rdma", "model", "workload")


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _patch(scenario: str | None, reg: Registry, sets: list[str]) -> dict[str, Any]:
    """The scenario patch of the ``--set`` options (paths as in ``pddplan sweep``)."""
    from pddplan.errors import UsageError
    from pddplan.loader import load_scenario
    from pddplan.whatif import check_path, parse_set, patch_for

    base = load_scenario(scenario, reg)
    patch: dict[str, Any] = {}
    for s in sets:
        ax = parse_set(s)
        if len(ax.values) != 1:
            raise UsageError(f"--set {ax.path}: simulate takes one value per PATH")
        if ax.path in _PROFILE_NAMES:  # swap a named profile: --set link=wan-10g-cross-city
            patch = _merge(patch, {ax.path: str(ax.values[0])})
            continue
        check_path(ax.path, base)
        patch = _merge(patch, patch_for(ax.path, ax.values[0], base))
    return patch


def _trace_requests(
    path: Path, problem: Problem, rate: float | None, limit: int, seed: int
) -> Requests:
    """Requests replayed from a trace: arrivals, lengths and hits (unbounded prefix cache)."""
    import math

    import numpy as np

    from pddplan.errors import UsageError
    from pddplan.sim.requests import replay
    from pddplan.trace.replay import replay_trace

    tr = replay_trace(path, [math.inf])
    n = min(len(tr), limit)
    if n < 1:
        raise UsageError(f"{path}: the trace has no requests")
    t_s = np.asarray(tr.timestamp_ms[:n], dtype=float) / 1e3
    if not np.all(np.isfinite(t_s)):
        raise UsageError(f"{path}: the trace has no timestamps; it cannot be replayed in time")
    inp = np.asarray(tr.input_tokens[:n], dtype=float)
    hit = np.where(inp > 0, np.asarray(tr.hit_tokens[:n, 0], dtype=float) / np.maximum(inp, 1), 0.0)
    if rate is not None and n > 1:
        span = float(np.max(t_s) - np.min(t_s))
        if span > 0:
            t_s = (t_s - np.min(t_s)) * ((n - 1) / span) / rate
    cv = problem.wan.jitter_cv if problem.topology.cross_dc else 0.0
    return replay(
        t_s,
        hit,
        inp,
        np.asarray(tr.output_tokens[:n], dtype=float),
        cv,
        np.random.default_rng(seed),
    )


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate_cmd)
