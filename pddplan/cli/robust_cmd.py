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
        int, typer.Option("--jobs", "-j", help="Local processes, or LocalCluster workers.")
    ] = 1,
    plot: Annotated[
        str | None,
        typer.Option("--plot", help="Draw the tornado plot (sensitivity) to FILE.png/.svg."),
    ] = None,
    resilient: Annotated[
        bool,
        typer.Option(
            "--resilient",
            help="A topology file: re-plan and hold the plan that survives any single failure.",
        ),
    ] = False,
    *,
    scenario_opts: common.ScenarioOptions,
    out: common.Output,
) -> None:
    """Plans under uncertainty: the point plan's chance of meeting every SLA target when its
    estimated inputs are sampled, the cheapest plan that meets them with probability
    --confidence, and which estimate moves BCR and SLA attainment most (docs/robust.md).

    A topology file (sites:) is re-planned at each sample by the topology planner, and its
    point plan held fixed on the same samples (docs/topology.md, "Under uncertainty").

    Example: pddplan robust pdd-paper --samples 200 --confidence 0.9 -f json
    """
    from pathlib import Path

    from pddplan import api
    from pddplan.api.whatif import topology_source
    from pddplan.report.plots import check_plot_path

    if topology_source(scenario, common.State.profile_dirs) is not None:
        _topology_robust(
            scenario,
            samples,
            seed,
            resilient,
            executor,
            scheduler,
            jobs,
            out,
            scenario_opts,
            confidence=confidence,
            rate_rps=rate_rps,
            plot=plot,
        )
        return
    if resilient:
        from pddplan.errors import UsageError

        raise UsageError("--resilient applies to a topology file (sites:)")

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


def _topology_robust(
    scenario: str | None,
    samples: int,
    seed: int,
    resilient: bool,
    executor: str,
    scheduler: str | None,
    jobs: int,
    out: common.Output,
    scenario_opts: common.ScenarioOptions,
    *,
    confidence: float,
    rate_rps: float | None,
    plot: str | None,
) -> None:
    """``robust`` on a topology file (api.robust_topology); the two-site options refused."""
    from pddplan import api
    from pddplan.errors import UsageError

    if confidence != defaults.ROBUST_CONFIDENCE:
        raise UsageError(
            "--confidence sizes a two-site scenario's robust plan; a topology is re-planned at "
            "each sample"
        )
    if rate_rps is not None:
        raise UsageError("--rate applies to a two-site scenario; --set traffic.NAME.rate_rps=R")
    if plot is not None:
        raise UsageError("--plot draws a two-site scenario's sensitivity")
    if scenario_opts.max_chips or scenario_opts.own:
        from pddplan.api.scenario import inventory_on_topology

        raise inventory_on_topology("own" if scenario_opts.own else "max_chips")
    assert scenario is not None
    with common.progress_bar("sampling", samples >= 20) as progress:
        res = api.robust_topology(
            scenario,
            samples=samples,
            seed=seed,
            resilient=resilient,
            executor=executor,
            scheduler=scheduler,
            jobs=jobs,
            overrides=scenario_opts.overrides,
            profiles=common.State.profile_dirs,
            progress=progress,
        )
    out.emit(res.report())


def register(app: typer.Typer) -> None:
    app.command("robust")(robust_cmd)
