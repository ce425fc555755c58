"""``pddplan transfer``: mean and percentiles of one payload's time on a link."""

from __future__ import annotations

from typing import Annotated

import typer

from pddplan.cli import common


def transfer_cmd(
    link: Annotated[
        str, typer.Argument(help="Link profile name (pddplan profiles list --kind links).")
    ],
    size: Annotated[
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
            min=1,
            help="Transfers sharing the line at once, this one included (each gets at most "
            "its own rate cap and at most line / N).",
        ),
    ] = 1,
    fmt: common.FormatOpt = "table",
    output: common.OutputOpt = None,
    table: common.TableOpt = None,
    wide: common.WideOpt = False,
) -> None:
    """Mean, p50, p90 and p99 time of one payload on a link, N transfers sharing the line.

    The model (docs/links.md): connection set-up on a cold connection, TCP slow start from the
    initial window, a per-transfer rate cap min(streams x min(window / RTT, Mathis loss
    ceiling), line goodput), processor sharing with the other transfers, propagation, and the
    link's payload jitter for the percentiles. It is the transfer time solve and simulate use.

    Example: pddplan transfer wan-100g-cross-city --bytes 4649KB --format json
    """
    from pddplan import api
    from pddplan.results import Report, Section
    from pddplan.transfer import parse_size_bytes

    common.check_format(fmt)
    with common.flags({"concurrent": "--concurrent", "payload_bytes": "--bytes"}):
        res = api.transfer(
            link,
            payload_bytes=parse_size_bytes(size) if size is not None else None,
            concurrent=concurrent,
            profiles=common.State.profile_dirs,
        )
    title = f"transfer times on {res.link} ({res.concurrent_transfers} concurrent)"
    rep = Report(title, [Section("transfers", res.rows())], res.to_json(), res.notes)
    common.emit(rep, fmt, output, table, wide)


def register(app: typer.Typer) -> None:
    app.command("transfer")(transfer_cmd)
