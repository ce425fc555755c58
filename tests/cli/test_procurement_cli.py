"""Procurement-grade output: every command fits 100 columns, every table is one tidy CSV, the
HTML report has every section and image, the owned-inventory question in one command."""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest
from time_limits import child_cpu_limit
from typer.testing import CliRunner

from pddplan.cli import app
from pddplan.errors import PddplanError
from pddplan.io.loader import ENV_VAR

REPO = Path(__file__).resolve().parents[2]
MEAS = REPO / "examples" / "measurements"
TRACE = REPO / "tests" / "data" / "mooncake_excerpt.jsonl"

#: Every command that prints tables, with quick arguments.
COMMANDS: list[list[str]] = [
    ["solve", "--explain"],
    ["solve", "pdd-paper", "--own", "gpu-a=24", "--set", "inventory.owned_cost=sunk"],
    ["bathtub", "--no-reprovision"],
    ["sweep", "--set", "link.bandwidth_gbit_per_s=5,25,100", "--set", "rate_rps=1,2"],
    ["breakeven"],
    ["chips", "rank"],
    ["hitrate", str(TRACE), "--cache-tokens", "64k,unbounded"],
    ["simulate", "--requests", "400"],
    [
        "calibrate",
        str(MEAS / "h100-published.csv"),
        "--chip",
        "h100-sxm",
        "--model",
        "llama-3.3-70b",
    ],
    ["calibrate", str(MEAS / "pdd-brief-handover.csv"), "--link", "wan-100g-cross-city"],
    ["transfer", "wan-100g-cross-city"],
    [
        "step",
        *"--model deepseek-v3 --chip h800-sxm --tp 1 --dp 32 --ep 32 --batch 64".split(),
        *"--input-tokens 2000 --context-tokens 4989".split(),
    ],
    ["profiles", "list"],
    ["profiles", "list", "--kind", "scenarios"],
    ["profiles", "show", "h100-sxm"],
    ["profiles", "show", "pdd-paper"],
    ["profiles", "validate", str(REPO / "profiles" / "chips" / "h100-sxm.yaml")],
    ["report"],
    ["pareto", "long-context", "--points", "3"],
]


def _id(args: list[str]) -> str:
    return " ".join(a if "/" not in a else Path(a).name for a in args[:3])


@dataclass
class Ran:
    exit_code: int
    stdout: str
    output: str


def invoke(*args: str, env: dict[str, str] | None = None) -> Ran:
    """The command in process; a PddplanError becomes its exit code and message, as in main."""
    result = CliRunner().invoke(app, list(args), env={ENV_VAR: "", **(env or {})})
    exc = result.exception
    if isinstance(exc, PddplanError):
        return Ran(exc.exit_code, "", f"pddplan: error: {exc}")
    if exc is not None and not isinstance(exc, SystemExit):
        raise exc
    return Ran(result.exit_code, result.stdout, result.output)


