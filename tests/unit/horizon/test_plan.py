"""``horizon`` on the bundled example and on a flat load: the owned counts chosen equal an
exhaustive search over owned counts, every slot's fleet is the solver's plan at its rate with
the owned chips, and a flat load gives today's single-rate plan."""

from __future__ import annotations

import importlib
import itertools
from pathlib import Path

import pytest

import pddplan
from pddplan.results.horizon import HorizonResult

H = importlib.import_module("pddplan.horizon.plan")  # pddplan.horizon is the API function
ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = str(ROOT / "examples" / "agent-diurnal.yaml")


@pytest.fixture(scope="module")
def example() -> HorizonResult:
    return pddplan.horizon(EXAMPLE)


def test_newsvendor_owns_a_chip_busy_above_its_break_even_utilization() -> None:
    e = H.ChipEconomics(1.0, 0.5, 4.0, 0.2, 0.0, 1.0)
    # owning costs 1 + 0.2 * 0.5 = 1.1 $/h always and saves 4 - 0.8 * 0.5 = 3.6 $/h when busy
    assert H.break_even_utilization(e) == pytest.approx(1.1 / 3.6)
    slots = [H.Slot(0, "day", i, 1.0, None, 1.0) for i in range(10)]
    h = H.Horizon(lambda ov: None, {}, slots, 60, [], 1)
    # more than 8 chips needed in 3 of 10 hours (0.3 < 0.306): own 8
    needs = [{"x": 8}] * 7 + [{"x": 16}] * 2 + [{"x": 24}]
    assert H.newsvendor(h, needs, {"x": e}) == {"x": 8}
    # more than 8 in 4 of 10 hours, more than 16 in 1 of 10: own 16
    needs = [{"x": 8}] * 6 + [{"x": 16}] * 3 + [{"x": 24}]
    assert H.newsvendor(h, needs, {"x": e}) == {"x": 16}


@pytest.mark.slow
def test_the_chosen_owned_counts_equal_an_exhaustive_search(example: HorizonResult) -> None:
    h, econ = example.horizon, example.economics
    needs = [f.chips for f in example.choice.rent_all.fleets]
    grids = [H.breakpoints(needs, c) for c in sorted(econ)]
    costs = {}
    for counts in itertools.product(*grids):
        owned = {c: n for c, n in zip(sorted(econ), counts, strict=True) if n > 0}
        costs[counts] = H.evaluate(h, owned, econ).total_usd
    best = min(costs, key=lambda k: costs[k])
    chosen = tuple(example.owned.get(c, 0) for c in sorted(econ))
    assert chosen == best
    assert example.choice.best.total_usd == pytest.approx(costs[best])
    # and it is worth choosing: the grid's corners cost more
    assert costs[best] < costs[tuple(0 for _ in grids)]
    assert costs[best] < costs[tuple(g[-1] for g in grids)]


@pytest.mark.slow
def test_every_slot_fleet_is_the_solve_at_its_rate_with_the_owned_chips(
    example: HorizonResult,
) -> None:
    owned = example.owned
    seen: dict[tuple[float, int | None], tuple] = {}
    for s, f in example.slot_fleets():
        seen.setdefault((s.rate_rps, s.hit), H.fleet_key(f.plan))
    for (rate, _hit), key in seen.items():
        r = pddplan.solve(EXAMPLE, rate_rps=rate, own=owned, verdict_check=False, baselines=False)
        assert H.fleet_key(r.outcome.plan) == key, rate


def test_a_flat_load_gives_todays_single_rate_plan(tmp_path: Path) -> None:
    text = (ROOT / "examples" / "agent-diurnal.yaml").read_text()
    head = text.split("\nload:")[0]
    flat = tmp_path / "flat.yaml"
    flat.write_text(
        head + "\nload:\n  slot_minutes: 480\n  day_rate_rps: [1.5, 1.5, 1.5]\n"
        "  growth: {monthly_rate: 0}\n"
    )
    res = pddplan.horizon(str(flat))
    today = pddplan.solve(str(flat), rate_rps=1.5, verdict_check=False, baselines=False)
    plan = today.outcome.plan
    assert {H.fleet_key(f.plan) for _, f in res.slot_fleets()} == {H.fleet_key(plan)}
    # always busy, owning beats renting (break-even utilization below 1): the plan is owned
    assert res.owned == plan.chips_of()
    owned_solve = pddplan.solve(
        str(flat), rate_rps=1.5, own=res.owned, verdict_check=False, baselines=False
    )
    assert H.fleet_key(owned_solve.outcome.plan) == H.fleet_key(plan)
    rows = {r["strategy"]: r for r in res.strategy_rows()}
    assert rows["own-for-peak"]["horizon_cost_usd"] == pytest.approx(
        rows["chosen"]["horizon_cost_usd"]
    )
    assert all(v == pytest.approx(1.0) for v in res.choice.best.busy_share.values())


