"""The search ranks candidates of one cost by TTFT without every candidate's percentiles
(``Solver._after_ties``): it keeps the plan that ``better_plan`` keeps over them in the
search's order, whatever that order, on tie groups taken from real searches."""

from __future__ import annotations

import random

import pytest

from pddplan.api.scenario import load
from pddplan.models import queueing
from pddplan.solver import build_problem
from pddplan.solver.cache import SearchCache
from pddplan.solver.plan import changed
from pddplan.solver.search import TTFT_TIE_RTOL, Solver, better_plan


def test_a_reading_tells_apart_only_what_the_tie_rule_does() -> None:
    """A CDF reading's answer (quantile_side) implies p99s further apart than better_plan's
    tolerance: the reading's distance less the percentiles' own precision exceeds it."""
    r, qr = queueing.QUANTILE_SIDE_RTOL, queueing.QUANTILE_RTOL
    assert (r - qr) > TTFT_TIE_RTOL * (1 - qr)  # below: t - q > TTFT_TIE_RTOL t
    assert r > TTFT_TIE_RTOL / (1 - TTFT_TIE_RTOL)  # above: q - t > TTFT_TIE_RTOL q


def _groups(monkeypatch: pytest.MonkeyPatch, cases) -> list[tuple[Solver, list]]:
    """The tie groups (best, then its ties) that searches of ``cases`` rank (each solver on a
    cache of its own: a search of a physics and rate met before is answered by its price
    table, which ranks no group)."""
    seen: list[tuple[Solver, list]] = []
    real = Solver._after_ties

    def keep(self, best, ties):
        seen.append((self, [best, *ties]))
        return real(self, best, ties)

    monkeypatch.setattr(Solver, "_after_ties", keep)
    for name, overrides, rate in cases:
        rs = load(name, overrides, None).resolved
        Solver(build_problem(rs), SearchCache()).candidate_rate(rate)
    monkeypatch.setattr(Solver, "_after_ties", real)
    return seen


def _fold(solver: Solver, group: list):
    best = group[0]
    for cand in group[1:]:
        if better_plan(cand, best, solver.plan_ttft_s, solver.plan_ttft_key):
            best = cand
    return best


CASES = [
    (None, None, 2.0),
    (None, None, 3.3),
    ("examples/pdd-paper.yaml", None, 1.7),
    ("examples/pdd-paper.yaml", None, 2.35),
    ("examples/pdd-paper.yaml", {"workload.hit_rate.shift": -0.05}, 2.0),
    ("examples/long-context.yaml", None, 0.2),
]


def test_the_tie_ranking_keeps_what_better_plan_keeps_in_any_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    groups = _groups(monkeypatch, CASES)
    assert len(groups) >= 5 and max(len(g) for _, g in groups) >= 8
    rng = random.Random(7)
    computed = {"ranked": 0, "fold": 0}
    real_figures = Solver.prefill_figures

    def counting(key):
        def figures(self, *a, **k):
            computed[key] += 1
            return real_figures(self, *a, **k)

        return figures

    for solver, group in groups:
        orders = [group, group[::-1]] + [rng.sample(group, len(group)) for _ in range(4)]
        for order in orders:
            solver.cache.clear()  # no percentile at hand: the readings are taken
            monkeypatch.setattr(Solver, "prefill_figures", counting("ranked"))
            got = solver._after_ties(order[0], order[1:])
            monkeypatch.setattr(Solver, "prefill_figures", counting("fold"))
            solver.cache.clear()
            want = _fold(solver, order)
            assert got is want
            # with every percentile at hand, the comparisons themselves
            assert solver._after_ties(order[0], order[1:]) is want
    monkeypatch.setattr(Solver, "prefill_figures", real_figures)
    # the point of it: fewer percentile computations than the fold's one per candidate (893 of
    # 2,182 on these groups; reading the CDF the wrong way round costs 1,134)
    assert computed["ranked"] < 0.45 * computed["fold"], computed


