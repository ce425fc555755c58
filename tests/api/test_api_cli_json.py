"""The Python API and the CLI give the same JSON document: the CLI only parses and renders.

Covers ``solve`` for every bundled scenario and every example (the whole document), and one run
of every other command (``bathtub``, ``sweep``, ``breakeven``, ``chips rank``, ``simulate``,
``hitrate``, ``calibrate``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import pddplan
from pddplan.cli import app
from pddplan.io.loader import bundled_profiles_dir

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted(p.stem for p in (bundled_profiles_dir() / "scenarios").glob("*.yaml")) + [
    str(p.relative_to(ROOT)) for p in sorted((ROOT / "examples").glob("*.yaml"))
]


def cli_json(*args: str) -> dict:
    res = CliRunner().invoke(app, [*args, "--format", "json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch, no_profiles_env: None) -> None:
    monkeypatch.chdir(ROOT)


def test_every_scenario_is_covered() -> None:
    assert "default" in SCENARIOS and len(SCENARIOS) >= 4


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_solve_api_json_equals_cli_json(scenario: str) -> None:
    assert pddplan.solve(scenario).to_json() == cli_json("solve", scenario)


def test_solve_explain_and_budget_modes() -> None:
    api = pddplan.solve("default", explain=True, budget_usd_per_hour=176.0)
    assert api.to_json() == cli_json("solve", "--explain", "--budget", "176")
    assert api.to_json()["classes"] and api.outcome.mode == "budget"


def test_readme_one_liner_prints_the_cli_cost() -> None:
    code = (
        "import pddplan; r = pddplan.solve('default'); "
        "print(r.to_json()['plan']['cost_usd_per_hour'])"
    )
    api = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    cli = subprocess.run(
        [sys.executable, "-m", "pddplan", "solve", "--format", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert api.returncode == 0 and cli.returncode == 0, api.stderr + cli.stderr
    assert float(api.stdout) == json.loads(cli.stdout)["plan"]["cost_usd_per_hour"]


def test_other_commands_api_json_equals_cli_json() -> None:
    assert pddplan.bathtub(reprovision=False).to_json() == cli_json("bathtub", "--no-reprovision")
    axes = {"link.bandwidth_gbit_per_s": [25, 100], "rate_rps": [1]}
    assert pddplan.sweep(None, axes).to_json() == cli_json(
        "sweep", "--set", "link.bandwidth_gbit_per_s=25,100", "--set", "rate_rps=1"
    )
    assert pddplan.breakeven(
        "examples/pdd-paper.yaml", param="chips.gpu-b.price_usd_per_hour", lo=2, hi=6
    ).to_json() == cli_json(
        "breakeven",
        "examples/pdd-paper.yaml",
        "--param",
        "chips.gpu-b.price_usd_per_hour",
        "--lo",
        "2",
        "--hi",
        "6",
    )
    assert pddplan.rank_chips().to_json() == cli_json("chips", "rank")
    trace = "tests/data/mooncake_excerpt.jsonl"
    assert pddplan.hitrate(trace, cache_tokens="64k,unbounded").to_json() == cli_json(
        "hitrate", trace, "--cache-tokens", "64k,unbounded"
    )
    meas = "examples/measurements/h100-published.csv"
    assert pddplan.calibrate(meas, chip="h100-sxm", model="llama-3.3-70b").to_json() == cli_json(
        "calibrate", meas, "--chip", "h100-sxm", "--model", "llama-3.3-70b"
    )


def _without_wall_time(doc: dict) -> dict:
    doc = json.loads(json.dumps(doc))
    for key in ("wall_s", "requests_per_wall_s"):
        doc["settings"].pop(key)
    for sec in doc.get("sections", {}).values():
        for row in sec:
            if row.get("setting") in ("wall_s", "requests_per_wall_s"):
                row["value"] = None
    return doc


def test_simulate_api_json_equals_cli_json() -> None:
    api = pddplan.simulate(requests=600, seed=3).to_json()
    cli = cli_json("simulate", "--requests", "600", "--seed", "3")
    assert _without_wall_time(api) == _without_wall_time(cli)


def test_breakeven_against_a_baseline_that_serves_nothing() -> None:
    """pdd-paper's baseline without relay meets the SLA at no rate at either end of the range
    (its BCR is 0): the ratios are unbounded, null in JSON with the reason, as in a sweep's
    points, and the document passes the output checks (it was an internal error)."""
    args = ("examples/pdd-paper.yaml", "--against", "no-relay")
    doc = cli_json("breakeven", *args)
    be = doc["breakeven"]
    assert be["bcr_ratio_at_lo"] is None and be["bcr_ratio_at_hi"] is None
    assert be["breakeven_value"] is None
    assert "no-relay baseline serves no rate" in be["ratio_undefined"]
    assert any("ratios unbounded and unbounded" in n for n in doc["notes"])
    res = pddplan.breakeven("examples/pdd-paper.yaml", against="no-relay")
    assert res.to_json() == doc
    res = CliRunner().invoke(app, ["breakeven", *args, "--format", "csv"])
    assert res.exit_code == 0 and res.stdout.splitlines()[1].endswith(",no-relay,0.6,9.6,,,,0")
