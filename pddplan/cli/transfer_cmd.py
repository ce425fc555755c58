"""``pddplan transfer``: mean and percentiles of one payload's time on a link."""

from __future__ import annotations

from typing import Annotated

import typer

from pddplan.cli import common


@common.output_options(command="transfer")
def transfer_cmd(
    link: Annotated[
        str,
        typer.Argument(
            help="Link profile name (pddplan profiles list --kind links).",
            autocompletion=common.complete_names("link"),
        ),
    ],
    payload_bytes: Annotated[
        str | None,
        typer.Option(
            "--bytes",
            help="Payload size: a number with B, KB, MB, GB, TB (decimal, 1 KB = 1000 B) or "
            "KiB, MiB, GiB, TiB (binary); a bare number is bytes. Default: a table from 1 MB "
            "to 10 GB.",
            metavar="SIZE",
        ),
    ] = None,
    concurrent: Annotated[
        int,
        typer.Option(
            "--concurrent",
            help="Transfers sharing the line at once, this one included (each gets at most "
            "its own rate cap and at most line / N).",
        ),
    ] = 1,
    *,
    out: common.Output,
) -> None:
    """Mean, p50, p90 and p99 time of one payload on a link, N transfers sharing the line.

    The model (docs/links.md): connection set-up on a cold connection, TCP slow start from the
    initial window, a per-transfer rate cap min(streams x min(window / RTT, Mathis loss
    ceiling), line goodput), processor sharing with the other transfers, propagation, and the
    link's payload jitter for the percentiles. It is the transfer time solve and simulate use.

    Example: pddplan transfer wan-100g-cross-city --bytes 4649KB --format json
    """
    from pddplan import api
    from pddplan.api.values import parse_size_bytes
    from pddplan.results.transfer import TransferResult

    res = api.transfer(
        link,
        payload_bytes=parse_size_bytes(payload_bytes) if payload_bytes is not None else None,
        concurrent=concurrent,
        profiles=common.State.profile_dirs,
    )
    out.emit(TransferResult(res).report())


def register(app: typer.Typer) -> None:
    app.command("transfer")(transfer_cmd)
