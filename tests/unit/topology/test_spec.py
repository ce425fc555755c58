"""The topology spec: RTT from a route, lines, access, and a chip with two prices."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pddplan.api.scenario import registry
from pddplan.errors import TopologyError
from pddplan.spec.topology import Access, Line, route_rtt_ms
from pddplan.topology import read_topology
from pddplan.topology.pipelines import size_options

NATIONAL = Path(__file__).resolve().parents[3] / "examples" / "topologies" / "national.yaml"


def test_route_rtt_by_hand() -> None:
    # 2 x 1000 km x 1.4682 / 299,792.458 km/s = 9.7948 ms
    assert route_rtt_ms(1000.0) == pytest.approx(9.7948, abs=1e-4)
    assert Access(route_km=1000.0).rtt_s == pytest.approx(9.7948e-3, abs=1e-7)
    assert Access(rtt_ms=12.0).rtt_s == pytest.approx(0.012)


def test_line_and_access_shapes() -> None:
    with pytest.raises(ValueError, match="two different sites"):
        Line(sites=["a", "a"], link="wan-100g-cross-city")
    with pytest.raises(ValueError, match="route_km or link_numbers.rtt_ms"):
        Line(sites=["a", "b"], link="x", route_km=10, link_numbers={"rtt_ms": 1.0})
    with pytest.raises(ValueError, match="exactly one"):
        Access()
    assert Line(sites=["a", "b"], link="x").label == "a-b"


def test_chip_with_two_prices_in_one_pipeline(tmp_path: Path) -> None:
    doc = yaml.safe_load(NATIONAL.read_text())
    # beijing's MD may use gpu-a; shanghai prefills on gpu-a: price it differently there
    shanghai = next(s for s in doc["sites"] if s["name"] == "shanghai")
    shanghai["chips"]["gpu-a"]["rental_usd_per_hour"] = 2.5
    f = tmp_path / "t.yaml"
    f.write_text(yaml.safe_dump(doc))
    ti = read_topology(str(f), registry(None))
    with pytest.raises(
        TopologyError,
        match="chip gpu-a rents at 2 \\$/h at site beijing and 2.5 \\$/h at site shanghai",
    ):
        size_options(ti)
