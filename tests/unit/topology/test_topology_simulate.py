"""``topology --simulate``: each pipeline of a plan simulated beside the closed forms, and each
single line failure of a resilient plan, on a small topology (3 sites, 2 lines, 1 source)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pddplan import api
from pddplan.errors import OptionError
from pddplan.sim.compare import GAP_FLAG_PCT
from pddplan.topology.simulate import SimulatedPipeline

#: Requests a pipeline is simulated with: enough for stable percentiles, few enough to be quick.
REQUESTS = 2000


@pytest.fixture(scope="module")
def plain(small_file: Path) -> Any:
    return api.topology(small_file, simulate=REQUESTS, seed=1)


@pytest.fixture(scope="module")
def resilient(small_file: Path) -> Any:
    return api.topology(small_file, resilient=True, simulate=REQUESTS, seed=1)


def test_every_pipeline_simulated_at_its_rate(plain: Any) -> None:
    doc = plain.report().json_document()
    flows = {f"{r['source']}:{r['p_site']}->{r['md_site']}": r for r in doc["flows"]}
    sims = {r["pipeline"]: r for r in doc["simulated"]}
    assert set(sims) == set(flows)
    for name, row in sims.items():
        assert row["case"] == "plan"
        assert row["rate_rps"] == pytest.approx(flows[name]["rate_rps"], rel=1e-12)
        # a plan that need not survive carries what it was sized for: the closed forms at that
        # rate are the plan's own figures
        assert row["closed_ttft_p99_s"] == pytest.approx(flows[name]["ttft_p99_s"], rel=1e-9)
        assert row["simulated_ttft_p50_s"] > 0


def test_flags_and_warnings_follow_the_gaps(plain: Any, resilient: Any) -> None:
    for res in (plain, resilient):
        rep = res.report()
        doc = rep.json_document()
        n_off = 0
        for row in doc["simulated"]:
            gaps = [row[f"gap_p{q}_pct"] for q in (50, 90, 99)]
            if row["off_by_more_than_10pct"]:
                assert max(abs(g) for g in gaps) > GAP_FLAG_PCT
            else:
                assert all(abs(g) <= GAP_FLAG_PCT for g in gaps if g is not None)
            n_off += row["off_by_more_than_10pct"]
        assert doc["simulation"]["within_10pct"] == (n_off == 0)
        assert len(rep.warnings) >= n_off and (n_off == 0) == (not rep.warnings)


def test_resilient_failures_simulated(resilient: Any) -> None:
    tp, sim = resilient.plan, resilient.sim
    assert tp.resilient and sim is not None
    assert [f.line for f in sim.failures] == [f.line for f in tp.failures]
    for fs, f in zip(sim.failures, tp.failures, strict=True):
        # the pipelines that take the lost share, each at its rate after the failure
        assert {p.pipeline: p.rate_rps for p in fs.pipelines} == f.moved_to
        assert all(p.line_down == f.line for p in fs.pipelines)
        assert fs.meets_sla == (f.survives and all(p.meets_sla for p in fs.pipelines))
        for p in fs.pipelines:
            ok = all(s <= t for s, t in zip(p.simulated_ttft_s, p.targets_s, strict=True))
            assert p.meets_sla == ok
    rows = {r["line_down"]: r for r in resilient.report().json_document()["failures"]}
    assert all(rows[fs.line]["simulated_meets_sla"] == fs.meets_sla for fs in sim.failures)


def test_same_seed_same_run(small_file: Path, plain: Any) -> None:
    again = api.topology(small_file, simulate=REQUESTS, seed=1)
    assert again.sim == plain.sim


def test_warning_names_the_case_pipeline_and_percentile() -> None:
    p = SimulatedPipeline(
        "a-b", "s:a->c", 0.6, 100, (1.0, 2.0, 4.0), (1.0, 2.5, 4.1), (0.0, 25.0, 2.5),
        ("", "> 10%", ""), (5.0, 10.0, 20.0),
    )  # fmt: skip
    assert p.off and p.meets_sla
    assert p.warnings() == [
        "a-b down: s:a->c: simulated TTFT p90 2.5 s is +25.0% off the closed form 2 s (> 10%)"
    ]
    late = SimulatedPipeline(
        None, "s:a->b", 0.6, 100, (1.0,) * 3, (1.0, 1.0, 21.0), (0.0,) * 3, ("",) * 3,
        (5.0, 10.0, 20.0),
    )  # fmt: skip
    assert not late.off and not late.meets_sla and not math.isnan(late.rate_rps)


def test_bad_request_count() -> None:
    with pytest.raises(OptionError, match="simulate must be a whole number >= 1, not 0"):
        api.topology("pdd-paper", simulate=0)


def test_cli_simulate_json_and_bad_count(small_file: Path, tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "pddplan", "topology", str(small_file), *args]
        return subprocess.run(cmd, capture_output=True, text=True, check=False)

    res = run("--simulate", str(REQUESTS), "--seed", "1", "-f", "json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["simulation"]["requests_per_pipeline"] == REQUESTS
    assert len(doc.get("warnings", [])) == res.stderr.count("warning:")
    out = tmp_path / "o.json"
    bad = run("--simulate", "0", "-f", "json", "-o", str(out))
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "--simulate" in bad.stderr and not out.exists()
