"""Options every command shares, and the registry built from ``--profiles``.

Imports here stay light: heavy modules load inside the commands, so ``pddplan --help`` is fast.
"""

from __future__ import annotations

import functools
import inspect
import os
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
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


#: Width of an option's help text in ``--help`` [characters] (click's 80 columns, less the
#: column of flags), to which lines click does not wrap itself are wrapped.
HELP_WIDTH = 44


def table_help(command: str | None) -> str:
    """The help of ``--table`` for ``command``: its table names, read from the one list
    (:func:`pddplan.api.values.table_names`), or none for a command whose names depend on its
    input."""
    import textwrap

    text = "Only this table of the result (CSV always writes one table: the first unless named)."
    names = None
    if command is not None:
        # the declared names themselves (pddplan.results.tables, what api.values.table_names
        # reads): importing the API here would load it at every start, --help included
        from pddplan.results.tables import TABLES

        names = TABLES.get(command)
    if not names:
        return f"{text} A wrong name lists the result's tables."
    # "\b": click keeps the lines as wrapped here, where no name is broken at a hyphen
    text += f" Names: {', '.join(names)}."
    lines = textwrap.wrap(text, HELP_WIDTH, break_on_hyphens=False, break_long_words=False)
    return "\b\n" + "\n".join(lines)


def table_opt(command: str | None) -> Any:
    """The ``--table`` option of ``command`` (its help lists the command's table names)."""
    return Annotated[
        str | None,
        typer.Option("--table", "-t", help=table_help(command), metavar="NAME"),
    ]


WideOpt = Annotated[
    bool,
    typer.Option(
        "--wide",
        help="Tables with full column names (CSV's keys, values in their units) and no width "
        "limit (default: fit the terminal, or 100 columns when piped).",
    ),
]
SetOpt = Annotated[
    list[str],
    typer.Option(
        "--set",
        help="Change the scenario: PATH=VALUE, with the PATHs of `pddplan sweep` (repeatable); "
        "a list key takes a list, e.g. --set link=wan-40g-cross-city "
        "--set roles.MD.chips=[h100-sxm,h20].",
        metavar="PATH=VALUE",
    ),
]
OwnOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--own",
        help="N chips of CHIP are owned: used first, at their amortized capex "
        "(--set inventory.owned_cost=sunk: free); the rest is rented. Repeatable.",
        metavar="CHIP=N",
    ),
]
MaxChipsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--max-chips",
        help="At most N chips of CHIP, rented or owned (repeatable or comma-separated); "
        "the baselines obey it too.",
        metavar="CHIP=N",
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


def token_count(text: str | int) -> int:
    """A typer parser of a token-count option (``--input-tokens 64k``): the API's
    :func:`pddplan.api.values.parse_token_count`, its error as a bad value of the flag."""
    from pddplan.api.values import parse_token_count
    from pddplan.errors import OptionError

    try:
        return parse_token_count(text)
    except OptionError as exc:
        raise typer.BadParameter(exc.detail.removeprefix(": ")) from None


#: A JSONL trace's tokens per hash id (``hitrate``, ``simulate --trace``).
BlockTokensOpt = Annotated[
    int,
    typer.Option(
        "--block-tokens", help="Tokens per hash-id block of a JSONL trace.", parser=token_count
    ),
]


def complete_names(kind: str) -> Callable[[typer.Context, str], list[str]]:
    """The shell completion (typer's ``autocompletion=``) of an argument or option taking a
    profile name of ``kind`` (``chip``, ``model``, ``link``, ``workload``, ``scenario``): the
    names on the search path
    (:func:`pddplan.api.profiles.profile_names`, ``--profiles`` included) that start with what
    was typed. None offered (a path being typed) leaves the shell to complete file names
    (typer's scripts fall back to them), so a scenario file still completes."""

    def complete(ctx: typer.Context, incomplete: str) -> list[str]:
        from pddplan.api.profiles import profile_names
        from pddplan.errors import PddplanError

        dirs = ctx.find_root().params.get("profiles") or State.profile_dirs
        try:
            names = profile_names(kind, profiles=dirs)
        except (PddplanError, OSError):  # a bad --profiles: nothing to offer, no traceback
            names = []
        return [n for n in names if n.startswith(incomplete)]

    return complete


