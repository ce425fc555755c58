"""Options every command shares, and the registry built from ``--profiles``.

Imports here stay light: heavy modules load inside the commands, so ``pddplan --help`` is fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from pddplan.loader import Registry
    from pddplan.results import Report

FormatOpt = Annotated[
    str,
    typer.Option(
        "--format", "-f", help="Output format: table, csv, md or json.", metavar="table|csv|md|json"
    ),
]
OutputOpt = Annotated[
    Path | None,
    typer.Option(
        "--output", "-o", help="Write the result to FILE instead of stdout.", dir_okay=False
    ),
]
ProfilesOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--profiles",
        help="Extra profile directory (chips/, models/, links/, workloads/, scenarios/); repeatable. "
        "Searched before PDDPLAN_PROFILES and the bundled profiles.",
        file_okay=False,
    ),
]


class State:
    profile_dirs: list[Path] = []


def registry() -> Registry:
    from pddplan.loader import Registry

    return Registry.default(State.profile_dirs)


def emit(rep: Report, fmt: str, output: Path | None) -> None:
    from pddplan.report import emit as _emit

    _emit(rep, fmt, output)


def check_format(fmt: str) -> None:
    from pddplan.errors import UsageError

    if fmt not in ("table", "csv", "md", "json"):
        raise UsageError(f"--format: {fmt!r} is not one of table, csv, md, json")


def info(msg: str) -> None:
    """A diagnostic line on stderr (never on stdout)."""
    typer.echo(msg, err=True)
