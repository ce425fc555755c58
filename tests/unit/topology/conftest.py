"""Shared by the topology tests: a small topology (3 sites, 2 lines, 1 source)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

SLA = {"ttft_p50_s": 5.0, "ttft_p90_s": 10.0, "ttft_p99_s": 20.0, "tpot_ms": 50.0}


def small_topology_doc() -> dict[str, Any]:
    """Prefill at a; decode at b or c, one line to each; one source entering at a."""
    md = {"MD": {"chips": ["gpu-b"]}}
    return {
        "kind": "scenario",
        "name": "small",
        "model": "qwen3-235b-a22b",
        "share_levels": 2,
        "sites": [
            {
                "name": "a",
                "roles": {"P": {"chips": ["gpu-a"]}, "RLD": {"chips": ["gpu-a"]}},
                "lat_deg": 30.0,
                "lon_deg": 110.0,
            },
            {"name": "b", "roles": md, "lat_deg": 31.0, "lon_deg": 112.0},
            {"name": "c", "roles": md, "lat_deg": 29.0, "lon_deg": 112.0},
        ],
        "lines": [
            {"sites": ["a", "b"], "link": "wan-100g-same-city", "route_km": 100.0},
            {"sites": ["a", "c"], "link": "wan-100g-cross-city", "route_km": 800.0},
        ],
        "traffic": [
            {"name": "s", "entry": "a", "rate_rps": 0.6, "workload": "agent-64k", "sla": SLA}
        ],
    }


@pytest.fixture
def small_doc() -> dict[str, Any]:
    """A fresh copy of :func:`small_topology_doc`, to edit."""
    return small_topology_doc()


@pytest.fixture(scope="module")
def small_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:func:`small_topology_doc` written to a file."""
    f = tmp_path_factory.mktemp("topo") / "small.yaml"
    f.write_text(yaml.safe_dump(small_topology_doc()))
    return f