class State:
    profile_dirs: list[Path] = []


def info(msg: str) -> None:
    """A diagnostic line on stderr (never on stdout)."""
    typer.echo(msg, err=True)


def warn(msg: str) -> None:
    """A library diagnostic, as a warning line on stderr."""
    info(f"pddplan: warning: {msg}")


#: [bytes] glibc's mmap threshold in a command that replays a trace (:func:`unmap_large_frees`).
MMAP_THRESHOLD_BYTES = 4 << 20
#: ``M_MMAP_THRESHOLD``, glibc's ``mallopt`` parameter (``malloc.h``).
_M_MMAP_THRESHOLD = -3


def unmap_large_frees() -> None:
    """Have glibc's malloc map each block of :data:`MMAP_THRESHOLD_BYTES` or more on its own in
    this process, and so return it to the system when it is freed (``mallopt``'s
    ``M_MMAP_THRESHOLD``); a no-op with another C library.

    By default glibc raises that threshold to the largest block freed so far (up to 32 MB):
    once a trace's replay has freed a large array, its temporaries of a few MB come from the
    heap, whose freed pages stay resident. A 1M-request trace's replay at 10 LRU capacities
    (``benchmarks/bench_trace.py``) peaked at 295 MB of RSS with some 210 MB of arrays live; with
    this, 256-260 MB, for about 0.5 s more system time in 10 s (mapping fresh pages). Called by
    the commands that replay a trace, before they start (parser processes forked later inherit
    it); the CLI's process is its own, an API caller's is not, so the API leaves it alone."""
    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        return
    if not glibc or not glibc.startswith("glibc"):
        return
    import ctypes

    try:
        ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
    except (OSError, AttributeError, TypeError):
        return


@contextmanager
def progress_bar(label: str, worth_it: bool = True) -> Iterator[Any]:
    """A progress callback ``(done, total)`` for a long API call (:data:`pddplan.executors.
    Progress`), drawing a bar on stderr (never stdout) when stderr is a terminal and the work is
    long enough to be worth it; None else. The bar goes when the block ends."""
    import sys

    if not (worth_it and sys.stderr.isatty()):
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress

    bar = Progress(console=Console(stderr=True), transient=True)
    task = bar.add_task(label, total=None)

    def progress(done: int, total: int) -> None:
        if not bar.live.is_started:
            bar.start()
        bar.update(task, completed=done, total=total)

    try:
        yield progress
    finally:
        bar.stop()


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


# ------------------------------------------------------------------ shared declarations


@dataclass(frozen=True)
class Output:
    """The output options every command shares: ``--format``, ``--output``, ``--table``,
    ``--wide``."""

    format: str = "table"
    output: Path | None = None
    table: str | None = None
    wide: bool = False

    def emit(self, rep: Report, output: Path | None | bool = True) -> None:
        """Render ``rep`` (to ``output`` when given, else to ``--output`` or stdout)."""
        from pddplan.report import emit

        path = self.output if output is True else output or None
        emit(rep, self.format, path, table=self.table, wide=self.wide)


@dataclass(frozen=True)
class ScenarioOptions:
    """The scenario options every command that takes a scenario shares: ``--set``, ``--own``,
    ``--max-chips``, parsed."""

    overrides: dict[str, Any]
    own: dict[str, int]
    max_chips: dict[str, int]

    def with_inventory(self, max_chips: bool = True) -> dict[str, Any]:
        """The overrides with ``own`` (and ``max_chips``) in the scenario (``inventory.owned``,
        ``limits.max_chips``), for the API functions that take overrides only."""
        from pddplan.api.values import inventory_overrides

        limits = self.max_chips if max_chips else None
        return {**self.overrides, **inventory_overrides(self.own, limits)}


