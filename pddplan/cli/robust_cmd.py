"""``robust``: the point plan under sampled inputs, the robust plan, and the sensitivity."""

from __future__ import annotations

from typing import Annotated

import typer

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


def robust_cmd(
    scenario: ScenarioArg = None,
    samples: Annotated[
        int, typer.Option("--samples", "-n", help="Scenarios drawn (Latin hypercube).")
    ] = 1000,
    confidence: Annotated[
        float,
        typer.Option(
            "--confidence", "-p", help="Probability the robust plan meets every SLA target."
        ),
    ] = 0.9,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the draws.")] = 0,
    rate: Annotated[
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
    fmt: common.FormatOpt = "table",
    output: common.OutputOpt = None,
) -> None:
    """Plans under uncertainty: the point plan's chance of meeting every SLA target when its
    estimated inputs are sampled, the cheapest plan that meets them with probability
    --confidence, and which estimate moves BCR and SLA attainment most (docs/robust.md).

    Example: pddplan robust pdd-paper --samples 200 --confidence 0.9 -f json
    """
    from pathlib import Path

    import numpy as np

    from pddplan import api
    from pddplan.errors import UsageError

    common.check_format(fmt)
    if not 0 < confidence < 1:
        raise UsageError(f"--confidence must be between 0 and 1 (exclusive), not {confidence:g}")
    if plot is not None:
        from pddplan.report.plots import check_plot_path

        check_plot_path(Path(plot))
    with common.flags(
        {
            "samples": "--samples",
            "confidence": "--confidence",
            "executor": "--executor",
            "scheduler": "--scheduler",
            "jobs": "--jobs",
            "rate_rps": "--rate",
        }
    ):
        res = api.robust(
            scenario,
            samples=samples,
            confidence=confidence,
            seed=seed,
            executor=executor,
            scheduler=scheduler,
            jobs=jobs,
            rate_rps=rate,
            profiles=common.State.profile_dirs,
        )
    common.emit(res.report(), fmt, output)
    if plot is not None:
        from pddplan.report.tornado import tornado_plot

        run = res.run
        bcr = run.bcr_requests_per_usd
        tornado_plot(
            run.sensitivity,
            float(np.mean(bcr[np.isfinite(bcr)])),
            run.sla_probability,
            Path(plot),
            f"{run.scenario_name}: what moves the point plan ({run.samples} samples, seed "
            f"{run.seed})",
        )
        common.info(f"wrote {plot}")


def register(app: typer.Typer) -> None:
    app.command("robust")(robust_cmd)