@pytest.mark.parametrize("args", COMMANDS, ids=_id)
def test_every_command_fits_100_columns(args: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    env["COLUMNS"] = "100"
    r = subprocess.run(
        [sys.executable, "-m", "pddplan", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        preexec_fn=child_cpu_limit(300),  # CPU seconds, not wall-clock
    )
    assert r.returncode == 0, r.stderr
    wide = [ln for ln in (r.stdout + r.stderr).splitlines() if len(ln) > 100]
    assert not wide, f"{len(wide)} lines over 100 columns, e.g. {wide[0]!r}"
    assert "…" not in r.stdout  # nothing truncated


def _listed(output: str) -> list[str]:
    return re.search(r"tables: (.*)$", output.strip(), re.S).group(1).split(", ")  # type: ignore[union-attr]


def _tables(args: list[str]) -> list[str]:
    r = invoke(*args, "-f", "csv", "--table", "no-such-table")
    assert r.exit_code == 2
    return _listed(r.output)


@pytest.mark.parametrize("args", COMMANDS, ids=_id)
def test_every_table_is_one_tidy_csv(args: list[str]) -> None:
    names = _tables(args)  # the command's declared names, or this run's tables
    assert names
    built = 0
    for name in names:
        r = invoke(*args, "-f", "csv", "--table", name)
        if r.exit_code == 2 and "no table" in r.output:
            # declared for another mode of the command (calibrate --link has no derates): the
            # message lists this run's tables, and they are among the declared ones
            assert name not in _listed(r.output) and set(_listed(r.output)) <= set(names)
            continue
        assert r.exit_code == 0, r.output
        built += 1
        text = r.stdout
        assert not text.startswith("#") and "\n\n" not in text.strip("\n")
        rows = list(csv.DictReader(io.StringIO(text)))
        reader = csv.reader(io.StringIO(text))
        widths = {len(row) for row in reader}
        assert len(widths) <= 1, f"{name}: rows of several lengths {widths}"
        for row in rows:
            assert "True" not in row.values() and "False" not in row.values()
        pd = pytest.importorskip("pandas")
        if text.strip():
            frame = pd.read_csv(io.StringIO(text))
            assert len(frame) == len(rows)
    assert built


def test_csv_default_is_the_first_table_and_booleans_are_lower_case() -> None:
    r = invoke("solve", "-f", "csv", "--table", "baselines")
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert {row["meets_sla"] for row in rows} <= {"true", "false"}
    first = list(csv.DictReader(io.StringIO(invoke("solve", "-f", "csv").stdout)))
    assert first[0]["role"] == "P"


def test_version_and_short_help() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "pddplan", "--version"], capture_output=True, text=True
    )
    assert r.returncode == 0 and r.stdout.startswith("pddplan ")
    assert invoke("solve", "-h").exit_code == 0


HELPS = [
    ["solve"], ["sweep"], ["breakeven"], ["simulate"], ["bathtub"], ["report"], ["hitrate"],
    ["calibrate"], ["transfer"], ["step"], ["chips", "rank"], ["profiles", "show"],
]  # fmt: skip


@pytest.mark.parametrize("cmd", HELPS, ids=" ".join)
def test_help_has_readable_placeholders(cmd: list[str]) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "pddplan", *cmd, "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "100"},
    )
    assert r.returncode == 0
    assert not re.search(r"<(list|str|int|float|file|path|text)", r.stdout), r.stdout
    rate = [ln for ln in r.stdout.splitlines() if "--rate" in ln]
    assert not any("x>=0" in ln for ln in rate)


def test_scenarios_by_name() -> None:
    r = invoke("profiles", "list", "--kind", "scenarios", "-f", "json")
    names = {s["name"] for s in json.loads(r.stdout)["scenarios"]}
    assert {"default", "pdd-paper", "pdd-paper-b30", "long-context"} <= names
    assert invoke("solve", "pdd-paper", "-f", "json").exit_code == 0
    r = invoke("profiles", "show", "pdd-paper", "--set", "link=wan-40g-cross-city", "-f", "json")
    doc = json.loads(r.stdout)
    assert doc["scenario"]["link"] == "wan-40g-cross-city"


def test_own_did_you_mean_and_set_checks() -> None:
    r = invoke("solve", "--own", "h100=40")
    assert r.exit_code == 2 and "did you mean 'h100-sxm'" in r.output
    r = invoke("solve", "--set", "link.bandwidth_gbitps=40")
    assert r.exit_code == 2 and "did you mean 'link.bandwidth_gbit_per_s'" in r.output
    r = invoke("solve", "--set", "link.bandwidth_gbit_per_s=25,50")
    assert r.exit_code == 2 and "pddplan sweep" in r.output
    r = invoke("bathtub", "--set", "link.bandwidth_gbit_per_s=-1", "--no-reprovision")
    assert r.exit_code == 2 and "--set link.bandwidth_gbit_per_s" in r.output


def test_breakeven_defaults_are_valid_and_bad_bounds_blame_the_flag() -> None:
    r = invoke("breakeven", "-f", "json")
    assert r.exit_code == 0, r.output
    r = invoke("breakeven", "--lo", "0", "--hi", "5")
    assert r.exit_code == 2 and r.output.startswith("--lo 0") or "--lo 0:" in r.output
    assert ".yaml" not in r.output


