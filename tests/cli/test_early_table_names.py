"""A wrong ``--table`` name fails before the work for the long commands, and the declared names
are the ones their results have (issue 22: `robust -t nope` ran the whole study first)."""

from __future__ import annotations

import pytest

import pddplan
from pddplan.api.values import table_names
from pddplan.cli import main
from tests.time_limits import cpu_limit_s, cpu_time_limit


@pytest.mark.parametrize(
    "args",
    [
        ["robust", "-t", "nope"],
        ["simulate", "-t", "summary"],
        ["sweep", "--set", "rate_rps=1,2", "-t", "nope"],
    ],
)
def test_a_wrong_table_name_fails_before_the_work(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # robust's default 1,000 samples take tens of CPU seconds: a check before the work takes
    # well under one
    with cpu_time_limit(cpu_limit_s(5.0)), pytest.raises(SystemExit) as exc:
        main(args)
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert "--table" in err and "tables:" in err


def test_declared_names_are_the_results_tables() -> None:
    got = {
        "robust": pddplan.robust(samples=8),
        "simulate": pddplan.simulate(requests=200),
        "sweep": pddplan.sweep(axes={"rate_rps": [1.0, 2.0]}, baselines=False),
    }
    for command, res in got.items():
        declared = table_names(command)
        assert declared is not None
        assert {s.slug for s in res.report().sections} <= set(declared), command
