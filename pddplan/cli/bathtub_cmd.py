"""``pddplan bathtub``: the return against hit rate, its valleys, singular points and advice."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pddplan.cli import common
from pddplan.cli.solve_cmd import ScenarioArg


@common.output_options(command="bathtub")
@common.scenario_options("bathtub")
def bathtub_cmd(
    scenario: ScenarioArg = None,
    step: Annotated[float, typer.Option("--step", help="Hit-rate grid step.")] = 0.01,
    tolerance: Annotated[
        float,
        typer.Option("--tolerance", help="Least valley depth, as a fraction of its rims."),
    ] = 0.02,
    reprovision: Annotated[
        bool,
        typer.Option(
            "--reprovision/--no-reprovision", help="Also solve the best plan per hit rate."
        ),
    ] = True,
    capacity_curve: Annotated[
        Path | None,
        typer.Option(
            "--capacity-curve",
            help="Cache capacity curve CSV (from `pddplan hitrate --curve-out`).",
            dir_okay=False,
        ),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Draw the curve to FILE.png or FILE.svg (needs the plot extra).",
            dir_okay=False,
        ),
    ] = None,
    *,
    scenario_opts: common.ScenarioOptions,
    out: common.Output,
) -> None:
    """Return on a request against its prefix hit rate: find the bathtub's valleys.

    The marginal view prices one request at each hit rate on the solved plan (P, RLD, MD and line
    time against its revenue); the re-provisioned view solves the best plan if all traffic had
    that hit rate. Valleys are found by a generic detector; singular points come from the
    chunked-prefill tail-chunk arithmetic.

    Example: pddplan bathtub long-context --plot bathtub.png
    """
    from pddplan import api
    from pddplan.report.plots import bathtub_plot, check_plot_path

    if plot is not None:
        check_plot_path(plot)
    with common.progress_bar("re-provisioning", reprovision) as progress:
        res = api.bathtub(
            scenario,
            overrides=scenario_opts.overrides,
            own=scenario_opts.own,
            max_chips=scenario_opts.max_chips,
            profiles=common.State.profile_dirs,
            step=step,
            tolerance=tolerance,
            reprovision=reprovision,
            capacity_curve=capacity_curve,
            progress=progress,
        )
    out.emit(res.report())
    if plot is not None:
        bathtub_plot(res.analysis, res.traffic_hit_rate, res.traffic_weight, plot)
        common.info(f"wrote {plot}")


def register(app: typer.Typer) -> None:
    app.command("bathtub")(bathtub_cmd)
