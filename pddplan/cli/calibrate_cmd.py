"""``pddplan calibrate``: fit a chip's derates to measured latencies, optionally write a profile."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from pddplan import defaults
from pddplan.cli import common


@common.output_options(command="calibrate")
def calibrate_cmd(
    measurements: Annotated[
        Path,
        typer.Argument(
            help="CSV of measurements: phase (prefill|ttft|decode), tokens, batch, context, tp, "
            "latency_ms, source. See docs/calibrate.md. h100-published.csv, "
            "h100-published-batched.csv and pdd-brief-handover.csv name bundled samples.",
            dir_okay=False,
        ),
    ],
    chip: Annotated[
        str | None,
        typer.Option(
            "--chip",
            help="Chip profile whose derates are fitted.",
            autocompletion=common.complete_names("chip"),
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="Model profile the rows were measured with.",
            autocompletion=common.complete_names("model"),
        ),
    ] = None,
    link: Annotated[
        str | None,
        typer.Option(
            "--link",
            help="Link profile whose transfer parameters are fitted to a link measurements CSV "
            "(payload_bytes, latency_s, optional concurrent_transfers, statistic, samples, "
            "source; docs/links.md).",
            autocompletion=common.complete_names("link"),
        ),
    ] = None,
    write: Annotated[
        Path | None,
        typer.Option(
            "--write",
            help="Write the calibrated chip profile to FILE.yaml (its name is the file stem).",
            dir_okay=False,
        ),
    ] = None,
    chunk_size_tokens: Annotated[
        int | None,
        typer.Option(
            "--chunk-size",
            help="Prefill chunk of the measured engine [tokens]; 16 to 10^7 (default: "
            f"{defaults.CHUNK_SIZE_TOKENS}; chip derates only).",
            parser=common.token_count,
        ),
    ] = None,
    fix: Annotated[
        list[str] | None,
        typer.Option("--fix", help="Hold a derate at the chip's value (repeatable)."),
    ] = None,
    fit: Annotated[
        list[str] | None,
        typer.Option(
            "--fit",
            help="Link mode: fit only this parameter (repeatable; the others are held); exit 1 "
            "when the rows cannot identify it (e.g. max_window_bytes from one payload size).",
        ),
    ] = None,
    *,
    out: common.Output,
) -> None:
    """Fit a chip's derates to measured latencies, or a link's parameters to measured transfers.

    Chip mode (--chip, --model): reports the error of the chip's derates and of the fitted ones (median and max absolute %),
    which derates the rows identify, and the prediction for every row. With --write, saves a
    complete chip profile with the fitted derates for solve (--profiles DIR, DIR/chips/FILE).

    Link mode (--link): fits RTT, per-transfer latency, window, loss rate, efficiency and
    jitter (those the rows identify) of the link's transfer model; --fit KEY fits only KEY
    and fails when the rows cannot identify it; --write saves a link profile (DIR/links/FILE).

    Example: pddplan calibrate pdd-brief-handover.csv --link wan-100g-cross-city

    Example: pddplan calibrate h100-published.csv --chip h100-sxm --model llama-3.3-70b
    """
    from pddplan import api
    from pddplan.api.profiles import data_file
    from pddplan.errors import UsageError

    measurements = data_file(measurements)
    if link is not None and (chip is not None or model is not None):
        raise UsageError("--link calibrates a link; it does not take --chip or --model")
    if link is None and (chip is None or model is None):
        raise UsageError(
            "calibrate needs --chip and --model (chip derates) or --link (link parameters)"
        )
    if fit and link is None:
        raise UsageError("--fit names link parameters; it needs --link")
    if link is not None and chunk_size_tokens is not None:
        raise UsageError("--chunk-size is the measured engine's prefill chunk; --link takes none")
    with common.spinner("fitting"):
        if link is not None:
            res: Any = api.calibrate_link(
                measurements,
                link=link,
                write=write,
                fix=fix or (),
                fit=fit or None,
                profiles=common.State.profile_dirs,
            )
        else:
            res = api.calibrate(
                measurements,
                chip=chip or "",
                model=model or "",
                write=write,
                fix=fix or (),
                profiles=common.State.profile_dirs,
                warn=common.warn,
                # not given: the API's default
                **({} if chunk_size_tokens is None else {"chunk_size_tokens": chunk_size_tokens}),
            )
    if res.profile_file is not None:
        kind = "link" if link is not None else "chip"
        common.info(
            f"pddplan: wrote {kind} profile {Path(res.profile_file).stem!r} to {res.profile_file}"
        )
    out.emit(res.report())


def register(app: typer.Typer) -> None:
    app.command("calibrate")(calibrate_cmd)
