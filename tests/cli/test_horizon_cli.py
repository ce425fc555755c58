"""`pddplan horizon` from the command line: the tables, the JSON and CSV contracts, the plot, and
bad load input (one line naming the key and why, never a traceback)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from pddplan.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "agent-diurnal.yaml"
HEAD = EXAMPLE.read_text().split("\nload:")[0]
GOOD_LOAD = "\nload:\n  slot_minutes: 480\n  day_rate_rps: [0.3, 1.5, 0.9]\n"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


def _scenario(tmp_path: Path, load: str) -> str:
    p = tmp_path / "s.yaml"
    p.write_text(HEAD + load)
    return str(p)


def test_small_load_tables_json_csv_and_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    s = _scenario(tmp_path, GOOD_LOAD + "  growth: {monthly_rate: 0.03, months: 6}\n")
    png = tmp_path / "h.png"
    rc, out, err = _run(capsys, "horizon", s, "--plot", str(png))
    assert rc == 0, err
    assert out.startswith("pddplan horizon: scenario agent-diurnal, 36 months, 3 slots of 480 min")
    for words in ("break even", "busy", "own-for-peak", "rent-everything", "[req/s]", "less than"):
        assert words in out, words
    assert png.stat().st_size > 10_000
    rc, out, err = _run(capsys, "horizon", s, "-f", "json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["schema_version"] and doc["command"] == "horizon"
    assert len(doc["slots"]) == 36 * 3
    names = [r["strategy"] for r in doc["strategies"]]
    assert names == ["chosen", "own-for-peak", "rent-everything"]
    chosen = doc["strategies"][0]["horizon_cost_usd"]
    assert all(chosen <= r["horizon_cost_usd"] + 1e-6 for r in doc["strategies"])
    rc, out, err = _run(capsys, "horizon", s, "-f", "csv", "--table", "growth")
    assert rc == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [int(r["month"]) for r in rows] == list(range(1, 37))
    # the growth path: 3%/month for 6 months, then flat
    peak = [float(r["peak_rate_rps"]) for r in rows]
    assert peak[6] == pytest.approx(1.5 * 1.03**6) and peak[-1] == pytest.approx(peak[6])


def test_own_prices_a_given_inventory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s = _scenario(tmp_path, GOOD_LOAD)
    rc, out, err = _run(capsys, "horizon", s, "--own", "h100-sxm=8", "-f", "json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["owned_given"] is True and doc["owned"] == {"h100-sxm": 8}


LOAD_KEYS = "  slot_minutes: 480\n"
BAD = {
    "negative rate": (
        "\nload:\n" + LOAD_KEYS + "  day_rate_rps: [0.3, -1, 0.9]\n",
        ["load.day_rate_rps[1]", "greater than or equal to"],
    ),
    "non-finite rate": (
        "\nload:\n" + LOAD_KEYS + "  day_rate_rps: [0.3, .nan, 0.9]\n",
        ["load.day_rate_rps[1]", "finite"],
    ),
    "slots do not cover the day": (
        "\nload:\n" + LOAD_KEYS + "  day_rate_rps: [0.3, 0.9]\n",
        ["load", "2 slots of 480 min cover 960 min", "give 3 rates"],
    ),
    "growth path longer than the horizon": (
        GOOD_LOAD + "  growth: {monthly_multiplier: [" + ", ".join(["1.0"] * 40) + "]}\n",
        ["load.growth.monthly_multiplier", "spans 40 months", "horizon of 36 months"],
    ),
    "growth months longer than the horizon": (
        GOOD_LOAD + "  growth: {monthly_rate: 0.04, months: 48}\n",
        ["load.growth.months", "spans 48 months"],
    ),
    "start-up longer than a slot": (
        "\nload:\n  day_rate_rps: [" + ", ".join(["1.0"] * 24) + "]\n"
        "  elastic: {h20: {startup_minutes: 90}}\n",
        ["elastic.h20.startup_minutes", "longer than a slot (60 min)"],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_load_is_one_line_naming_the_key(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    load, words = BAD[case]
    rc, out, err = _run(capsys, "horizon", _scenario(tmp_path, load))
    # a malformed scenario file is exit 1, as for every command (README, exit codes)
    assert rc == 1, err
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    for w in words:
        assert w in err, (w, err)


@pytest.mark.parametrize(
    ("override", "words"),
    [
        ("load.day_rate_rps=0.3,-1,0.9", ["load.day_rate_rps", "greater than or equal to"]),
        ("load.day_rate_rps=0.3,inf,0.9", ["load.day_rate_rps", "finite"]),
        ("load.day_rate_rps=0.3,0.9", ["load", "cover 960 min"]),
        ("load.growth.months=40", ["load.growth.months", "spans 40 months"]),
        ("load.slot_minutes=7", ["slot_minutes 7 does not divide"]),
    ],
)
def test_bad_load_override_is_one_line_with_exit_2(
    override: str, words: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s = _scenario(tmp_path, GOOD_LOAD + "  growth: {monthly_rate: 0.04, months: 12}\n")
    rc, out, err = _run(capsys, "horizon", s, "--set", override)
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    for w in words:
        assert w in err, (w, err)


def test_a_scenario_without_load_and_unused_elastic_chips_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, _out, err = _run(capsys, "horizon", "pdd-paper")
    assert rc == 2 and "has no load: section" in err
    s = _scenario(tmp_path, GOOD_LOAD + "  elastic: {b200: {startup_minutes: 5}}\n")
    rc, _out, err = _run(capsys, "horizon", s)
    # a fault of the file: exit 1, naming the file
    assert rc == 1 and "load.elastic: b200 is no chip of the roles" in err and str(s) in err


def test_a_rate_past_the_line_names_the_month_and_slot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s = _scenario(tmp_path, GOOD_LOAD + "  growth: {monthly_rate: 0.5, months: 6}\n")
    rc, _out, err = _run(capsys, "horizon", s)
    assert rc == 3, err
    assert "load: month" in err and "slot 08:00" in err and "line" in err


def test_the_json_is_the_same_whatever_the_string_hashes(tmp_path: Path) -> None:
    """The horizon's costs are sums over the chip kinds of each kind of day: summed in one
    order, the JSON is the same to the byte in processes with other string hashes (the kinds,
    taken from a set, once summed in hash order: 62058.107142856825 against ...684 USD in the
    example's sixth growth month with hash seeds 1 and 2)."""
    import os
    import subprocess
    import sys

    outs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PDDPLAN_CACHE_DIR": "off"}
        r = subprocess.run(
            [sys.executable, "-m", "pddplan", "horizon", str(EXAMPLE), "-f", "json"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            check=True,
        )
        outs.append(r.stdout)
    assert json.loads(outs[0])["growth"]  # a horizon with growth months
    assert outs[0] == outs[1]
