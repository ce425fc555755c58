"""``pddplan pareto``: the frontier of plans over cost, goodput and TTFT p99, PDD against its
baselines, as tables and a plot."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pddplan.cli import common
from pddplan.cli.solve_cmd import ScenarioArg


@common.output_options(command="pareto")
@common.scenario_options("pareto")
def pareto_cmd(
    scenario: ScenarioArg = None,
    points: Annotated[
        int,
        typer.Option(
            "--points",
            help="How many target rates, evenly spaced from --min-rate to --max-rate (at least "
            "2; each is one solve).",
            metavar="N",
        ),
    ] = 10,
    min_rate_rps: Annotated[
        float | None,
        typer.Option(
            "--min-rate",
            help="Lowest target rate [req/s] (default: the highest over --points).",
            metavar="REQ_PER_S",
        ),
    ] = None,
    max_rate_rps: Annotated[
        float | None,
        typer.Option(
            "--max-rate",
            help="Highest target rate [req/s] (default: the highest PDD's search goes to: the "
            "line at its utilization cap, limits.max_rate_rps or the search ceiling).",
            metavar="REQ_PER_S",
        ),
    ] = None,
    baselines: Annotated[
        bool,
        typer.Option(
            "--baselines/--no-baselines", help="Also size the baselines at every target rate."
        ),
    ] = True,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Draw goodput and TTFT p99 against cost to FILE.png or FILE.svg (needs the "
            "plot extra).",
            dir_okay=False,
        ),
    ] = None,
    *,
    scenario_opts: common.ScenarioOptions,
    out: common.Output,
) -> None:
    """The plans no other beats at once on cost, goodput and TTFT p99, for PDD and its baselines.

    Solves the scenario at --points target rates (each exactly `pddplan solve --rate R`) and keeps
    the plans that no other plan dominates: one that costs no more, serves no less goodput and has
    no higher TTFT p99 at its target rate. Every plan shows its cost per million input and output
    tokens beside its BCR. Exit code 3 when no PDD plan fits at any rate.

    Example: pddplan pareto long-context --points 6 --plot pareto.png
    """
    from pddplan import api
    from pddplan.report.plots import check_plot_path

    if plot is not None:
        check_plot_path(plot)
        common.check_writable(plot, "plot")
    with common.progress_bar("solving", points >= 4) as progress:
        res = api.pareto(
            scenario,
            overrides=scenario_opts.overrides,
            own=scenario_opts.own,
            max_chips=scenario_opts.max_chips,
            profiles=common.State.profile_dirs,
            points=points,
            min_rate_rps=min_rate_rps,
            max_rate_rps=max_rate_rps,
            baselines=baselines,
            progress=progress,
        )
    out.emit(res.report())
    if plot is not None:
        from pddplan.report.pareto_plot import pareto_plot

        pareto_plot(res.frontier, plot)
        common.info(f"wrote {plot}")


def register(app: typer.Typer) -> None:
    app.command("pareto")(pareto_cmd)
