"""``pddplan cache``: how much prefix cache, in which tier, pays."""

from __future__ import annotations

from typing import Annotated

import typer

from pddplan.cli import common
from pddplan.cli.solve_cmd import ScenarioArg


@common.output_options(command="cache")
@common.scenario_options("cache")
def cache_cmd(
    scenario: ScenarioArg = None,
    rate_rps: Annotated[
        float | None,
        typer.Option(
            "--rate",
            help="Request rate to serve [req/s], above 0 (default: the scenario's).",
            metavar="REQ_PER_S",
        ),
    ] = None,
    max_bcr: Annotated[
        bool,
        typer.Option("--max-bcr", help="Choose the capacity whose best plan has the highest BCR."),
    ] = False,
    *,
    scenario_opts: common.ScenarioOptions,
    out: common.Output,
) -> None:
    """Size the P nodes' prefix cache: each capacity option of the scenario's cache tiers,
    solved with its hit rate and load time; cost = chips + line + cache.

    Example: pddplan cache cache-tiers
    """
    from pddplan import api
    from pddplan.errors import UsageError

    if rate_rps is not None and max_bcr:
        raise UsageError("give one of --rate and --max-bcr")
    common.unmap_large_frees()  # the replays' freed arrays go back to the system
    with common.progress_bar("capacity options", True) as progress:
        res = api.cache(
            scenario,
            overrides=scenario_opts.overrides,
            own=scenario_opts.own,
            max_chips=scenario_opts.max_chips,
            profiles=common.State.profile_dirs,
            rate_rps=rate_rps,
            max_bcr=max_bcr,
            progress=progress,
        )
    out.emit(res.report())


def register(app: typer.Typer) -> None:
    app.command("cache")(cache_cmd)
