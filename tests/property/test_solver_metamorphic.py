"""Metamorphic properties of the exact modes (issue 13).

More line bandwidth at one price never lowers the best BCR; a higher chip price never raises it and never
lowers the least cost at a rate; looser TTFT targets never lower the best BCR. Each compares two
exact searches on a small scenario (two P chips, two RLD chips, two MD chips) up to a rate cap.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pddplan.errors import InfeasibleError
from pddplan.io.loader import Registry, load_scenario
from pddplan.solver.modes import PlanSearch, solve_max_bcr
from pddplan.solver.problem import PDD, build_problem

ROLES = {
    "P": {"chips": ["gpu-a", "h800-sxm"], "chips_per_instance": [8]},
    "RLD": {"chips": ["gpu-a"], "chips_per_instance": [8]},
    "MD": {"chips": ["gpu-b", "h20"], "chips_per_instance": [8]},
}
SETTINGS = settings(
    max_examples=int(os.environ.get("PDDPLAN_MM_EXAMPLES", "6")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
#: the goodput of each fleet is exact to 1e-7; comparisons allow 1e-6
RTOL = 1e-6


def _search(patch: dict, bandwidth_scale: float = 1.0) -> PlanSearch:
    rs = load_scenario("examples/pdd-paper.yaml", Registry.default(), {"roles": ROLES, **patch})
    return PlanSearch([build_problem(rs, PDD, bandwidth_scale)])


def _best_bcr(patch: dict, hi: float, bandwidth_scale: float = 1.0) -> float:
    try:
        return solve_max_bcr(_search(patch, bandwidth_scale), hi).bcr_requests_per_usd
    except InfeasibleError:
        return 0.0


@pytest.mark.slow
@SETTINGS
@given(
    scale=st.floats(min_value=0.3, max_value=2.0),
    more=st.floats(min_value=1.05, max_value=3.0),
    hi=st.floats(min_value=0.5, max_value=4.0),
)
def test_more_bandwidth_never_lowers_best_bcr(scale: float, more: float, hi: float) -> None:
    # at one price: the line's price follows its bandwidth through its tiers, and a dearer
    # line can lower the best BCR, so the line is given a flat price here
    flat = {"overrides": {"links": {"pdd-paper-line": {"price_usd_per_month": 20000.0}}}}
    slow = _best_bcr(flat, hi, scale)
    fast = _best_bcr(flat, hi, scale * more)
    assert fast >= slow * (1 - RTOL)


def _priced(price: float) -> dict:
    return {"overrides": {"chips": {"gpu-b": {"price": {"rental_usd_per_hour": price}}}}}


@pytest.mark.slow
@SETTINGS
@given(
    price=st.floats(min_value=1.0, max_value=6.0),
    more=st.floats(min_value=1.01, max_value=2.0),
    hi=st.floats(min_value=0.5, max_value=4.0),
)
def test_higher_price_never_raises_best_bcr(price: float, more: float, hi: float) -> None:
    cheap = _best_bcr(_priced(price), hi)
    dear = _best_bcr(_priced(price * more), hi)
    assert dear <= cheap * (1 + RTOL)


@SETTINGS
@given(
    price=st.floats(min_value=1.0, max_value=6.0),
    more=st.floats(min_value=1.01, max_value=2.0),
    rate=st.floats(min_value=0.1, max_value=6.0),
)
def test_higher_price_never_lowers_least_cost(price: float, more: float, rate: float) -> None:
    try:
        cheap = _search(_priced(price)).solve_rate(rate).cost_usd_per_hour
    except InfeasibleError:
        return
    dear = _search(_priced(price * more)).solve_rate(rate).cost_usd_per_hour
    assert dear >= cheap * (1 - 1e-12)


@pytest.mark.slow
@SETTINGS
@given(
    p50=st.floats(min_value=0.5, max_value=6.0),
    looser=st.floats(min_value=1.05, max_value=3.0),
    hi=st.floats(min_value=0.5, max_value=4.0),
)
def test_looser_ttft_targets_never_lower_best_bcr(p50: float, looser: float, hi: float) -> None:
    def sla(k: float) -> dict:
        return {
            "sla": {
                "ttft_p50_s": p50 * k,
                "ttft_p90_s": 2 * p50 * k,
                "ttft_p99_s": 4 * p50 * k,
                "tpot_ms": 50,
            }
        }

    assert _best_bcr(sla(looser), hi) >= _best_bcr(sla(1.0), hi) * (1 - RTOL)
