"""``pddplan solve``: size P / RLD / MD to maximize BCR under the TTFT and TPOT SLAs."""

from __future__ import annotations

from typing import Annotated

import typer

from pddplan.cli import common

ScenarioArg = Annotated[
    str | None,
    typer.Argument(
        help="Scenario file, or the name of a bundled scenario (default: the bundled default).",
        autocompletion=common.complete_names("scenario"),
    ),
]


@common.output_options(command="solve")
@common.scenario_options("solve")
def solve_cmd(
    scenario: ScenarioArg = None,
    rate_rps: Annotated[
        float | None,
        typer.Option(
            "--rate",
            help="Target request rate [req/s], above 0: the least-cost plan serving it.",
            metavar="REQ_PER_S",
        ),
    ] = None,
    budget_usd_per_hour: Annotated[
        float | None,
        typer.Option(
            "--budget",
            help="Budget [USD/hour]: the plan with the most goodput within it.",
            metavar="USD_PER_HOUR",
        ),
    ] = None,
    max_rate_rps: Annotated[
        float | None,
        typer.Option(
            "--max-rate",
            help="Upper bound on the rate when no target is given [req/s].",
            metavar="REQ_PER_S",
        ),
    ] = None,
    max_bcr: Annotated[
        bool, typer.Option("--max-bcr", help="Ignore the scenario's rate: the plan of highest BCR.")
    ] = False,
    explain: Annotated[
        bool, typer.Option("--explain", help="Add one row per hit-rate class.")
    ] = False,
    verdict_check: Annotated[
        bool,
        typer.Option(
            "--verdict-check/--no-verdict-check",
            help="Name the estimates whose plausible range reverses PDD's verdict against each "
            "baseline (the 'verdict' table; on by default).",
        ),
    ] = True,
    *,
    scenario_opts: common.ScenarioOptions,
    out: common.Output,
) -> None:
    """Size P / RLD / MD for a scenario and compare with the same-datacenter and no-relay baselines.

    Without --rate or --budget the scenario's rate_rps is the target; --max-bcr (or a scenario
    without a rate) asks for the plan of highest BCR, and the output says what bounds its scale.
    Exit code 3 when no plan fits.

    Example: pddplan solve pdd-paper --rate 2 --own gpu-a=16 --set inventory.owned_cost=sunk --set link=wan-40g-cross-city
    """
    from pddplan import api
    from pddplan.errors import UsageError

    if sum((rate_rps is not None, budget_usd_per_hour is not None, max_bcr)) > 1:
        raise UsageError("give one of --rate, --budget and --max-bcr")
    res = api.solve(
        scenario,
        overrides=scenario_opts.overrides,
        own=scenario_opts.own,
        max_chips=scenario_opts.max_chips,
        profiles=common.State.profile_dirs,
        rate_rps=rate_rps,
        budget_usd_per_hour=budget_usd_per_hour,
        max_rate_rps=max_rate_rps,
        max_bcr=max_bcr,
        explain=explain,
        verdict_check=verdict_check,
    )
    if res.trace_rate_note:
        common.info(f"pddplan: note: {res.trace_rate_note}")
    out.emit(res.report())


def register(app: typer.Typer) -> None:
    app.command("solve")(solve_cmd)
