"""The ``pddplan`` command line: parse, call, render, map errors to exit codes. No math here.

Exit codes: 0 success, 1 bad profile or data file, 2 usage error or unknown name,
3 no plan fits.
"""

from __future__ import annotations

import sys

import typer

from pddplan.cli import common

app = typer.Typer(
    name="pddplan",
    help="Capacity planning for PDD LLM inference: prefill and relay decode in datacenter A, "
    "main decode in datacenter B, joined by a WAN line.\n\n"
    "Example: pddplan solve --format md",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@app.callback()
def _root(
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


def _register() -> None:
    from pddplan.cli import profiles_cmd, solve_cmd

    profiles_cmd.register(app)
    solve_cmd.register(app)
    for mod in (
        "hitrate_cmd",
        "bathtub_cmd",
        "whatif_cmd",
        "simulate_cmd",
        "calibrate_cmd",
        "transfer_cmd",
        "step_cmd",
    ):
        try:
            module = __import__(f"pddplan.cli.{mod}", fromlist=["register"])
        except ModuleNotFoundError as exc:
            if exc.name != f"pddplan.cli.{mod}":
                raise
            continue
        module.register(app)


_register()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app; a PddplanError becomes one line on stderr and its exit code."""
    from pddplan.errors import PddplanError

    try:
        app(args=argv, prog_name="pddplan", standalone_mode=True)
    except PddplanError as exc:
        # one line, whatever a file's text put into the message
        message = " ".join(str(exc).splitlines())
        typer.echo(f"pddplan: error: {message}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        typer.echo("pddplan: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)


__all__ = ["app", "main"]
