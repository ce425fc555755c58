"""What-if commands: ``sweep``, ``breakeven`` and ``chips rank``."""

from __future__ import annotations

from typing import Annotated

import typer

from pddplan.cli import common
from pddplan.cli.solve_cmd import ScenarioArg

chips_app = typer.Typer(help="Evaluate the chip catalog.", no_args_is_help=True)


def sweep_cmd(
    scenario: ScenarioArg = None,
    set_: Annotated[
        list[str],
        typer.Option(
            "--set",
            help="PATH=V1,V2,... or PATH=lo:hi:step (repeatable: the grid is their product).",
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
            "--jobs", "-j", help="Solve points in parallel on N processes (or Dask workers).", min=1
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
    fmt: common.FormatOpt = "table",
    output: common.OutputOpt = None,
    table: common.TableOpt = None,
    wide: common.WideOpt = False,
) -> None:
    """Solve the scenario at every point of a grid of parameter values.

    PATH is a dotted key: a scenario key (rate_rps, sla.ttft_p99_s, serving.chunk_size_tokens),
    or a key of a named profile (link.bandwidth_gbit_per_s, chips.gpu-b.price_usd_per_hour,
    workload.hit_rate.shift, model.dtypes.kv_cache). Infeasible points are rows with the binding
    constraint.

    Example: pddplan sweep --set link.bandwidth_gbit_per_s=25,50,100 --set chips.gpu-b.price_usd_per_hour=2.4,2.6 -f csv
    """
    from pathlib import Path

    from pddplan import api
    from pddplan.errors import UsageError
    from pddplan.report.plots import check_plot_path
    from pddplan.whatif import parse_set

    common.check_format(fmt)
    if not set_:
        raise UsageError("sweep needs at least one --set PATH=VALUES")
    axes = [parse_set(s) for s in set_]
    if len({a.path for a in axes}) != len(axes):
        raise UsageError("each PATH may be swept by one --set only")
    if plot is not None:
        check_plot_path(Path(plot))
        if len(axes) > 2:
            raise UsageError("--plot draws one or two swept parameters")
    n = 1
    for a in axes:
        n *= len(a.values)
    progress, bar = common.progress_bar("solving", n >= 20)
    try:
        with common.flags(
            {"jobs": "--jobs", "executor": "--executor", "scheduler": "--scheduler"},
            set_flag="--set",
        ):
            res = api.sweep(
                scenario,
                [(a.path, a.values) for a in axes],
                profiles=common.State.profile_dirs,
                baselines=baselines,
                jobs=jobs,
                progress=progress,
                executor=executor,
                scheduler=scheduler,
            )
    finally:
        if bar is not None:
            bar.stop()
    common.emit(res.report(), fmt, output, table, wide)
    if plot is not None:
        from pddplan.report.plots import sweep_plot

        sweep_plot(res.points, [a.path for a in axes], Path(plot))
        common.info(f"wrote {plot}")


def breakeven_cmd(
    scenario: ScenarioArg = None,
    param: Annotated[
        str, typer.Option("--param", help="Dotted PATH of the parameter (see sweep).")
    ] = "chips.gpu-b.price_usd_per_hour",
    against: Annotated[str, typer.Option("--against", help="same-dc or no-relay.")] = "same-dc",
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
    set_: common.SetOpt = [],  # noqa: B006
    fmt: common.FormatOpt = "table",
    output: common.OutputOpt = None,
    table: common.TableOpt = None,
    wide: common.WideOpt = False,
) -> None:
    """The parameter value at which PDD's BCR equals a baseline's (bisection over the model).

    Example: pddplan breakeven pdd-paper --param chips.gpu-b.price_usd_per_hour --lo 2 --hi 6
    """
    from pddplan import api
    from pddplan.errors import OverrideError, UsageError

    common.check_format(fmt)
    if against not in ("same-dc", "no-relay"):
        raise UsageError(f"--against must be same-dc or no-relay, not {against!r}")
    if lo is not None and hi is not None and hi <= lo:
        raise UsageError("--hi must be above --lo")
    overrides = common.parse_sets(set_, "breakeven")
    try:
        with common.flags({"lo": "--lo", "hi": "--hi"}, set_flag="--set"):
            res = api.breakeven(
                scenario,
                overrides=overrides,
                profiles=common.State.profile_dirs,
                param=param,
                against=against,
                lo=lo,
                hi=hi,
            )
    except UsageError as exc:
        # a bound the parameter's schema rejects: blame the flag that gave it
        cause = exc.__context__ if not isinstance(exc, OverrideError) else exc
        if isinstance(cause, OverrideError) and cause.key == param and cause.value is not None:
            for flag, v in (("--lo", lo), ("--hi", hi)):
                if v is not None and cause.value == v:
                    raise UsageError(f"{flag} {v:g}: {param}: {cause.detail}") from None
        if isinstance(cause, OverrideError) and cause.key == param and not cause.unknown_key:
            raise UsageError(f"--param {param}: {cause.detail}") from None
        raise
    common.emit(res.report(), fmt, output, table, wide)


def rank_cmd(
    scenario: ScenarioArg = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Model profile (default: the scenario's).")
    ] = None,
    workload: Annotated[
        str | None, typer.Option("--workload", help="Workload profile (default: the scenario's).")
    ] = None,
    reference: Annotated[
        str, typer.Option("--reference", help="The balanced flagship chip to compare with.")
    ] = "h100-sxm",
    fmt: common.FormatOpt = "table",
    output: common.OutputOpt = None,
    table: common.TableOpt = None,
    wide: common.WideOpt = False,
) -> None:
    """Rank every chip of the catalog for prefill and for decode (four-dimension evaluation).

    Example: pddplan chips rank --model qwen3-235b-a22b --workload agent-64k -f csv
    """
    from pddplan import api

    common.check_format(fmt)
    res = api.rank_chips(
        scenario,
        profiles=common.State.profile_dirs,
        model=model,
        workload=workload,
        reference=reference,
    )
    common.emit(res.report(), fmt, output, table, wide)


def register(app: typer.Typer) -> None:
    app.command("sweep")(sweep_cmd)
    app.command("breakeven")(breakeven_cmd)
    chips_app.command("rank")(rank_cmd)
    app.add_typer(chips_app, name="chips")