PROCUREMENT = [
    "solve",
    "--rate", "2",
    "--own", "h100-sxm=40",
    "--set", "roles.P.chips=h100-sxm,h20",
    "--set", "roles.RLD.chips=h100-sxm,h20",
    "--set", "roles.MD.chips=h100-sxm,h20",
    "--set", "baseline.chip=h100-sxm",
    "--set", "link=wan-40g-cross-city",
    "--set", "workload=agent-64k",
]  # fmt: skip


def test_the_procurement_question_in_one_command() -> None:
    r = invoke(*PROCUREMENT, "-f", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    split = {c["chip"]: c for c in doc["plan"]["procurement"]}
    assert split["h100-sxm"]["owned"] > 0 and split["h100-sxm"]["owned"] <= 40
    assert split["h20"]["rented"] > 0
    same_dc = [b for b in doc["baselines"] if b["name"] == "same-dc"][0]
    assert sum(same_dc["chips"].values()) > 0
    # the same-datacenter baseline uses the owned H100 first, like the plan
    assert same_dc["procurement"][0]["owned"] == min(40, same_dc["chips"]["h100-sxm"])
    # the table names the scenario, the model and the line
    text = invoke(*PROCUREMENT).stdout
    assert "wan-40g-cross-city" in text and "qwen3-235b-a22b" in text


def test_baselines_obey_max_chips() -> None:
    r = invoke("solve", "--max-chips", "gpu-a=40", "-f", "json")
    doc = json.loads(r.stdout)
    for b in doc["baselines"]:
        assert b["chips"].get("gpu-a", 0) <= 40
    assert len(doc["baselines"]) == 2 or any("same-dc" in n for n in doc["notes"])


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.images: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        a = dict(attrs)
        if tag == "section" and a.get("id"):
            self.ids.append(a["id"] or "")
        if tag == "img":
            self.images.append(a.get("src") or "")
        if tag in ("link", "script") or (tag == "a" and (a.get("href") or "").startswith("http")):
            self.links.append(tag)


def test_report_html_has_every_section_and_image(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from pddplan.report.html import SECTIONS

    out = tmp_path / "plan.html"
    r = invoke("report", "--own", "gpu-a=16", "--set", "inventory.owned_cost=sunk", "-o", str(out))
    assert r.exit_code == 0, r.output
    page = _Page()
    page.feed(out.read_text())
    assert page.ids == [s for s, _ in SECTIONS]
    assert len(page.images) == 2 and not page.links  # self-contained: no network
    for src in page.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    text = out.read_text()
    assert "owned" in text and "estimated" in text


def test_report_markdown(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "plan.md"
    r = invoke("report", "-o", str(out))
    assert r.exit_code == 0, r.output
    text = out.read_text()
    for heading in ("## plan", "## baselines at the same rate", "## assumptions", "## warnings"):
        assert heading in text
    assert (tmp_path / "plan-bathtub.png").stat().st_size > 0


def _examples() -> list[tuple[str, str]]:
    from pddplan.cli import command

    out: list[tuple[str, str]] = []

    def walk(cmd, path: str) -> None:
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, f"{path} {name}".strip())
        for m in re.finditer(r"Example: pddplan (.+)", cmd.help or ""):
            out.append((path, m.group(1)))

    walk(command(), "")
    return out


@pytest.mark.parametrize(
    ("cmd", "example"),
    [
        pytest.param(c, e, id=c, marks=[pytest.mark.slow] if c == "robust" else [])
        for c, e in _examples()
    ],
)
def test_help_examples_run_outside_the_repository(
    cmd: str, example: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every help example names bundled scenarios and samples, so it runs after a plain
    ``pip install`` from any directory (here: an empty one)."""
    monkeypatch.chdir(tmp_path)
    r = invoke(*example.split())
    assert r.exit_code == 0, f"pddplan {example}: {r.output}"
