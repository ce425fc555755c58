"""The topology tables add up: flows to the plan's cost, failures in requests per second."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from pddplan.api.scenario import registry
from pddplan.results.topology import TopologyResult
from pddplan.topology import plan_topology, read_topology


def _plan(doc: dict[str, Any], tmp_path: Path, **kw: Any) -> TopologyResult:
    f = tmp_path / "t.yaml"
    f.write_text(yaml.safe_dump(doc))
    return TopologyResult(plan_topology(read_topology(str(f), registry(None)), **kw))


@pytest.mark.parametrize("mode", ["cost", "max-bcr"])
def test_flow_costs_add_up_to_the_plan_with_owned_chips(
    small_doc: dict[str, Any], tmp_path: Path, mode: str
) -> None:
    # site a owns 8 gpu-a at 0.9 $/h against the profile's rental: the saving is in the
    # plan's cost, so it must be in the flows' too
    small_doc["sites"][0]["chips"] = {"gpu-a": {"owned": 8, "owned_usd_per_chip_hour": 0.9}}
    kw: dict[str, Any] = {"mode": mode}
    res = _plan(small_doc, tmp_path, **kw)
    flows = res.flow_rows()
    assert math.isclose(
        sum(r["cost_usd_per_hour"] for r in flows), res.plan.cost_usd_per_hour, rel_tol=1e-12
    )
    saving = sum(r["owned_saving_usd_per_hour"] for r in flows)
    assert saving > 0
    at_rental = sum(o.cost_usd_per_hour for o in res.plan.chosen)
    assert math.isclose(at_rental - saving, res.plan.cost_usd_per_hour, rel_tol=1e-12)


def test_flows_without_owned_chips_have_no_saving_column(small_file: Path) -> None:
    res = TopologyResult(plan_topology(read_topology(str(small_file), registry(None))))
    flows = res.flow_rows()
    assert all("owned_saving_usd_per_hour" not in r for r in flows)
    assert [r["cost_usd_per_hour"] for r in flows] == [o.cost_usd_per_hour for o in res.plan.chosen]


def test_failure_loss_is_a_rate_and_a_share_of_the_traffic(
    small_doc: dict[str, Any], tmp_path: Path
) -> None:
    # two sources entering at a, 0.6 and 0.3 req/s; a losing half its chips takes every
    # pipeline's P pool there: 0.9 req/s lost, the whole of the traffic (not 1 + 1 = 2 shares)
    t = dict(small_doc["traffic"][0], name="t", rate_rps=0.3)
    small_doc["traffic"].append(t)
    small_doc["resilience"] = {"site_chip_loss_share": 0.5, "source": "illustrative share"}
    res = _plan(small_doc, tmp_path)
    rows = {r["failed"]: r for r in res.failure_rows()}
    whole = rows["a with 50% of chips"]
    assert "share_lost" not in whole
    assert whole["rate_lost_rps"] == pytest.approx(0.9, rel=1e-12)
    assert whole["traffic_share_lost"] == pytest.approx(1.0, rel=1e-12)
    for r in rows.values():
        assert 0.0 <= r["traffic_share_lost"] <= 1.0 + 1e-12
        assert r["traffic_share_lost"] == pytest.approx(r["rate_lost_rps"] / 0.9, rel=1e-12)
