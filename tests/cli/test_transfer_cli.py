"""CLI tests of ``pddplan transfer``: the help example, formats, errors."""

from __future__ import annotations

import csv
import io
import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from time_limits import child_cpu_limit
from typer.testing import CliRunner

from pddplan.cli import app
from pddplan.cli.transfer_cmd import transfer_cmd
from pddplan.io.loader import ENV_VAR

REPO = Path(__file__).resolve().parents[2]


def invoke(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args), env={ENV_VAR: ""})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pddplan", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
        preexec_fn=child_cpu_limit(120),  # CPU seconds, not wall-clock
    )


def test_help_example_runs() -> None:
    doc = transfer_cmd.__doc__ or ""
    line = next(ln.strip() for ln in doc.splitlines() if ln.strip().startswith("Example: "))
    argv = shlex.split(line.removeprefix("Example: "))
    assert argv[0] == "pddplan"
    r = invoke(*argv[1:])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["schema_version"]
    assert {"mean_s", "p50_s", "p90_s", "p99_s"} <= set(d)
    assert d["payload_bytes"] == 4_649_000.0  # KB is decimal
    # the brief's 4,649 KB on a 100G line: slow start dominates, far above payload / goodput
    assert d["p50_s"] > 10 * d["line_only_s"]
    assert d["p50_s"] <= d["p90_s"] <= d["p99_s"]
    assert d["bound"] in {"line", "window", "loss", "shared line"}


def test_table_over_default_sizes_csv() -> None:
    r = invoke("transfer", "wan-10g-cross-city", "-f", "csv")
    assert r.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    sizes = [float(x["payload_bytes"]) for x in rows]
    assert sizes[0] == 1e6 and sizes[-1] == 1e10
    means = [float(x["mean_s"]) for x in rows]
    assert means == sorted(means)


def test_concurrent_transfers_share_the_line() -> None:
    one = json.loads(
        invoke("transfer", "wan-10g-cross-city", "--bytes", "1GB", "-f", "json").stdout
    )
    many = json.loads(
        invoke(
            "transfer", "wan-10g-cross-city", "--bytes", "1GB", "--concurrent", "50", "-f", "json"
        ).stdout
    )
    assert many["concurrent_transfers"] == 50
    assert many["bound"] == "shared line"
    assert many["mean_s"] > one["mean_s"]
    # 50 transfers on 1.175 GB/s: 23.5 MB/s each
    assert many["rate_bytes_per_s"] == pytest.approx(1.175e9 / 50)


def test_output_file(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    r = invoke("transfer", "rdma-400g", "--bytes", "64MiB", "-f", "json", "-o", str(out))
    assert r.exit_code == 0 and r.stdout == ""
    d = json.loads(out.read_text())
    assert d["payload_bytes"] == 64 * 2**20 and d["slow_start_rounds"] == 0


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["wan-10g-cross-city", "--bytes", "12 parsecs"], 2, "--bytes"),
        (["wan-10g-cross-city", "--bytes", "0KB"], 2, "in [1, 1e+15], not 0.0"),
        (["wan-10g-cross-city", "--bytes", "1e400"], 2, "in [1, 1e+15], not inf"),
        (["no-such-line", "--bytes", "1GB"], 2, "no-such-line"),
        (["wan-10g-cross-city", "--concurrent", "0"], 2, "concurrent"),
    ],
)
def test_bad_input_is_one_line(args: list[str], code: int, needle: str) -> None:
    r = run("transfer", *args)
    assert r.returncode == code
    assert r.stdout == ""
    assert needle in r.stderr
    assert "Traceback" not in r.stderr


def test_bytes_are_shown_in_the_prefix_a_person_reads() -> None:
    """`transfer --bytes 12GB` shows 12 [GB] and rates in GB/s in table and markdown; the
    machine formats keep bytes."""
    from typer.testing import CliRunner

    from pddplan.cli import app

    r = CliRunner()
    md = r.invoke(app, ["transfer", "wan-40g-cross-city", "--bytes", "12GB", "-f", "md"])
    assert md.exit_code == 0, md.output
    head, _, row = md.stdout.split("## transfers")[1].strip().splitlines()[:3]
    assert "payload [GB]" in head and "rate [GB/s]" in head and "[B]" not in head
    assert row.split("|")[1].strip() == "12"
    csv_out = r.invoke(app, ["transfer", "wan-40g-cross-city", "--bytes", "12GB", "-f", "csv"])
    line = csv_out.stdout.splitlines()
    assert line[0].startswith("payload_bytes,") and float(line[1].split(",")[0]) == 12e9


def test_wide_table_keeps_bytes_under_the_keys_that_say_bytes() -> None:
    """`--wide` heads each column with its key, as CSV does: `payload_bytes` is 4,649,000 bytes
    there as in CSV, not 4.649 (the MB of the compact table's `payload [MB]`)."""
    args = ["transfer", "wan-100g-cross-city", "--bytes", "4649KB"]
    wide = invoke(*args, "--wide")
    assert wide.exit_code == 0, wide.output
    lines = wide.stdout.splitlines()
    keys = next(ln for ln in lines if "payload_bytes" in ln).split()
    rule = next(i for i, ln in enumerate(lines) if "─" in ln)  # the row follows the rule
    values = dict(zip(keys, lines[rule + 1].split(), strict=True))
    rows = list(csv.DictReader(io.StringIO(invoke(*args, "-f", "csv").stdout)))
    for key in ("payload_bytes", "line_bytes", "rate_bytes_per_s"):
        assert float(values[key]) == pytest.approx(float(rows[0][key]), rel=1e-3), key
    assert float(values["payload_bytes"]) == 4_649_000
