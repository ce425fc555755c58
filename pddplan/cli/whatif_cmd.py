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
        typer.Option("--jobs", "-j", help="Solve points in parallel on N local processes.", min=1),
    ] = 1,
    plot: Annotated[
        str | None,
        typer.Option(
            "--plot", help="Draw BCR ratio against one or two swept parameters to FILE.png/.svg."
        ),
    ] = None,
    fmt: common.FormatOpt = "table",
    output: common.OutputOpt = None,
) -> None:
    """Solve the scenario at every point of a grid of parameter values.

    PATH is a dotted key: a scenario key (rate_rps, sla.ttft_p99_s, serving.chunk_size_tokens),
    or a key of a named profile (link.bandwidth_gbit_per_s, chips.gpu-b.price_usd_per_hour,
    workload.hit_rate.shift, model.dtypes.kv_cache). Infeasible points are rows with the binding
    constraint.

    Example: pddplan sweep --set link.bandwidth_gbit_per_s=25,50,100 --set chips.gpu-b.price_usd_per_hour=2.4,2.6 -f csv
    """
    import sys
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
    progress = None
    bar = None
    if sys.stderr.isatty() and n >= 20:
        from rich.progress import Progress

        bar = Progress(transient=True)
        task = bar.add_task("solving", total=n)

        def progress(done: int, total: int) -> None:
            if done == 1:
                bar.start()
            bar.update(task, completed=done)

    try:
        with common.flags({"jobs": "--jobs"}, set_flag="--set"):
            res = api.sweep(
                scenario,
                [(a.path, a.values) for a in axes],
                profiles=common.State.profile_dirs,
                baselines=baselines,
                jobs=jobs,
                progress=progress,
            )
    finally:
        if bar is not None:
            bar.stop()
    common.emit(res.report(), fmt, output)
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
    lo: Annotated[float, typer.Option("--lo", help="Low end of the search interval.")] = 0.0,
    hi: Annotated[float, typer.Option("--hi", help="High end of the search interval.")] = 10.0,
    fmt: common.FormatOpt = "table",
    output: common.OutputOpt = None,
) -> None:
    """The parameter value at which PDD's BCR equals a baseline's (bisection over the model).

    Example: pddplan breakeven examples/pdd-paper.yaml --param chips.gpu-b.price_usd_per_hour --lo 2 --hi 6
    """
    from pddplan import api
    from pddplan.errors import UsageError

    common.check_format(fmt)
    if against not in ("same-dc", "no-relay"):
        raise UsageError(f"--against must be same-dc or no-relay, not {against!r}")
    if hi <= lo:
        raise UsageError("--hi must be above --lo")
    with common.flags({"lo": "--lo", "hi": "--hi"}, set_flag="--param"):
        res = api.breakeven(
            scenario,
            profiles=common.State.profile_dirs,
            param=param,
            against=against,
            lo=lo,
            hi=hi,
        )
    common.emit(res.report(), fmt, output)


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
    common.emit(res.report(), fmt, output)


def register(app: typer.Typer) -> None:
    app.command("sweep")(sweep_cmd)
    app.command("breakeven")(breakeven_cmd)
    chips_app.command("rank")(rank_cmd)
    app.add_typer(chips_app, name="chips")
