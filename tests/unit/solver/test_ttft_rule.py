"""The TTFT rule read on the CDF (sla.reaches_percentiles) against the computed percentiles."""

from __future__ import annotations

import numpy as np
import pytest

from pddplan.io.loader import Registry, load_scenario
from pddplan.models import queueing
from pddplan.solver import Solver, build_problem, sla
from pddplan.solver.fleet import check_fleet
from pddplan.solver.problem import PERCENTILES


@pytest.fixture(scope="module")
def solver() -> Solver:
    rs = load_scenario("default", Registry.default(), {"rate_rps": 2.0})
    return Solver(build_problem(rs))


def test_nobody_waits_has_zero_survival_past_zero() -> None:
    assert queueing.wait_survival(0.5, 0.0, 0.0) == 0.0
    assert queueing.wait_survival(-0.5, 0.0, 0.0) == 1.0
    f = queueing.mixture_cdf([0.5, 1.5], [1.0, 2.0], [0.5, 0.5], 0.0)
    np.testing.assert_array_equal(f, [0.0, 0.5])


@pytest.mark.parametrize("seed", range(6))
def test_cdf_rule_agrees_with_the_percentiles_away_from_their_precision(
    solver: Solver, seed: int
) -> None:
    """At every prefill count around the sized one, targets a little above each computed
    percentile are met and a little below are missed, by both rules."""
    rng = np.random.default_rng(seed)
    plan = solver.solve_rate(2.0)
    p_inst, n = plan.roles["P"]
    offs, wts, _ = solver.ttft_offsets(p_inst, plan.route)
    rate = 2.0 * float(rng.uniform(0.5, 1.2))
    for count in (n, n + 1, n + 3):
        q, _, util = solver.ttft_at(p_inst, count, rate, offs, wts)
        if util >= 1:
            continue
        wait = solver.prefill_wait(p_inst, count, rate)
        for scale, expected in ((1 + 1e-5, True), (1 - 1e-5, False)):
            i = int(rng.integers(3))
            targets = [v * (1 + 1e-3) for v in q]
            targets[i] = q[i] * scale
            f = queueing.mixture_cdf(
                sla.slack_targets(targets),
                offs,
                wts,
                wait.wait_probability,
                conditional=wait.conditional,
            )
            assert sla.reaches_percentiles(f.tolist(), PERCENTILES) is expected
            assert sla.meets_targets(q, targets) is expected


def test_fleet_check_without_figures_decides_the_same(solver: Solver) -> None:
    plan = solver.solve_rate(2.0)
    for rate in np.linspace(0.2, 6.0, 25):
        full = check_fleet(solver, plan, float(rate))
        lean = check_fleet(solver, plan, float(rate), figures=False)
        assert full.meets_sla == lean.meets_sla
        assert np.isnan(lean.ttft_s).all()
        # the margin read on the CDF crosses zero where the percentiles' does: the same sign
        assert (lean.margin <= 0) == (full.margin <= 0) == full.meets_sla
        if full.meets_ttft:
            assert sla.meets_targets(full.ttft_s, solver.pb.ttft_targets_s)


@pytest.mark.parametrize("factor", [0.1, 0.64, 0.95, -0.5])
def test_fixed_point_reaches_the_contractions_point(factor: float) -> None:
    from pddplan.solver.sizing import fixed_point

    calls = {"n": 0}

    def phi(s: float) -> float:
        calls["n"] += 1
        return min(0.03 + factor * (s - 0.03) + 1e-3 * (s - 0.03) ** 2, 0.05)

    got = fixed_point(phi, 0.05, 1e-12)
    assert abs(phi(got) - got) <= 1e-11
    assert abs(got - 0.03) <= 1e-9
    assert calls["n"] < 40  # plain iteration at 0.95 takes about 500


def test_fixed_point_at_a_clipped_end() -> None:
    from pddplan.solver.sizing import fixed_point

    # phi clips at its cap: the fixed point is the cap itself
    assert fixed_point(lambda s: min(0.5 * s + 0.04, 0.05), 0.0, 1e-12) == 0.05


def test_missed_targets_names_what_meets_targets_fails_on() -> None:
    targets = (5.0, 10.0, 20.0)
    # within the SLA's relative slack (rounding) is met; beyond it is missed
    assert sla.missed_targets((5.0 * (1 + 1e-10), 9.0, 20.0), targets) == []
    assert sla.missed_targets((5.0 * (1 + 1e-8), 9.0, 25.0), targets) == [0, 2]
    rng = np.random.default_rng(11)
    for _ in range(200):
        values = tuple(t * rng.uniform(0.5, 1.5) for t in targets)
        assert (sla.missed_targets(values, targets) == []) == sla.meets_targets(values, targets)
    # the names follow the SLA's percentiles and keys
    from pddplan.spec.scenario_spec import Sla

    assert sla.TTFT_PERCENTILES == PERCENTILES
    assert set(sla.TTFT_TARGET_KEYS) <= set(Sla.model_fields)
    assert sla.TTFT_LABELS == ("TTFT p50", "TTFT p90", "TTFT p99")