def test_a_slot_with_its_own_hit_rates_is_solved_with_them(tmp_path: Path) -> None:
    text = (ROOT / "examples" / "agent-diurnal.yaml").read_text()
    s = tmp_path / "hit.yaml"
    s.write_text(
        text.split("\nload:")[0] + "\nload:\n  slot_minutes: 720\n  day_rate_rps: [0.6, 0.6]\n"
        "  hit_rate:\n    - {beta: {a: 8, b: 2}}\n    - {beta: {a: 3, b: 2}}\n"
    )
    res = pddplan.horizon(str(s))
    fleets = {sl.slot: f for sl, f in res.slot_fleets() if sl.month == 0}
    # the same solve with a workload profile whose hit rates are the slot's
    base = (ROOT / "profiles" / "workloads" / "agent-64k.yaml").read_text()
    head, rest = base.split("\nhit_rate:\n", 1)
    tail = rest[rest.index("\nanomalous:") :]
    (tmp_path / "workloads").mkdir()
    for slot, beta in ((0, "{a: 8, b: 2}"), (1, "{a: 3, b: 2}")):
        name = f"agent-slot{slot}"
        wl = (
            head.replace("name: agent-64k", f"name: {name}") + f"\nhit_rate:\n  beta: {beta}" + tail
        )
        (tmp_path / "workloads" / f"{name}.yaml").write_text(wl)
        r = pddplan.solve(
            str(s),
            rate_rps=0.6,
            own=res.owned,
            overrides={"workload": name},
            profiles=[tmp_path],
            verdict_check=False,
            baselines=False,
        )
        assert H.fleet_key(r.outcome.plan) == fleets[slot].key
    # low hit rates need more: the two slots' fleets differ
    assert fleets[0].key != fleets[1].key


def test_owned_chips_opex_is_owned_cost_and_rent_is_only_rent(example: HorizonResult) -> None:
    """An inventory that owns every slot's peak rents nothing: its rented cost is 0, and its
    owned cost holds the owned chips' whole opex, busy hours included (that busy opex was
    booked as rent: 209,778 $ of "rent" for a fleet that rents no chip in any slot)."""
    peak = example.choice.own_peak
    assert all(f.chips.get(c, 0) <= peak.owned.get(c, 0) for f in peak.fleets for c in f.chips)
    assert peak.rented_usd == 0.0
    h, econ = example.horizon, example.economics
    hours = sum(s.hours for s in h.slots)
    fixed = sum(n * econ[c].fixed_usd_per_chip_hour for c, n in peak.owned.items()) * hours
    assert peak.owned_usd > fixed  # the busy hours' opex is the owned chips' cost
    assert peak.total_usd == pytest.approx(sum(peak.by_month_usd), rel=1e-12)


def test_a_horizon_of_a_fraction_of_a_month_is_refused() -> None:
    # the horizon bills whole months at prices amortized over the years: 1.3 years (15.6
    # months) rounded to 16 billed 102.6% of the owned chips' capex; it is refused, naming
    # the key and the whole-month values on either side
    from pddplan.errors import ProfileError

    with pytest.raises(ProfileError) as err:
        pddplan.horizon(EXAMPLE, overrides={"inventory.amortization_years": 1.3})
    msg = str(err.value)
    assert "inventory.amortization_years" in msg and "15.6 months" in msg
    assert "1.25 for 15" in msg and "1.33333 for 16" in msg
    # a whole number of months written to four digits (1/3 year + 1 year) is accepted
    res = pddplan.horizon(EXAMPLE, overrides={"inventory.amortization_years": 1.3333})
    assert res.horizon.months == 16


def test_an_elastic_chip_no_role_uses_is_a_fault_of_the_file(tmp_path: Path) -> None:
    # it was found by the horizon command alone, as an option error without file or line, and
    # `profiles validate` passed the file
    from pddplan.errors import ProfileError

    text = (
        Path(EXAMPLE)
        .read_text(encoding="utf-8")
        .replace("    h100-sxm: {startup_minutes: 10", "    h2O: {startup_minutes: 10")
    )
    assert "h2O" in text
    f = tmp_path / "typo.yaml"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(
        ProfileError, match=r"typo\.yaml.*load\.elastic: h2O is no chip of the roles"
    ):
        pddplan.load_scenario(str(f))
