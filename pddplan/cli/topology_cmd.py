"""``pddplan topology``: plan sites, lines and traffic sources; evaluate line failures."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pddplan.cli import common
from pddplan.cli.robust_cmd import ExecutorOpt, SchedulerOpt


@common.output_options(command="topology")
def topology_cmd(
    scenario: Annotated[
        str,
        typer.Argument(
            help="Topology file (sites:, lines:, traffic:), or a two-site scenario file or "
            "bundled name (planned in its topology form).",
            autocompletion=common.complete_names("scenario"),
        ),
    ],
    resilient: Annotated[
        bool,
        typer.Option(
            "--resilient",
            help="The cheapest plan that still serves every source after any single failure "
            "(a line down, and the file's resilience: partial failures); also reports the cost "
            "of resilience.",
        ),
    ] = False,
    simulate: Annotated[
        int | None,
        typer.Option(
            "--simulate",
            help="Simulate each pipeline of the plan with N requests and compare its TTFT "
            "p50/p90/p99 with the closed forms (warned where more than 10% off); with "
            "--resilient, each single line failure too.",
            metavar="N",
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", help="Random seed of --simulate (same seed, same run).")
    ] = 0,
    executor: ExecutorOpt = "local",
    scheduler: SchedulerOpt = None,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs",
            "-j",
            help="Local processes, or LocalCluster workers, sizing pipelines.",
        ),
    ] = 1,
    budget_usd_per_hour: Annotated[
        float | None,
        typer.Option(
            "--budget",
            help="Budget [USD/hour]: the plan serving the most traffic within it (a source "
            "may be served in part).",
            metavar="USD_PER_HOUR",
        ),
    ] = None,
    max_bcr: Annotated[
        bool,
        typer.Option("--max-bcr", help="The plan serving the most traffic per dollar."),
    ] = False,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Draw the sites, lines (leased counts, utilizations) and each source's flows "
            "to FILE.png or FILE.svg (needs the plot extra).",
            dir_okay=False,
        ),
    ] = None,
    overrides: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="Change the topology file: PATH=VALUE, an entry of sites, lines or traffic by "
            "name or index (traffic.north.rate_rps=2), as sweep takes it (repeatable).",
            metavar="PATH=VALUE",
        ),
    ] = None,
    *,
    out: common.Output,
) -> None:
    """Least-cost plan of a many-datacenter topology (or, with --budget or --max-bcr, the
    plan serving the most traffic within a budget or per dollar): per-flow, per-site,
    per-line and single-failure tables (docs/topology.md).

    Each pipeline (source, P site, MD site) is sized by the plan builder at each share level;
    a MILP (HiGHS) chooses shares and leased lines within the sites' chips and the lines'
    limits.

    Example: pddplan topology pdd-paper --format md

    In a checkout of the repository (the national example is not bundled): pddplan topology
    examples/topologies/national.yaml --resilient --simulate 20000 --plot topology.png
    """
    from pddplan import api
    from pddplan.api.values import parse_overrides
    from pddplan.errors import UsageError
    from pddplan.report.plots import check_plot_path

    if budget_usd_per_hour is not None and max_bcr:
        raise UsageError("give one of --budget and --max-bcr")
    if plot is not None:
        check_plot_path(plot)
        common.check_writable(plot, "plot")
    res = api.topology(
        scenario,
        resilient=resilient,
        budget_usd_per_hour=budget_usd_per_hour,
        max_bcr=max_bcr,
        simulate=simulate,
        seed=seed,
        executor=executor,
        jobs=jobs,
        scheduler=scheduler,
        overrides=parse_overrides(overrides, "topology"),
        profiles=common.State.profile_dirs,
    )
    out.emit(res.report())
    if plot is not None:
        from pddplan.report.topology_plot import topology_plot

        topology_plot(res, plot)
        common.info(f"wrote {plot}")


def register(app: typer.Typer) -> None:
    app.command("topology")(topology_cmd)
