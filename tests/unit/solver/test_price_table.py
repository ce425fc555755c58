"""The price table (:meth:`Solver._priced_candidate`) chooses the plan the search chooses.

A price sweep searches one rate's physics again at new prices; from its second search on, the
rate's price-independent part is kept in a table and each new set of prices picks from it.
These tests solve scenarios at many random prices with the table and without it (the search
alone) and compare every plan's figures to the bit: the PDD plan and the baselines, ties
(equal-cost fleets ranked by TTFT) included.
"""

from __future__ import annotations

import numpy as np
import pytest

from pddplan.errors import InfeasibleError
from pddplan.io.loader import Registry
from pddplan.io.overrides import ScenarioSource
from pddplan.solver import search as search_mod
from pddplan.solver import solve_scenario
from pddplan.solver.cache import DEFAULT_CACHE

MULTI = """kind: scenario
name: multi
model: qwen3-235b-a22b
workload: agent-64k
link: wan-100g-cross-city
rdma: rdma-400g
roles:
  P: {chips: [gpu-a, h100-sxm, h200-sxm], chips_per_instance: [8, 16]}
  RLD: {chips: [gpu-a, h100-sxm], chips_per_instance: [8]}
  MD: {chips: [gpu-b, h200-sxm, h20], chips_per_instance: [8, 16]}
baseline: {chip: gpu-a, chips_per_instance: 8}
sla: {ttft_p50_s: 5, ttft_p90_s: 10, ttft_p99_s: 20, tpot_ms: 50}
rate_rps: 2.35
"""


def _digest(plan) -> tuple:
    """Everything a plan reports that its choice decides (floats compared to the bit): its
    fleet and routing as the search's own key names them (:func:`plan_key`), the layouts, and
    its figures."""
    layouts = tuple(v[0].layout if v else None for _, v in sorted(plan.roles.items()))
    stall = float(np.max(plan.md_stall_s)) if np.size(plan.md_stall_s) else 0.0
    return (
        plan.topology,
        search_mod.plan_key(plan),
        layouts,
        plan.cost_usd_per_hour,
        plan.goodput_rps,
        tuple(plan.prefill.ttft_s),
        plan.prefill.instances,
        plan.rld_output_token_share,
        stall,
        tuple(plan.binding),
    )


def _outcome(src: ScenarioSource, overrides: dict) -> tuple:
    """The outcome's plans, and its notes (a baseline that cannot be sized says why: the
    search's error, which the table keeps for a rate where nothing fits)."""
    try:
        out = solve_scenario(src.resolve(overrides))
    except InfeasibleError as exc:
        return ("infeasible", str(exc), exc.binding)
    return (_digest(out.plan), tuple(_digest(b) for b in out.baselines), tuple(out.notes))


def _against_the_search(monkeypatch: pytest.MonkeyPatch, outcome, points: list) -> list:
    """``outcome`` of every point with the price tables, then with the search alone (the
    search cache emptied before each pass): the two must be equal. Returns the first pass's;
    a spy on the tables sees the first pass only."""
    DEFAULT_CACHE.clear()
    got = [outcome(ov) for ov in points]
    monkeypatch.setattr(search_mod.Solver, "_priced_candidate", lambda self, rate: None)
    DEFAULT_CACHE.clear()
    assert got == [outcome(ov) for ov in points]
    return got


def _chips(src: ScenarioSource) -> list[str]:
    rs = src.resolve({})
    names = {c.name for c in rs.chips.values()} if isinstance(rs.chips, dict) else set()
    return sorted(names)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts of the table's answers (a plan, or None: the search decided)."""
    seen = {"table": 0, "search": 0}
    real = search_mod.Solver._priced_candidate

    def spy(self, rate):
        plan = real(self, rate)
        seen["table" if plan is not None else "search"] += 1
        return plan

    monkeypatch.setattr(search_mod.Solver, "_priced_candidate", spy)
    return seen


def _source(name_or_text: str, tmp_path) -> ScenarioSource:
    reg = Registry.default()
    if name_or_text.startswith("kind:"):
        path = tmp_path / "multi.yaml"
        path.write_text(name_or_text)
        return ScenarioSource.open(str(path), reg)
    return ScenarioSource.open(name_or_text, reg)


