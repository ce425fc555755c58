"""The search's shortcuts change no result: the lazy cost order, the pruned prefill options and
the memoized gamma quantiles give what the plain computation gives."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pddplan import units
from pddplan.errors import InfeasibleError
from pddplan.io.loader import Registry, load_scenario
from pddplan.models import queueing
from pddplan.solver import Solver, build_problem
from pddplan.solver import search as search_mod
from pddplan.solver.cache import SearchCache

SMALL = {
    "roles": {
        "P": {"chips": ["gpu-a", "h800-sxm", "h20"], "chips_per_instance": [4, 8, 16]},
        "RLD": {"chips": ["gpu-a", "h20"], "chips_per_instance": [4, 8]},
        "MD": {"chips": ["gpu-b", "h20"], "chips_per_instance": [4, 8]},
    }
}


def _matrix_order(a: np.ndarray, b: np.ndarray) -> list[tuple[int, int, str]]:
    tot = a[:, None] + b[None, :]
    return [(i, j, float(v).hex()) for i, j, v in search_mod._cost_order(tot)]


@pytest.mark.parametrize("few", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_sum_order_is_the_stable_order_of_the_sum_matrix(seed: int, few: bool) -> None:
    rng = np.random.default_rng(seed)
    if few:  # the sums sorted at once (search._FEW_SUMS)
        na, nb = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    else:
        na, nb = int(rng.integers(1, 25)), int(rng.integers(1, 300))
    if seed % 2:  # many equal sums: ties must follow the flat index
        a = rng.integers(1, 12, na) * 6.25
        b = rng.integers(0, 40, nb) * 1.5
    else:
        a = np.round(rng.random(na) * 80, 2)
        b = np.round(rng.random(nb) * 30, 1)
    want = _matrix_order(a, b)
    got = [(i, j, v.hex()) for i, j, v in search_mod._sum_order(a, b)]
    assert got == want
    k = int(rng.integers(1, len(want) + 1))  # a prefix, as the search consumes it
    assert [(i, j, v.hex()) for i, j, v in itertools.islice(search_mod._sum_order(a, b), k)] == (
        want[:k]
    )


def _plan_figures(plan) -> tuple:
    roles = tuple(
        (r, v[0].chip.name, v[0].tensor_parallel, v[1]) if v else (r, None)
        for r, v in sorted(plan.roles.items())
    )
    return (
        plan.cost_usd_per_hour,
        roles,
        plan.routing,
        plan.handover,
        plan.prefill.ttft_s,
        plan.prefill.instances,
    )


#: (rate, inventory limits) of the SMALL catalog's searches
SMALL_CASES = [(0.8, None), (2.35, None), (4.0, None), (2.35, {"gpu-a": 24}), (2.35, {"h20": 40})]


def _small_plan(rs, rate: float, max_chips: dict | None) -> tuple:
    """The figures of the plan a fresh search on ``rs`` returns at ``rate``."""
    pb = build_problem(rs)
    if max_chips:
        pb.max_chips = dict(max_chips)
    return _plan_figures(Solver(pb, SearchCache()).solve_rate(rate))


@pytest.mark.parametrize(("rate", "max_chips"), SMALL_CASES)
def test_pruned_prefill_options_give_the_full_search_plan(
    rate: float, max_chips: dict | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    rs = load_scenario("examples/pdd-paper.yaml", Registry.default(), SMALL)

    def solve() -> tuple:
        return _small_plan(rs, rate, max_chips)

    pruned = solve()
    with monkeypatch.context() as m:  # every prefill option sized, as without the pruning
        m.setattr(
            search_mod._PrefillOptions,
            "up_to",
            lambda self, rm_min: (self.all(), float("inf")),
        )
        full = solve()
    assert pruned == full


def test_gamma_quantiles_memo_returns_what_it_computes() -> None:
    offs = np.array([0.5, 1.0, 1.5, 3.0, 7.0])
    wts = np.array([0.1, 0.3, 0.2, 0.3, 0.1])
    args = ([0.5, 0.9, 0.99], offs, wts, 0.6, 1.7, 1.4)
    queueing._GAMMA_MEMO.clear()
    first = queueing.mixture_quantiles(*args)
    again = queueing.mixture_quantiles(*args)
    assert again == first
    queueing._GAMMA_MEMO.clear()
    assert queueing.mixture_quantiles(*args) == first
    # each is where the CDF reaches p (at a jump, or where it rises through p)
    for p, q in zip(args[0], first, strict=True):
        assert queueing.mixture_cdf(q, offs, wts, 0.6, 1.7, 1.4) >= p - 1e-5
        assert queueing.mixture_cdf(q * (1 - 1e-6), offs, wts, 0.6, 1.7, 1.4) <= p + 1e-5


@pytest.mark.parametrize("rate", [1.4, 1.55, 3.75, 4.7])
def test_rld_counts_sized_once_per_concurrency_are_each_pairs_own(rate: float) -> None:
    """The search sizes RLD once per distinct (RLD concurrency of an MD row, RLD option's batch)
    (many rows and options share one); every (MD row, RLD option) pair's count is the
    slot-wait search of that pair alone, element by element over the whole (row, option) grid,
    as it was computed before."""
    layouts = {
        "P": {"chips": ["gpu-a"], "chips_per_instance": [8]},
        "RLD": {"chips": ["gpu-a", "h20"], "chips_per_instance": [4, 8, 16]},
        "MD": {"chips": ["gpu-b", "h20", "h800-sxm"], "chips_per_instance": [4, 8, 16]},
    }
    rs = load_scenario("examples/pdd-paper.yaml", Registry.default(), {"roles": layouts})
    pb = build_problem(rs)
    solver = Solver(pb, SearchCache())
    checked = shared = varied = 0
    for routing in pb.routings:
        route = solver.route(rate, routing)
        for mode in pb.handover_modes:
            md_rows, pairs = solver._decode_sizings_compute(rate, route, mode)
            r_ok = sorted({int(r) for r in pairs.rld if r >= 0})
            if not md_rows or not r_ok:
                continue
            conc = pairs._conc
            b = np.array([pairs._b_r[ri] for ri in r_ok], dtype=float)
            n0 = np.maximum(np.ceil(conc[:, None] / b[None, :] - units.COUNT_ROUNDING), 1.0)
            want = queueing.units_for_wait_array(
                np.broadcast_to(conc[:, None], n0.shape),
                b[None, :],
                n0.astype(np.int64),
                pb.decode_slot_wait_probability_cap,
            )
            assert pairs.rld_instances.tolist() == want.ravel().tolist()
            checked += want.size
            shared += len(conc) - len(np.unique(conc)) + len(b) - len(np.unique(b))
            varied += int((want != want[:1]).any())
    assert checked > 100
    assert shared > 0  # rows share a concurrency, or options a batch: the shortcut was taken
    assert varied > 0  # and some rows' counts differ: a count given to the wrong row shows


@pytest.mark.parametrize("rate", [0.8, 2.0, 3.3])
def test_one_md_row_and_one_rld_option_are_sized_as_the_grid_sizes_them(rate: float) -> None:
    """With one MD row and one RLD option (the default scenario's layouts) the search sizes
    the pair without looking for shared values: its count is still that pair's slot-wait
    search, and relayed routings are among those checked."""
    rs = load_scenario(None, Registry.default())
    pb = build_problem(rs)
    assert len(pb.options["MD"]) == 1 and len(pb.options["RLD"]) == 1
    solver = Solver(pb, SearchCache())
    relayed = 0
    for routing in pb.routings:
        route = solver.route(rate, routing)
        for mode in pb.handover_modes:
            md_rows, pairs = solver._decode_sizings_compute(rate, route, mode)
            if not md_rows or not (pairs.rld >= 0).any():
                continue
            b = float(pairs._b_r[0])
            conc = float(pairs._conc[0])
            n0 = max(int(np.ceil(conc / b - units.COUNT_ROUNDING)), 1)
            want = queueing.units_for_wait_array(
                np.array([[conc]]),
                np.array([[b]]),
                np.array([[n0]]),
                pb.decode_slot_wait_probability_cap,
            )
            assert pairs.rld_instances.tolist() == want.ravel().tolist()
            relayed += 1
    assert relayed > 0


@pytest.mark.parametrize("rate", [0.3, 1.55, 2.35, 3.2, 4.4])
@pytest.mark.parametrize("scenario", ["examples/pdd-paper.yaml", None])
def test_variants_pruned_by_the_best_so_far_give_the_unpruned_choice(
    scenario: str | None, rate: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PlanSearch hands each variant the cost of the best plan so far (``above``): the plan
    it returns is the one the variants' full searches, compared by better_plan, give; and the
    pruning skips routes (a variant's search sizes fewer decode combinations)."""
    from pddplan.solver.answer import _problems
    from pddplan.solver.modes import Finals, PlanSearch
    from pddplan.solver.search import better_plan

    rs = load_scenario(scenario, Registry.default())
    problems = _problems(rs, None)
    assert len(problems) == 2  # the anomalous filter on, and off
    calls = {"n": 0}
    best_for = Solver._best_for

    def counted(self, *a, **k):
        calls["n"] += 1
        return best_for(self, *a, **k)

    monkeypatch.setattr(Solver, "_best_for", counted)
    search = PlanSearch(problems, SearchCache())
    got = search.candidate_rate(rate)
    pruned_calls = calls["n"]
    calls["n"] = 0
    full = [Solver(pb, SearchCache())._search(rate, None) for pb in problems]
    full_calls = calls["n"]
    final = Finals(search)
    want = full[0]
    for plan in full[1:]:
        if better_plan(plan, want, final.ttft_s):
            want = plan
    assert _plan_figures(search.finalized(got)) == _plan_figures(search.finalized(want))
    assert got.problem is want.problem
    assert pruned_calls <= full_calls
    if scenario is None and rate in (1.55, 3.2):  # the second variant wholly pruned there
        assert pruned_calls < full_calls
    # below the second variant's least cost, its search returns a dearer plan or says so
    second = Solver(problems[1], SearchCache())
    least = full[1].cost_usd_per_hour
    try:
        dearer = second.candidate_rate(rate, above=least - 1.0)
    except InfeasibleError as exc:
        assert exc.binding == "cost"
    else:
        assert dearer.cost_usd_per_hour > least - 1.0


@pytest.mark.parametrize(("rate", "max_chips"), SMALL_CASES)
def test_route_modes_beaten_by_the_incumbent_give_the_full_search_plan(
    rate: float, max_chips: dict | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A route and hand-over mode whose cheapest decode combination, least prefill lower
    bound and line already cost more than the search's best is skipped (Solver._best_for's
    _BEATEN); the plan is the one the search gives without the skip, and the skip happens."""
    rs = load_scenario("examples/pdd-paper.yaml", Registry.default(), SMALL)
    beaten = {"n": 0}
    best_for = Solver._best_for

    def counted(self, *a, **k):
        out = best_for(self, *a, **k)
        beaten["n"] += out is search_mod._BEATEN
        return out

    monkeypatch.setattr(Solver, "_best_for", counted)

    def solve() -> tuple:
        return _small_plan(rs, rate, max_chips)

    skipping = solve()
    skipped = beaten["n"]
    with monkeypatch.context() as m:  # no lower bound: nothing is beaten before its visit
        m.setattr(search_mod._PrefillOptions, "least_lower_bound", lambda self: -math.inf)
        full = solve()
    assert skipping == full
    if rate == 2.35:  # there, some route and mode is beaten before its visit
        assert skipped > 0


TIGHT_TTFT = {"sla": {"ttft_p50_s": 3.0, "ttft_p90_s": 6.0, "ttft_p99_s": 12.0}}


@pytest.mark.parametrize("patch", [None, TIGHT_TTFT])
def test_prefill_count_is_the_fewest_instances_that_meet_the_targets(patch: dict | None) -> None:
    """The prefill sizing (the cap's count, one more, then doubling and halving) gives the
    fewest instances from the cap's count on that meet every TTFT target, found by trying each
    count in turn; both paths are taken (one more than the cap's count on the default targets,
    two or more on tighter ones)."""
    rs = load_scenario(None, Registry.default(), patch)
    s = Solver(build_problem(rs), SearchCache())
    extra: set[int] = set()
    for rate in (0.3, 0.8, 1.55, 2.35, 3.2, 4.4):
        for routing in s.pb.routings:
            route = s.route(rate, routing)
            for inst in s.pb.options["P"]:
                got = s.prefill_count(inst, rate, route)
                n = s.prefill_cap_count(inst, rate)
                offs, wts, _ = s.ttft_offsets(inst, route)
                if not s.ttft_meets(inst, n, rate, offs, wts) and not s.cdf_meets(offs, wts):
                    assert got is None
                    continue
                want = n
                while not s.ttft_meets(inst, want, rate, offs, wts):
                    want += 1
                assert got is not None and got.instances == want
                extra.add(want - n)
    assert 1 in extra if patch is None else max(extra) >= 2


@pytest.mark.parametrize("rate", [1.56, 2.03, 2.53])
def test_prunings_hold_where_costs_round_past_the_tie(
    rate: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At costs of tens of millions of dollars an hour, a lower bound and a plan's cost that
    add the same terms in another order differ by more than the 1e-9 $/h tie: the prunings
    against another variant's plan and per hand-over mode allow for it (search._past_tie), so
    the plan is the one the search gives without them (at 2.53 req/s the variant without the
    anomalous filter ties on cost and wins on TTFT; without the allowance it was pruned)."""
    from pddplan.io.overrides import ScenarioSource
    from pddplan.solver.answer import _problems
    from pddplan.solver.modes import PlanSearch

    rs = ScenarioSource.open(None, Registry.default()).resolve(
        {
            "chips.gpu-a.price_usd_per_hour": 245582.03573598276,
            "chips.gpu-b.price_usd_per_hour": 225068.26447876432,
        }
    )

    def plan() -> tuple:
        return _plan_figures(PlanSearch(_problems(rs, None), SearchCache()).solve_rate(rate))

    pruned = plan()
    assert pruned[0] > 1e7  # costs where the rounding reaches the tie
    with monkeypatch.context() as m:  # no pruning against any incumbent
        m.setattr(search_mod, "_past_tie", lambda cost: math.inf)
        full = plan()
    assert pruned == full


@pytest.mark.parametrize("rate", [2.7386447594866588, 3.1823558399973613])
def test_route_pruning_against_the_own_best_holds_where_costs_round_past_the_tie(
    rate: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search's pruning of a route against its own best allows for the rounding of the sums
    too (search._past_tie): at 3e7 $/h (pdd-paper, gpu-a at 250,276 $/h, gpu-b at 465,938 $/h)
    a route's lower bound came out more than 1e-9 $/h above the best so far while the route
    held a plan of equal cost that wins on TTFT, and the route was pruned (10 of 240 searches
    at 1e5-1e8 $/chip-hour differed from the search without the pruning before the allowance,
    0 after). The plan is the one the search gives with no route pruned."""
    from pddplan.io.overrides import ScenarioSource
    from pddplan.solver.answer import _problems

    rs = ScenarioSource.open("pdd-paper", Registry.default()).resolve(
        {
            "chips.gpu-a.price_usd_per_hour": 250276.42945153025,
            "chips.gpu-b.price_usd_per_hour": 465938.51118121756,
        }
    )
    pb = next(pb for pb in _problems(rs, None) if pb.topology.name == "pdd")

    def plan() -> tuple:
        return _plan_figures(Solver(pb, SearchCache()).solve_rate(rate))

    pruned = plan()
    assert pruned[0] > 1e7  # costs where the rounding reaches the tie
    with monkeypatch.context() as m:  # every route searched
        m.setattr(Solver, "lower_bound", lambda self, rate, route: -math.inf)
        full = plan()
    assert pruned == full
