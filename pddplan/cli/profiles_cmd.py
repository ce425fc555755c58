"""``pddplan profiles list|show|validate`` and ``pddplan schema``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pddplan.cli import common

profiles_app = typer.Typer(help="List, show and validate profiles.", no_args_is_help=True)


@profiles_app.command("list")
@common.output_options
def list_cmd(
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind",
            "-k",
            help="chips, models, links, workloads, caches or scenarios.",
            metavar="chips|models|links|workloads|caches|scenarios",
        ),
    ] = None,
    *,
    out: common.Output,
) -> None:
    """List the profiles on the search path.

    Example: pddplan profiles list --kind chips --format csv
    """
    from pddplan import api

    out.emit(api.list_profiles(kind, profiles=common.State.profile_dirs).report())


@profiles_app.command("show")
@common.output_options
def show_cmd(
    name: Annotated[
        str,
        typer.Argument(
            help="Profile or scenario name, e.g. h100-sxm or pdd-paper (a scenario is shown "
            "resolved: its keys after overrides, its profiles and chip prices).",
            metavar="NAME",
        ),
    ],
    overrides: common.SetOpt = [],  # noqa: B006
    *,
    out: common.Output,
) -> None:
    """Show one profile with the SI numbers pddplan derives from it, or a scenario resolved.

    Example: pddplan profiles show pdd-paper --set link=wan-40g-cross-city
    """
    from pddplan import api
    from pddplan.api.values import parse_overrides

    res = api.show_profile(
        name,
        overrides=parse_overrides(overrides, "profiles show"),
        profiles=common.State.profile_dirs,
    )
    out.emit(res.report())


@profiles_app.command("validate")
@common.output_options
def validate_cmd(
    files: Annotated[
        list[Path] | None,
        typer.Argument(help="Profile or scenario files; none: every profile on the search path."),
    ] = None,
    *,
    out: common.Output,
) -> None:
    """Validate profile and scenario files strictly; the first error of each file is reported.

    Example: pddplan profiles validate
    """
    from pddplan import api
    from pddplan.errors import ProfileError

    res = api.validate_profiles(files, profiles=common.State.profile_dirs)
    out.emit(res.report())
    if res.errors:
        # each error once: a scenario that loads a broken profile fails with that profile's
        # own error, which its row gives too
        for msg in dict.fromkeys(res.errors):
            common.info(f"pddplan: error: {msg}")
        raise typer.Exit(ProfileError.exit_code)


@common.flag_errors
def schema_cmd(
    kind: Annotated[
        str, typer.Option("--kind", "-k", help="scenario, chip, model, link or workload.")
    ] = "scenario",
    output: common.OutputOpt = None,
) -> None:
    """Print the JSON Schema of scenario (or profile) files, for editors.

    Example: pddplan schema -o pddplan-scenario.schema.json
    """
    import json

    from pddplan import api
    from pddplan.errors import write_failed

    common.check_writable(output)
    text = json.dumps(api.profile_schema(kind), indent=2) + "\n"
    if output is None:
        typer.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise write_failed(output, exc) from None


def register(app: typer.Typer) -> None:
    app.add_typer(profiles_app, name="profiles")
    app.command("schema")(schema_cmd)
