"""Where relay would pay: the levers `solve` names when its plan has no RLD (issue: relay)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import pddplan
from pddplan.solver import relay_edge
from pddplan.solver.relay_edge import describe, relay_bcr_ratio, relay_edges
from pddplan.spec.scenario import ResolvedScenario

ROOT = Path(__file__).resolve().parents[3]
LONG = str(ROOT / "examples" / "long-context.yaml")


def _fake(rs: ResolvedScenario, rate: float, max_chips: object = None) -> float | None:
    """A synthetic BCR ratio: relay pays below 50 Gbit/s, at shifts <= -0.13, at TTFT p99 <= 12 s;
    the rate cannot be served below 20 Gbit/s."""
    bw = float(rs.link.bandwidth_gbit_per_s)
    if bw < 20.0:
        return None
    shift = float(rs.workload.hit_rate.shift)
    p99 = float(rs.scenario.sla.ttft_p99_s)
    return max(50.0 / bw, 1.0 if shift <= -0.13 else 0.5, 1.0 if p99 <= 12.0 else 0.5)


def test_walk_brackets_each_crossing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(relay_edge, "relay_bcr_ratio", _fake)
    rs = pddplan.load_scenario("default").resolved
    rs = ResolvedScenario(
        rs.scenario.model_copy(
            update={"sla": rs.scenario.sla.model_copy(update={"ttft_p99_s": 20.0})}
        ),
        rs.file,
        rs.model,
        rs.workload,
        rs.link.model_copy(update={"bandwidth_gbit_per_s": 100.0}),
        rs.rdma,
        rs.chips,
    )
    bw, shift, ttft = relay_edges(rs, 1.0)
    # bisection in log space, 3 steps after a halving: within a factor 2**(1/8) of the crossing
    assert bw.value is not None and 50.0 / 2 ** (1 / 8) <= bw.value <= 50.0
    assert bw.bcr_ratio is not None and bw.bcr_ratio >= 1.0
    # shift walk: -0.1 does not pay, -0.2 does; 3 linear bisection steps leave 0.0125
    assert shift.value is not None and -0.13 - 0.0125 <= shift.value <= -0.13
    # TTFT: 20 s * 0.75 = 15 does not pay, * 0.5 = 10 does; the crossing is 0.6
    assert ttft.value is not None and 0.6 / (0.75 / 0.5) ** (1 / 8) <= ttft.value <= 0.6
    text = describe([bw, shift, ttft])
    assert text.startswith("relay would pay with a ")
    assert "Gbit/s line" in text and "hit rates shifted by" in text and "TTFT targets" in text


def test_walk_stops_where_the_rate_cannot_be_served(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(rs: ResolvedScenario, rate: float, max_chips: object = None) -> float | None:
        return None if rs.link.bandwidth_gbit_per_s < 30.0 else 0.5

    monkeypatch.setattr(relay_edge, "relay_bcr_ratio", never)
    rs = pddplan.load_scenario("default").resolved
    rs = ResolvedScenario(
        rs.scenario,
        rs.file,
        rs.model,
        rs.workload,
        rs.link.model_copy(update={"bandwidth_gbit_per_s": 100.0}),
        rs.rdma,
        rs.chips,
    )
    bw = relay_edges(rs, 1.0)[0]
    assert bw.value is None and bw.unsizable == 25.0 and bw.searched_to == 50.0
    assert "a 25 Gbit/s line cannot serve the rate at all" in describe([bw])


def test_long_context_names_where_relay_pays_and_the_claim_holds() -> None:
    """On examples/long-context.yaml the plan has no RLD; each lever value `solve` names makes
    the best plan with RLD reach the no-relay plan's BCR when re-solved independently."""
    res = pddplan.solve(LONG)
    doc = res.to_json()
    assert any(n.startswith("relay does not pay") for n in doc["notes"])
    edges = {e["lever"]: e for e in doc["relay_edges"]}
    assert set(edges) == {"link.bandwidth_gbit_per_s", "workload.hit_rate.shift", "sla.ttft_scale"}
    rate = res.plan.rate_rps
    base = pddplan.load_scenario(LONG)
    r0 = relay_bcr_ratio(base.resolved, rate)
    assert r0 is not None and r0 < 1.0
    found = [e for e in edges.values() if e["relay_pays_at"] is not None]
    assert found, "no lever makes relay pay on long-context"
    sla = base.resolved.scenario.sla
    for e in found:
        x = e["relay_pays_at"]
        if e["lever"] == "sla.ttft_scale":
            ov = {
                f"sla.{k}": getattr(sla, k) * x for k in ("ttft_p50_s", "ttft_p90_s", "ttft_p99_s")
            }
        else:
            ov = {e["lever"]: x}
        r = relay_bcr_ratio(pddplan.load_scenario(LONG, overrides=ov).resolved, rate)
        assert r is not None and r >= 1.0 and math.isclose(r, e["bcr_ratio_there"], rel_tol=1e-9)
