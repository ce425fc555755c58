"""The simulation's load ratios where MD decodes no token (``all-relay`` routing under the
``p-rld`` policy): RLD decodes every token, so RLD:MD is unbounded. The table printed ``nan``
and the JSON held a bare null; docs/simulate.md's table shows ∞. Now the row has no value and
says why, in the table and in the JSON's ``load_ratios``."""

from __future__ import annotations

import math

import pddplan
from pddplan.results.simulate import _ratio_row


def test_every_token_on_rld_is_unbounded_and_said() -> None:
    res = pddplan.simulate(
        requests=1500, seed=1, policy="p-rld", overrides={"serving.routing": "all-relay"}
    )
    doc = res.to_json()
    rows = {r["figure"]: r for r in doc["load_ratios"]}
    assert set(rows) == {"rld_to_md_load_ratio_per_instance", "rld_to_md_token_ratio"}
    for r in rows.values():
        assert r["value"] is None
        assert r["note"].startswith("unbounded: MD decodes no token")
    assert doc["figures"]["rld_demand_tokens_per_s"] > 0
    assert doc["figures"]["md_demand_tokens_per_s"] == 0


def test_finite_ratio_has_its_value_and_no_note() -> None:
    res = pddplan.simulate(requests=1500, seed=1)
    doc = res.to_json()
    for r in doc["load_ratios"]:
        assert r["note"] == "" and r["value"] > 0
    assert doc["load_ratios"][-1]["value"] == doc["figures"]["rld_to_md_token_ratio"]


def test_neither_pool_decoding_is_undefined() -> None:
    row = _ratio_row("rld_to_md_token_ratio", {"rld_to_md_token_ratio": math.nan})
    assert row == {
        "figure": "rld_to_md_token_ratio",
        "value": None,
        "note": "undefined: neither pool decodes a token",
    }
