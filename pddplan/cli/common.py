"""Options every command shares, and the registry built from ``--profiles``.

Imports here stay light: heavy modules load inside the commands, so ``pddplan --help`` is fast.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
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


@contextmanager
def flags(names: Mapping[str, str], set_flag: str | None = None) -> Iterator[None]:
    """Call the API inside this block: its errors that name a library option (``rate_rps``)
    are raised again naming the flag (``--rate``); an override's error names ``set_flag``
    (``--set PATH=VALUE: ...``). Exit codes are the errors' own."""
    from pddplan.errors import OptionError, OverrideError, UsageError

    try:
        yield
    except OptionError as exc:
        flag = names.get(exc.option)
        if flag is None:
            raise
        raise UsageError(exc.naming(flag)) from None
    except OverrideError as exc:
        if set_flag is None:
            raise
        if exc.unknown_key:
            raise UsageError(f"{set_flag} {exc.key}: {exc.detail}") from None
        raise UsageError(f"{set_flag} {exc.key}={exc.value!r}: {exc.detail}") from None


def warn(msg: str) -> None:
    """A library diagnostic, as a warning line on stderr."""
    info(f"pddplan: warning: {msg}")
