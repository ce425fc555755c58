"""`pddplan simulate` from the command line: formats, --plan files, --set, policies, errors."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from time_limits import child_cpu_limit
from typer.testing import CliRunner

from pddplan.cli import app
from pddplan.io.loader import ENV_VAR

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def invoke(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    runner = CliRunner()

    def _invoke(*args: str):
        result = runner.invoke(app, list(args))
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result

    return _invoke


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pddplan", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        preexec_fn=child_cpu_limit(120),  # CPU seconds, not wall-clock
    )


def test_help_example_runs(invoke) -> None:
    r = invoke("simulate", "--help")
    example = "pddplan simulate pdd-paper --requests 20000 --seed 1 --set link=wan-40g-cross-city"
    assert "Example: " + example in " ".join(r.stdout.split())
    r = invoke(*example.split()[1:])
    assert r.exit_code == 0
    assert "closed form vs simulation" in r.stdout
    assert "ttft_p99_s" in r.stdout


def test_json_contract(invoke) -> None:
    r = invoke("simulate", "--requests", "1500", "--seed", "2", "-f", "json")
    assert r.exit_code == 0
    d = json.loads(r.stdout)
    assert d["schema_version"]
    assert d["settings"]["requests"] == 1500 and d["settings"]["policy"] == "allowed"
    metrics = {row["metric"] for row in d["comparison"]}
    assert {"ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "rld_output_token_share"} <= metrics
    assert {"closed_form", "simulated", "gap_pct"} <= set(d["comparison"][0])
    assert d["figures"]["link_utilization"] > 0
    # one entry per pipeline the run used (the default plan's routing decides which)
    by_pipeline = d["ttft_by_pipeline_s"]
    assert by_pipeline and set(by_pipeline) <= {"P-MD", "P-RLD-MD", "P-RLD (anomalous)"}
    assert all({"share", "ttft_p50_s", "ttft_p99_s"} <= set(v) for v in by_pipeline.values())
    assert len(d["series"]["t_s"]) == len(d["series"]["rld_occupancy"]) > 10


def test_csv_and_output_file(invoke, tmp_path: Path) -> None:
    out = tmp_path / "sim.csv"
    args = ("simulate", "--requests", "1000", "-f", "csv", "-t", "closed-form-vs-simulation")
    r = invoke(*args, "-o", str(out))
    assert r.exit_code == 0 and r.stdout == ""
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert rows[0]["metric"] == "ttft_p50_s"
    float(rows[0]["gap_pct"])  # machine formats carry full numbers


def test_plan_file_from_solve(invoke, tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    r = invoke("solve", "-f", "json", "-o", str(plan))
    assert r.exit_code == 0
    r = invoke("simulate", "--plan", str(plan), "--requests", "1000", "-f", "json")
    assert r.exit_code == 0
    d = json.loads(r.stdout)
    solved = json.loads(plan.read_text())["plan"]["roles"]
    fleet = {row["role"]: row for row in d["fleet"]}
    for role, v in solved.items():
        if v is not None:
            assert fleet[role]["instances"] == v["instances"]
    assert d["settings"]["rate_rps"] == json.loads(plan.read_text())["plan"]["rate_rps"]


def test_set_and_p_rld_policy_show_rld_overload(invoke) -> None:
    args = ["simulate", "--set", "serving.routing=all-relay", "--requests", "2000", "-f", "json"]
    ok = json.loads(invoke(*args).stdout)
    bad = json.loads(invoke(*args, "--policy", "p-rld").stdout)
    assert ok["settings"]["verdict"] == "stable"
    assert bad["settings"]["verdict"].startswith("RLD overloaded")
    rld = {p["pool"]: p for p in bad["pools"]}["RLD"]
    assert rld["offered_load"] > 1 and rld["occupancy_slope_per_s"] > 0


def test_profile_swap_with_set(invoke) -> None:
    r = invoke(
        "simulate",
        "--set",
        "link=wan-10g-cross-city",
        "--set",
        "rate_rps=0.6",
        "--requests",
        "1000",
        "-f",
        "json",
    )
    assert r.exit_code == 0, r.stdout
    d = json.loads(r.stdout)
    assert "P-RLD-MD" in d["ttft_by_pipeline_s"]


def test_usage_errors_exit_2() -> None:
    r = run("simulate", "--policy", "p-d", "--requests", "10")
    assert r.returncode == 2
    assert "--policy" in r.stderr and "Traceback" not in r.stderr
    r = run("simulate", "--handover", "sometimes", "--requests", "10")
    assert r.returncode == 2 and "--handover" in r.stderr


def test_bad_plan_file_exit_1(tmp_path: Path) -> None:
    bad = tmp_path / "plan.json"
    bad.write_text('{"plan": {"roles": {}}}')
    r = run("simulate", "--plan", str(bad), "--requests", "10")
    assert r.returncode == 1
    assert str(bad) in r.stderr and "Traceback" not in r.stderr


def test_plan_file_with_an_unknown_role_or_summary_chip_is_refused(invoke, tmp_path: Path) -> None:
    """A key under ``plan.roles`` that names no role, or a chip the roles do not have in the
    ``chips`` summary, is a hand edit the simulator would otherwise ignore: refused, one line."""
    plan = tmp_path / "plan.json"
    assert invoke("solve", "-f", "json", "-o", str(plan)).exit_code == 0
    doc = json.loads(plan.read_text())
    for where, want in (
        ("roles", "unknown role bins (a plan's roles are P, RLD, MD)"),
        ("chips", "bins: 1e+300"),
    ):
        bad = json.loads(json.dumps(doc))
        bad["plan"][where]["bins"] = 1e300
        path = tmp_path / f"bad-{where}.json"
        path.write_text(json.dumps(bad))
        r = run("simulate", "--plan", str(path), "--requests", "300", "-f", "json")
        assert r.returncode == 1, r.stdout
        line = r.stderr.strip()
        assert line.startswith("pddplan: error:") and f"plan.{where}" in line and want in line
        assert "{" not in line  # counts written plainly, not as a Python dict


def test_requests_above_the_cap_name_the_flag() -> None:
    r = run("simulate", "-f", "json", "--requests", "9" * 20)
    assert r.returncode == 2
    assert (
        r.stderr.startswith("pddplan: error: --requests: ")
        and "PDDPLAN_MAX_SIM_REQUESTS" in r.stderr
    )
