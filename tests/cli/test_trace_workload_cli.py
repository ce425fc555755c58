"""A workload made by ``pddplan hitrate --workload-out`` used by ``solve``, end to end.

The trace is the shipped Mooncake excerpt (tests/data, 300 requests). Commands run as real
subprocesses (``python -m pddplan``), so that exit codes and stderr lines are the user's.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from time_limits import run_pddplan

import pddplan
from pddplan.api.scenario import load_scenario, trace_rate_note
from pddplan.io.loader import bundled_profiles_dir, load_file

REPO = Path(__file__).resolve().parents[2]
EXCERPT = REPO / "tests" / "data" / "mooncake_excerpt.jsonl"
DEFAULT_SCENARIO = bundled_profiles_dir() / "scenarios" / "default.yaml"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_pddplan(*args, cwd=cwd)  # under a CPU-time limit, not wall-clock


def notes(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("pddplan: note:")]


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``hitrate --workload-out`` on the excerpt, with the default capacity (the first listed)."""
    folder = tmp_path_factory.mktemp("made")
    proc = run(
        "hitrate", str(EXCERPT), "--cache-tokens", "64k,unbounded", "--workload-out", "prod.yaml",
        cwd=folder,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # the default capacity is said, in one line
    (note,) = notes(proc.stderr)
    assert "64000-token LRU prefix cache" in note and "--workload-cache-tokens" in note
    return folder / "prod.yaml"


def test_hitrate_records_the_cache_and_the_trace_rate(workload: Path) -> None:
    w = load_file(workload, "workload")
    assert w.cache_tokens == 64000
    assert w.rate_rps is not None and w.rate_rps > 0
    assert "64000-token LRU" in w.source


def test_workload_cache_tokens_chooses_the_capacity(tmp_path: Path, workload: Path) -> None:
    proc = run(
        "hitrate", str(EXCERPT), "--cache-tokens", "64k,unbounded",
        "--workload-cache-tokens", "unbounded", "--workload-out", "u.yaml", "-f", "json",
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert notes(proc.stderr) == []  # chosen, so nothing to say
    chosen = load_file(tmp_path / "u.yaml", "workload")
    assert chosen.cache_tokens == "unbounded"
    assert "--workload-cache-tokens unbounded" in chosen.source
    # the unbounded cache hits more than the 64k one: the file took the other column
    default = load_file(workload, "workload")
    assert chosen.hit_rate.bins is not None and default.hit_rate.bins is not None
    assert chosen.hit_rate.bins.probabilities != default.hit_rate.bins.probabilities
    assert chosen.hit_rate.bins.probabilities[0] <= default.hit_rate.bins.probabilities[0]
    # a capacity not listed is replayed too
    proc = run(
        "hitrate", str(EXCERPT), "--cache-tokens", "64k,unbounded",
        "--workload-cache-tokens", "1M", "-o", "m.yaml",
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert load_file(tmp_path / "m.yaml", "workload").cache_tokens == 1_000_000
    assert "1000000" in proc.stdout


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--workload-cache-tokens", "1M"], "give a workload file"),
        (["--workload-cache-tokens", "lots", "-o", "x.yaml"], "'lots' is not a token count"),
        (["--workload-cache-tokens", "1M,2M", "-o", "x.yaml"], "is not one token count"),
    ],
)
def test_bad_workload_cache_tokens(tmp_path: Path, args: list[str], words: str) -> None:
    proc = run("hitrate", str(EXCERPT), *args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("pddplan: error: --workload-cache-tokens")
    assert words in line
    assert not (tmp_path / "x.yaml").exists()


def test_solve_uses_the_workload_by_path_and_notes_the_rate(workload: Path) -> None:
    trace_rps = load_file(workload, "workload").rate_rps
    proc = run(
        "solve", "--set", "workload=prod.yaml", "--no-verdict-check", "-f", "json",
        cwd=workload.parent,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["scenario"] == "default"
    (note,) = notes(proc.stderr)
    assert f"{trace_rps:.4g} req/s" in note  # the trace's rate
    assert "2 req/s" in note  # the bundled default scenario's rate_rps
    assert f"--set rate_rps={trace_rps:.10g}" in note
    assert "trace's rate" not in proc.stdout  # stdout carries only the result


def test_no_note_when_the_rates_agree(workload: Path) -> None:
    trace_rps = load_file(workload, "workload").rate_rps
    proc = run(
        "solve", "--set", f"workload={workload}", "--set", f"rate_rps={trace_rps:.10g}",
        "--no-verdict-check", "-f", "json",
        cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert notes(proc.stderr) == []


def test_scenario_names_the_workload_file_relative_to_itself(
    tmp_path: Path, workload: Path
) -> None:
    plans = tmp_path / "plans"
    (plans / "data").mkdir(parents=True)
    (plans / "data" / "prod.yaml").write_text(workload.read_text(encoding="utf-8"))
    text = DEFAULT_SCENARIO.read_text(encoding="utf-8").splitlines()
    text = [("workload: data/prod.yaml" if ln.startswith("workload:") else ln) for ln in text]
    (plans / "scen.yaml").write_text("\n".join(text) + "\n", encoding="utf-8")
    # run from elsewhere: the path is read from the scenario's folder, not the working directory
    proc = run("solve", "plans/scen.yaml", "--no-verdict-check", "-f", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(notes(proc.stderr)) == 1


def test_missing_workload_file_is_one_line_exit_2(tmp_path: Path) -> None:
    proc = run("solve", "--set", "workload=traces/nope.yaml", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("pddplan: error: traces/nope.yaml: workload file not found (")
    assert "Traceback" not in proc.stderr


def test_unknown_workload_name_hints_at_paths(tmp_path: Path) -> None:
    proc = run("solve", "--set", "workload=agent-64", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "did you mean 'agent-64k'" in line and "a path to a workload file" in line


def test_trace_rate_note_from_the_api(workload: Path) -> None:
    assert trace_rate_note(load_scenario()) is None  # the bundled workload records no rate
    ls = load_scenario(overrides={"workload": str(workload)})
    note = trace_rate_note(ls)
    assert note is not None and "--set rate_rps=" in note
    assert trace_rate_note(ls.with_overrides({"rate_rps": ls.workload.rate_rps})) is None
    without = replace(ls.resolved, scenario=ls.spec.model_copy(update={"rate_rps": None}))
    no_rate = trace_rate_note(without)
    assert no_rate is not None and "no rate_rps" in no_rate
    # solve carries it; a target chosen by the caller leaves it out
    res = pddplan.solve(ls, verdict_check=False, baselines=False)
    assert res.trace_rate_note == note
    chosen = pddplan.solve(ls, rate_rps=1.0, verdict_check=False, baselines=False)
    assert chosen.trace_rate_note is None
