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
