"""``pddplan report``: one page a planner can send to procurement (HTML or markdown)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pddplan.cli import common
from pddplan.cli.solve_cmd import SOLVE_FLAGS, ScenarioArg


def report_cmd(
    scenario: ScenarioArg = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="FILE.html: one self-contained page (images inline, no network); FILE.md: "
            "markdown with its images beside it; anything else: the --format output.",
            dir_okay=False,
        ),
    ] = None,
    rate: Annotated[
        float | None,
        typer.Option("--rate", help="Target request rate [req/s], above 0.", metavar="REQ_PER_S"),
    ] = None,
    own: Annotated[
        list[str] | None,
        typer.Option("--own", help="N chips of CHIP are owned (as in solve).", metavar="CHIP=N"),
    ] = None,
    max_chips: Annotated[
        list[str] | None,
        typer.Option("--max-chips", help="At most N chips of CHIP.", metavar="CHIP=N"),
    ] = None,
    set_: common.SetOpt = [],  # noqa: B006
    fmt: common.FormatOpt = "table",
    table: common.TableOpt = None,
    wide: common.WideOpt = False,
) -> None:
    """Write the procurement report: the plan (owned, rented and bought chips), the baselines,
    the hit-rate classes, the bathtub, a line-bandwidth x hit-rate-shift sweep, the assumptions
    with their sources (estimates flagged) and the warnings.

    Example: pddplan report pdd-paper -o plan.html
    """
    from pddplan import api
    from pddplan.report.html import images, render_html, render_markdown

    common.check_format(fmt)
    overrides = common.parse_sets(set_, "report")
    progress, bar = common.progress_bar("report", True)
    try:
        if progress:
            progress(0, 3)
        with common.flags(SOLVE_FLAGS, set_flag="--set"):
            res = api.plan_report(
                scenario,
                overrides=overrides,
                profiles=common.State.profile_dirs,
                rate_rps=rate,
                own=common.parse_counts(own, "--own", least=0),
                max_chips=common.parse_counts(max_chips, "--max-chips"),
            )
        suffix = output.suffix.lower() if output is not None else ""
        if suffix in (".html", ".htm", ".md"):
            if progress:
                progress(2, 3)
            pngs = images(res)
            assert output is not None
            text = render_html(res, pngs) if suffix != ".md" else render_markdown(res, pngs, output)
            try:
                output.write_text(text, encoding="utf-8")
            except OSError as exc:
                from pddplan.errors import UsageError

                raise UsageError(f"cannot write {output}: {exc.strerror}") from None
            common.info(f"wrote {output}")
            return
    finally:
        if bar is not None:
            bar.stop()
    common.emit(res.report(), fmt, output, table, wide)


def register(app: typer.Typer) -> None:
    app.command("report")(report_cmd)
