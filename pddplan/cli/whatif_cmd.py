"""What-if commands: ``sweep``, ``breakeven`` and ``chips rank``."""

from __future__ import annotations

import math
from typing import Annotated

import typer

from pddplan import defaults
from pddplan.cli import common
from pddplan.cli.solve_cmd import ScenarioArg

chips_app = typer.Typer(help="Evaluate the chip catalog.", no_args_is_help=True)


@common.output_options(command="sweep")
def sweep_cmd(
    scenario: ScenarioArg = None,
    axes: Annotated[
        list[str],
        typer.Option(
            "--set",
            help="PATH=V1,V2,... or PATH=lo:hi:step (repeatable: the grid is their product). "
            "A value in brackets is one list: --set roles.MD.chips=[h100-sxm,h20] is one point "
            "(MD on both chips), --set roles.MD.chips=h100-sxm,h20 two points, "
            "--set 'roles.MD.chips=[h100-sxm,h20],[h20]' two points of lists.",
            metavar="PATH=VALUES",
        ),
    ] = [],  # noqa: B006
    baselines: Annotated[
        bool,
        typer.Option(
            "--baselines/--no-baselines",
            help="Also size the same-dc and no-relay baselines at each point (the BCR ratios).",
        ),
    ] = True,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs", "-j", help="Solve points in parallel on N processes (or Dask workers)."
        ),
    ] = 1,
    executor: Annotated[
        str,
        typer.Option(
            "--executor",
            help="local, or dask (pip install 'pddplan[dask]'): the same rows.",
            metavar="local|dask",
        ),
    ] = "local",
    scheduler: Annotated[
        str | None,
        typer.Option("--scheduler", help="A Dask scheduler's address (default: a LocalCluster)."),
    ] = None,
    plot: Annotated[
        str | None,
        typer.Option(
            "--plot", help="Draw BCR ratio against one or two swept parameters to FILE.png/.svg."
        ),
    ] = None,
    own: common.OwnOpt = None,
    max_chips: common.MaxChipsOpt = None,
    *,
    out: common.Output,
) -> None:
    """Solve the scenario at every point of a grid of parameter values.

    PATH is a dotted key: a scenario key (rate_rps, sla.ttft_p99_s, serving.chunk_size_tokens),
    or a key of a named profile (link.bandwidth_gbit_per_s, chips.gpu-b.price_usd_per_hour,
    workload.hit_rate.shift, model.dtypes.kv_cache). Infeasible points are rows with the binding
    constraint. A topology file (sites:) is planned by the topology planner at each point, PATH
    a key of the file (traffic.NAME.rate_rps, lines.NAME.max_count,
    sites.NAME.chips.CHIP.rental_usd_per_hour; docs/topology.md).

    Example: pddplan sweep --set link.bandwidth_gbit_per_s=25,50,100 --set chips.gpu-b.price_usd_per_hour=2.4,2.6 -f csv
    """
    common.read_scenario_early(scenario)
    from pathlib import Path

    from pddplan import api
    from pddplan.api.values import inventory_overrides, parse_axes, parse_counts
    from pddplan.errors import UsageError
    from pddplan.report.plots import check_plot_path, sweep_plot

    grid = parse_axes(axes)
    if plot is not None:
        check_plot_path(Path(plot))
        if len(grid) > 2:
            raise UsageError("--plot draws one or two swept parameters")
        from pddplan.api.whatif import topology_source

        if topology_source(scenario, common.State.profile_dirs) is not None:
            raise UsageError(
                "--plot draws a two-site plan's BCR; a topology's sweep rows give its cost: "
                "write them with -f csv"
            )
    inventory = inventory_overrides(
        parse_counts(own, "own", least=0), parse_counts(max_chips, "max_chips")
    )
    with common.progress_bar("solving", math.prod(len(v) for _, v in grid) >= 20) as progress:
        res = api.sweep(
            scenario,
            grid,
            overrides=inventory,
            profiles=common.State.profile_dirs,
            baselines=baselines,
            jobs=jobs,
            progress=progress,
            executor=executor,
            scheduler=scheduler,
        )
    out.emit(res.report())
    if plot is not None:
        sweep_plot(res.points, [p for p, _ in grid], Path(plot))
        common.info(f"wrote {plot}")


