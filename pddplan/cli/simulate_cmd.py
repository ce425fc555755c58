"""``pddplan simulate``: a discrete-event simulation of a plan, side by side with the closed forms."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pddplan import defaults
from pddplan.cli import common
from pddplan.cli.solve_cmd import ScenarioArg


@common.output_options(command="simulate")
@common.scenario_options("simulate")
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
        int, typer.Option("--requests", "-n", help="Requests to simulate.")
    ] = 20_000,
    seed: Annotated[int, typer.Option("--seed", help="Random seed (same seed, same run).")] = 0,
    rate_rps: Annotated[
        float | None,
        typer.Option(
            "--rate",
            help="Arrival rate [req/s] (default: the plan's). Without --plan the scenario is "
            "solved at this rate; with --plan the plan's fleet runs at it.",
            metavar="REQ_PER_S",
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
    warmup_fraction: Annotated[
        float,
        typer.Option("--warmup", help="Share of the first requests left out of the statistics."),
    ] = defaults.WARMUP_FRACTION,
    block_tokens: common.BlockTokensOpt = defaults.TRACE_BLOCK_TOKENS,
    *,
    scenario_opts: common.ScenarioOptions,
    out: common.Output,
) -> None:
    """Simulate a plan request by request and compare TTFT, TPOT, RLD's token share and the
    line's utilization with the closed forms.

    Poisson arrivals (or a trace), FCFS chunked prefill, RDMA and a processor-sharing WAN with
    jitter, RLD relay with One-Shot or Catch-Up hand-over, continuous batching on RLD and MD.
    The same physics as `pddplan solve`, so the gaps come from queueing and batching alone.

    Example: pddplan simulate pdd-paper --requests 20000 --seed 1 --set link=wan-40g-cross-city
    """

    from pddplan import api
    from pddplan.errors import UsageError

    if trace is not None and sample != "classes":
        raise UsageError("--trace replays the trace's own requests; drop --sample")
    if trace is not None:  # a bundled sample by its name, as hitrate finds it
        from pddplan.api.profiles import data_file

        trace = data_file(trace)
    with common.progress_bar("simulating", requests >= 5_000) as progress:
        res = api.simulate(
            scenario,
            profiles=common.State.profile_dirs,
            overrides=scenario_opts.overrides,
            own=scenario_opts.own,
            max_chips=scenario_opts.max_chips,
            plan=plan,
            requests=requests,
            seed=seed,
            rate_rps=rate_rps,
            policy=policy,
            handover=handover,
            sample=sample,
            trace=trace,
            warmup_fraction=warmup_fraction,
            block_tokens=block_tokens,
            progress=progress,
        )
    out.emit(res.report())


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate_cmd)