def _hints(f: Callable[..., Any]) -> dict[str, Any]:
    return typing.get_type_hints(f, include_extras=True)


def _extend(
    f: Callable[..., Any],
    target: str,
    extra: dict[str, tuple[Any, Any]],
    build: Callable[[dict[str, Any]], Any],
    before: Callable[[dict[str, Any]], None] | None = None,
) -> Callable[..., Any]:
    """``f`` with its parameter ``target`` replaced by the typer parameters ``extra`` (name ->
    (annotation, default)), which ``build`` turns into ``target``'s value; ``before``, when
    given, is called first with the command's other arguments."""
    hints = _hints(f)
    params = [
        p.replace(annotation=hints.get(p.name, p.annotation))
        for p in inspect.signature(f).parameters.values()
        if p.name != target
    ]
    params += [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=a, default=d)
        for name, (a, d) in extra.items()
    ]

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if before is not None:
            before(kwargs)
        given = {name: kwargs.pop(name) for name in extra if name in kwargs}
        kwargs[target] = build(given)
        return f(*args, **kwargs)

    annotations = {p.name: p.annotation for p in params}
    annotations["return"] = hints.get("return", None)
    wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = annotations
    del wrapper.__wrapped__  # typer reads the signature above, not f's
    return wrapper


def _output(given: dict[str, Any], command: str | None = None) -> Output:
    from pddplan.report import check_format

    out = Output(given["format"], given["output"], given["table"], given["wide"])
    check_format(out.format)
    check_writable(out.output)
    if command is not None:
        from pddplan.api.values import check_table

        check_table(command, out.table)
    return out


def check_writable(path: Path | None, option: str = "output") -> None:
    """Fail before the work when ``path`` lies in no directory (an ``OptionError``)."""
    from pddplan.errors import check_writable_path

    if path is not None:
        check_writable_path(path, option)


