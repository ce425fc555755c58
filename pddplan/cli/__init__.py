"""The ``pddplan`` command line: parse, call, render, map errors to exit codes. No math here.

Exit codes: 0 success, 1 bad profile or data file, 2 usage error, unknown name or missing
input file, 3 no plan fits.
"""

from __future__ import annotations

import copy
import functools
import gc
import sys
import types
from typing import TYPE_CHECKING, Any, NoReturn

#: The cyclic garbage collector's first threshold in a command's process (Python's default is
#: 700). A command's start allocates some 50,000 objects that live to its end (modules,
#: classes, schemas, profiles): at 700 the collector runs over a hundred times while they are
#: made, traverses them again and again, and frees next to nothing (a tenth of the CPU time of
#: ``profiles list``). At this threshold a short command never collects, and a long one
#: collects each time it has kept this many more objects: memory stays bounded (the peak RSS of
#: solve, bathtub and robust is the same).
GC_THRESHOLD = 100_000
gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])

from pddplan.io import code_cache  # noqa: E402

# the methods of the dataclasses made from here on are compiled once, not at every start
code_cache.install()

import typer  # noqa: E402  (after the threshold: typer's import is part of every start)
import typer.main  # noqa: E402

from pddplan.cli import common  # noqa: E402

if TYPE_CHECKING:
    #: The whole app (:func:`whole_app`), declared on first use.
    app: typer.Typer

#: The modules of the commands, in the order ``--help`` lists their commands; each declares its
#: command (or commands and groups) in its ``register``. A command's own module is the one named
#: after it (``solve`` -> ``solve_cmd``) where there is one: a command line that runs a command
#: loads only that module (:func:`command`); the whole app (``--help``, :data:`app`) loads all.
COMMAND_MODULES = (
    "profiles_cmd",
    "solve_cmd",
    "hitrate_cmd",
    "bathtub_cmd",
    "cache_cmd",
    "whatif_cmd",
    "simulate_cmd",
    "calibrate_cmd",
    "transfer_cmd",
    "step_cmd",
    "robust_cmd",
    "report_cmd",
    "pareto_cmd",
    "topology_cmd",
    "horizon_cmd",
)


