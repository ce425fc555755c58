"""What a solve's sentences and summary say, held to the figures beside them: the routing rule
names the anomalous requests that RLD finishes, a verdict's reversal is placed between the
value where it holds and the one where it turns, and max-BCR names the wall its walk met."""

from __future__ import annotations

import pytest

import pddplan
from pddplan.results.solve import flip_text, routing_text
from pddplan.robust.verdict import Flip


def test_a_reversal_is_placed_between_where_it_holds_and_where_it_turns() -> None:
    """``flips_at`` is the first value found to reverse the verdict and ``holds_at`` the last
    one nearer the point where it held: the verdict turns between them. "flips above 96" on a
    range that ends at 96 read as a reversal outside the range."""
    high = Flip("chips.gpu-b.derates.x", 64.0, 48.0, 96.0, "high", 96.0, 92.0)
    assert flip_text(high) == "chips.gpu-b.derates.x (flips between 92 and 96; range 48 to 96)"
    low = Flip("rdma.efficiency", 0.9, 0.72, 0.945, "low", 0.7425, 0.76875)
    assert "(flips between 0.7425 and 0.7688;" in flip_text(low)
    no_point = Flip("link.price", float("nan"), 1.0, 2.0, "low", 1.0, None)
    assert "(flips at its low end;" in flip_text(no_point)


@pytest.mark.parametrize(("share", "named"), [(None, True), (0.0, False)])
def test_the_routing_rule_names_the_anomalous_requests_rld_finishes(
    share: float | None, named: bool
) -> None:
    """With the anomalous filter, RLD finishes the anomalous requests (the pipelines table's
    ``P-RLD (anomalous)`` row): the routing rule says so, even where nothing else relays (it
    read "all P-MD (no relay)" beside an RLD pool). Without anomalous requests it does not."""
    overrides = {} if share is None else {"workload.anomalous.share": share}
    for rate in (0.446, 2.0):
        r = pddplan.solve(overrides=overrides, rate_rps=rate, verdict_check=False)
        plan = r.outcome.plan
        text = routing_text(plan)
        assert text.endswith("; anomalous: P-RLD") is named, (rate, text)
        anomalous = [p for p in r.ttft_by_pipeline_s if "anomalous" in p]
        assert bool(anomalous) is named, r.ttft_by_pipeline_s
        if named and plan.routing.threshold <= 0 and not plan.routing.relay_all:
            assert text == "no relay: P-MD; anomalous: P-RLD"


def test_max_bcr_names_the_inventory_wall_its_walk_met() -> None:
    """With GPU-B limited to 24 chips no fleet fits above about 1.56 req/s: the max-BCR walk
    stops there, and its scale is bound by inventory, as the budget mode's is (it read "line
    capacity (utilization cap) (inventory limits applied)" at a line utilization of 0.14)."""
    limits = {"gpu-b": 24}
    mb = pddplan.solve(max_chips=limits, max_bcr=True, verdict_check=False)
    budget = pddplan.solve(max_chips=limits, budget_usd_per_hour=1000, verdict_check=False)
    assert mb.outcome.scale_bound == "inventory" == budget.outcome.scale_bound
    with pytest.raises(pddplan.InfeasibleError):
        pddplan.solve(max_chips=limits, rate_rps=mb.outcome.plan.rate_rps * 1.01)
    free = pddplan.solve(max_bcr=True, verdict_check=False)
    assert free.outcome.scale_bound == "line capacity (utilization cap)"


def test_idle_owned_chips_say_how_they_are_charged() -> None:
    """Owned chips left idle under amortized capex are charged to no fleet, while a baseline
    that uses them pays for them: the answer says so and names the sunk view (it said only
    "72 owned idle" beside "PDD costs 0.642x")."""
    from pddplan.results.solve import idle_owned_text

    res = pddplan.solve(
        own={"gpu-a": 96},
        overrides={"chips.gpu-a.price.capex_usd": 100000, "roles.MD.chips": ["gpu-a", "gpu-b"]},
        verdict_check=False,
    )
    text = " ".join(res.answer())
    assert "72 gpu-a owned and left idle are charged to no fleet" in text
    assert "inventory.owned_cost=sunk" in text
    sunk = pddplan.solve(
        own={"gpu-a": 96},
        overrides={"inventory.owned_cost": "sunk", "roles.MD.chips": ["gpu-a", "gpu-b"]},
        verdict_check=False,
        baselines=False,
    )
    assert idle_owned_text(sunk.plan) is None


def test_line_row_shows_its_utilization_and_binding() -> None:
    """The plan table's line row shows the line's utilization (the summary's figure) and that
    it binds where the plan's binding list names the line (it showed '-' and '-')."""
    res = pddplan.solve(max_bcr=True, verdict_check=False, baselines=False)
    line = next(r for r in res.rows("plan") if r["role"] == "line")
    assert line["utilization"] == res.plan.route.link_utilization > 0.7
    assert "line utilization" in res.plan.binding and line["bound_by"] == "line utilization"
