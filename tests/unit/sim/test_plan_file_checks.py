"""A plan file is simulated as it was solved, or refused by the key that stops it.

Each test failed before its fix: a plan solved without the anomalous filter was simulated
with it (closed forms off solve's own figures: link utilization 0.181 for 0.317); a plan of
another line ran silently on the scenario's; an MD in datacenter A ran over the line; a missing
key read ``KeyError: 'chip'``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import pddplan
from pddplan.errors import ProfileError


@pytest.fixture(scope="module")
def paper() -> tuple[Any, dict[str, Any]]:
    res = pddplan.solve("pdd-paper", verdict_check=False)
    return res, res.to_json()


def _closed(sim: Any) -> dict[str, float]:
    (rows,) = [s.rows for s in sim.report().sections if s.slug == "closed-form-vs-simulation"]
    return {r["metric"]: r["closed_form"] for r in rows}


def test_a_plan_solved_without_the_anomalous_filter_is_simulated_so(
    paper: tuple[Any, dict[str, Any]], tmp_path: Path
) -> None:
    res, doc = paper
    assert doc["plan"]["anomalous_filter"] is False  # pdd-paper's plan relays every request
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(doc), encoding="utf-8")
    sim = pddplan.simulate("pdd-paper", plan=f, requests=300, seed=1)
    closed = _closed(sim)
    assert closed["ttft_p50_s"] == res.plan.prefill.ttft_s[0]
    assert closed["link_utilization"] == res.plan.route.link_utilization
    # the same as simulating the plan solved now
    now = _closed(pddplan.simulate("pdd-paper", requests=300, seed=1))
    assert closed["ttft_p50_s"] == now["ttft_p50_s"]


def test_a_plan_of_another_line_is_said(tmp_path: Path) -> None:
    doc = pddplan.solve(
        overrides={"link": "wan-100g-cross-country"}, verdict_check=False, baselines=False
    ).to_json()
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(doc), encoding="utf-8")
    sim = pddplan.simulate(plan=f, requests=200, seed=1)
    assert any("solved for line wan-100g-cross-country" in n for n in sim.regime_notes)
    same = pddplan.simulate(
        plan=f, requests=200, seed=1, overrides={"link": "wan-100g-cross-country"}
    )
    assert not any("solved for" in n for n in same.regime_notes)


@pytest.mark.parametrize(
    ("edit", "key", "words"),
    [
        (lambda p: p["roles"]["MD"].pop("chip"), "plan.roles.MD.chip", "missing"),
        (lambda p: p.pop("handover"), "plan.handover", "missing"),
        (lambda p: p["roles"]["MD"].update(datacenter="A"), "plan.roles.MD.datacenter", "PDD"),
        (
            lambda p: p["roles"]["MD"].update(batch_per_instance=None),
            "plan.roles.MD.batch_per_instance",
            "missing or null",
        ),
        (lambda p: p.update(anomalous_filter="yes"), "plan.anomalous_filter", "true or false"),
    ],
    ids=["chip", "handover", "datacenter", "batch", "filter"],
)
def test_a_bad_plan_key_is_named(
    paper: tuple[Any, dict[str, Any]], tmp_path: Path, edit: Any, key: str, words: str
) -> None:
    doc = copy.deepcopy(paper[1])
    edit(doc["plan"])
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ProfileError) as info:
        pddplan.simulate("pdd-paper", plan=f, requests=50)
    assert info.value.key == key and words in str(info.value)