def _typer_app() -> typer.Typer:
    """The app without its commands: its options, its help, its root callback."""
    one = typer.Typer(
        name="pddplan",
        help="Capacity planning for PDD LLM inference: prefill and relay decode in datacenter A, "
        "main decode in datacenter B, joined by a WAN line.\n\n"
        "Example: pddplan solve pdd-paper --format md",
        no_args_is_help=True,
        add_completion=True,
        context_settings={"help_option_names": ["-h", "--help"]},
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    one.callback(invoke_without_command=True)(_root)
    return one


def _root(
    ctx: typer.Context,
    profiles: common.ProfilesOpt = None,
    version: bool = typer.Option(
        False, "--version", help="Print the version and exit.", is_eager=True
    ),
) -> None:
    if version:
        from pddplan import __version__

        typer.echo(f"pddplan {__version__}")
        raise typer.Exit(0)
    common.State.profile_dirs = list(profiles or [])
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit(0)


def _register(one: typer.Typer, mod: str) -> bool:
    """Declare the commands of ``pddplan.cli.<mod>`` on ``one``; False when there is no such
    module."""
    try:
        module = __import__(f"pddplan.cli.{mod}", fromlist=["register"])
    except ModuleNotFoundError as exc:
        if exc.name != f"pddplan.cli.{mod}":
            raise
        return False
    module.register(one)
    return True


@functools.cache
def whole_app() -> typer.Typer:
    """The app with every command declared (made once)."""
    one = _typer_app()
    for mod in COMMAND_MODULES:
        _register(one, mod)
    return one


def __getattr__(name: str) -> Any:
    if name == "app":  # the whole app, declared on first use
        return whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _one_command(name: str) -> typer.Typer | None:
    """The app with only the command (or group) ``name`` declared, from the module named after
    it (``solve_cmd``); None when no such module declares it."""
    mod = f"{name}_cmd"
    if mod not in COMMAND_MODULES:
        return None
    one = _typer_app()
    if not _register(one, mod):
        return None
    one.registered_commands = [c for c in one.registered_commands if c.name == name]
    one.registered_groups = [g for g in one.registered_groups if g.name == name]
    return one if one.registered_commands or one.registered_groups else None


def readable_metavars(cmd: Any) -> Any:
    """Give every option and argument without a metavar a readable one (``FILE``, ``JOBS``,
    ``SCENARIO``) instead of typer's ``<int range>`` or ``<list[str]>``; recursive. (Duck-typed
    on click's command and parameter objects, which typer vendors.)"""
    for p in cmd.params:
        if "Argument" in type(p).__name__:
            p.display_type = lambda _ctx: ""  # typer would add "<str>" after the name
        if p.metavar is not None or getattr(p, "is_flag", False):
            continue
        td = getattr(p, "type_descriptor", None)
        info = getattr(td, "parameter_info", None)
        if "Argument" in type(p).__name__:
            p.metavar = (p.name or "value").upper()
        elif "Path" in repr(getattr(td, "annotation", None)):
            p.metavar = "DIR" if getattr(info, "file_okay", True) is False else "FILE"

        else:
            longest = max(p.opts, key=len).lstrip("-")
            p.metavar = longest.upper().replace("-", "_")
    for sub in getattr(cmd, "commands", {}).values():
        readable_metavars(sub)
    return cmd


class _LazyCoercion:
    """A parameter's coercion that builds typer's own (a pydantic ``TypeAdapter``, which loads
    pydantic) only for a value that needs it: a parameter not given (None) comes back as typer
    gives it (None, or () when it takes many values), and a plain ``str`` parameter given a
    ``str`` comes back as it is, and a list parameter given no values an empty list (what the
    adapter gives them). Anything else is typer's own
    coercion, built on first use as typer would."""

    def __init__(self, descriptor: Any) -> None:
        info = descriptor.parameter_info
        self.descriptor = descriptor
        self.plain_str = (
            descriptor.annotation is str
            and getattr(info, "parser", None) is None
            and not descriptor.is_file
            and not descriptor.is_path
            and not descriptor.is_choice
        )
        # a list parameter given no values: typer's adapter gives an empty list
        self.plain_list = descriptor.is_list and not descriptor.is_file

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        many = param.multiple or param.nargs == -1
        if value is None:
            return () if many else None
        if self.plain_str and not many and type(value) is str:
            return value
        if self.plain_list and type(value) in (list, tuple) and not value:
            return []
        from typer._coercion import build_runtime_param

        param._runtime_param = build_runtime_param(self.descriptor)
        return param._runtime_param.coerce(value, param=param, ctx=ctx)


def lazy_coercion(cmd: Any) -> Any:
    """Give every typer parameter of ``cmd`` a :class:`_LazyCoercion` (recursive), so that a
    command whose values need no conversion never loads pydantic for its options. A parameter
    of another shape (a typer without ``_runtime_param``) keeps typer's own."""

    def lazy(p: Any) -> Any:
        descriptor = getattr(p, "type_descriptor", None)
        if descriptor is not None and getattr(p, "_runtime_param", 0) is None:
            p._runtime_param = _LazyCoercion(descriptor)
        return p

    for p in cmd.params:
        lazy(p)
    help_option = getattr(cmd, "get_help_option", None)
    if help_option is not None:  # ``--help``, made when a command line is parsed
        cmd.get_help_option = lambda ctx: None if (o := help_option(ctx)) is None else lazy(o)
    for sub in getattr(cmd, "commands", {}).values():
        lazy_coercion(sub)
    return cmd


def command(name: str | None = None) -> Any:
    """The click command of the app, with readable metavars (what ``pddplan`` runs). With
    ``name``, a command (or group) of the app: the app with that one command declared, which
    parses, runs and helps exactly as the whole app does for it, without declaring (or
    importing) the others (the whole app when no command has that name)."""
    one = None if name is None else _one_command(name)
    if one is None and name is not None:
        whole = whole_app()
        commands = [c for c in whole.registered_commands if c.name == name]
        groups = [g for g in whole.registered_groups if g.name == name]
        if commands or groups:
            one = copy.copy(whole)
            one.registered_commands = commands
            one.registered_groups = groups
    return lazy_coercion(readable_metavars(typer.main.get_command(one or whole_app())))


def _command_name(argv: list[str]) -> str | None:
    """The command a command line runs, when its only options before it are ``--profiles``;
    None otherwise (``--help``, ``--version``, no command: the whole app answers)."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--profiles":
            i += 2
        elif arg.startswith("--profiles="):
            i += 1
        elif arg.startswith("-"):
            return None
        else:
            return arg
    return None


#: The BLAS libraries' thread counts a command sets, unless the environment sets them: one.
#: Every array the planner multiplies is small (a table of 1,024 rows by a few hundred request
#: classes at most), so a pool of BLAS threads computes nothing faster and only costs its
#: start-up, 0.05-0.06 s of CPU a command on a 2-core machine (numpy's import: 0.12 s -> 0.07 s).
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")
#: Pydantic's plugins (entry points of other installed packages, found by scanning every
#: installed distribution's metadata when the first schema is built, 0.01-0.02 s a command)
#: are not loaded by a command unless the environment sets ``PYDANTIC_DISABLE_PLUGINS`` itself
#: (empty, or to the plugins to leave out): the profiles' validation needs none.
PYDANTIC_PLUGINS_VARIABLE = "PYDANTIC_DISABLE_PLUGINS"
#: The values of :data:`PYDANTIC_PLUGINS_VARIABLE` with which pydantic loads no plugin at all.
NO_PYDANTIC_PLUGINS = ("__all__", "1", "true")
#: Pydantic's plugin loader, a module it imports when it builds its first schema; it imports
#: ``importlib.metadata`` (and with it ``email``, ``zipfile``, ``csv``: 36 modules, 0.012 s of
#: CPU) to scan the installed distributions, which it never does when no plugin is to be loaded.
PYDANTIC_PLUGIN_LOADER = "pydantic.plugin._loader"


class _NoPydanticPlugins(types.ModuleType):
    """What :data:`PYDANTIC_PLUGIN_LOADER` answers when every plugin is off (its
    ``get_plugins()`` returns no plugin then), without importing ``importlib.metadata``. Any other
    of its names is the real module's, loaded then in this one's place."""

    @staticmethod
    def get_plugins() -> tuple[()]:
        return ()

    def __getattr__(self, name: str) -> Any:
        import importlib

        if name.startswith("__"):  # what the import system asks of a module (``__path__``)
            raise AttributeError(name)
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        return getattr(importlib.import_module(self.__name__), name)


def no_pydantic_plugins() -> None:
    """Where the environment turns every pydantic plugin off (:data:`NO_PYDANTIC_PLUGINS`) and
    pydantic has not loaded its plugin loader yet, stand :class:`_NoPydanticPlugins` in for it."""
    import os

    if os.environ.get(PYDANTIC_PLUGINS_VARIABLE) not in NO_PYDANTIC_PLUGINS:
        return
    if PYDANTIC_PLUGIN_LOADER not in sys.modules:
        sys.modules[PYDANTIC_PLUGIN_LOADER] = _NoPydanticPlugins(PYDANTIC_PLUGIN_LOADER)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app; a PddplanError or a command-line error (click's) becomes one
    line on stderr and its exit code; a closed stdout pipe exits 0 (the one place it is
    handled). BLAS runs on one thread (:data:`BLAS_THREAD_VARIABLES`) and pydantic loads no
    plugins (:data:`PYDANTIC_PLUGINS_VARIABLE`) unless the environment sets those variables."""
    import os

    for name in BLAS_THREAD_VARIABLES:
        os.environ.setdefault(name, "1")
    os.environ.setdefault(PYDANTIC_PLUGINS_VARIABLE, "__all__")
    no_pydantic_plugins()
    from typer._click.exceptions import ClickException  # typer's own click (it vendors one)
    from typer.exceptions import Abort

    from pddplan.errors import PddplanError

    try:
        cli = command(_command_name(sys.argv[1:] if argv is None else list(argv)))
        cli.invoke = _pipe_safe(cli.invoke)  # type: ignore[method-assign]
        rc = cli.main(args=argv, prog_name="pddplan", standalone_mode=False)
        sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit
    except BrokenPipeError:
        _closed_pipe()
    except PddplanError as exc:
        _fail(str(exc), exc.exit_code)
    except ClickException as exc:
        # a bad value typer itself rejects ("--jobs 0"): one line naming the flag, no usage text
        _fail(exc.format_message(), exc.exit_code)
    except (KeyboardInterrupt, Abort):
        typer.echo("pddplan: interrupted", err=True)
        sys.exit(130)
    sys.exit(rc if isinstance(rc, int) else 0)


def run() -> NoReturn:
    """The process's entry point (the ``pddplan`` script, ``python -m pddplan``): :func:`main`,
    then the process ends without the interpreter's teardown (:func:`_end_process`). An
    exception other than SystemExit (a bug's traceback) leaves the ordinary way."""
    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    _end_process(code)


def _end_process(code: object) -> NoReturn:
    """End the process with the exit status of ``SystemExit(code)``, skipping the interpreter's
    finalization.

    At its end a command's process holds some 50,000 objects that lived to its end (modules,
    classes, schemas, profiles, numpy's tables): finalization tears the modules down and frees
    them one by one, about 40 ms of CPU at the end of the default solve (0.30 s in all), for
    memory that the operating system takes back at once. What finalization does that a
    command needs is done here, in its order: the exit functions (:mod:`atexit`: the disk
    caches' writes, :mod:`logging`'s flush), then the flush of stdout and stderr. Where
    anything else could still be running (a thread besides the main one, such as a pool's,
    which finalization would join) or a flush fails, the process exits the ordinary way."""
    import atexit
    import os
    import threading

    if code is None:
        rc = 0
    elif isinstance(code, int):
        rc = code
    else:  # as the interpreter does with SystemExit("text"): the text on stderr, status 1
        sys.stderr.write(f"{code}\n")
        rc = 1
    if threading.active_count() > 1:
        sys.exit(rc)
    atexit._run_exitfuncs()  # they run once: the interpreter's exit would find none left
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(rc)  # the interpreter's last flush reports it as it always has
    os._exit(rc)


def _pipe_safe(invoke: Any) -> Any:
    """``invoke`` with a closed pipe handled here: click's own handler would exit 1; and an
    interrupt (Ctrl-C) passed on as typer's ``Abort``, for :func:`main` to say so (typer turns
    a KeyboardInterrupt inside a command into a bare exit status 130, without a word)."""
    from typer.exceptions import Abort

    def guarded(ctx: Any) -> Any:
        try:
            return invoke(ctx)
        except BrokenPipeError:
            _closed_pipe()
        except KeyboardInterrupt:
            raise Abort() from None

    return guarded


def _closed_pipe() -> NoReturn:
    """The reader of stdout went away (``pddplan solve | head -1``): exit 0, quietly. As the
    Python docs recommend (signal, "Note on SIGPIPE"), stdout is pointed at /dev/null first, so
    the interpreter's last flush of what is left in its buffer does not fail again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is no file (a test's capture)
        pass
    sys.exit(0)


def _fail(message: str, code: int) -> None:
    # one line, whatever a file's text put into the message; bundled files by their names
    from pddplan.api.profiles import bundled_names

    message = bundled_names(message)
    typer.echo(f"pddplan: error: {' '.join(message.splitlines())}", err=True)
    sys.exit(code)


__all__ = ["app", "command", "main", "run"]
