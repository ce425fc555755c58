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


def _star_doc(md_chips: list[str], p_chips: list[str]) -> dict:
    from tests.unit.topology.conftest import small_topology_doc

    doc = small_topology_doc()
    doc["share_levels"] = 1
    doc["sites"] = doc["sites"][:2]
    doc["lines"] = doc["lines"][:1]
    doc["sites"][0]["roles"] = {"P": {"chips": p_chips}, "RLD": {"chips": ["gpu-a"]}}
    doc["sites"][1]["roles"] = {"MD": {"chips": md_chips}}
    doc["sites"][1]["chips"] = {"gpu-b": {"rental_usd_per_hour": 0.5}}
    return doc


def test_a_star_role_prices_its_chips_as_its_site_does(tmp_path: Path) -> None:
    # MD at b lists '*' (every chip), and b rents gpu-b at 0.5 $/h: the pipeline's scenario
    # prices gpu-b at 0.5, as b's chip stock (market_of) does and as MD: [gpu-b] does, not at
    # the profile's 2.5 $/h
    from pddplan.topology import market_of
    from pddplan.topology.pipelines import pipeline_doc, pipelines_of, resolve_doc

    prices = []
    for md in (["gpu-b"], ["*"]):
        f = tmp_path / f"t{len(prices)}.yaml"
        f.write_text(yaml.safe_dump(_star_doc(md, ["gpu-a"])))
        ti = read_topology(str(f), registry(None))
        pipe = next(p for p in pipelines_of(ti) if p.line is not None)
        rs = resolve_doc(ti, pipeline_doc(ti, pipe, 0.6))
        prices.append(rs.chips["gpu-b"].price.rental_usd_per_hour)
        assert market_of(ti).stock[("b", "gpu-b")].rental_usd_per_chip_hour == 0.5
    assert prices == [0.5, 0.5]
    # '*' on both sides: gpu-b would rent at 2.5 at a and 0.5 at b in one pipeline
    f = tmp_path / "both.yaml"
    f.write_text(yaml.safe_dump(_star_doc(["*"], ["*"])))
    ti = read_topology(str(f), registry(None))
    with pytest.raises(TopologyError, match="2.5 \\$/h at site a and 0.5 \\$/h at site b.*'\\*'"):
        size_options(ti)


def test_a_site_whose_roles_list_star_has_a_same_site_pipeline(tmp_path: Path) -> None:
    # P and MD both '*' at one site: every chip may serve both, so the site has its
    # same-site pipeline (it had none: '*' was dropped from the chips both roles share)
    from pddplan.topology.pipelines import pipelines_of

    doc = _star_doc(["*"], ["*"])
    doc["sites"][0]["roles"]["MD"] = {"chips": ["*"]}
    del doc["sites"][1]["chips"]
    f = tmp_path / "t.yaml"
    f.write_text(yaml.safe_dump(doc))
    ti = read_topology(str(f), registry(None))
    assert any(p.line is None and p.p_site == "a" for p in pipelines_of(ti))
