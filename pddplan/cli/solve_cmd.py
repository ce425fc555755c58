"""``pddplan solve``: size P / RLD / MD to maximize BCR under the TTFT and TPOT SLAs."""

from __future__ import annotations

from typing import Annotated

import typer

from pddplan.cli import common

ScenarioArg = Annotated[
    str | None,
    typer.Argument(
        help="Scenario file, or the name of a bundled scenario (default: the bundled default)."
    ),
]


#: The library's option names and the flags of ``solve``.
SOLVE_FLAGS = {
    "rate_rps": "--rate",
    "budget_usd_per_hour": "--budget",
    "max_chips": "--max-chips",
    "max_rate_rps": "--max-rate",
    "max_bcr": "--max-bcr",
    "own": "--own",
}


def parse_max_chips(values: list[str] | None) -> dict[str, int]:
    return common.parse_counts(values, "--max-chips")


def solve_cmd(
    scenario: ScenarioArg = None,
    rate: Annotated[
        float | None,
        typer.Option(
            "--rate",
            help="Target request rate [req/s], above 0: the least-cost plan serving it.",
            metavar="REQ_PER_S",
        ),
    ] = None,
    budget: Annotated[
        float | None,
        typer.Option(
            "--budget",
            help="Budget [USD/hour]: the plan with the most goodput within it.",
            metavar="USD_PER_HOUR",
        ),
    ] = None,
    max_chips: Annotated[
        list[str] | None,
        typer.Option(
            "--max-chips",
            help="At most N chips of CHIP, rented or owned (repeatable or comma-separated); "
            "the baselines obey it too.",
            metavar="CHIP=N",
        ),
    ] = None,
    own: Annotated[
        list[str] | None,
        typer.Option(
            "--own",
            help="N chips of CHIP are owned: used first, at their amortized capex "
            "(--set inventory.owned_cost=sunk: free); the rest is rented. Repeatable.",
            metavar="CHIP=N",
        ),
    ] = None,
    max_rate: Annotated[
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
    set_: common.SetOpt = [],  # noqa: B006
    fmt: common.FormatOpt = "table",
    output: common.OutputOpt = None,
    table: common.TableOpt = None,
    wide: common.WideOpt = False,
) -> None:
    """Size P / RLD / MD for a scenario and compare with the same-datacenter and no-relay baselines.

    Without --rate or --budget the scenario's rate_rps is the target; --max-bcr (or a scenario
    without a rate) asks for the plan of highest BCR, and the output says what bounds its scale.
    Exit code 3 when no plan fits.

    Example: pddplan solve pdd-paper --rate 2 --own gpu-a=16 --set inventory.owned_cost=sunk --set link=wan-40g-cross-city
    """
    from pddplan import api
    from pddplan.errors import UsageError

    common.check_format(fmt)
    if sum((rate is not None, budget is not None, max_bcr)) > 1:
        raise UsageError("give one of --rate, --budget and --max-bcr")
    overrides = common.parse_sets(set_, "solve")
    with common.flags(SOLVE_FLAGS, set_flag="--set"):
        res = api.solve(
            scenario,
            overrides=overrides,
            own=common.parse_counts(own, "--own", least=0),
            profiles=common.State.profile_dirs,
            rate_rps=rate,
            budget_usd_per_hour=budget,
            max_chips=parse_max_chips(max_chips),
            max_rate_rps=max_rate,
            max_bcr=max_bcr,
            explain=explain,
        )
    common.emit(res.report(), fmt, output, table, wide)


def register(app: typer.Typer) -> None:
    app.command("solve")(solve_cmd)