@common.output_options(command="breakeven")
@common.scenario_options("breakeven")
def breakeven_cmd(
    scenario: ScenarioArg = None,
    param: Annotated[
        str | None,
        typer.Option(
            "--param",
            help="Dotted PATH of the parameter (see sweep). Default: the hourly price of the "
            "scenario's first main-decode (MD) chip, chips.CHIP.price_usd_per_hour.",
            metavar="PATH",
        ),
    ] = None,
    against: Annotated[
        str,
        typer.Option(
            "--against",
            help="same-dc, no-relay or no-relay-rld (no relay, RLD for anomalous requests "
            "only; a scenario whose workload has them).",
        ),
    ] = "same-dc",
    lo: Annotated[
        float | None,
        typer.Option(
            "--lo",
            help="Low end of the search interval (default: a quarter of the current value).",
            metavar="VALUE",
        ),
    ] = None,
    hi: Annotated[
        float | None,
        typer.Option(
            "--hi",
            help="High end of the search interval (default: four times the current value).",
            metavar="VALUE",
        ),
    ] = None,
    against_cost: Annotated[
        float | None,
        typer.Option(
            "--against-cost",
            help="A topology file: the PATH value at which its cost crosses USD_PER_H "
            "(default: at which the least-cost plan changes its structure).",
            metavar="USD_PER_H",
        ),
    ] = None,
    *,
    scenario_opts: common.ScenarioOptions,
    out: common.Output,
) -> None:
    """The parameter value at which PDD's BCR equals a baseline's (bisection over the model).

    A topology file (sites:): the --param PATH value at which the least-cost plan changes its
    structure, or its cost crosses --against-cost (docs/topology.md, "Break-even").

    Example: pddplan breakeven pdd-paper --param chips.gpu-b.price_usd_per_hour --lo 2 --hi 6
    """
    from pddplan import api
    from pddplan.api.whatif import topology_source
    from pddplan.errors import OverrideError, UsageError

    if lo is not None and hi is not None and hi <= lo:
        raise UsageError("--hi must be above --lo")
    topology = topology_source(scenario, common.State.profile_dirs) is not None
    if topology:
        if param is None:
            raise UsageError("--param PATH is needed for a topology file (a key of the file)")
        if against != "same-dc":
            raise UsageError("--against compares a two-site plan; a topology takes --against-cost")
        if scenario_opts.own or scenario_opts.max_chips:
            from pddplan.api.scenario import inventory_on_topology

            raise inventory_on_topology("own" if scenario_opts.own else "max_chips")
    elif against_cost is not None:
        raise UsageError("--against-cost applies to a topology file (sites:)")
    try:
        with common.progress_bar("bisecting", True) as progress:
            if topology:
                assert scenario is not None and param is not None
                tres = api.breakeven_topology(
                    scenario,
                    param=param,
                    lo=lo,
                    hi=hi,
                    against_cost_usd_per_hour=against_cost,
                    overrides=scenario_opts.overrides,
                    profiles=common.State.profile_dirs,
                    progress=progress,
                )
                out.emit(tres.report())
                return
            res = api.breakeven(
                scenario,
                overrides=scenario_opts.overrides,
                own=scenario_opts.own,
                max_chips=scenario_opts.max_chips,
                profiles=common.State.profile_dirs,
                param=param,
                against=against,
                lo=lo,
                hi=hi,
                progress=progress,
            )
    except OverrideError as exc:
        # a bound the parameter's schema rejects: blame the flag that gave it
        if (param is None or exc.key == param) and exc.value is not None:
            for flag, v in (("--lo", lo), ("--hi", hi)):
                if v is not None and exc.value == v:
                    raise UsageError(f"{flag} {v:g}: {exc.key}: {exc.detail}") from None
        if exc.key == param and param not in scenario_opts.overrides:
            raise UsageError(f"--param {param}: {exc.detail}") from None
        raise
    out.emit(res.report())


@common.output_options(command="chips rank")
def rank_cmd(
    scenario: ScenarioArg = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="Model profile (default: the scenario's).",
            autocompletion=common.complete_names("model"),
        ),
    ] = None,
    workload: Annotated[
        str | None,
        typer.Option(
            "--workload",
            help="Workload profile (default: the scenario's).",
            autocompletion=common.complete_names("workload"),
        ),
    ] = None,
    reference: Annotated[
        str,
        typer.Option(
            "--reference",
            help="The balanced flagship chip to compare with.",
            autocompletion=common.complete_names("chip"),
        ),
    ] = defaults.REFERENCE_CHIP,
    overrides: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="Change the scenario: PATH=VALUE, with the PATHs of `pddplan sweep` "
            "(repeatable), as solve takes it: --set sla.tpot_ms=30.",
            metavar="PATH=VALUE",
        ),
    ] = None,
    *,
    out: common.Output,
) -> None:
    """Rank every chip of the catalog for prefill and for decode (four-dimension evaluation).

    Example: pddplan chips rank --model qwen3-235b-a22b --workload agent-64k -f csv
    """
    common.read_scenario_early(scenario)
    from pddplan import api
    from pddplan.api.values import parse_overrides

    res = api.rank_chips(
        scenario,
        overrides=parse_overrides(overrides, "chips rank"),
        profiles=common.State.profile_dirs,
        model=model,
        workload=workload,
        reference=reference,
    )
    out.emit(res.report())


def register(app: typer.Typer) -> None:
    app.command("sweep")(sweep_cmd)
    app.command("breakeven")(breakeven_cmd)
    chips_app.command("rank")(rank_cmd)
    app.add_typer(chips_app, name="chips")
