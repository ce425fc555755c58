"""Options every command shares, and the registry built from ``--profiles``.

Imports here stay light: heavy modules load inside the commands, so ``pddplan --help`` is fast.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from pddplan.io.loader import Registry
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
TableOpt = Annotated[
    str | None,
    typer.Option(
        "--table",
        "-t",
        help="Only this table of the result (CSV always writes one table: the first unless "
        "named). Names: plan, summary, procurement, pipelines, baselines, classes for solve; "
        "a wrong name lists the command's tables.",
        metavar="NAME",
    ),
]
WideOpt = Annotated[
    bool,
    typer.Option(
        "--wide",
        help="Tables with full column names and no width limit (default: fit the "
        "terminal, or 100 columns when piped).",
    ),
]
SetOpt = Annotated[
    list[str],
    typer.Option(
        "--set",
        help="Change the scenario: PATH=VALUE, with the PATHs of `pddplan sweep` (repeatable), "
        "e.g. --set link=wan-40g-cross-city --set roles.MD.chips=h100-sxm,h20.",
        metavar="PATH=VALUE",
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
    from pddplan.io.loader import Registry

    return Registry.default(State.profile_dirs)


def emit(
    rep: Report, fmt: str, output: Path | None, table: str | None = None, wide: bool = False
) -> None:
    from pddplan.report import emit as _emit

    _emit(rep, fmt, output, table=table, wide=wide)


#: Scenario keys whose value is a list (``--set roles.MD.chips=h100-sxm,h20``).
LIST_KEYS = ("chips", "chips_per_instance")


def parse_sets(sets: list[str] | None, command: str) -> dict[str, object]:
    """The overrides of ``--set PATH=VALUE`` options: one value per PATH (a comma list for the
    list keys ``roles.ROLE.chips`` and ``roles.ROLE.chips_per_instance``)."""
    from pddplan.errors import UsageError
    from pddplan.whatif import parse_values

    out: dict[str, object] = {}
    for expr in sets or []:
        path, sep, text = expr.partition("=")
        path = path.strip()
        if not sep or not path:
            raise UsageError(f"--set expects PATH=VALUE, not {expr!r}")
        text = text.strip()
        is_list = path.rsplit(".", 1)[-1] in LIST_KEYS
        if is_list:
            text = text.strip("[]")
        values = [v for v in parse_values(text.replace(":", ",") if is_list else text)]
        if is_list:
            out[path] = values
        elif len(values) != 1:
            raise UsageError(
                f"--set {path}: {command} takes one value per PATH; sweep several with "
                f"`pddplan sweep --set {path}=...`"
            )
        else:
            out[path] = values[0]
    return out


def parse_counts(values: list[str] | None, flag: str, least: int = 1) -> dict[str, int]:
    """``CHIP=N`` options (repeatable or comma-separated) as a dict."""
    from pddplan.errors import UsageError

    out: dict[str, int] = {}
    for v in values or []:
        for part in v.split(","):
            name, sep, num = part.partition("=")
            if not sep or not num.strip().isdigit() or int(num) < least:
                kind = "a positive" if least > 0 else "a"
                raise UsageError(f"{flag} expects CHIP=N with N {kind} whole number, not {part!r}")
            out[name.strip()] = int(num)
    return out


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


def progress_bar(label: str, worth_it: bool = True) -> tuple[Any, Any]:
    """A progress callback ``(done, total)`` and its bar, drawn on stderr (never stdout) when
    stderr is a terminal and the work is long enough to be worth it; ``(None, None)`` else.
    Stop the bar (``bar.stop()``) when the work ends."""
    import sys

    if not (worth_it and sys.stderr.isatty()):
        return None, None
    from rich.console import Console
    from rich.progress import Progress

    bar = Progress(console=Console(stderr=True), transient=True)
    task = bar.add_task(label, total=None)

    def progress(done: int, total: int) -> None:
        if not bar.live.is_started:
            bar.start()
        bar.update(task, completed=done, total=total)

    return progress, bar


@contextmanager
def spinner(label: str) -> Iterator[None]:
    """A spinner on stderr (a terminal only) for work without a known length."""
    import sys

    if not sys.stderr.isatty():
        yield
        return
    from rich.console import Console

    with Console(stderr=True).status(label):
        yield


def data_file(path: Path) -> Path:
    """``path``, or when no such file exists, the bundled sample of that file name (the
    measurement CSVs and the Mooncake trace excerpt ship with pddplan, so help examples run
    after a plain install)."""
    if path.exists() or path.parent != Path("."):
        return path
    from pddplan.io.loader import bundled_profiles_dir

    root = bundled_profiles_dir()
    dirs = [root / "data"]
    if root.name == "profiles":  # a source checkout
        dirs = [root.parent / "examples" / "measurements", root.parent / "tests" / "data"]
    for d in dirs:
        if (d / path.name).is_file():
            return d / path.name
    return path
