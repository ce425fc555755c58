"""The bathtub prices a request at what the plan pays for each role, owned chips included."""

from __future__ import annotations

import pddplan

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
