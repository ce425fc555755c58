"""``pddplan calibrate``: fit a chip's derates to measured latencies, optionally write a profile."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pddplan.cli import common


def calibrate_cmd(
    measurements: Annotated[
        Path,
        typer.Argument(
            help="CSV of measurements: phase (prefill|ttft|decode), tokens, batch, context, tp, "
            "latency_ms, source. See docs/calibrate.md.",
            dir_okay=False,
        ),
    ],
    chip: Annotated[str, typer.Option("--chip", help="Chip profile whose derates are fitted.")],
    model: Annotated[
        str, typer.Option("--model", help="Model profile the rows were measured with.")
    ],
    write: Annotated[
        Path | None,
        typer.Option(
            "--write",
            help="Write the calibrated chip profile to FILE.yaml (its name is the file stem).",
            dir_okay=False,
        ),
    ] = None,
    chunk_size: Annotated[
        int,
        typer.Option("--chunk-size", min=1, help="Prefill chunk of the measured engine [tokens]."),
    ] = 8192,
    fix: Annotated[
        list[str] | None,
        typer.Option("--fix", help="Hold a derate at the chip's value (repeatable)."),
    ] = None,
    fmt: common.FormatOpt = "table",
    output: common.OutputOpt = None,
) -> None:
    """Fit a chip's efficiency derates to measured prefill latencies and decode step times.

    Reports the error of the chip's derates and of the fitted ones (median and max absolute %),
    which derates the rows identify, and the prediction for every row. With --write, saves a
    complete chip profile with the fitted derates for solve (--profiles DIR, DIR/chips/FILE).

    Example: pddplan calibrate examples/measurements/h100-published.csv --chip h100-sxm --model llama-3.3-70b
    """
    from pddplan import api

    common.check_format(fmt)
    flags = {"fix": "--fix", "write": "--write", "chunk_size_tokens": "--chunk-size"}
    with common.flags(flags):
        res = api.calibrate(
            measurements,
            chip=chip,
            model=model,
            write=write,
            chunk_size_tokens=chunk_size,
            fix=fix or (),
            profiles=common.State.profile_dirs,
            warn=common.warn,
        )
    if res.profile_file is not None:
        common.info(
            f"pddplan: wrote chip profile {Path(res.profile_file).stem!r} to {res.profile_file}"
        )
    common.emit(res.report(), fmt, output)


def register(app: typer.Typer) -> None:
    app.command("calibrate")(calibrate_cmd)