def test_each_comparison_read_on_the_cdf_is_better_plan_s(monkeypatch: pytest.MonkeyPatch) -> None:
    """``_beats`` gives ``better_plan``'s answer for pairs of one cost whose percentiles are
    not at hand (the readings decide most of them), one of them at hand, or both."""
    rng = random.Random(3)
    read = {"side": 0}
    real_side = Solver.p99_side

    def side(self, plan, t_s, key=None):
        out = real_side(self, plan, t_s, key)
        read["side"] += out != 0
        return out

    monkeypatch.setattr(Solver, "p99_side", side)
    for k, (solver, group) in enumerate(_groups(monkeypatch, CASES[:3])):
        pairs = [(x, y) for x in group for y in group if x is not y]
        for x, y in pairs if k == 0 else rng.sample(pairs, 30):  # every pair of the first
            for warm in ((), (x,), (y,)):
                for keys in ((), (solver.plan_ttft_key(x), solver.plan_ttft_key(y))):
                    solver.cache.clear()  # the candidates' keys given or not: one answer
                    for p in warm:
                        solver.plan_ttft_s(p)
                    got = solver._beats(x, y, *keys)
                    assert got == better_plan(x, y, solver.plan_ttft_s, solver.plan_ttft_key)
    assert read["side"] > 100  # decided by a reading, not by the comparison


def test_an_order_the_tolerance_makes_cyclic_still_gives_better_plan_s_choice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Percentiles within the tie tolerance of each other need not rank transitively (A beats
    B on p90 with their p99s tied, B beats C the same way, yet A's p99 is lower than C's by
    more than the tolerance): the plan found from the last candidate back must then be checked
    against every other, and ``better_plan`` run in order where it fails. Random near-tie
    groups and every order of a three-plan cycle give what the fold gives."""
    rs = load(None, None, None).resolved
    solver = Solver(build_problem(rs), SearchCache())
    base = solver.solve_rate(2.0)
    monkeypatch.setattr(solver, "plan_ttft_s", lambda p: p.prefill.ttft_s)
    monkeypatch.setattr(solver, "plan_ttft_key", id)
    monkeypatch.setattr(solver, "has_figures", lambda p, key=None: True)

    def plan(p50: float, p90: float, p99: float):
        return changed(base, prefill=changed(base.prefill, ttft_s=(p50, p90, p99)))

    e = 0.9 * TTFT_TIE_RTOL
    a, b, c = plan(1.0, 0.9, 1.0), plan(1.0, 0.5, 1.0 + e), plan(1.0, 0.1, 1.0 + 2 * e)
    for x, y in ((b, a), (c, b), (a, c)):  # the cycle
        assert better_plan(x, y, solver.plan_ttft_s, solver.plan_ttft_key)
    # from the last back, a beats c (and b does not): a is found, but b beats a, so the
    # check fails and the fold's c is kept
    assert _fold(solver, [a, b, c]) is c
    for order in ([a, b, c], [a, c, b], [b, a, c], [b, c, a], [c, a, b], [c, b, a]):
        assert solver._after_ties(order[0], order[1:]) is _fold(solver, order)
    rng = random.Random(11)
    for _ in range(300):
        n = rng.randint(2, 7)
        group = [
            plan(rng.choice((1.0, 1.0 + e)), rng.random(), 1.0 + rng.randint(0, 4) * e)
            for _ in range(n)
        ]
        assert solver._after_ties(group[0], group[1:]) is _fold(solver, group)


def test_a_candidates_reading_at_a_p99_is_taken_once_and_is_the_computed_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The ranking reads a candidate's CDF at the plan it keeps once to find it and again to
    check it (``_after_ties``): ``p99_side`` is memoized on what the reading depends on (the
    candidate's TTFT key and the time), so each reading is computed once, and the kept answer
    is the computation's."""
    asked: list[tuple] = []
    computed: list[tuple] = []
    real_side, real_compute = Solver.p99_side, Solver._p99_side

    def side(self, plan, t_s, key=None):
        asked.append((self.plan_ttft_key(plan), t_s))
        assert key is None or key == self.plan_ttft_key(plan)  # a key given is the plan's
        return real_side(self, plan, t_s, key)

    def compute(self, plan, t_s):
        computed.append((self.plan_ttft_key(plan), t_s))
        return real_compute(self, plan, t_s)

    groups = _groups(monkeypatch, CASES[:4])
    monkeypatch.setattr(Solver, "p99_side", side)
    monkeypatch.setattr(Solver, "_p99_side", compute)
    n_asked = n_computed = 0
    for solver, group in groups:
        solver.cache.clear()
        asked.clear()
        computed.clear()
        solver._after_ties(group[0], group[1:])
        assert len(computed) == len(set(computed))  # none computed twice
        n_asked, n_computed = n_asked + len(asked), n_computed + len(computed)
        for x in group:  # every answer kept is the one computed afresh
            for y in group:
                if solver.has_figures(y) and x is not y:
                    t = solver.plan_ttft_s(y)[-1]
                    assert solver.p99_side(x, t) == real_compute(solver, x, t)
    # the check asks again most of what the search asked
    assert n_asked > 1.5 * n_computed, (n_asked, n_computed)
