"""``pddplan profiles list|show|validate`` and ``pddplan schema``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pddplan.cli import common

KIND_CHOICES = {"chips": "chip", "models": "model", "links": "link", "workloads": "workload"}

profiles_app = typer.Typer(help="List, show and validate profiles.", no_args_is_help=True)


@profiles_app.command("list")
def list_cmd(
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind",
            "-k",
            help="chips, models, links, workloads or scenarios.",
            metavar="chips|models|links|workloads|scenarios",
        ),
    ] = None,
    fmt: common.FormatOpt = "table",
    output: common.OutputOpt = None,
    table: common.TableOpt = None,
    wide: common.WideOpt = False,
) -> None:
    """List the profiles on the search path.

    Example: pddplan profiles list --kind chips --format csv
    """
    from pddplan.errors import UsageError
    from pddplan.report.profiles import list_report

    common.check_format(fmt)
    if kind == "scenarios":
        from pddplan.report.profiles import scenario_list_report

        common.emit(scenario_list_report(common.registry()), fmt, output, table, wide)
        return
    if kind is not None and kind not in KIND_CHOICES:
        raise UsageError(
            f"--kind must be one of {', '.join(KIND_CHOICES)}, scenarios, not {kind!r}"
        )
    kinds = [KIND_CHOICES[kind]] if kind else list(KIND_CHOICES.values())
    common.emit(list_report(common.registry(), kinds), fmt, output, table, wide)


@profiles_app.command("show")
def show_cmd(
    name: Annotated[
        str,
        typer.Argument(
            help="Profile or scenario name, e.g. h100-sxm or pdd-paper (a scenario is shown "
            "resolved: its keys after overrides, its profiles and chip prices).",
            metavar="NAME",
        ),
    ],
    set_: common.SetOpt = [],  # noqa: B006
    fmt: common.FormatOpt = "table",
    output: common.OutputOpt = None,
    table: common.TableOpt = None,
    wide: common.WideOpt = False,
) -> None:
    """Show one profile with the SI numbers pddplan derives from it, or a scenario resolved.

    Example: pddplan profiles show pdd-paper --set link=wan-40g-cross-city
    """
    from pddplan.errors import NotFoundError
    from pddplan.report.profiles import scenario_show_report, show_report

    common.check_format(fmt)
    reg = common.registry()
    overrides = common.parse_sets(set_, "profiles show")
    if name in reg.scenarios() or name.endswith((".yaml", ".yml")):
        try:
            kind, path = reg.find_any(name)
        except NotFoundError:
            kind = "scenario"
        if kind == "scenario" or name in reg.scenarios():
            from pddplan import api

            with common.flags({}, set_flag="--set"):
                ls = api.load_scenario(
                    name, overrides=overrides, profiles=common.State.profile_dirs
                )
            common.emit(scenario_show_report(ls), fmt, output, table, wide)
            return
    kind, path = reg.find_any(name)
    common.emit(show_report(kind, path, reg.load(kind, name)), fmt, output, table, wide)


@profiles_app.command("validate")
def validate_cmd(
    files: Annotated[
        list[Path] | None,
        typer.Argument(help="Profile or scenario files; none: every profile on the search path."),
    ] = None,
    fmt: common.FormatOpt = "table",
    output: common.OutputOpt = None,
    table: common.TableOpt = None,
    wide: common.WideOpt = False,
) -> None:
    """Validate profile and scenario files strictly; the first error of each file is reported.

    Example: pddplan profiles validate
    """
    from pddplan.errors import PddplanError, ProfileError
    from pddplan.io.loader import load_file, load_scenario
    from pddplan.results import Report, Section

    common.check_format(fmt)
    reg = common.registry()
    if not files:
        files = [p for k in KIND_CHOICES.values() for p in reg.index(k).values()]
    rows = []
    failed: list[str] = []
    for f in files:
        try:
            obj = load_file(f)
            if getattr(obj, "kind", "") == "scenario":
                load_scenario(str(f), reg)
            rows.append(
                {
                    "file": str(f),
                    "kind": obj.kind,
                    "name": getattr(obj, "name", ""),
                    "status": "ok",
                    "error": "",
                }
            )
        except PddplanError as exc:
            failed.append(str(exc))
            rows.append(
                {"file": str(f), "kind": "", "name": "", "status": "error", "error": str(exc)}
            )
    common.emit(
        Report("profile validation", [Section("files", rows)], {"files": rows}),
        fmt,
        output,
        table,
        wide,
    )
    if failed:
        for msg in failed:
            common.info(f"pddplan: error: {msg}")
        raise typer.Exit(ProfileError.exit_code)


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

    from pddplan.errors import UsageError
    from pddplan.spec import KINDS

    if kind not in KINDS:
        raise UsageError(f"--kind must be one of {', '.join(KINDS)}, not {kind!r}")
    schema = KINDS[kind].model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    text = json.dumps(schema, indent=2) + "\n"
    if output is None:
        typer.echo(text, nl=False)
    else:
        from pddplan.errors import UsageError

        try:
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None


def register(app: typer.Typer) -> None:
    app.add_typer(profiles_app, name="profiles")
    app.command("schema")(schema_cmd)
