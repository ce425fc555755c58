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


TOPO = "examples/topologies/three-sites-n1.yaml"


def test_declared_names_are_the_results_tables() -> None:
    # every form of a result: a topology file's robust, breakeven and report tables, a cache:
    # scenario's solve and topology --simulate were refused by the check before the work
    # ("no table 'held'"), so CSV could not reach them
    got = [
        ("robust", pddplan.robust(samples=8)),
        ("robust", pddplan.robust_topology(TOPO, samples=4)),
        ("simulate", pddplan.simulate(requests=200)),
        ("sweep", pddplan.sweep(axes={"rate_rps": [1.0, 2.0]}, baselines=False)),
        ("solve", pddplan.solve("cache-tiers", baselines=False, verdict_check=False)),
        ("breakeven", pddplan.breakeven_topology(TOPO, param="traffic.s.rate_rps")),
        ("report", pddplan.plan_report(TOPO)),
        ("topology", pddplan.topology("pdd-paper", simulate=100)),
    ]
    for command, res in got:
        declared = table_names(command)
        assert declared is not None
        assert {s.slug for s in res.report().sections} <= set(declared), command


@pytest.mark.parametrize(
    "args",
    [
        ["robust", TOPO, "-n", "4", "-t", "held", "-f", "csv"],
        ["breakeven", TOPO, "--param", "traffic.s.rate_rps", "-t", "plans", "-f", "csv"],
        ["topology", "pdd-paper", "--simulate", "100", "-t", "simulated", "-f", "csv"],
    ],
    ids=lambda a: a[0],
)
def test_a_table_of_a_results_other_form_is_written(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out = capsys.readouterr()
    assert exc.value.code == 0, out.err
    assert out.out.count("\n") >= 2 and "," in out.out.splitlines()[0]


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
