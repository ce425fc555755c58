"""Golden tests: every example scenario's `solve` result against its reviewed expected output.

Regenerate on purpose with `PDDPLAN_REGEN_GOLDEN=1 python -m pytest tests/golden` and review the
diff of examples/expected/ before committing it.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = ROOT / "examples" / "expected"
SCENARIOS = [
    "default",
    "examples/pdd-paper.yaml",
    "examples/pdd-paper-b30.yaml",
    "examples/long-context.yaml",
]
REL_TOL = 1e-6


def _name(scenario: str) -> str:
    return Path(scenario).stem


def _figures(doc: dict) -> dict:
    plan = doc["plan"]
    return {
        "roles": plan["roles"],
        "cost_usd_per_hour": plan["cost_usd_per_hour"],
        "goodput_rps": plan["goodput_rps"],
        "bcr_requests_per_usd": plan["bcr_requests_per_usd"],
        "ttft_s": plan["ttft_s"],
        "link_utilization": plan["link_utilization"],
        "rld_output_token_share": plan["rld_output_token_share"],
        "routing_threshold_hit_rate": plan["routing_threshold_hit_rate"],
        "handover": plan["handover"],
        "baselines": [
            {k: b[k] for k in ("name", "chips", "cost_usd_per_hour", "bcr_ratio", "ttft_s")}
            for b in doc["baselines"]
        ],
    }


def _close(a, b, path="") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{path}: keys {sorted(a)} != {sorted(b)}"]
        return [m for k in a for m in _close(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        return [
            m
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for m in _close(x, y, f"{path}[{i}]")
        ]
    if isinstance(a, float) and isinstance(b, float | int):
        return (
            []
            if math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)
            else [f"{path}: {a!r} != {b!r}"]
        )
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_solve_matches_expected(scenario: str) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "pddplan", "solve", scenario, "--format", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    got = _figures(json.loads(r.stdout))
    path = EXPECTED / f"{_name(scenario)}.solve.json"
    if os.environ.get("PDDPLAN_REGEN_GOLDEN"):
        path.write_text(json.dumps(got, indent=2, sort_keys=True) + "\n")
    assert path.exists(), f"missing {path}: regenerate with PDDPLAN_REGEN_GOLDEN=1"
    want = json.loads(path.read_text())
    diffs = _close(got, want)
    assert not diffs, "\n".join(diffs[:20])
