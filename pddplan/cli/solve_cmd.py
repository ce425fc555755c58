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
}


def parse_max_chips(values: list[str] | None) -> dict[str, int]:
    from pddplan.errors import UsageError

    out: dict[str, int] = {}
    for v in values or []:
        for part in v.split(","):
            name, sep, num = part.partition("=")
            if not sep or not num.strip().isdigit() or int(num) <= 0:
                raise UsageError(
                    f"--max-chips expects CHIP=N with N a positive whole number, not {part!r}"
                )
            out[name.strip()] = int(num)
    return out


def solve_cmd(
    scenario: ScenarioArg = None,
    rate: Annotated[
        float | None,
        typer.Option(
            "--rate", help="Target request rate [req/s]: the least-cost plan serving it.", min=0.0
        ),
    ] = None,
    budget: Annotated[
        float | None,
        typer.Option(
            "--budget", help="Budget [USD/hour]: the plan with the most goodput within it.", min=0.0
        ),
    ] = None,
    max_chips: Annotated[
        list[str] | None,
        typer.Option("--max-chips", help="Inventory limit CHIP=N (repeatable or comma-separated)."),
    ] = None,
    max_rate: Annotated[
        float | None,
        typer.Option(
            "--max-rate", help="Upper bound on the rate when no target is given [req/s].", min=0.0
        ),
    ] = None,
    max_bcr: Annotated[
        bool, typer.Option("--max-bcr", help="Ignore the scenario's rate: the plan of highest BCR.")
    ] = False,
    explain: Annotated[
        bool, typer.Option("--explain", help="Add one row per hit-rate class.")
    ] = False,
    fmt: common.FormatOpt = "table",
    output: common.OutputOpt = None,
) -> None:
    """Size P / RLD / MD for a scenario and compare with the same-datacenter and no-relay baselines.

    Without --rate or --budget the scenario's rate_rps is the target; --max-bcr (or a scenario
    without a rate) asks for the plan of highest BCR, and the output says what bounds its scale.
    Exit code 3 when no plan fits.

    Example: pddplan solve --rate 2 --format md
    """
    from pddplan import api
    from pddplan.errors import UsageError

    common.check_format(fmt)
    if sum((rate is not None, budget is not None, max_bcr)) > 1:
        raise UsageError("give one of --rate, --budget and --max-bcr")
    with common.flags(SOLVE_FLAGS):
        res = api.solve(
            scenario,
            profiles=common.State.profile_dirs,
            rate_rps=rate,
            budget_usd_per_hour=budget,
            max_chips=parse_max_chips(max_chips),
            max_rate_rps=max_rate,
            max_bcr=max_bcr,
            explain=explain,
        )
    common.emit(res.report(), fmt, output)


def register(app: typer.Typer) -> None:
    app.command("solve")(solve_cmd)
