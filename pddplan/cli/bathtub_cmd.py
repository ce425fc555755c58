"""``pddplan bathtub``: the return against hit rate, its valleys, singular points and advice."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pddplan.cli import common
from pddplan.cli.solve_cmd import ScenarioArg


def bathtub_cmd(
    scenario: ScenarioArg = None,
    step: Annotated[
        float, typer.Option("--step", help="Hit-rate grid step.", min=0.001, max=0.1)
    ] = 0.01,
    tolerance: Annotated[
        float,
        typer.Option(
            "--tolerance", help="Least valley depth, as a fraction of its rims.", min=0.0, max=1.0
        ),
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
            exists=True,
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
    fmt: common.FormatOpt = "table",
    output: common.OutputOpt = None,
) -> None:
    """Return on a request against its prefix hit rate: find the bathtub's valleys.

    The marginal view prices one request at each hit rate on the solved plan (P, RLD, MD and line
    time against its revenue); the re-provisioned view solves the best plan if all traffic had
    that hit rate. Valleys are found by a generic detector; singular points come from the
    chunked-prefill tail-chunk arithmetic.

    Example: pddplan bathtub --format json --no-reprovision
    """
    from pddplan.bathtub import analyze
    from pddplan.loader import load_scenario
    from pddplan.report.bathtub import bathtub_report
    from pddplan.report.plots import check_plot_path

    common.check_format(fmt)
    if plot is not None:
        check_plot_path(plot)
    rs = load_scenario(scenario, common.registry())
    curve = _read_curve(capacity_curve) if capacity_curve else None
    res = analyze(rs, step=step, tolerance=tolerance, reprovision=reprovision, capacity_curve=curve)
    common.emit(bathtub_report(res), fmt, output)
    if plot is not None:
        from pddplan.report.plots import bathtub_plot

        pb = res.outcome.problem
        keep = pb.on_decode_side
        bathtub_plot(res, pb.classes.hit_rate[keep], pb.classes.weight[keep], plot)
        common.info(f"wrote {plot}")


def _read_curve(path: Path):
    """Read a capacity curve CSV: columns capacity_tokens and mean_hit_rate."""
    import csv

    import numpy as np

    from pddplan.errors import ProfileError

    caps, means = [], []
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        for col in ("capacity_tokens", "mean_hit_rate"):
            if reader.fieldnames is None or col not in reader.fieldnames:
                raise ProfileError(
                    f"missing column {col!r} (have: {reader.fieldnames})", file=str(path), line=1
                )
        for i, row in enumerate(reader, start=2):
            try:
                cap = row["capacity_tokens"].strip()
                caps.append(float("inf") if cap in ("unbounded", "inf") else float(cap))
                means.append(float(row["mean_hit_rate"]))
            except ValueError:
                raise ProfileError(
                    "not a number", file=str(path), key="capacity_tokens/mean_hit_rate", line=i
                ) from None
    if not caps:
        raise ProfileError("the capacity curve is empty", file=str(path))
    order = np.argsort(caps)
    return {"capacity_tokens": np.asarray(caps)[order], "mean_hit_rate": np.asarray(means)[order]}


def register(app: typer.Typer) -> None:
    app.command("bathtub")(bathtub_cmd)
