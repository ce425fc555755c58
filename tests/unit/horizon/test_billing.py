"""Billing of elastic instances over a repeating day: runs of layers, start-ups, billing units
(hand-computed values)."""

from __future__ import annotations

import pytest

from pddplan.horizon.billing import billed_hours, runs, started_hours


def test_runs_cut_counts_into_layers_that_wrap_around_the_day() -> None:
    assert runs([0, 2, 2, 1]) == [3, 2]  # layer 1: slots 1-3; layer 2: slots 1-2
    assert runs([1, 0, 0, 1]) == [2]  # slot 3 then slot 0 of the next day: one run
    assert runs([2, 2]) == [2, 2]  # on all day
    assert runs([0, 0]) == []


def test_a_run_is_billed_with_its_start_up_in_whole_units() -> None:
    # one chip for 2 slots of 60 min, 10 min start-up, hourly billing: 130 min -> 3 h
    assert billed_hours([0, 1, 1, 0], 60, 10, 60) == pytest.approx(3.0)
    # per-minute billing: 130 min
    assert billed_hours([0, 1, 1, 0], 60, 10, 1) == pytest.approx(130 / 60)
    # a chip on all day: the day, no start-up
    assert billed_hours([1, 1, 1, 1], 60, 10, 60) == pytest.approx(4.0)
    # two runs of one slot each: 2 x ceil(70 / 60) h
    assert billed_hours([1, 0, 1, 0], 60, 10, 60) == pytest.approx(4.0)


def test_started_hours_count_the_start_ups_without_billing_units() -> None:
    assert started_hours([0, 3, 3, 0], 60, 15) == pytest.approx(3 * 2.25)
    assert started_hours([1, 1], 60, 15) == pytest.approx(2.0)
