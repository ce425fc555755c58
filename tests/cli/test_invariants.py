"""Invariants checked before anything is printed (pddplan/results/invariants.py): a result that
breaks one is a bug report (InvariantError, exit 1) and nothing reaches stdout."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from pddplan.errors import InvariantError, ProfileError
from pddplan.report import emit
from pddplan.results import Report, Section

ROOT = Path(__file__).resolve().parents[2]


def _rep(row: dict, payload: dict | None = None) -> Report:
    return Report("t", [Section("plan", [row])], payload or {"plan": row})


GOOD = {"ttft_p50_s": 0.1, "ttft_p90_s": 0.2, "ttft_p99_s": 0.3, "cost_usd_per_hour": 5.0}


@pytest.mark.parametrize("fmt", ["table", "csv", "md", "json"])
def test_a_valid_report_is_printed(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    emit(_rep(dict(GOOD)), fmt, None)
    assert capsys.readouterr().out


@pytest.mark.parametrize(
    "bad, words",
    [
        ({"ttft_p90_s": 0.05}, "ttft_p90_s (0.05) is below ttft_p50_s"),
        ({"ttft_p50_s": -0.1}, "a time or cost below zero"),
        ({"cost_usd_per_hour": -1.0}, "a time or cost below zero"),
    ],
)
@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_a_broken_invariant_is_a_bug_report_before_output(
    bad: dict, words: str, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(InvariantError, match="internal error") as exc:
        emit(_rep({**GOOD, **bad}), fmt, None)
    assert words in str(exc.value) and exc.value.exit_code == 1
    assert capsys.readouterr().out == ""


def test_signed_quantities_may_be_negative(capsys: pytest.CaptureFixture[str]) -> None:
    emit(_rep({**GOOD, "saving_usd_per_hour": -3.0, "slope_per_s": -1e-6}), "json", None)
    assert capsys.readouterr().out


@pytest.mark.parametrize(
    "value, words", [(math.inf, "not a finite number"), ("0.5", "a number written as a string")]
)
def test_json_carries_no_infinity_and_no_number_as_string(value: object, words: str) -> None:
    with pytest.raises(InvariantError, match=words):
        emit(_rep(dict(GOOD), {"plan": {**GOOD, "ratio": value}}), "json", None)
    # the table shows the same row (an unbounded ratio reads "inf" there)
    emit(_rep({**GOOD, "ratio": math.inf}), "table", None)


def test_percentile_mappings_are_ordered() -> None:
    with pytest.raises(InvariantError, match="p99"):
        emit(_rep(dict(GOOD), {"t_s": {"p50": 1.0, "p90": 2.0, "p99": 1.5}}), "json", None)


@pytest.mark.parametrize(
    "csv_text, args",
    [
        (
            "phase,tokens,batch,context,tp,latency_ms,source\n"
            "ttft,200,1,0,2,1e-300,a published figure\n",
            {"chip": "h100-sxm", "model": "llama-3.3-70b"},
        ),
        (
            "payload_bytes,latency_s\n4649000,5e-324\n46490,0.185\n",
            {"link": "wan-100g-cross-city"},
        ),
    ],
)
def test_a_latency_below_a_nanosecond_is_bad_input(tmp_path: Path, csv_text: str, args) -> None:
    import pddplan

    f = tmp_path / "m.csv"
    f.write_text(csv_text)
    call = pddplan.calibrate_link if "link" in args else pddplan.calibrate
    with pytest.raises(ProfileError, match="latency_.*: must be at least .*1 ns"):
        call(f, **args)


def test_interval_widths_and_differences_need_no_order(capsys: pytest.CaptureFixture[str]) -> None:
    # simulate's "ci:ttft_p99_s" is the confidence interval's width of the p99, not a p99
    row = {**GOOD, "ci:ttft_p90_s": 1.9, "ci:ttft_p99_s": 1.8, "delta_ttft_p99_s": -1.0}
    emit(_rep(row), "json", None)
    assert capsys.readouterr().out


def test_rows_of_one_key_are_each_checked() -> None:
    """A key's percentile group is kept once read (``invariants._percentile_of``): a later row
    with the same keys out of order, or numpy numbers in place of floats, is still checked."""
    import numpy as np

    from pddplan.results.invariants import violations

    ordered = dict(GOOD)
    disordered = {**GOOD, "ttft_p90_s": np.float64(0.05)}
    rep = Report("t", [Section("plan", [ordered, ordered, disordered])], {"plan": [ordered]})
    found = violations(rep, "json")
    assert found == ["plan[2]: ttft_p90_s (0.05) is below ttft_p50_s (0.1)"]
    rep = Report("t", [Section("plan", [ordered])], {"plan": [ordered, {**GOOD, "t_s": -1}]})
    assert violations(rep, "json") == ["plan[1].t_s: a time or cost below zero (-1.0)"]
