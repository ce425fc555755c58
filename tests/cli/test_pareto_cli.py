"""`pddplan pareto` from the command line: the tables a person reads (units in words), the JSON
and CSV contracts, the plot, and a request with no feasible plan (one line, exit 3)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from pddplan.cli import main

ARGS = ["pareto", "long-context", "--points", "3"]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


def test_table_names_the_figures_with_units_and_answers(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    rc, out, err = _run(capsys, *ARGS)
    assert rc == 0, err
    assert out.startswith("pddplan pareto: scenario long-context")
    for words in ("[$/h]", "goodput", "[req/s]", "p99", "[$/Mtok]", "[req/$]"):
        assert words in out, words
    for table in ("PDD's frontier", "baselines on their frontiers", "every plan of the grid"):
        assert table in out
    # the answer in words, PDD against each baseline
    assert "PDD's frontier holds" in out
    assert "Against same-dc: " in out and "Against no-relay: " in out
    assert "inf" not in out.split() and "nan" not in out.split()


def test_json_and_csv(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, *ARGS, "-f", "json")
    assert rc == 0, err
    doc = json.loads(out)
    assert len(doc["grid"]["rates_rps"]) == 3
    assert doc["frontier"] and doc["answer"] and doc["token_cost_basis"]
    for row in doc["frontier"]:
        for key in ("cost_usd_per_hour", "goodput_rps", "ttft_p99_s", "bcr_requests_per_usd"):
            assert isinstance(row[key], float), key
        assert isinstance(row["input_cost_usd_per_mtok"], float)
        assert row["ttft_p99_s"] <= doc["sla"]["ttft_s"]["p99"]
    assert set(doc["baselines"]) == {"same-dc", "no-relay"}
    rc, out, err = _run(capsys, *ARGS, "-f", "csv")  # the first table: PDD's frontier
    assert rc == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == len(doc["frontier"])
    assert float(rows[0]["cost_usd_per_hour"]) == pytest.approx(
        doc["frontier"][0]["cost_usd_per_hour"]
    )


def test_plot(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "pareto.png"
    rc, _out, err = _run(capsys, *ARGS, "--plot", str(png), "-f", "json")
    assert rc == 0, err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {png}" in err


def test_no_feasible_plan_is_one_line_and_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, *ARGS, "--set", "sla.tpot_ms=0.1")
    assert rc == 3
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(
        "pddplan: error: pareto: no PDD plan meets the SLA at any of the 3 target rates"
    )
    assert "scenario long-context" in lines[0] and "TPOT" in lines[0]
    assert out == ""


def test_the_points_cap_names_the_flag_and_the_variable(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PDDPLAN_MAX_PARETO_POINTS", "4")
    rc, _out, err = _run(capsys, "pareto", "--points", "5")
    assert rc == 2
    assert err.strip() == (
        "pddplan: error: --points: 5 is above the cap of 4 target rates (set the environment "
        "variable PDDPLAN_MAX_PARETO_POINTS to raise it)"
    )
