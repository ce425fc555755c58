"""The share of the traffic in the bathtub's valleys is read on the workload's hit-rate
distribution, not at the solver's few class points: on the default scenario a re-provisioned
valley from 0.46 to 0.61 holds no class point (they sit at 0.15, 0.45 and 0.75 in the [0, 0.9)
bin), so the share moved from 0.04 to 0.06 with serving.hit_rate_points_per_bin, for the same
valleys. The agent-64k workload spreads 12% of its requests evenly over [0, 0.9): the share of
valleys inside that bin is their width x 0.12 / 0.9."""

from __future__ import annotations

import pytest

import pddplan


def _res(points: int):  # type: ignore[no-untyped-def]
    return pddplan.bathtub(overrides={"serving.hit_rate_points_per_bin": points}).analysis


def test_share_is_the_distributions_not_the_class_points() -> None:
    coarse, fine = _res(3), _res(10)
    assert [(v.start_x, v.end_x) for v in coarse.reprovisioned_valleys] == [
        (v.start_x, v.end_x) for v in fine.reprovisioned_valleys
    ]
    assert coarse.reprovisioned_valley_traffic_share == pytest.approx(
        fine.reprovisioned_valley_traffic_share, abs=1e-3
    )
    # every re-provisioned valley lies in [0, 0.9), where the bin is uniform
    valleys = coarse.reprovisioned_valleys
    assert valleys and all(v.end_x <= 0.9 for v in valleys)
    by_hand = sum(v.end_x - v.start_x for v in valleys) * 0.12 / 0.9
    assert coarse.reprovisioned_valley_traffic_share == pytest.approx(by_hand, abs=2e-3)
