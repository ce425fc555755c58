"""The fleet check's goodput bracket: halving and guided probes find the same goodput."""

from __future__ import annotations

import pytest

from pddplan.errors import InfeasibleError
from pddplan.io.loader import Registry, load_scenario
from pddplan.solver import Solver, build_problem
from pddplan.solver import fleet as fleet_mod


def _solver_and_plan(name: str, rate: float):
    rs = load_scenario(name, Registry.default(), {"rate_rps": rate})
    solver = Solver(build_problem(rs))
    return solver, solver.solve_rate(rate)


@pytest.mark.parametrize(("name", "rate"), [("default", 2.0), ("pdd-paper", 6.0), ("default", 0.3)])
def test_guided_bracket_holds_the_same_goodput_in_fewer_checks(
    name: str, rate: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    solver, plan = _solver_and_plan(name, rate)
    probed: set[float] = set()  # the rates checked, by any part of the check
    check = fleet_mod.check_fleet
    start = fleet_mod.check_start
    ttft = fleet_mod._meets_ttft

    def counted_start(solver, plan, rate, *args, **kwargs):
        probed.add(rate)
        return start(solver, plan, rate, *args, **kwargs)

    def counted_ttft(solver, plan, rate, *args, **kwargs):
        probed.add(rate)
        return ttft(solver, plan, rate, *args, **kwargs)

    # every check begins with check_start, but a halving's that TTFT alone decides
    monkeypatch.setattr(fleet_mod, "check_start", counted_start)
    monkeypatch.setattr(fleet_mod, "_meets_ttft", counted_ttft)
    rtol = 1e-7
    got = {}
    for guided in (False, True):
        probed.clear()
        solver.cache.clear()  # no answer kept from the other search
        lo, hi = fleet_mod.goodput_bracket(solver, plan, rtol, guided=guided)
        got[guided] = (lo, hi, len(probed))
        # the ends are decided by the checks: lo meets every target, hi misses one
        assert check(solver, plan, lo).meets_sla and not check(solver, plan, hi).meets_sla
        assert hi - lo <= rtol * hi
    (lo0, hi0, n0), (lo1, hi1, n1) = got[False], got[True]
    assert max(lo0, lo1) < min(hi0, hi1)  # both brackets hold the one boundary
    assert n1 < n0


def test_margin_agrees_with_the_checks() -> None:
    solver, plan = _solver_and_plan("default", 2.0)
    lo, hi = fleet_mod.goodput_bracket(solver, plan, 1e-4)
    for r in (0.5 * lo, lo, hi, 1.5 * hi):
        c = fleet_mod.check_fleet(solver, plan, r)
        assert (c.margin <= 1e-6) if c.meets_sla else (c.margin >= -1e-6), (r, c)
        # the margin is its largest term, and every check of the fleet lists them alike
        for cc in (c, fleet_mod.check_fleet(solver, plan, r, figures=False)):
            assert cc.margin == max(cc.terms) and len(cc.terms) == len(c.terms) >= 4


@pytest.mark.parametrize("guided", [False, True])
def test_goodput_does_not_depend_on_the_rate_the_fleet_was_sized_at(guided: bool) -> None:
    """A fleet sized at a tiny rate (the exact modes' walk starts at a millionth of the line's
    limit) has the goodput of the same fleet at its own rate: finite, not the 'no rate
    overloads' (inf) of a bracket that gave up a million times the sizing rate on."""
    from dataclasses import replace

    solver, plan = _solver_and_plan("default", 2.0)
    lo, hi = fleet_mod.goodput_bracket(solver, plan, 1e-6, guided=guided)
    for share in (1e-3, 1e-7, 1e-12):
        tiny = replace(plan, rate_rps=plan.rate_rps * share)
        lo_t, hi_t = fleet_mod.goodput_bracket(solver, tiny, 1e-6, guided=guided)
        assert lo_t < hi_t < 1e3  # finite
        assert max(lo, lo_t) < min(hi, hi_t), (share, (lo, hi), (lo_t, hi_t))
    assert fleet_mod.overload_rps(solver, plan) >= hi


def _fleets():
    """Fleets of several shapes: PDD with RLD (two scenarios), its fleet without RLD (a routing
    that relays nothing), and the same-datacenter and no-relay baselines."""
    from pddplan.solver.modes import NO_RELAY_RLD, baseline_at_rate
    from pddplan.solver.problem import NO_RELAY, SAME_DC

    out = []
    for name, rate in (("default", 2.0), ("pdd-paper", 6.0)):
        rs = load_scenario(name, Registry.default(), {"rate_rps": rate})
        solver, plan = _solver_and_plan(name, rate)
        out.append((solver, plan))
        for topo in (SAME_DC, NO_RELAY, NO_RELAY_RLD):
            try:
                b = baseline_at_rate(rs, topo, rate)
            except InfeasibleError:  # the line cannot carry a no-relay fleet's rate
                continue
            out.append((Solver(b.problem), b))
    assert len(out) >= 6
    return out


def test_meets_sla_is_the_checks_verdict() -> None:
    """meets_sla stops at the first check that fails; it says what check_fleet says, at rates
    from far below each fleet's goodput to past its line's or prefill pool's saturation."""
    seen = set()
    for solver, plan in _fleets():
        lo, hi = fleet_mod.goodput_bracket(solver, plan, 1e-4)
        top = max(hi, plan.rate_rps) * 40.0
        for r in (1e-6 * lo, 0.3 * lo, lo, hi, 1.01 * hi, 1.5 * hi, 3.0 * hi, top):
            want = fleet_mod.check_fleet(solver, plan, r, figures=False)
            # the checks themselves, and the answer meets_sla gives (at most of these rates
            # from the fleet's earlier checks: FeasibleRates)
            assert fleet_mod._meets_sla(solver, plan, r) == want.meets_sla, (plan.roles, r)
            assert fleet_mod.meets_sla(solver, plan, r) == want.meets_sla, (plan.roles, r)
            seen.add((want.meets_ttft, want.meets_decode, want.link_utilization < 1.0))
    # every way of failing was met: TTFT alone, decode alone, both, the line
    assert {(True, True, True), (False, True, True), (True, False, True)} <= seen
    assert any(not line for _t, _d, line in seen)


def test_a_checks_first_part_says_only_what_the_check_says() -> None:
    """check_start, the check's part before the TTFT distribution: where it misses (the line
    overloaded or a decode pool short), the whole check misses; where it does not, only the
    TTFT can fail; the check finished from it is the check made at once, to the bit."""
    seen = set()
    for solver, plan in _fleets():
        lo, hi = fleet_mod.goodput_bracket(solver, plan, 1e-4)
        top = max(hi, plan.rate_rps) * 40.0
        for r in (0.3 * lo, lo, hi, 1.5 * hi, 3.0 * hi, top):
            start = fleet_mod.check_start(solver, plan, r)
            whole = fleet_mod.check_fleet(solver, plan, r, figures=False)
            assert fleet_mod.check_fleet(solver, plan, r, figures=False, start=start) == whole
            if start.misses:
                assert not whole.meets_sla
            else:
                assert whole.meets_decode and whole.link_utilization < 1.0
            seen.add(start.misses)
    assert seen == {True, False}


def test_a_miss_without_the_wait_is_a_miss_of_the_check() -> None:
    """misses_without_wait: where the TTFT offsets alone miss a target (no prefill wait), the
    whole check misses too (waiting only delays); it finds such misses (the no-relay
    baseline's, whose transfers over the line alone miss a target) and not everywhere."""
    seen = set()
    for solver, plan in _fleets():
        lo, hi = fleet_mod.goodput_bracket(solver, plan, 1e-4)
        top = max(hi, plan.rate_rps) * 40.0
        for r in (0.01 * plan.rate_rps, 0.3 * lo, lo, hi, 1.5 * hi, 3.0 * hi, top):
            if r <= 0:
                continue
            start = fleet_mod.check_start(solver, plan, r)
            without = fleet_mod.misses_without_wait(solver, plan, start)
            whole = fleet_mod.check_fleet(solver, plan, r, figures=False)
            if without:
                assert not whole.meets_sla
            seen.add((without, whole.meets_sla))
    assert (True, False) in seen and (False, True) in seen


def test_halving_with_meets_sla_is_halving_with_the_full_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The halving bracket decided by meets_sla and the check's binding part (:func:`_halve`)
    is the one decided by check_fleet at every probe (the same probes, the same ends, to the
    bit)."""
    fleets = _fleets()
    fast = [fleet_mod._goodput_bracket(s, p, 1e-3, False) for s, p in fleets]
    monkeypatch.setattr(
        fleet_mod,
        "meets_sla",
        lambda s, p, r, *_: fleet_mod.check_fleet(s, p, r, figures=False).meets_sla,
    )
    monkeypatch.setattr(
        fleet_mod,
        "_halve",
        lambda s, p, lo, hi, rtol, _starts: _plain_halving(s, p, lo, hi, rtol),
    )
    slow = [fleet_mod._goodput_bracket(s, p, 1e-3, False) for s, p in fleets]
    assert fast == slow


def test_feasible_rates_answer_only_what_the_checks_decide() -> None:
    known = fleet_mod.FeasibleRates()
    assert known.answer(1.0) is None  # nothing checked yet
    known.note(2.0, True)
    known.note(5.0, False)
    known.note(1.0, True)  # a lower rate met: the highest met stays
    known.note(7.0, False)  # a higher rate missed: the lowest missed stays
    assert (known.met_rps, known.missed_rps) == (2.0, 5.0)
    assert [known.answer(r) for r in (0.5, 2.0, 3.0, 4.999, 5.0, 9.0)] == [
        True,
        True,
        None,
        None,
        False,
        False,
    ]
    assert known.answer(0.0) is None  # a rate of 0 is not a rate the checks met


def test_a_fleet_sized_at_another_rate_shares_its_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plans of one fleet at two rates share what its checks showed (:meth:`Sizing.check_key`
    leaves out the rate the plan was sized at, and nothing else the checks read): the goodput
    halving from the second plan's rate checks a few rates near the boundary rather than every
    probe, and ends where the same halving on a solver with nothing kept ends, to the bit."""
    from dataclasses import replace

    from pddplan.solver.cache import SearchCache

    solver, plan = _solver_and_plan("default", 2.0)
    fleet_mod.goodput_bracket(solver, plan)  # the fleet's checks, from its own rate
    other = replace(plan, rate_rps=plan.rate_rps * 0.77)
    assert solver.check_key(other) == solver.check_key(plan)
    assert solver.fleet_key(other) != solver.fleet_key(plan)
    p_inst, n_p = plan.roles["P"]
    bigger = replace(plan, roles={**plan.roles, "P": (p_inst, n_p + 1)})
    assert solver.check_key(bigger) != solver.check_key(plan)  # another fleet

    checked: set[float] = set()  # the rates checked, by any part of the check
    start = fleet_mod.check_start
    ttft = fleet_mod._meets_ttft

    def counted_start(s: Solver, p, r: float):
        checked.add(r)
        return start(s, p, r)

    def counted_ttft(s: Solver, p, r: float, route):
        checked.add(r)
        return ttft(s, p, r, route)

    monkeypatch.setattr(fleet_mod, "check_start", counted_start)
    monkeypatch.setattr(fleet_mod, "_meets_ttft", counted_ttft)
    shared = fleet_mod._goodput_bracket(solver, other, 1e-3, False)
    n_shared = len(checked)
    checked.clear()
    fresh = fleet_mod._goodput_bracket(Solver(solver.pb, SearchCache()), other, 1e-3, False)
    assert shared == fresh
    assert 0 <= n_shared < len(checked) / 2, (n_shared, len(checked))


def _plain_halving(solver, plan, lo: float, hi: float, rtol: float) -> tuple[float, float]:
    """The reference: every midpoint decided by the whole check, nothing kept."""
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        if fleet_mod.check_fleet(solver, plan, mid, figures=False).meets_sla:
            lo = mid
        else:
            hi = mid
    return lo, hi


def test_halving_by_the_binding_part_is_the_plain_halving() -> None:
    """_halve decides most midpoints by one part of the check (TTFT alone where the line and
    the decode pools pass at the bracket's top; those alone, then TTFT once, where they miss
    there; the whole check where TTFT binds below them): the bracket is the plain halving's
    to the bit, on fleets where each way is taken (counts moved off the solved ones so that
    TTFT or a decode pool binds)."""
    from pddplan.robust.evaluate import fleet_plan
    from pddplan.robust.search import point_config

    ways = set()
    for solver, plan in _fleets():
        cfg = point_config(plan)
        n_p, n_r, n_m = cfg.base
        shapes = {cfg.base, (max(n_p - 1, 1), n_r, n_m), (n_p, n_r, n_m + 3), (n_p + 4, n_r, n_m)}
        shapes.add((max(n_p - 2, 1), n_r, max(n_m - 1, 1)))
        for counts in sorted(shapes):
            fleet = fleet_plan(solver, cfg, counts, plan.rate_rps)
            if fleet is None:
                continue
            lo, hi = fleet_mod.goodput_bracket(solver, fleet, 1e-2)
            if not (0 < lo and hi < float("inf")):
                continue
            lo, hi = 0.5 * lo, 1.7 * hi  # a wide bracket, its ends checked
            assert fleet_mod.check_fleet(solver, fleet, lo, figures=False).meets_sla
            assert not fleet_mod.check_fleet(solver, fleet, hi, figures=False).meets_sla
            want = _plain_halving(solver, fleet, lo, hi, 1e-6)
            got = fleet_mod._halve(solver, fleet, lo, hi, 1e-6, {})
            assert got == want, (counts, got, want)
            # which way it went: the line and decode pools at the top, then TTFT at the end
            # of halving on them alone
            top = fleet_mod.check_start(solver, fleet, hi)
            if not top.misses:
                ways.add("TTFT alone")
            else:
                a = lo
                b = hi
                while b - a > 1e-6 * b:
                    mid = 0.5 * (a + b)
                    if fleet_mod.check_start(solver, fleet, mid).misses:
                        b = mid
                    else:
                        a = mid
                ok = fleet_mod.check_fleet(solver, fleet, a, figures=False).meets_sla
                ways.add("decode, then TTFT" if ok else "the whole check")
    assert ways == {"TTFT alone", "decode, then TTFT", "the whole check"}, ways
