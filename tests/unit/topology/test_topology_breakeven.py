"""``breakeven`` over a topology file (examples/topologies/three-sites-n1.yaml), checked against a
``sweep`` of the same PATH: the structure change and the cost crossing it bisects lie between
the sweep's points where the sweep sees them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pddplan import api
from pddplan.errors import OptionError, OverrideError

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "topologies" / "three-sites-n1.yaml"
LINE_PRICE = "lines.a-b.link_numbers.price_usd_per_month"
RATE = "traffic.s.rate_rps"


def _rows(path: str, values: list[float]) -> list[dict[str, object]]:
    return api.sweep(EXAMPLE, {path: values}, baselines=False).points


def test_structure_change_matches_a_sweep() -> None:
    values = [2000.0, 8000.0, 14000.0, 26000.0, 50000.0]
    rows = _rows(LINE_PRICE, values)
    flows = [r["flows"] for r in rows]
    changes = [i for i in range(len(flows) - 1) if flows[i] != flows[i + 1]]
    assert len(changes) == 1  # the a-b line's price moves the one source to a-c, once
    i = changes[0]
    res = api.breakeven_topology(EXAMPLE, param=LINE_PRICE, lo=values[0], hi=values[-1])
    be = res.be
    assert be.value is not None and values[i] < be.value < values[i + 1]
    assert be.below is not None and be.above is not None
    assert be.below.flows == flows[i] and be.above.flows == flows[i + 1]
    assert be.above.value - be.below.value <= 1e-3 * (values[-1] - values[0])
    # the plans either side of the change, swept there, are those the bisection found
    near = _rows(LINE_PRICE, [be.below.value, be.above.value])
    assert [r["flows"] for r in near] == [be.below.flows, be.above.flows]


def test_cost_crossing_matches_a_sweep() -> None:
    values = [0.3, 0.6, 1.2, 2.4]
    rows = _rows(RATE, values)
    costs = [float(r["cost_usd_per_hour"]) for r in rows]  # type: ignore[arg-type]
    assert costs == sorted(costs)
    target = (costs[1] + costs[2]) / 2
    res = api.breakeven_topology(
        EXAMPLE, param=RATE, lo=values[0], hi=values[-1], against_cost_usd_per_hour=target
    )
    be = res.be
    assert be.value is not None and values[1] < be.value < values[2]
    assert be.below is not None and be.above is not None
    assert be.below.cost_usd_per_hour < target < be.above.cost_usd_per_hour
    near = _rows(RATE, [be.below.value, be.above.value])
    assert [r["cost_usd_per_hour"] for r in near] == [
        be.below.cost_usd_per_hour,
        be.above.cost_usd_per_hour,
    ]


def test_no_change_in_the_interval() -> None:
    res = api.breakeven_topology(EXAMPLE, param=LINE_PRICE, lo=2000.0, hi=8000.0)
    assert res.be.value is None and res.be.iterations == 0
    assert "keeps one structure" in res.answer()[0]


def test_default_interval_and_bad_input() -> None:
    res = api.breakeven_topology(EXAMPLE, param=RATE, against_cost_usd_per_hour=1e6, tolerance=0.1)
    assert (res.be.lo.value, res.be.hi.value) == (0.6 / 4, 0.6 * 4)  # the file's rate
    assert res.be.value is None  # far above any cost in the interval
    with pytest.raises(OptionError, match="lo"):
        api.breakeven_topology(EXAMPLE, param=LINE_PRICE)  # from the link profile: no number
    with pytest.raises(OverrideError, match="traffic has no entry 'north'"):
        api.breakeven_topology(EXAMPLE, param="traffic.north.rate_rps", lo=0.1, hi=1.0)
    with pytest.raises(OptionError, match="must be a topology file"):
        api.breakeven_topology("pdd-paper", param="rate_rps", lo=0.1, hi=1.0)


def test_an_end_where_no_plan_fits_is_reported() -> None:
    """At 500 req/s no plan serves the source (the lines' utilization caps): that end's cost is
    null in JSON and '-' in the table, with the reason in its flows and a note (the JSON was an
    internal error: a cost of inf)."""
    from pddplan.results.invariants import check_report

    res = api.breakeven_topology(EXAMPLE, param=RATE, lo=0.5, hi=500.0)
    assert res.be.hi.structure == "infeasible"
    rep = res.report()
    check_report(rep, "json")  # raises on a number JSON cannot hold
    plans = res.to_json()["plans"]
    hi = [p for p in plans if p["at"] == "hi"]
    assert hi[0]["cost_usd_per_hour"] is None and "no site can serve" in hi[0]["flows"]
    assert all(p["cost_usd_per_hour"] > 0 for p in plans if p["at"] != "hi")
    assert any("no plan serves every source at hi" in n for n in res.to_json()["notes"])


def test_a_structure_change_changes_what_the_plan_buys() -> None:
    # the rate's first "structure change" was at 0.2126 req/s: the pipeline's share level
    # moved from 4 to 2 with the same 8 gpu-a and 8 gpu-b, line, flows and 45.59 $/h either
    # side; a buyer saw nothing change there
    be = api.breakeven_topology(EXAMPLE, param=RATE).be
    assert be.below is not None and be.above is not None
    assert be.below.structure != be.above.structure
    assert (be.below.cost_usd_per_hour, be.below.flows, be.below.lines_leased) != (
        be.above.cost_usd_per_hour,
        be.above.flows,
        be.above.lines_leased,
    )
