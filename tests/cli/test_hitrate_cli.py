"""CLI tests of ``pddplan hitrate``.

Exit codes and stderr go through a real subprocess (``python -m pddplan``), where
``pddplan.cli.main`` turns a PddplanError into one stderr line and its exit code; success paths
use typer's in-process CliRunner.
"""

from __future__ import annotations

import csv
import io
import json
import shlex
import subprocess
from pathlib import Path

import pytest
from time_limits import run_pddplan
from typer.testing import CliRunner

from pddplan.cli import app
from pddplan.cli.hitrate_cmd import hitrate_cmd
from pddplan.io.loader import load_file
from pddplan.trace import CapacityCurve

REPO = Path(__file__).resolve().parents[2]
EXCERPT = REPO / "tests" / "data" / "mooncake_excerpt.jsonl"
SMALL_CSV = REPO / "tests" / "data" / "requests_small.csv"


def run(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return run_pddplan(*args, cwd=cwd)  # under a CPU-time limit, not wall-clock


def invoke(*args: str):
    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def _line(t: float, i: int, o: int, ids: list[int]) -> str:
    return json.dumps({"timestamp": t, "input_length": i, "output_length": o, "hash_ids": ids})


def test_docstring_example_runs() -> None:
    doc = hitrate_cmd.__doc__ or ""
    example = next(ln.strip() for ln in doc.splitlines() if ln.strip().startswith("Example:"))
    argv = shlex.split(example.removeprefix("Example:").strip())
    assert argv[:2] == ["pddplan", "hitrate"]
    proc = run(*argv[1:])
    assert proc.returncode == 0, proc.stderr
    assert "hit rate by cache capacity" in proc.stdout
    assert "unbounded" in proc.stdout


def test_json_report() -> None:
    res = invoke("hitrate", str(EXCERPT), "--cache-tokens", "32Ki,unbounded", "-f", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["schema_version"]
    assert doc["trace"]["requests"] == 300
    curve = doc["capacity_curve"]
    assert [row["cache_tokens"] for row in curve] == [32768, "unbounded"]
    assert curve[1]["no_hit_share"] == pytest.approx(287 / 300)
    assert curve[0]["cache_blocks"] == 64
    bins = doc["distributions"][1]["bins"]
    assert [b["bin"] for b in bins][0] == "[0, 0.9)" and bins[-1]["bin"] == "[0.99, 1]"
    assert sum(b["requests"] for b in bins) == 300
    assert set(doc["lengths"]) == {"input", "output"}
    assert {"p50_tokens", "p90_tokens", "p99_tokens"} <= set(doc["lengths"]["input"])


@pytest.mark.parametrize("fmt", ["table", "csv", "md"])
def test_other_formats(fmt: str) -> None:
    res = invoke("hitrate", str(EXCERPT), "-f", fmt, "--bins", "0,0.5,1", "--wide")
    assert res.exit_code == 0, res.output
    # CSV and a --wide table keep the machine keys (full column names); markdown headers are
    # words with units
    want = {"csv": "rate_rps", "md": "rate [req/s]", "table": "rate_rps"}[fmt]
    assert want in res.stdout
    if fmt == "csv":
        res = invoke(
            "hitrate",
            str(EXCERPT),
            "-f",
            fmt,
            "--bins",
            "0,0.5,1",
            "-t",
            "hit-rate-distribution-unbounded-cache",
        )
        assert res.exit_code == 0, res.output
        assert "[0.5, 1]" in res.stdout


def test_workload_out_and_curve_out(tmp_path: Path) -> None:
    wl = tmp_path / "agent-trace.yaml"
    cv = tmp_path / "curve.csv"
    res = invoke(
        "hitrate",
        str(EXCERPT),
        "--warmup",
        "20",
        "--cache-tokens",
        "64k,1M,unbounded",
        "--workload-out",
        str(wl),
        "--curve-out",
        str(cv),
        "-f",
        "json",
    )
    assert res.exit_code == 0, res.output
    w = load_file(wl, "workload")
    assert w.name == "agent-trace"
    assert "pddplan hitrate" in w.source and "--warmup 20" in w.source
    assert w.hit_rate.bins is not None
    # the brief's bins, the requests without a hit in a bin of their own
    assert w.hit_rate.bins.edges == [0.0, 0.001, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99, 1.0]
    doc = json.loads(res.stdout)
    assert doc["workload_file"] == str(wl)
    assert w.rate_rps == pytest.approx(doc["trace"]["rate_rps"], rel=1e-6)
    curve = CapacityCurve.from_csv(cv)
    assert curve.labels() == ["64000", "1000000", "unbounded"]
    rows = list(csv.DictReader(io.StringIO(cv.read_text(encoding="utf-8"))))
    assert rows[2]["capacity_tokens"] == "unbounded"


def test_output_yaml_writes_the_workload(tmp_path: Path) -> None:
    out = tmp_path / "mine.yml"
    res = invoke("hitrate", str(SMALL_CSV), "-o", str(out), "-f", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["workload_file"] == str(out)  # the report went to stdout
    w = load_file(out, "workload")
    assert w.name == "mine"
    # requests_small.csv: two requests are anomalous, (40000 in, 100 out, hit 0.99) and
    # (50000 in, 400 out, hit 0)
    assert w.anomalous is not None and w.anomalous.share == pytest.approx(2 / 12, abs=1e-6)
    assert w.anomalous.hit_rate == pytest.approx(0.495)
    assert w.anomalous.input_tokens.empirical.values == [40000, 50000]


def test_output_report_file(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    res = invoke("hitrate", str(SMALL_CSV), "-o", str(out), "-f", "json")
    assert res.exit_code == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["capacity_curve"][0]["cache_tokens"] == "trace"
    assert doc["trace"]["rate_rps"] == pytest.approx(11 / 5.5)


def test_skip_bad_lines_reports_them(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    p.write_text(
        "\n".join([_line(0, 512, 1, [1]), "garbage", _line(1000, 512, 1, [1])]) + "\n",
        encoding="utf-8",
    )
    proc = run("hitrate", str(p), "--skip-bad-lines", "-f", "json")
    assert proc.returncode == 0, proc.stderr
    assert "skipped 1 bad lines (first: line 2: malformed JSON" in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["trace"]["bad_lines_skipped"] == 1
    assert doc["capacity_curve"][0]["mean_hit_rate"] == 0.5


def _one_line_error(proc: subprocess.CompletedProcess[str], code: int, *needles: str) -> None:
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("pddplan: error: ")
    assert "Traceback" not in proc.stderr
    for n in needles:
        assert n in lines[0]


def test_malformed_line_exits_1_naming_the_line(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    p.write_text(
        "\n".join([_line(0, 512, 1, [1]), _line(1, 512, 1, [1]), _line(2, -5, 1, [1])]) + "\n",
        encoding="utf-8",
    )
    _one_line_error(run("hitrate", str(p)), 1, f"{p}:3:", "negative length")


def test_missing_field_exits_1(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    p.write_text('{"timestamp": 0, "input_length": 5, "hash_ids": []}\n', encoding="utf-8")
    _one_line_error(run("hitrate", str(p)), 1, f"{p}:1:", "missing field 'output_length'")


def test_empty_trace_exits_1(tmp_path: Path) -> None:
    p = tmp_path / "empty.jsonl"
    p.write_text("\n", encoding="utf-8")
    _one_line_error(run("hitrate", str(p)), 1, "empty")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--cache-tokens", "lots"], "--cache-tokens"),
        (["--cache-tokens", "100"], "holds no whole block"),
        (["--bins", "0,0.5"], "--bins"),
        (["--warmup", "100000"], "leaves no requests"),
        (["--warmup", "-1"], "--warmup"),
        (["--block-tokens", "0"], "--block-tokens"),
        (["--format", "xml"], "--format"),
        (["--trace-format", "parquet"], "--trace-format"),
        (["-o", "x.yaml", "--workload-out", "y.yaml"], "drop --workload-out"),
    ],
)
def test_usage_errors_exit_2(args: list[str], needle: str) -> None:
    _one_line_error(run("hitrate", str(EXCERPT), *args), 2, needle)


def test_missing_trace_exits_2(tmp_path: Path) -> None:
    _one_line_error(run("hitrate", str(tmp_path / "nope.jsonl")), 2, "no such trace")


def test_cache_tokens_on_csv_exits_2() -> None:
    _one_line_error(run("hitrate", str(SMALL_CSV), "--cache-tokens", "1M"), 2, "JSONL")


def test_help_lists_the_command() -> None:
    res = invoke("--help")
    assert "hitrate" in res.stdout
