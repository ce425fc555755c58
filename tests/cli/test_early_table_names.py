"""A wrong ``--table`` name fails before the work for the long commands, and the declared names
are the ones their results have (issue 22: `robust -t nope` ran the whole study first)."""

from __future__ import annotations

import re

import pytest

import pddplan
from pddplan.api.values import table_names
from pddplan.cli import main
from pddplan.results.tables import TABLES
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


@pytest.mark.parametrize("command", sorted(TABLES))
def test_help_lists_exactly_the_commands_table_names(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*command.split(), "--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # no name is broken at a hyphen
    listed = re.search(r"--table NAME .*? Names: (.*?)\.(?: |$)", text)
    assert listed is not None, text
    assert tuple(listed.group(1).split(", ")) == TABLES[command]


def test_help_of_a_command_without_declared_names_lists_none(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["hitrate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Names:" not in text and "A wrong name lists the result's tables." in text
