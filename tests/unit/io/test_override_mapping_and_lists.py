"""``--set`` reaches a mapping's entries (``load.elastic.h20.startup_minutes``; it was refused,
with a did-you-mean to ``load.elastic.startup_minutes``, which the loader then refused) and
takes a list in brackets for any key that holds one (``load.weekday_rate_rps.sat=[...]``,
``cache.tiers.1.capacity_gb_per_node=[0,4096]``; they were "one value per PATH")."""

from __future__ import annotations

from pathlib import Path

import pytest

import pddplan
from pddplan.api.values import parse_overrides
from pddplan.errors import OptionError, OverrideError

REPO = Path(__file__).resolve().parents[3]
DIURNAL = str(REPO / "examples" / "agent-diurnal.yaml")


def test_brackets_make_one_list_value_for_any_key() -> None:
    ov = parse_overrides(
        ["load.weekday_rate_rps.sat=[0.1,0.2]", "cache.tiers.1.capacity_gb_per_node=0,4096"],
        "solve",
    )
    assert ov == {
        "load.weekday_rate_rps.sat": [0.1, 0.2],
        "cache.tiers.1.capacity_gb_per_node": [0, 4096],
    }
    with pytest.raises(OptionError, match=r"a list in brackets: rate_rps=\[V1,V2,...\]"):
        parse_overrides(["rate_rps=1,2"], "solve")


def test_a_range_in_a_list_is_the_sweeps_range() -> None:
    # lo:hi:step reads as in a sweep: [4:8:2] was the list [4, 8, 2] in solve, where a sweep
    # reads the same text as 4, 6, 8
    from pddplan.api.values import parse_axes

    ov = parse_overrides(
        ["roles.P.chips_per_instance=[4:8:2]", "roles.MD.chips_per_instance=2:8:2"], "solve"
    )
    assert ov == {
        "roles.P.chips_per_instance": [4, 6, 8],
        "roles.MD.chips_per_instance": [2, 4, 6, 8],
    }
    assert parse_axes(["roles.P.chips_per_instance=4:8:2"]) == [
        ("roles.P.chips_per_instance", [4, 6, 8])
    ]


def test_a_mapping_entry_is_a_key_and_is_set() -> None:
    ls = pddplan.load_scenario(DIURNAL, overrides={"load.elastic.h20.billing_minutes": 1})
    assert ls.resolved.scenario.load is not None
    assert ls.resolved.scenario.load.elastic["h20"].billing_minutes == 1
    assert ls.resolved.scenario.load.elastic["h20"].startup_minutes == 10  # the file's, kept
    with pytest.raises(
        OverrideError, match=r"did you mean 'load\.elastic\.<key>\.startup_minutes'"
    ):
        pddplan.load_scenario(DIURNAL, overrides={"load.elastic.h20.startup_minute": 5})


def test_a_weekday_list_reaches_the_load() -> None:
    sat = [0.1] * 24
    ls = pddplan.load_scenario(DIURNAL, overrides={"load.weekday_rate_rps.sat": sat})
    assert ls.resolved.scenario.load is not None
    assert list(ls.resolved.scenario.load.weekday_rate_rps["sat"]) == sat


def test_the_baselines_instance_size_is_one_value() -> None:
    # "chips_per_instance" names a list under roles but one size under baseline: --set
    # baseline.chips_per_instance=4 was read as [4] and refused as "a valid integer"
    ov = parse_overrides(
        ["baseline.chips_per_instance=4", "roles.MD.chips_per_instance=4"], "solve"
    )
    assert ov == {"baseline.chips_per_instance": 4, "roles.MD.chips_per_instance": [4]}
