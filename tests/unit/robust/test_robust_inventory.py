"""robust prices fleets as solve does, under every inventory mode.

With every sample at the point estimate (the sampler patched to return no overrides), the point
plan's cost on each sample is the cost solve gives it, the robust plan is the point plan, and the
robust plan's cost is the sum of its procurement rows (owned, rented and bought chips, and the
line). Before the plan builder was shared, robust priced every chip at rental: with 40 owned
H100 it sampled a 122.4 $/h plan at 190.6 $/h.
"""

from __future__ import annotations

import math

import pytest

import pddplan
from pddplan.robust import run as robust_run
from pddplan.solver.plan import cost_split

CAPEX = {"chips.gpu-a.price.capex_usd": 10_000.0, "chips.gpu-b.price.capex_usd": 10_000.0}
MODES = {
    "none": {},
    "owned-amortized": {"inventory.owned": {"gpu-a": 16}, **CAPEX},
    "owned-sunk": {
        "inventory.owned": {"gpu-a": 16, "gpu-b": 8},
        "inventory.owned_cost": "sunk",
        "inventory.opex_usd_per_chip_hour": 0.25,
    },
    "additional-buy": {"inventory.additional": "buy", **CAPEX},
}


def _rows_usd_per_hour(plan) -> float:
    return sum(c.cost_usd_per_hour for c in cost_split(plan)) + plan.link_cost_usd_per_hour


@pytest.mark.parametrize("mode", sorted(MODES))
def test_robust_prices_as_solve(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    overrides = MODES[mode]
    monkeypatch.setattr(robust_run, "sample_overrides", lambda inputs, x: [{} for _ in x])
    solved = pddplan.solve("examples/pdd-paper.yaml", overrides=overrides)
    plan = solved.outcome.plan
    res = pddplan.robust("examples/pdd-paper.yaml", overrides=overrides, samples=3, seed=1)
    run = res.run
    assert run.point.plan.cost_usd_per_hour == pytest.approx(plan.cost_usd_per_hour, rel=1e-9)
    for cost in run.cost_usd_per_hour:
        assert cost == pytest.approx(plan.cost_usd_per_hour, rel=1e-9)
    assert run.robust is not None
    rplan = run.robust.outcome.plan
    assert run.robust.counts == run.robust.config.base
    assert run.robust.expected_cost_usd_per_hour == pytest.approx(plan.cost_usd_per_hour, rel=1e-9)
    assert rplan.cost_usd_per_hour == pytest.approx(plan.cost_usd_per_hour, rel=1e-9)
    assert rplan.cost_usd_per_hour == pytest.approx(_rows_usd_per_hour(rplan), rel=1e-9)
    assert math.isclose(res.cost_premium or 0.0, 0.0, abs_tol=1e-9)


def test_inventory_modes_price_differently() -> None:
    """The modes above are not one price in disguise (the test would pass vacuously)."""
    costs = {
        m: pddplan.solve("examples/pdd-paper.yaml", overrides=ov).outcome.plan.cost_usd_per_hour
        for m, ov in MODES.items()
    }
    assert len({round(c, 6) for c in costs.values()}) == len(costs), costs


def test_a_sample_whose_chip_no_longer_fits_is_priced_at_its_rental(tmp_path) -> None:
    # GPU-B's memory drawn from 20 to 141 GB: on samples where no MD instance of it holds the
    # model, the point fleet cannot be built there and is priced by its counts at the rental
    # of each chip the scenario loaded (it raised KeyError: the prices came from the options
    # that fit)
    from pddplan.io.loader import Registry

    text = Registry.default().scenario_path(None).read_text(encoding="utf-8")
    text += (
        "uncertainty:\n  source: a test\n  defaults: false\n  inputs:\n"
        "    chips.gpu-b.datasheet.memory_gb: {uniform: {low: 20, high: 141}}\n"
    )
    f = tmp_path / "s.yaml"
    f.write_text(text, encoding="utf-8")
    res = pddplan.robust(str(f), samples=20, seed=1, jobs=1)
    run = res.run
    point = res.point.outcome.plan
    unfit = [i for i in range(run.samples) if not run.meets[i] and run.x[i, 0] < 40]
    assert unfit  # some samples leave GPU-B too small for the model
    for i in unfit:
        # no fleet: its counts at the chips' rental, plus the line
        assert run.cost_usd_per_hour[i] == pytest.approx(point.cost_usd_per_hour, rel=1e-12)