@pytest.mark.parametrize(
    ("scenario", "chips"),
    [
        ("default", ["gpu-a", "gpu-b"]),
        ("pdd-paper", ["gpu-a", "gpu-b"]),
        (MULTI, ["gpu-a", "gpu-b", "h100-sxm", "h200-sxm", "h20"]),
    ],
    ids=["default", "pdd-paper", "multi-chip"],
)
def test_table_chooses_the_searchs_plan_at_random_prices(
    scenario: str, chips: list[str], tmp_path, counted, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _source(scenario, tmp_path)
    rng = np.random.default_rng(7)
    points = []
    for _ in range(24):
        ov = {
            f"chips.{c}.price_usd_per_hour": round(float(rng.uniform(0.3, 6.0)), 3) for c in chips
        }
        if rng.uniform() < 0.3:
            ov["link.price_usd_per_month"] = round(float(rng.uniform(1e3, 3e5)), 1)
        points.append(ov)
    # ties: the same chip at one price, so that equal-cost fleets of another routing abound
    points.append({f"chips.{c}.price_usd_per_hour": 2.0 for c in chips})
    _against_the_search(monkeypatch, lambda ov: _outcome(src, ov), points)
    assert counted["table"] > len(points)  # most searches were answered by the table


def test_table_sizes_the_options_it_left_unsized(
    tmp_path, counted, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table built where one prefill chip is far cheaper left the others unsized; when they
    become the cheaper ones, the table sizes them (the search's own sizing) and still
    chooses the search's plan."""
    src = _source(MULTI, tmp_path)
    grown = {"n": 0}
    real = search_mod.Solver._with_sized

    def spy(self, table, rate, options):
        grown["n"] += 1
        return real(self, table, rate, options)

    monkeypatch.setattr(search_mod.Solver, "_with_sized", spy)
    prices = [0.3, 0.31, 0.5, 1.0, 2.0, 4.0, 6.0, 8.0]
    points = [
        {"chips.gpu-a.price_usd_per_hour": p, "chips.h100-sxm.price_usd_per_hour": 8.3 - p}
        for p in prices
    ]
    _against_the_search(monkeypatch, lambda ov: _outcome(src, ov), points)
    assert grown["n"] > 0 and counted["table"] > 0


def test_near_ties_are_left_to_the_search(counted, monkeypatch: pytest.MonkeyPatch) -> None:
    """With every candidate a near tie (below the tie window, inside the gap), the table
    answers nothing and the search decides every plan (the same plans)."""
    monkeypatch.setattr(search_mod, "_TABLE_TIE", -1.0)
    monkeypatch.setattr(search_mod, "_TABLE_GAP", 1e6)
    src = ScenarioSource.open("default", Registry.default())
    points = [{"chips.gpu-b.price_usd_per_hour": p} for p in (2.0, 2.5, 3.0, 3.5)]
    _against_the_search(monkeypatch, lambda ov: _outcome(src, ov), points)
    assert counted["table"] == 0 and counted["search"] > 0


def test_one_solve_builds_no_table() -> None:
    """A table is built at the second search of one physics and rate, never at the first: a
    single solve does not pay for it."""
    DEFAULT_CACHE.clear()
    src = ScenarioSource.open("default", Registry.default())
    solve_scenario(src.resolve({}), baselines=False)
    keys = list(DEFAULT_CACHE._data)
    assert any(k[0] == "price-table-seen" for k in keys if isinstance(k, tuple))
    assert not any(k[0] == "price-table" for k in keys if isinstance(k, tuple))
    solve_scenario(src.resolve({"chips.gpu-b.price_usd_per_hour": 3.1}), baselines=False)
    assert any(k[0] == "price-table" for k in DEFAULT_CACHE._data if isinstance(k, tuple))


def test_a_rate_nothing_fits_raises_the_searchs_error_at_every_price(
    counted, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no plan fits (here: the line cannot carry the rate), every price raises the
    search's own error, with its message and binding."""
    src = ScenarioSource.open("default", Registry.default())
    points = [{"rate_rps": 40.0, "chips.gpu-b.price_usd_per_hour": p} for p in (2.0, 2.5, 3.0, 3.5)]
    got = _against_the_search(monkeypatch, lambda ov: _outcome(src, ov), points)
    assert all(g[0] == "infeasible" for g in got), got


def test_a_priced_prefix_cache_leaves_the_choice_to_the_search(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A prefix cache priced per P node adds a term to each plan's cost that the search's sums
    leave out (its visit settles on the plans' own costs): no table answers, and the plans
    are the search's."""
    text = MULTI.replace("name: multi", "name: multi-cache") + (
        "cache:\n"
        "  tiers:\n"
        "    - {profile: host-dram, capacity_gb_per_node: [1024]}\n"
        "    - {profile: local-nvme, capacity_gb_per_node: [4096]}\n"
        "  hit_rate:\n"
        "    sessions: {requests: 2000, seed: 0}\n"
    )
    from pddplan.tiers import sized

    src = _source(text, tmp_path)

    def outcome(ov: dict) -> tuple:
        rs, cache = sized(src.resolve(ov))  # the cache tiers, as a sweep's point sizes them
        assert cache is not None and cache["cache_usd_per_hour"] > 0
        out = solve_scenario(rs)
        return (_digest(out.plan), tuple(_digest(b) for b in out.baselines), tuple(out.notes))

    points = [
        {"chips.gpu-a.price_usd_per_hour": p, "chips.h100-sxm.price_usd_per_hour": 4.0 - p}
        for p in (1.0, 1.5, 2.0, 2.5)
    ]
    priced = {"cached": 0, "table with cache": 0}
    real_priced, real_choice = search_mod.Solver._priced_candidate, search_mod.Solver._table_choice

    def priced_spy(self, rate):
        priced["cached"] += self.pb.cache_cost_usd_per_hour(1) > 0
        return real_priced(self, rate)

    def choice_spy(self, key, table, rate):
        priced["table with cache"] += self.pb.cache_cost_usd_per_hour(1) > 0
        return real_choice(self, key, table, rate)

    monkeypatch.setattr(search_mod.Solver, "_priced_candidate", priced_spy)
    monkeypatch.setattr(search_mod.Solver, "_table_choice", choice_spy)
    _against_the_search(monkeypatch, outcome, points)
    # the PDD searches (whose problems carry the cache's price) never chose from a table
    assert priced["cached"] >= len(points) and priced["table with cache"] == 0


def test_an_instance_size_listed_twice_is_two_options(
    tmp_path, counted, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``chips_per_instance: [8, 16, 8]`` lists one instance kind twice (the schema allows
    it): the table numbers options by their place in the problem's list, as the search does,
    not by the instance objects (which the two places share)."""
    src = _source(MULTI, tmp_path)
    rng = np.random.default_rng(12)
    chips = ["gpu-a", "gpu-b", "h100-sxm", "h200-sxm", "h20"]
    points = []
    for _ in range(30):
        # equal prices half the time (ties between the two copies and across chips)
        ov = {
            f"chips.{c}.price_usd_per_hour": float(rng.choice([1.0, 2.0, 2.4]))
            if rng.uniform() < 0.5
            else round(float(rng.uniform(0.3, 6.0)), 2)
            for c in chips
        }
        ov["roles.P.chips_per_instance"] = [8, 16, 8]
        ov["rate_rps"] = float(rng.choice([1.0, 2.0, 2.35]))
        points.append(ov)
    _against_the_search(monkeypatch, lambda ov: _outcome(src, ov), points)
    assert counted["table"] > len(points)


def test_costs_whose_rounding_reaches_the_tolerance_are_left_to_the_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At chip prices near a million $/h (valid: the schema allows up to 1e9), a cost's last
    place is about 1e-8 $/h, past :func:`better_plan`'s 1e-9: the search's comparisons then
    depend on how each sum was rounded, so the table answers nothing there."""
    answered: list[float] = []  # the cost of each plan a table answered with
    real = search_mod.Solver._priced_candidate

    def spy(self, rate):
        plan = real(self, rate)
        if plan is not None:
            answered.append(plan.cost_usd_per_hour)
        return plan

    monkeypatch.setattr(search_mod.Solver, "_priced_candidate", spy)
    src = ScenarioSource.open("default", Registry.default())
    cheap = [{"chips.gpu-a.price_usd_per_hour": p} for p in (2.0, 2.1)]
    dear = [
        {
            "chips.gpu-a.price_usd_per_hour": 916580.6511230094,
            "chips.gpu-b.price_usd_per_hour": 924728.004122516,
        },
        {"chips.gpu-a.price_usd_per_hour": 9e5, "chips.gpu-b.price_usd_per_hour": 9e5},
    ]
    # the rate's table is built at the second cheap point; the dear ones go to the search
    _against_the_search(monkeypatch, lambda ov: _outcome(src, ov), [*cheap, *dear])
    assert answered and max(answered) < 1e5


def test_the_same_prices_choose_the_same_plan_without_ranking_again(
    counted, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweep of GPU-B's price leaves the same-datacenter baseline's prices (GPU-A's) as they
    are: its table answers each point from the choice it made at those prices, and every plan
    is still the search's."""
    picks = {"n": 0}
    real = search_mod.Solver._table_pick

    def spy(self, *args):
        picks["n"] += 1
        return real(self, *args)

    monkeypatch.setattr(search_mod.Solver, "_table_pick", spy)
    src = ScenarioSource.open("default", Registry.default())
    points = [{"chips.gpu-b.price_usd_per_hour": p} for p in (2.0, 2.2, 2.4, 2.6, 2.8, 3.0)]
    _against_the_search(monkeypatch, lambda ov: _outcome(src, ov), points)
    assert counted["table"] > 0 and picks["n"] < counted["table"]


def test_a_lone_cheapest_candidate_is_the_plan_the_ranking_of_ties_chooses(
    tmp_path, counted, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where one prefill option and one combination alone can reach the least cost's gap, the
    table takes them without ranking ties (:func:`_lone_candidate`); elsewhere it ranks. At
    random prices on the five-chip scenario both happen, and every plan is the search's."""
    seen = {"lone": 0, "ranked": 0}
    real = search_mod._lone_candidate

    def spy(*args):
        got = real(*args)
        seen["lone" if got is not None else "ranked"] += 1
        return got

    monkeypatch.setattr(search_mod, "_lone_candidate", spy)
    src = _source(MULTI, tmp_path)
    rng = np.random.default_rng(11)
    chips = ["gpu-a", "gpu-b", "h100-sxm", "h200-sxm", "h20"]
    points = [
        {f"chips.{c}.price_usd_per_hour": round(float(rng.uniform(0.3, 6.0)), 3) for c in chips}
        for _ in range(16)
    ]
    points += [{f"chips.{c}.price_usd_per_hour": 2.0 for c in chips}] * 2  # ties
    _against_the_search(monkeypatch, lambda ov: _outcome(src, ov), points)
    assert seen["lone"] > 0 and seen["ranked"] > 0


def test_a_flat_table_chooses_as_the_general_rule_does(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table whose every entry holds one prefill option and one combination (the default
    scenario's: one chip a role) finds its lone candidate, or the ties to rank, in fewer array
    operations (:func:`_flat_members`). At random prices and at prices where fleets of several
    routings cost the same, both happen, and every plan is the search's."""
    seen = {"lone": 0, "ties": 0}
    real = search_mod._flat_members

    def spy(*args):
        got = real(*args)
        if isinstance(got, tuple):
            seen["lone"] += 1
        elif got is not None:
            seen["ties"] += 1
        return got

    monkeypatch.setattr(search_mod, "_flat_members", spy)
    src = _source("default", tmp_path)
    rng = np.random.default_rng(5)
    chips = ["gpu-a", "gpu-b"]
    points = [
        {f"chips.{c}.price_usd_per_hour": round(float(rng.uniform(0.3, 6.0)), 3) for c in chips}
        for _ in range(12)
    ]
    points += [{f"chips.{c}.price_usd_per_hour": p for c in chips} for p in (1.0, 2.0, 2.0)]
    _against_the_search(monkeypatch, lambda ov: _outcome(src, ov), points)
    assert seen["lone"] > 0 and seen["ties"] > 0
