"""A newcomer's walk through the CLI in a 100-column terminal: what a person sees.

Each case runs a command as a new user would (``COLUMNS=100``, table format) and checks the
answer sentences above the tables, warnings printed whole with an action that works for that
command, no ``inf``/``nan`` in a table, and no word folded inside a table cell.
"""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from pddplan.cli import app

runner = CliRunner()


def _run(*args: str) -> tuple[str, str]:
    res = runner.invoke(app, list(args), env={"COLUMNS": "100"})
    assert res.exit_code == 0, res.output
    return res.stdout, res.stderr


@pytest.fixture(scope="module")
def solve_default() -> tuple[str, str]:
    return _run("solve", "--no-verdict-check")


@pytest.fixture(scope="module")
def solve_losing() -> tuple[str, str]:
    # hit rates 0.05 higher: the no-relay-rld baseline's BCR overtakes PDD's (ratio 0.996)
    return _run("solve", "--set", "workload.hit_rate.shift=0.05")


def _table_words(out: str) -> set[str]:
    return {w for line in out.splitlines() for w in line.split()}


def test_solve_answers_in_words_first(solve_default: tuple[str, str]) -> None:
    out, _ = solve_default
    lines = out.splitlines()
    assert lines[0].startswith("pddplan solve: scenario default")
    text = " ".join(lines[1 : lines.index("plan")])
    assert text.startswith("Deploy for 2 req/s in datacenter A: P ")
    assert "One datacenter (96 gpu-a): 192.0 $/h; PDD costs 0.809x and its BCR is 1.23x." in text
    assert "No relay (16 gpu-a, 32 gpu-b): 139.4 $/h, and it meets the TTFT targets" in text
    assert "Bound by P: prefill capacity" in text
    assert "PDD loses" not in text


def test_solve_says_first_when_pdd_loses(solve_losing: tuple[str, str]) -> None:
    out, _ = solve_losing
    first = out.splitlines()[1]
    assert first.startswith("PDD loses to no relay, RLD for anomalous requests only (no-relay-rld)")
    text = " ".join(out.split("\nplan\n")[0].split())
    # the baseline's cost and BCR, then where PDD would pay (the verdict's flips)
    assert re.search(r"for 155\.4 \$/h at a BCR of 49\.41 requests per dollar", text)
    assert "PDD would pay with" in text and "workload.hit_rate.shift (flips below" in text


def test_summary_in_words_with_units(solve_default: tuple[str, str]) -> None:
    out, _ = solve_default
    for words in ("rate [req/s]", "goodput [req/s]", "cost [$/h]", "TTFT p99 [s]", "MD stall [ms]"):
        assert words in out
    for key in ("rate_rps", "bcr_requests_per_usd", "md_stall_ms", "inf", "nan"):
        assert key not in _table_words(out)


def test_machine_formats_keep_keys() -> None:
    csv_out, _ = _run("solve", "--no-verdict-check", "-t", "summary", "-f", "csv")
    assert "rate_rps" in csv_out and "rate [req/s]" not in csv_out


def test_warnings_whole_with_the_solve_action(solve_default: tuple[str, str]) -> None:
    _, err = solve_default
    text = " ".join(err.split())
    # the reason after the first ": " is kept
    assert "an error of 0.03 in the wait probability moves it by up to" in text
    assert "write the plan with `pddplan solve -f json -o plan.json`" in text
    assert "check it with `pddplan simulate --plan plan.json`" in text
    assert "; check with `pddplan simulate`" not in text


def test_no_word_folded_in_a_100_column_table(solve_default: tuple[str, str]) -> None:
    out, _ = solve_default
    assert max(len(line) for line in out.splitlines()) <= 100
    # no continuation group holding one column beside the repeated first
    for block in out.split("(continued)\n")[1:]:
        head = [ln for ln in block.splitlines()[:6] if ln.strip() and "─" not in ln]
        assert len(head[-1].split("  ")) > 2 or len(head[-1].split()) > 2
    # every dotted input name of the verdict table whole on one line
    for m in re.finditer(r"(chips|workload|link)\.[\w.-]+", out):
        assert m.group(0).endswith(("tokens", "efficiency", "shift", "share", "rate", "s")), m


def test_sweep_answers_and_the_table_words() -> None:
    out, _ = _run("sweep", "--set", "link.bandwidth_gbit_per_s=25,100")
    assert "2 of 2 points feasible." in out
    assert "Cheapest at link.bandwidth_gbit_per_s=25:" in out
    assert "[Gbit/s]" in out
