"""The simulator late in a long run, and plan files edited in one place only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pddplan
from pddplan.errors import ProfileError
from tests.time_limits import cpu_limit_s, cpu_time_limit


def test_a_rate_of_one_request_a_million_seconds_finishes() -> None:
    # at 1e-6 req/s the clock reaches ~1e9 s, where one float step of t is ~1e-7 s: an end
    # sooner than that was scheduled at t again and again without progress (issue 21); a few
    # hundred requests are a few thousand events
    with cpu_time_limit(cpu_limit_s(60.0)):
        res = pddplan.simulate("default", rate_rps=1e-6, requests=300)
    settings = res.to_json()["settings"]
    assert settings["measured_requests"] > 0
    assert settings["events"] < 100 * settings["requests"]  # no event repeated without progress


def test_a_plan_whose_chip_summary_disagrees_with_its_roles_is_refused(tmp_path: Path) -> None:
    plan = pddplan.solve("default", verdict_check=False).to_json()
    plan["plan"]["chips"] = {k: v + 1 for k, v in plan["plan"]["chips"].items()}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    with pytest.raises(ProfileError, match="does not match the roles' chips") as exc:
        pddplan.simulate("default", plan=str(path), requests=100)
    assert "\n" not in str(exc.value)
