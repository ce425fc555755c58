"""``pddplan horizon``: own the base, rent the peak, over a day's load and its growth."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pddplan.cli import common
from pddplan.cli.solve_cmd import ScenarioArg


@common.output_options(command="horizon")
@common.scenario_options("horizon")
def horizon_cmd(
    scenario: ScenarioArg = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Draw the fleet and the rate over the day and over the growth path to "
            "FILE.png or FILE.svg (needs the plot extra).",
            dir_okay=False,
        ),
    ] = None,
    *,
    scenario_opts: common.ScenarioOptions,
    out: common.Output,
) -> None:
    """Owned chips of least cost over the scenario's load: a day's rates and their growth.

    Every slot of every month of the amortization horizon is served by `pddplan solve --rate R
    --own ...` at the slot's rate with the owned chips, renting the chips beyond them for the
    slot (started ahead by their start-up time, billed in whole billing units: load.elastic).
    Prints the owned chips with their break-even utilization and the share of hours they are
    busy, the fleet per slot, the cost per day and over the horizon, and the savings against
    owning for the peak and renting everything. --own prices a given inventory instead of
    choosing one. Exit code 3 when no plan fits at some slot.

    Example (in a checkout of the repository; the example is not bundled): pddplan horizon
    examples/agent-diurnal.yaml --plot horizon.png
    """
    from pddplan import api
    from pddplan.report.plots import check_plot_path

    if plot is not None:
        check_plot_path(plot)
        common.check_writable(plot, "plot")
    res = api.horizon(
        scenario,
        overrides=scenario_opts.overrides,
        own=scenario_opts.own or None,
        max_chips=scenario_opts.max_chips,
        profiles=common.State.profile_dirs,
    )
    out.emit(res.report())
    if plot is not None:
        from pddplan.report.horizon_plot import horizon_plot

        horizon_plot(res, plot)
        common.info(f"wrote {plot}")


def register(app: typer.Typer) -> None:
    app.command("horizon")(horizon_cmd)
