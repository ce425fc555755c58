"""Single line failures: where the traffic goes and which target breaks; the MILP on
hand-computed options."""

from __future__ import annotations

from pathlib import Path

import pytest

from pddplan.api.scenario import registry
from pddplan.errors import InfeasibleError
from pddplan.topology import line_failures, market_of, read_topology
from pddplan.topology.milp import ChipStock, Market, choose, total_cost
from pddplan.topology.pipelines import Option, size_options

NATIONAL = Path(__file__).resolve().parents[3] / "examples" / "topologies" / "national.yaml"


@pytest.fixture(scope="module")
def sized():  # type: ignore[no-untyped-def]
    ti = read_topology(str(NATIONAL), registry(None))
    return ti, size_options(ti)


def test_failed_line_moves_traffic_to_the_other_pipeline(sized) -> None:  # type: ignore[no-untyped-def]
    ti, opts = sized
    halves = {
        o.pipeline: o
        for o in opts.options
        if o.source == "north" and o.level == 1 and o.lines in (0, 1)
    }
    a, b = halves["north:beijing->tianjin"], halves["north:beijing->wuhan"]
    carried = {a.pipeline: 0.5, b.pipeline: 0.5}
    fails = {f.line: f for f in line_failures(ti, [a, b], carried, market_of(ti))}
    f = fails["beijing-tianjin"]
    assert f.sources["north"] == (0.5, 0.5, 0.0)
    assert f.moved_to == {b.pipeline: pytest.approx(1.2)}
    goodput = b.plan.fleet_goodput_rps
    if goodput < 1.2 * 0.99:
        assert any(x.startswith(b.pipeline) for x in f.breaks)
    elif goodput > 1.2 * 1.01:
        assert f.survives
    assert fails["beijing-shanghai"].survives and not fails["beijing-shanghai"].sources


def _opt(pipe: str, level: int, cost: float, chips: int, line: str | None = None) -> Option:
    return Option("s", pipe, level, line, 1 if line else 0, cost, (("x", "gpu-a", chips),))


def test_milp_owned_chips_and_rent_limit_by_hand() -> None:
    # two pipelines of one source over lines k and l, two share levels; gpu-a at site x:
    # 8 owned at 0.5 $/h against 2.0 $/h rented
    opts = [
        _opt("p1", 2, 40.0, 16, line="k"),  # all on p1: 16 chips
        _opt("p1", 1, 24.0, 8, line="k"),
        _opt("p2", 1, 20.0, 8, line="l"),
        _opt("p2", 2, 45.0, 24, line="l"),
    ]
    lines = {"k": 1, "l": 1}
    m = Market(2, ("s",), lines, {("x", "gpu-a"): ChipStock(8, 0.5, 2.0, 16)})
    got = choose(opts, m)
    # p1 alone: 40 - 8 x 1.5 = 28; p1/2 + p2/2: 44 - 12 = 32; p2 alone: 45 - 12 = 33
    assert got.chosen == (0,) and got.cost_usd_per_hour == pytest.approx(28.0)
    assert total_cost(opts, (1, 2), m) == pytest.approx(32.0)
    # resilient: either line may fail, so each pipeline carries everything: 40 chips, more
    # than 8 owned + 16 rented
    with pytest.raises(InfeasibleError):
        choose(opts, m, resilient=True)
    roomy = Market(2, ("s",), lines, {("x", "gpu-a"): ChipStock(8, 0.5, 2.0, 32)})
    res = choose(opts, roomy, resilient=True)
    assert set(res.chosen) == {0, 3} and res.cost_usd_per_hour == pytest.approx(85.0 - 12.0)
    # owned chips dearer than rented ones are used only as far as the rent limit forces
    dear = Market(2, ("s",), lines, {("x", "gpu-a"): ChipStock(8, 3.0, 2.0, 10)})
    assert choose(opts, dear).cost_usd_per_hour == pytest.approx(40.0 + 6 * 1.0)
