"""``robust``: the point plan under sampled inputs, the robust plan, and the sensitivity."""

from __future__ import annotations

from typing import Annotated

import typer

from pddplan import defaults
from pddplan.cli import common
from pddplan.cli.solve_cmd import ScenarioArg

ExecutorOpt = Annotated[
    str,
    typer.Option(
        "--executor",
        help="Where the work runs: local (this process, or --jobs processes) or dask "
        "(pip install 'pddplan[dask]'). The result is the same.",
        metavar="local|dask",
    ),
]
SchedulerOpt = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        help="A Dask scheduler's address (tcp://host:8786); without it --executor dask starts a "
        "LocalCluster of --jobs workers.",
    ),
]


@common.output_options(command="robust")
@common.scenario_options("robust")
def robust_cmd(
    scenario: ScenarioArg = None,
    samples: Annotated[
        int, typer.Option("--samples", "-n", help="Scenarios drawn (Latin hypercube).")
    ] = defaults.ROBUST_SAMPLES,
    confidence: Annotated[
        float,
        typer.Option(
            "--confidence", "-p", help="Probability the robust plan meets every SLA target."
        ),
    ] = defaults.ROBUST_CONFIDENCE,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the draws.")] = 0,
    rate_rps: Annotated[
        float | None, typer.Option("--rate", help="Target rate, req/s (default: the scenario's).")
    ] = None,
    executor: ExecutorOpt = "local",
    scheduler: SchedulerOpt = None,
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", help="Local processes, or LocalCluster workers.", min=1)
    ] = 1,
    plot: Annotated[
        str | None,
        typer.Option("--plot", help="Draw the tornado plot (sensitivity) to FILE.png/.svg."),
    ] = None,
    *,
    scenario_opts: common.ScenarioOptions,
    out: common.Output,
) -> None:
    """Plans under uncertainty: the point plan's chance of meeting every SLA target when its
    estimated inputs are sampled, the cheapest plan that meets them with probability
    --confidence, and which estimate moves BCR and SLA attainment most (docs/robust.md).

    Example: pddplan robust pdd-paper --samples 200 --confidence 0.9 -f json
    """
    from pathlib import Path

    from pddplan import api
    from pddplan.report.plots import check_plot_path

    if plot is not None:
        check_plot_path(Path(plot))
    with common.progress_bar("sampling", samples >= 20) as progress:
        res = api.robust(
            scenario,
            samples=samples,
            confidence=confidence,
            seed=seed,
            executor=executor,
            scheduler=scheduler,
            jobs=jobs,
            rate_rps=rate_rps,
            max_chips=scenario_opts.max_chips,
            overrides=scenario_opts.with_inventory(max_chips=False),
            profiles=common.State.profile_dirs,
            progress=progress,
        )
    out.emit(res.report())
    if plot is not None:
        from pddplan.report.tornado import robust_tornado_plot

        robust_tornado_plot(res, Path(plot))
        common.info(f"wrote {plot}")


def register(app: typer.Typer) -> None:
    app.command("robust")(robust_cmd)