def output_options(
    f: Callable[..., Any] | None = None,
    *,
    output_help: str | None = None,
    command: str | None = None,
) -> Any:
    """Give a command the shared output options; it receives them as ``out: Output``.

    ``output_help`` replaces the help of ``--output`` (``report`` writes HTML there);
    ``command`` names a command whose ``--table`` names are declared
    (:func:`pddplan.api.values.table_names`): ``--help`` lists them and a wrong name fails
    before the work."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        out_opt: Any = OutputOpt
        if output_help is not None:
            out_opt = Annotated[
                Path | None,
                typer.Option("--output", "-o", help=output_help, dir_okay=False),
            ]
        extra: dict[str, tuple[Any, Any]] = {
            "format": (FormatOpt, "table"),
            "output": (out_opt, None),
            "table": (table_opt(command), None),
            "wide": (WideOpt, False),
        }
        build = _output if command is None else functools.partial(_output, command=command)
        return flag_errors(_extend(fn, "out", extra, build))

    return deco(f) if f is not None else deco


def _scenario(command: str) -> Callable[[dict[str, Any]], ScenarioOptions]:
    def build(given: dict[str, Any]) -> ScenarioOptions:
        from pddplan.api.values import parse_counts, parse_overrides

        return ScenarioOptions(
            parse_overrides(given["overrides"], command),
            parse_counts(given["own"], "own", least=0),
            parse_counts(given["max_chips"], "max_chips"),
        )

    return build


def scenario_options(command: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a command the shared scenario options (``--set``, ``--own``, ``--max-chips``); it
    receives them parsed as ``scenario_opts: ScenarioOptions``. Its ``scenario`` file is read
    first (:func:`read_scenario_early`)."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        extra: dict[str, tuple[Any, Any]] = {
            "overrides": (SetOpt, []),
            "own": (OwnOpt, None),
            "max_chips": (MaxChipsOpt, None),
        }
        return _extend(
            fn,
            "scenario_opts",
            extra,
            _scenario(command),
            before=lambda given: read_scenario_early(given.get("scenario")),
        )

    return deco


def read_scenario_early(scenario: str | None) -> None:
    """Check a command's scenario file before the command calls the API: a file that is not
    YAML is then reported (file, line, what is wrong) at the cost of the command's start, not
    after the schemas and options are imported (0.25 -> 0.13 s of CPU on the 2-core machine,
    ``benchmarks/bench_goals.py``), and one that the schema rejects at the cost of the schemas,
    before the API's options and the rest of it are imported (3% fewer instructions for a value
    out of range, 2026-12-06). The parse is the loader's own (:func:`pddplan.api.profiles.
    parse_file`, cached), so the API reads the document again for nothing. An unknown
    top-level key is named first, from the parse alone (:mod:`pddplan.io.key_check`), without
    the schemas' imports where a validation has kept their keys; then the file is validated as
    loading it validates it, whatever the overrides (:func:`pddplan.api.profiles.
    check_scenario_file`), and raises the error the API would. All of these come before any
    error of the command's options or environment. A bundled scenario's name (no such file) is
    left to the API."""
    if not scenario:
        return
    from pathlib import Path

    path = Path(scenario)
    if path.suffix.lower() in (".yaml", ".yml") and path.is_file():
        from pddplan.api.profiles import check_scenario_file, parse_file

        parse_file(path, scenario=True)
        check_scenario_file(path)


# ------------------------------------------------------------------ options to flags

#: The library's names of options that the command line spells otherwise (the rest are the
#: typer parameters' own names: a parameter ``rate_rps`` declares ``--rate``).
OPTION_ALIASES = {"axes": "overrides", "against_cost_usd_per_hour": "against_cost"}


def flag_names() -> dict[str, str]:
    """The current command's option names (its typer parameters) -> their flags, read from the
    command's declaration."""
    from typer.main import get_current_context  # typer's own click (it vendors one)

    ctx = get_current_context(silent=True)
    if ctx is None:
        return {}
    names: dict[str, str] = {}
    for p in ctx.command.params:
        opts = [o for o in p.opts if o.startswith("--")]
        if p.name and opts:
            names[p.name] = max(opts, key=len)
    for option, param in OPTION_ALIASES.items():
        if param in names:
            names.setdefault(option, names[param])
    return names


def flag_message(exc: Exception, names: dict[str, str]) -> str | None:
    """``exc``'s message naming the command's flag, or None when it names no option."""
    from pddplan.errors import OptionError, OverrideError

    if isinstance(exc, OptionError) and exc.option in names:
        return exc.naming(names[exc.option])
    flag = names.get("overrides") or names.get("axes")
    if isinstance(exc, OverrideError) and flag is not None:
        for prefix, option in (("inventory.owned.", "own"), ("limits.max_chips.", "max_chips")):
            if exc.key.startswith(prefix) and option in names:
                chip = exc.key[len(prefix) :]
                return f"{names[option]} {chip}={exc.value_text}: {exc.detail}"
        if exc.unknown_key:
            return f"{flag} {exc.key}: {exc.detail}"
        return f"{flag} {exc.key}={exc.value_text}: {exc.detail}"
    return None


@contextmanager
def _flag_errors() -> Iterator[None]:
    from pddplan.errors import OptionError, OverrideError, UsageError

    try:
        yield
    except (OptionError, OverrideError) as exc:
        message = flag_message(exc, flag_names())
        if message is None:
            raise
        raise UsageError(message) from None


def flag_errors(f: Callable[..., Any] | None = None) -> Any:
    """Errors that name a library option (``rate_rps``) raised again naming the command's flag
    (``--rate``); an override's error names ``--set PATH=VALUE``. A decorator, or a context
    manager when called without a function. Exit codes are the errors' own."""
    if f is None:
        return _flag_errors()

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with _flag_errors():
            return f(*args, **kwargs)

    return wrapper
