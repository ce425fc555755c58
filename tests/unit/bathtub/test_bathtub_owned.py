"""The bathtub prices a request at what the plan pays for each role, owned chips included."""

from __future__ import annotations

import pytest

import pddplan
from pddplan.bathtub import _unit_prices
from pddplan.solver import PDD, Solver, build_problem

OWN = {"inventory.owned.gpu-a": 200, "inventory.owned_cost": "sunk"}


def test_owned_chips_lower_every_marginal_cost_and_nothing_else() -> None:
    rented = pddplan.bathtub("default").to_json()
    owned = pddplan.bathtub("default", overrides=OWN).to_json()
    # the plan pays less for its gpu-a roles (P, RLD) when they are owned and sunk
    assert owned["plan"]["cost_usd_per_hour"] < rented["plan"]["cost_usd_per_hour"]
    assert len(owned["curve"]) == len(rented["curve"])
    for a, b in zip(rented["curve"], owned["curve"], strict=True):
        assert b["hit_rate"] == a["hit_rate"]
        assert b["prefill_s"] == a["prefill_s"]  # the physics is the same
        assert b["cost_usd"] < a["cost_usd"]  # before, owned chips were priced at rental
        assert b["revenue_usd"] == a["revenue_usd"]


def test_bought_chips_are_priced_at_their_purchase_not_their_rental() -> None:
    # with inventory.additional=buy and no owned chips, every chip is bought: the plan pays
    # amortized capex plus opex, and the bathtub's marginal costs must too. Capex set so that a
    # bought chip costs exactly half its rental (2.00 and 2.40 $/h over 3 years of 8,760 h, no
    # opex): every role's share of a request's cost halves, the line's stays
    years = 3.0
    buy = {
        "inventory.additional": "buy",
        "inventory.amortization_years": years,
        "inventory.opex_usd_per_chip_hour": 0.0,
    }
    rented = pddplan.load_scenario("default").resolved
    for name, chip in rented.chips.items():
        buy[f"chips.{name}.price.capex_usd"] = chip.price.rental_usd_per_hour / 2 * years * 8760
    rs = pddplan.load_scenario("default", overrides=buy).resolved
    pb = build_problem(rs, PDD)
    plan = Solver(pb).solve_rate(rs.scenario.rate_rps)
    unit = _unit_prices(plan, pb)
    for role, v in plan.roles.items():
        if v is None:
            continue
        inst, _n = v
        assert unit[role] == pytest.approx(inst.price_usd_per_hour / 2, rel=1e-12), role
