"""`pddplan topology`: the bundled example runs; a bad topology file gets one line naming the
file, the key and what is allowed, and exit 1 (a bad data file, as README's table has it); a
source no site can serve within its SLA, exit 3 (no plan fits)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "topologies" / "national.yaml"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pddplan", *args], capture_output=True, text=True, check=False
    )


def test_example_json() -> None:
    res = run("topology", str(EXAMPLE), "--format", "json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["cost_usd_per_hour"] > 0
    spec = yaml.safe_load(EXAMPLE.read_text())
    assert 8 <= len(spec["sites"]) <= 12  # the national example: 8-12 sites
    assert {f["source"] for f in doc["flows"]} == {t["name"] for t in spec["traffic"]}
    assert len(doc["failures"]) == len(spec["lines"])  # one row per line down


def _broken(edit: Any) -> dict[str, Any]:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc = copy.deepcopy(doc)
    edit(doc)
    return doc


CASES = {
    "unknown site": (
        lambda d: d["lines"][0].update(sites=["beijing", "tianjn"]),
        "lines[0] (beijing-tianjn): names site 'tianjn'",
        1,
    ),
    "disconnected": (
        lambda d: d["lines"].pop(0),
        "disconnected: no line path from site beijing",
        1,
    ),
    "duplicate site": (
        lambda d: d["sites"].append(copy.deepcopy(d["sites"][1])),
        "duplicate site name 'tianjin'",
        1,
    ),
    "unservable source": (
        lambda d: (
            d["traffic"][2]["access"].update(guangzhou={"rtt_ms": 9000})
            or d["traffic"][2].update(entry="guangzhou")
        ),
        "traffic[2] (south): no site can serve source south within its SLA",
        3,
    ),
    # the cases a review found: each names its key as a full path and what is allowed there
    "line on an RDMA profile": (
        lambda d: d["lines"][0].update(link="rdma-400g"),
        "lines[0].link: line beijing-tianjin: 'rdma-400g' is not a WAN link profile; allowed: "
        "pdd-paper-line, wan-100g-cross-city",
        1,
    ),
    "line on no profile": (
        lambda d: d["lines"][0].update(link="wan-100g-same-cty"),
        "lines[0].link: line beijing-tianjin: no link profile named 'wan-100g-same-cty'",
        1,
    ),
    "site fabric not RDMA": (
        lambda d: d["sites"][0].update(rdma="wan-100g-same-city"),
        "sites[0].rdma: site beijing: 'wan-100g-same-city' is not an RDMA link profile; "
        "allowed: rdma-200g, rdma-400g",
        1,
    ),
    "free rental": (
        lambda d: d["sites"][0]["chips"]["gpu-a"].update(rental_usd_per_hour=0),
        "sites[0].chips.gpu-a.rental_usd_per_hour: Input should be greater than or equal to "
        "0.000001 (got 0); allowed range [1e-06, 1e+09]",
        1,
    ),
    "rate at the schema's least": (
        lambda d: d["traffic"][0].update(rate_rps=1e-6),
        "traffic[0].rate_rps: source north: 1e-06 req/s is sized in steps of 1/2 (share_levels)",
        1,
    ),
    "unknown workload": (
        lambda d: d["traffic"][0].update(workload="agent-64"),
        "traffic[0].workload: source north: no workload profile named 'agent-64'",
        1,
    ),
    "bad link number": (
        lambda d: d["lines"][0].update(link_numbers={"bandwidth_gbit_per_s": 0}),
        "lines[0].link_numbers.bandwidth_gbit_per_s: line beijing-tianjin: Input should be "
        "greater than or equal to 0.001 (got 0",
        1,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_topology(case: str, tmp_path: Path) -> None:
    edit, words, code = CASES[case]
    f = tmp_path / "t.yaml"
    f.write_text(yaml.safe_dump(_broken(edit)))
    out = tmp_path / "out.json"
    res = run("topology", str(f), "--format", "json", "-o", str(out))
    assert res.returncode == code, res.stderr
    assert f"error: {f}" in res.stderr
    assert words in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert "Traceback" not in res.stderr
    assert not out.exists() and res.stdout == ""


@pytest.mark.parametrize(
    ("block", "words"),
    [
        ({"line_bandwidth_loss_share": 1.0}, "resilience.line_bandwidth_loss_share"),
        ({"site_chip_loss_share": 0}, "resilience.site_chip_loss_share"),
        ({"site_chips": 0.5}, "resilience.site_chips"),
    ],
)
def test_bad_resilience_block(block: dict[str, Any], words: str, tmp_path: Path) -> None:
    f = tmp_path / "t.yaml"
    f.write_text(yaml.safe_dump(_broken(lambda d: d.update(resilience=block))))
    res = run("topology", str(f), "--format", "json")
    assert res.returncode != 0
    assert words in res.stderr and str(f) in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr


def test_partial_failures_in_the_table(tmp_path: Path) -> None:
    doc = _broken(
        lambda d: d.update(
            resilience={"line_bandwidth_loss_share": 0.5, "site_chip_loss_share": 0.25}
        )
    )
    f = tmp_path / "t.yaml"
    f.write_text(yaml.safe_dump(doc))
    res = run("topology", str(f), "--format", "json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)["failures"]
    kinds = [r["kind"] for r in rows]
    assert kinds.count("line") == kinds.count("line bandwidth") == len(doc["lines"])
    assert kinds.count("site chips") == len(doc["sites"])
    assert all({"failed", "moved_to", "survives", "breaks"} <= set(r) for r in rows)
    # the national sites' rent limits leave no plan that survives a quarter of a site's chips
    res = run("topology", str(f), "--resilient")
    assert res.returncode == 3
    assert "no plan survives a failure of" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


SMALL = EXAMPLE.parent / "three-sites-n1.yaml"


def test_sweep_and_report_take_a_topology(tmp_path: Path) -> None:
    res = run("sweep", str(SMALL), "--set", "traffic.s.rate_rps=0.3,0.6", "--format", "json")
    assert res.returncode == 0, res.stderr
    points = json.loads(res.stdout)["points"]
    assert [p["traffic.s.rate_rps"] for p in points] == [0.3, 0.6]
    assert all(p["feasible"] and p["cost_usd_per_hour"] > 0 for p in points)
    page = tmp_path / "plan.md"
    res = run("report", str(SMALL), "-o", str(page))
    assert res.returncode == 0, res.stderr
    assert "## line failures (N-1)" in page.read_text()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("sweep", str(SMALL), "--set", "traffic.t.rate_rps=1"), "traffic has no entry 't'"),
        (
            ("sweep", str(SMALL), "--set", "share_levels=0,2"),
            "--set share_levels=0: Input should be greater than or equal to 1",
        ),
        (("report", str(SMALL), "--rate", "2"), "--rate applies to a two-site scenario"),
        (("solve", str(SMALL)), "is a topology file (sites:)"),
        (("breakeven", str(SMALL)), "--param PATH is needed for a topology file"),
        (("breakeven", "pdd-paper", "--against-cost", "5"), "--against-cost applies to a topology"),
        (("robust", str(SMALL), "-n", "2", "--rate", "2"), "--rate applies to a two-site"),
        (("robust", str(SMALL), "-n", "2", "-p", "0.5"), "--confidence sizes a two-site"),
        (("robust", "pdd-paper", "--resilient"), "--resilient applies to a topology file"),
    ],
)
def test_topology_given_where_it_does_not_fit(args: tuple[str, ...], words: str) -> None:
    res = run(*args)
    assert res.returncode == 2, res.stderr
    assert words in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr


N1 = EXAMPLE.parent / "three-sites-n1.yaml"


def test_budget_and_max_bcr_modes() -> None:
    """--budget serves the most traffic within it (less than every source when the budget is
    below the least-cost plan's cost), --max-bcr the most per dollar (never below the
    least-cost plan's); the JSON carries the mode and what is served."""
    full = json.loads(run("topology", str(N1), "-f", "json").stdout)
    demand = full["served_total_rps"]
    assert full["mode"] == "cost" and demand > 0
    low = 0.75 * full["cost_usd_per_hour"]
    r = run("topology", str(N1), "-f", "json", "--budget", f"{low}")
    assert r.returncode == 0, r.stderr
    part = json.loads(r.stdout)
    assert part["mode"] == "budget" and part["cost_usd_per_hour"] <= low * (1 + 1e-9)
    assert 0 < part["served_total_rps"] < demand
    roomy = json.loads(
        run(
            "topology", str(N1), "-f", "json", "--budget", f"{2 * full['cost_usd_per_hour']}"
        ).stdout
    )
    assert roomy["served_total_rps"] == pytest.approx(demand, rel=1e-12)
    assert roomy["cost_usd_per_hour"] == pytest.approx(full["cost_usd_per_hour"], rel=1e-9)
    best = json.loads(run("topology", str(N1), "-f", "json", "--max-bcr").stdout)
    assert best["mode"] == "max-bcr"
    assert best["served_bcr_requests_per_usd"] >= full["served_bcr_requests_per_usd"] * (1 - 1e-9)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--budget", "-5"), "--budget must be a finite number in [0, 1e+09], not -5.0"),
        (("--budget", "0"), "--budget must be a positive number of $/h, not 0.0"),
        (("--budget", "5", "--max-bcr"), "give one of --budget and --max-bcr"),
        (("--budget", "1"), "no choice of pipelines serves any traffic within 1 $/h"),
    ],
)
def test_bad_goodput_mode(args: tuple[str, ...], words: str) -> None:
    r = run("topology", str(N1), *args)
    assert r.returncode in (2, 3), r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and words in lines[0], r.stderr


def test_robust_on_a_topology_file() -> None:
    res = run("robust", str(SMALL), "-n", "2", "--format", "json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["samples"] == 2 and len(doc["sample_figures"]) == 2
    figures = {r["figure"] for r in doc["distribution"]}
    assert figures == {"cost_usd_per_hour", "failures_survived"} | {
        f"{t}_ttft_p99_s" for t in doc["point_plan_meets_share"] if t != "every source"
    }


def test_breakeven_on_a_topology_file() -> None:
    path = "lines.a-b.link_numbers.price_usd_per_month"
    res = run(
        "breakeven", str(SMALL), "--param", path, "--lo", "2000", "--hi", "50000", "-f", "json"
    )
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["breakeven"]["question"] == "structure"
    below, above = (p for p in doc["plans"] if p["at"] in ("below", "above"))
    assert below["value"] < doc["breakeven"]["breakeven_value"] < above["value"]
    assert below["flows"] != above["flows"]
