"""A plan's roles are one record in every format (the JSON document lacked P's utilization and
each pool's bound-by, which the table, CSV and markdown showed)."""

from __future__ import annotations

import pddplan


def test_the_json_roles_are_the_plan_tables_rows() -> None:
    res = pddplan.solve("pdd-paper", verdict_check=False)
    doc = res.to_json()["plan"]["roles"]
    (plan,) = [s for s in res.report().sections if s.slug == "plan"]
    rows = {r["role"]: r for r in plan.rows}
    for role in ("P", "RLD", "MD"):
        row = {k: v for k, v in rows[role].items() if k != "role"}
        assert doc[role] == row, role
    assert doc["P"]["utilization"] > 0 and doc["P"]["bound_by"]
    assert doc["MD"]["bound_by"] and doc["MD"]["utilization"] is None


def test_an_unbounded_bcr_is_one_null_in_every_table() -> None:
    # a free fleet's BCR was inf in the summary and baselines rows (CSV 'inf'), null in JSON
    # and '-' in a sweep
    res = pddplan.solve(
        "pdd-paper",
        own={"gpu-a": 100, "gpu-b": 100},
        overrides={"inventory.owned_cost": "sunk", "link.price_usd_per_month": 0},
        verdict_check=False,
    )
    assert res.to_json()["plan"]["bcr_requests_per_usd"] is None
    sections = {s.slug: s for s in res.report().sections}
    (row,) = [r for r in sections["summary"].rows if r["figure"] == "bcr_requests_per_usd"]
    assert row["value"] is None
    rows = sections["baselines"].rows
    free = [r for r in rows if r["cost_usd_per_hour"] == 0 and r["goodput_rps"] > 0]
    assert free and all(r["bcr_requests_per_usd"] is None for r in free)
    sweep = pddplan.sweep(
        "pdd-paper",
        {"rate_rps": [res.plan.rate_rps]},
        overrides={
            "inventory.owned.gpu-a": 100,
            "inventory.owned.gpu-b": 100,
            "inventory.owned_cost": "sunk",
            "link.price_usd_per_month": 0,
        },
    )
    assert sweep.to_json()["points"][0]["bcr_requests_per_usd"] is None
