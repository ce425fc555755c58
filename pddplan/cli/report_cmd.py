"""``pddplan report``: one page a planner can send to procurement (HTML or markdown)."""

from __future__ import annotations

from typing import Annotated

import typer

from pddplan.cli import common
from pddplan.cli.solve_cmd import ScenarioArg


@common.output_options(
    command="report",
    output_help="FILE.html: one self-contained page (images inline, no network); FILE.md: "
    "markdown with its images beside it; anything else: the --format output.",
)
@common.scenario_options("report")
def report_cmd(
    scenario: ScenarioArg = None,
    rate_rps: Annotated[
        float | None,
        typer.Option("--rate", help="Target request rate [req/s], above 0.", metavar="REQ_PER_S"),
    ] = None,
    *,
    scenario_opts: common.ScenarioOptions,
    out: common.Output,
) -> None:
    """Write the procurement report: the plan (owned, rented and bought chips), the baselines,
    the hit-rate classes, the bathtub, a line-bandwidth x hit-rate-shift sweep, the assumptions
    with their sources (estimates flagged) and the warnings.

    Example: pddplan report pdd-paper -o plan.html
    """
    from pddplan import api
    from pddplan.errors import UsageError
    from pddplan.report.html import write_page

    name = out.output.name if out.output is not None else ""
    page = out.output is not None and out.output.suffix.lower() in (".html", ".htm", ".md")
    if page and (out.table is not None or out.format != "table"):  # before the work
        flag = "--table" if out.table is not None else "--format"
        raise UsageError(
            f"{flag} does not apply to {name}: an .html or .md file is the whole "
            "page; a table or a format goes to stdout or another file"
        )
    with common.progress_bar("report", True) as progress:
        if progress:
            progress(0, 3)
        res = api.plan_report(
            scenario,
            overrides=scenario_opts.overrides,
            profiles=common.State.profile_dirs,
            rate_rps=rate_rps,
            own=scenario_opts.own,
            max_chips=scenario_opts.max_chips,
        )
        if page:
            assert out.output is not None
            if progress:
                progress(2, 3)
            write_page(res, out.output)
            common.info(f"wrote {out.output}")
            return
    out.emit(res.report())


def register(app: typer.Typer) -> None:
    app.command("report")(report_cmd)
