"""``robust`` over a topology file (examples/topologies/three-sites-n1.yaml): the inputs are PATHs
on the topology's keys, each sample is re-planned by the one planner, the point plan is held
fixed with the topology's fleet check, and every executor gives the same result."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from pddplan import api
from pddplan.api.scenario import registry
from pddplan.errors import OptionError, ProfileError
from pddplan.robust.topology import (
    collect_topology_inputs,
    held_options,
    run_topology_robust,
    sample_task,
)
from pddplan.topology import plan_topology
from pddplan.topology.inputs import TopologySource

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "topologies" / "three-sites-n1.yaml"


@pytest.fixture(scope="module")
def src() -> TopologySource:
    s = TopologySource.open(str(EXAMPLE), registry(None))
    assert s is not None
    return s


def _task(src: TopologySource, sample: dict[str, Any]) -> Any:
    point = plan_topology(src.resolve({}))
    return sample_task(
        (0, sample),
        doc=src.doc,
        registry=src.registry,
        overrides={},
        resilient=False,
        held=held_options(point),
    )


def test_inputs_are_topology_paths(src: TopologySource) -> None:
    ti = src.resolve({})
    inputs, skipped = collect_topology_inputs(src, ti)
    paths = {i.path for i in inputs}
    # each line's own link numbers, the chips the sites use; a line's RTT is its route_km's
    assert "lines.a-b.link_numbers.price_usd_per_month" in paths
    assert "lines.a-c.link_numbers.jitter_cv" in paths
    assert any(p.startswith("overrides.chips.gpu-a.") for p in paths)
    assert any(p.startswith("overrides.chips.gpu-b.") for p in paths)
    assert "lines.a-b.link_numbers.rtt_ms" in {s.path for s in skipped}
    assert not any(p.startswith("traffic.") for p in paths)  # no spread stated: rates fixed
    for inp in inputs:  # every PATH is a key the topology resolves, at its point value
        src.resolve({inp.path: inp.point})


def test_stated_rate_spread_and_a_bad_path(src: TopologySource, tmp_path: Path) -> None:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["uncertainty"] = {
        "defaults": False,
        "inputs": {"traffic.s.rate_rps": {"lognormal": {"cv": 0.2}}},
    }
    f = tmp_path / "t.yaml"
    f.write_text(yaml.safe_dump(doc))
    s2 = TopologySource.open(str(f), registry(None))
    assert s2 is not None
    inputs, _ = collect_topology_inputs(s2, s2.resolve({}))
    assert [(i.path, i.point) for i in inputs] == [("traffic.s.rate_rps", 0.6)]
    bad = copy.deepcopy(doc)
    bad["uncertainty"]["inputs"] = {
        "traffic.north.rate_rps": {"relative": {"low": 0.9, "high": 1.1}}
    }
    f.write_text(yaml.safe_dump(bad))
    s3 = TopologySource.open(str(f), registry(None))
    assert s3 is not None
    with pytest.raises(ProfileError, match="uncertainty.inputs.traffic.north.rate_rps"):
        collect_topology_inputs(s3, s3.resolve({}))


def test_point_sample_is_the_point_plan(src: TopologySource) -> None:
    point = plan_topology(src.resolve({}))
    s = _task(src, {})
    assert s.cost_usd_per_hour == point.cost_usd_per_hour
    assert s.failures_survived == sum(f.survives for f in point.failures)
    assert s.point_meets == {"s": True}  # the plan meets its SLA where it was sized


def test_a_sample_is_replanned_by_the_planner(src: TopologySource) -> None:
    sample = {"lines.a-b.link_numbers.price_usd_per_month": 30000.0}
    s = _task(src, sample)
    tp = plan_topology(src.resolve(sample))
    assert s.cost_usd_per_hour == tp.cost_usd_per_hour
    assert s.flows == tp.summary_row()["flows"]
    assert s.point_meets == {"s": True}  # a price does not change what a fleet serves


def test_point_plan_held_fixed_breaks_at_twice_the_rate(src: TopologySource) -> None:
    point = plan_topology(src.resolve({}))
    s = _task(src, {"traffic.s.rate_rps": 1.2})
    assert s.point_meets == {"s": False}  # its fleets were bought for 0.6 req/s
    assert s.cost_usd_per_hour > point.cost_usd_per_hour


def test_same_result_on_local_and_two_jobs(src: TopologySource) -> None:
    one = run_topology_robust(src, {}, samples=3, seed=1)
    two = run_topology_robust(src, {}, samples=3, seed=1, jobs=2)
    assert one.samples == two.samples
    costs = np.array([s.cost_usd_per_hour for s in one.samples])
    assert np.all(np.isfinite(costs)) and len(set(costs.tolist())) == 3


def test_api_result(src: TopologySource) -> None:
    res = api.robust_topology(EXAMPLE, samples=2, seed=0)
    doc = res.to_json()
    json.dumps(doc)
    rows = {r["figure"]: r for r in doc["distribution"]}
    costs = [s.cost_usd_per_hour for s in res.run.samples]
    assert rows["cost_usd_per_hour"]["min"] == min(costs)
    assert rows["cost_usd_per_hour"]["point"] == res.run.point.cost_usd_per_hour
    assert set(rows) == {"cost_usd_per_hour", "s_ttft_p99_s", "failures_survived"}
    share = sum(s.point_meets_all for s in res.run.samples) / 2
    assert doc["point_plan_meets_share"]["every source"] == share


def test_api_refuses(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="samples"):
        api.robust_topology(EXAMPLE, samples=1)
    with pytest.raises(OptionError, match="must be a topology file"):
        api.robust_topology("pdd-paper", samples=2)
