"""CLI tests of ``pddplan profiles list|show|validate`` and ``pddplan schema``.

Exit codes and stderr are checked through a real subprocess (``python -m pddplan``): only
``pddplan.cli.main`` maps a PddplanError to its exit code and one line on stderr. Success paths
that only look at stdout use typer's in-process CliRunner, which is much faster.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from time_limits import child_cpu_limit
from typer.testing import CliRunner

from pddplan.cli import app
from pddplan.io.loader import ENV_VAR, bundled_profiles_dir

REPO = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    env.update(extra)
    return env


def run(
    *args: str, cwd: Path = REPO, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m pddplan ARGS`` with stdout and stderr captured through pipes."""
    return subprocess.run(
        [sys.executable, "-m", "pddplan", *args],
        cwd=cwd,
        env=env if env is not None else _env(),
        capture_output=True,
        text=True,
        preexec_fn=child_cpu_limit(120),  # CPU seconds, not wall-clock
    )


@pytest.fixture
def invoke(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    runner = CliRunner()

    def _invoke(*args: str, env: dict[str, str] | None = None):
        result = runner.invoke(app, list(args), env=env)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result

    return _invoke


# ------------------------------------------------------------------------------------ list


def test_list_json_has_schema_version_and_all_kinds(invoke) -> None:
    r = invoke("profiles", "list", "--format", "json")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert doc["schema_version"]
    profiles = doc["profiles"]
    assert len(profiles["chips"]) >= 16
    assert len(profiles["models"]) >= 8
    assert profiles["links"] and profiles["workloads"]
    names = {c["name"] for c in profiles["chips"]}
    assert {"h100-sxm", "gpu-a", "gpu-b"} <= names
    h100 = next(c for c in profiles["chips"] if c["name"] == "h100-sxm")
    assert h100["bf16_tflops"] == 989.0  # machine formats are not rounded
    assert h100["origin"] == "bundled"


def test_list_chips_csv_has_a_header(invoke) -> None:
    r = invoke("profiles", "list", "--kind", "chips", "--format", "csv")
    assert r.exit_code == 0
    rows = list(csv.reader(io.StringIO(r.stdout)))
    header = rows[0]
    assert header[0] == "name"
    assert "bf16_tflops" in header and "memory_gb" in header
    body = rows[1:]
    assert len(body) >= 16
    assert all(len(row) == len(header) for row in body)
    assert "h100-sxm" in {row[0] for row in body}


def test_list_md(invoke) -> None:
    r = invoke("profiles", "list", "--kind", "links", "--format", "md")
    assert r.exit_code == 0
    assert "| name |" in r.stdout
    assert "wan-100g-cross-city" in r.stdout


# ------------------------------------------------------------------------------------ show


def test_show_chip(invoke) -> None:
    r = invoke("profiles", "show", "h100-sxm")
    assert r.exit_code == 0
    assert "h100-sxm" in r.stdout
    assert "989" in r.stdout
    doc = json.loads(invoke("profiles", "show", "h100-sxm", "--format", "json").stdout)
    assert doc["kind"] == "chip"
    assert doc["profile"]["datasheet"]["bf16_tflops"] == 989.0
    assert doc["profile"]["datasheet"]["memory_bandwidth_tb_per_s"] == 3.35


def test_show_model_has_derived_numbers(invoke) -> None:
    doc = json.loads(invoke("profiles", "show", "llama-3.1-70b", "--format", "json").stdout)
    assert doc["derived"]["kv_bytes_per_token"] == 327_680
    assert doc["derived"]["total_params"] == pytest.approx(70.55e9, rel=1e-3)


# -------------------------------------------------------------------------------- schema


def test_schema_prints_json_schema(invoke) -> None:
    r = invoke("schema")
    assert r.exit_code == 0
    schema = json.loads(r.stdout)
    assert schema["$schema"].startswith("https://json-schema.org/")
    assert {"model", "workload", "link", "rdma", "roles", "sla"} <= set(schema["properties"])
    assert schema["additionalProperties"] is False
    chip = json.loads(invoke("schema", "--kind", "chip").stdout)
    assert "datasheet" in chip["properties"]


# --------------------------------------------------------------------- exit codes (subprocess)


def test_validate_all_shipped_profiles_exits_0() -> None:
    r = run("profiles", "validate", "--format", "json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["files"]
    assert len(rows) >= 16 + 8
    assert {row["status"] for row in rows} == {"ok"}
    assert r.stderr == ""


def test_validate_bundled_scenario(invoke) -> None:
    scen = bundled_profiles_dir() / "scenarios" / "default.yaml"
    r = invoke("profiles", "validate", str(scen), "--format", "json")
    assert r.exit_code == 0, r.stdout
    (row,) = json.loads(r.stdout)["files"]
    assert (row["kind"], row["status"]) == ("scenario", "ok")


BROKEN_CLI = [
    ("links/negative-bandwidth.yaml", "bandwidth_gbit_per_s", 5),
    ("chips/duplicate-key.yaml", "datasheet.memory_gb", 12),
    ("chips/name-mismatch.yaml", "name", 3),
    ("workloads/hit-rate-out-of-range.yaml", "anomalous.hit_rate", 18),
]


@pytest.mark.parametrize(("rel", "key", "line"), BROKEN_CLI, ids=[c[0] for c in BROKEN_CLI])
def test_broken_profile_exits_1_with_one_line(
    broken_dir: Path, rel: str, key: str, line: int
) -> None:
    path = broken_dir / rel
    r = run("profiles", "validate", str(path))
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert f"{path}:{line}: {key}: " in lines[0]
    assert "Traceback" not in r.stderr + r.stdout


def test_two_broken_profiles_give_two_lines(broken_dir: Path) -> None:
    a = broken_dir / "links" / "negative-bandwidth.yaml"
    b = broken_dir / "chips" / "duplicate-key.yaml"
    r = run("profiles", "validate", str(a), str(b), "--format", "json")
    assert r.returncode == 1
    assert len(r.stderr.splitlines()) == 2
    statuses = [row["status"] for row in json.loads(r.stdout)["files"]]
    assert statuses == ["error", "error"]


def test_unknown_profile_name_exits_2() -> None:
    r = run("profiles", "show", "h100-sx")
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1
    assert "h100-sx" in lines[0] and "did you mean 'h100-sxm'" in lines[0]
    assert "Traceback" not in r.stderr


def test_bogus_format_exits_2() -> None:
    r = run("profiles", "list", "--format", "bogus")
    assert r.returncode == 2
    assert r.stdout == ""
    assert "bogus" in r.stderr
    assert "Traceback" not in r.stderr


def test_missing_profiles_directory_exits_2(tmp_path: Path) -> None:
    r = run("--profiles", str(tmp_path / "nowhere"), "profiles", "list")
    assert r.returncode == 2
    assert len(r.stderr.splitlines()) == 1
    assert "nowhere" in r.stderr
    assert "Traceback" not in r.stderr


def test_output_file_leaves_stdout_empty(tmp_path: Path) -> None:
    out = tmp_path / "profiles.json"
    r = run("profiles", "list", "--format", "json", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert len(doc["profiles"]["chips"]) >= 16
    table = tmp_path / "profiles.txt"
    r = run("profiles", "list", "-o", str(table))
    assert r.returncode == 0 and r.stdout == ""
    assert "h100-sxm" in table.read_text(encoding="utf-8")


def test_piped_table_is_not_truncated() -> None:
    r = run("profiles", "show", "deepseek-v3")
    assert r.returncode == 0, r.stderr
    assert "…" not in r.stdout
    # the very end of the long `source` string survives on one line
    assert "tie_word_embeddings false" in r.stdout
    r = run("profiles", "list")
    assert r.returncode == 0
    assert "…" not in r.stdout
    assert "NVIDIA A100-80G SXM" in r.stdout


# ------------------------------------------------------------------------------ search path


def test_profiles_option_shadows_bundled(invoke, tmp_profiles, chip_yaml) -> None:
    d = tmp_profiles({"chips/h100-sxm.yaml": chip_yaml("h100-sxm", 99.0)})
    doc = json.loads(
        invoke(
            "--profiles", str(d), "profiles", "list", "--kind", "chips", "--format", "json"
        ).stdout
    )
    h100 = next(c for c in doc["profiles"]["chips"] if c["name"] == "h100-sxm")
    assert h100["price_usd_per_hour"] == 99.0
    assert h100["origin"] != "bundled"
    shown = json.loads(
        invoke("--profiles", str(d), "profiles", "show", "h100-sxm", "--format", "json").stdout
    )
    assert shown["file"] == str(d / "chips" / "h100-sxm.yaml")


def test_env_var_profiles_directory(tmp_profiles, chip_yaml) -> None:
    d = tmp_profiles({"chips/env-only.yaml": chip_yaml("env-only", 4.5)})
    r = run("profiles", "show", "env-only", "--format", "json", env=_env(**{ENV_VAR: str(d)}))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["profile"]["price"]["rental_usd_per_hour"] == 4.5


# ------------------------------------------------------------------------- help examples


@pytest.mark.parametrize(
    "command",
    [["profiles", "list"], ["profiles", "show"], ["profiles", "validate"], ["schema"]],
    ids=lambda c: " ".join(c),
)
def test_help_example_runs(
    invoke, command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = invoke(*command, "--help").stdout
    m = re.search(r"Example: pddplan (.+)", text)
    assert m, f"no runnable example in `pddplan {' '.join(command)} --help`"
    # run it where the bundled profiles are reachable as ./profiles but files land in tmp_path
    (tmp_path / "profiles").symlink_to(bundled_profiles_dir())
    monkeypatch.chdir(tmp_path)
    r = invoke(*m.group(1).split())
    assert r.exit_code == 0, r.stdout
