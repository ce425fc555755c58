"""The verdict check (pddplan.robust.verdict) and the stronger no-relay baseline it compares."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from pddplan import api
from pddplan.robust import inputs, verdict
from pddplan.solver import solve_scenario
from pddplan.solver.fleet import GOODPUT_RTOL
from pddplan.spec import Distribution, Normal, Relative


@pytest.fixture(scope="module")
def solved() -> tuple[Any, Any]:
    ls = api.load_scenario("default")
    return ls, solve_scenario(ls.resolved)


def _resolve(ls: Any) -> verdict.Resolve:
    return lambda ov: ls.source.resolve({**ls.overrides, **ov})


def test_stronger_no_relay_baseline_keeps_rld_for_anomalous_only(solved) -> None:
    _ls, out = solved
    base = {b.topology: b for b in out.baselines}
    strong = base["no-relay-rld"]
    assert strong.routing.hit_rate == 0.0 and not strong.routing.relay_all  # nothing relays
    assert strong.roles["RLD"] is not None  # yet RLD is there, for the anomalous requests
    pb = strong.problem
    assert not np.any(strong.route.relay)
    assert np.all(~pb.on_decode_side == pb.classes.anomalous)
    # the PDD search prices this routing too, so at the same rate it never costs more
    assert out.plan.cost_usd_per_hour <= strong.cost_usd_per_hour * (1 + 1e-9)
    # and the anomalous requests no longer cross the line: it meets the SLA, today's may not
    assert strong.meets_sla


def test_plausible_range_bounds_and_tails() -> None:
    rel = inputs.Input("x", 2.0, Distribution(relative=Relative(low=0.5, high=2.0)), "other", "")
    assert inputs.plausible_range(rel) == pytest.approx((1.0, 4.0))
    clipped = Distribution(normal=Normal(sd=0.02, low=-1.0, high=1.0))
    shift = inputs.Input("s", 0.0, clipped, "hit-rate shift", "")
    lo, hi = inputs.plausible_range(shift)
    z = 3.090232306167813  # the standard normal's 99.9% quantile
    assert lo == pytest.approx(-0.02 * z) and hi == pytest.approx(0.02 * z)
    assert inputs.support(shift) == (-1.0, 1.0)  # robust's support is unchanged


def test_reported_flips_turn_where_they_say(solved) -> None:
    """Each flip reported for the default scenario really reverses the verdict at flips_at and
    not at holds_at (checked again, one value at a time)."""
    ls, out = solved
    vc = verdict.check_verdict(_resolve(ls), ls.resolved, out)
    by_path = {i.path: i for i in inputs.collect_inputs(ls.resolved)[0]}
    checked = 0
    pdd = verdict._Fleet.of(out.plan)
    for j, v in enumerate(vc.verdicts):
        base = verdict._Fleet.of(out.baselines[j])
        guess = verdict._equal_rate_guess(out.plan, out.baselines[j])
        (start,) = verdict._starts(ls.resolved, pdd, [base], [guess])  # as check_verdict's
        # the point's verdict agrees with the BCR figures wherever their ratio is clear of 1 by
        # more than the goodput's precision
        if v.bcr_ratio is None:  # a baseline that serves nothing: PDD wins where it serves
            assert v.pdd_wins == (out.plan.goodput_rps > 0)
        elif abs(v.bcr_ratio - 1.0) > 4 * GOODPUT_RTOL:
            assert v.pdd_wins == (v.bcr_ratio > 1.0)
        for f in v.flips[:2]:
            inp = by_path[f.path]
            at = verdict._wins_at(_resolve(ls), inp, f.flips_at, pdd, [base], [start])[0]
            held = verdict._wins_at(_resolve(ls), inp, f.holds_at, pdd, [base], [start])[0]
            assert at != v.pdd_wins and held == v.pdd_wins
            checked += 1
    assert checked > 0  # the default scenario's verdicts rest on some estimate
    assert all(math.isfinite(lo) and math.isfinite(hi) for _p, _pt, lo, hi in vc.inputs)


def test_a_plan_never_beats_itself(solved, monkeypatch) -> None:
    """PDD against its own fleet is a tie at every input value: no win, nothing reverses it."""
    ls, out = solved
    found, skipped = inputs.collect_inputs(ls.resolved)
    few = [i for i in found if i.path in ("workload.anomalous.share", "link.rtt_ms")]
    monkeypatch.setattr(verdict, "collect_inputs", lambda rs: (few, skipped))
    twin = replace(out, baselines=[out.plan])
    vc = verdict.check_verdict(_resolve(ls), ls.resolved, twin)
    (v,) = vc.verdicts
    assert not v.pdd_wins and v.bcr_ratio == pytest.approx(1.0) and v.flips == []
    assert [p for p, *_ in vc.inputs] == [i.path for i in few]


def test_a_ratio_within_the_goodputs_precision_is_a_tie_at_the_point_too(
    solved, monkeypatch
) -> None:
    """The same fleet as PDD's with its goodput figure 0.03% lower (a BCR ratio of 1.0003, well
    within the goodput's 0.1% precision): the point's verdict is taken by the fleet checks, as
    every changed value's is, so it is a tie there too and no input appears to reverse it (read
    off the figures, it was a win at the point and a tie at both ends of every range)."""
    ls, out = solved
    found, skipped = inputs.collect_inputs(ls.resolved)
    few = [i for i in found if i.path in ("workload.anomalous.share", "link.rtt_ms")]
    monkeypatch.setattr(verdict, "collect_inputs", lambda rs: (few, skipped))
    lower = replace(out.plan, fleet_goodput_rps=out.plan.goodput_rps * (1 - 3e-4))
    vc = verdict.check_verdict(_resolve(ls), ls.resolved, replace(out, baselines=[lower]))
    (v,) = vc.verdicts
    assert v.bcr_ratio == pytest.approx(1 / (1 - 3e-4), rel=1e-12)
    assert not v.pdd_wins and v.outcome == verdict.TIE and v.flips == []


@pytest.mark.parametrize(
    "path", ["link.rtt_ms", "chips.gpu-b.derates.compute_half_saturation_tokens"]
)
def test_outcome_agrees_with_the_fleets_goodputs(solved, path: str) -> None:
    """Wherever the two fleets' BCRs, from goodputs bisected to 1e-6, differ by more than the
    verdict's precision, the verdict's guided checks find the same winner (at five values of
    an input across its range, against every baseline)."""
    from pddplan.solver.fleet import goodput_bracket

    ls, out = solved
    inp = {i.path: i for i in inputs.collect_inputs(ls.resolved)[0]}[path]
    lo, hi = inputs.plausible_range(inp)
    pdd = verdict._Fleet.of(out.plan)
    decided = 0
    for value in np.linspace(lo, hi, 5):
        rs = verdict._resolved(_resolve(ls), inp, float(value))
        mine_built = pdd.on(rs)
        mine_solver, mine = mine_built.solver, mine_built.plan
        for b in out.baselines:
            base = verdict._Fleet.of(b)
            guess = verdict._equal_rate_guess(out.plan, b)
            # the probes placed with the point's margin slopes, and without
            (start,) = verdict._starts(ls.resolved, pdd, [base], [guess])
            got = verdict._outcomes_on(rs, pdd, [base], [start])[0]
            plain = verdict._outcomes_on(rs, pdd, [base], [verdict.Start(guess, None)])[0]
            theirs_built = base.on(rs)
            base_solver, theirs = theirs_built.solver, theirs_built.plan
            if mine is None or theirs is None or theirs.cost_usd_per_hour <= 0:
                continue
            g_lo, g_hi = goodput_bracket(mine_solver, mine, 1e-6)
            b_lo, b_hi = goodput_bracket(base_solver, theirs, 1e-6)
            if not all(math.isfinite(v) for v in (g_lo, g_hi, b_lo, b_hi)):
                continue
            c_p, c_b = mine.cost_usd_per_hour, theirs.cost_usd_per_hour
            if g_lo * c_b > b_hi * c_p * (1 + 2 * GOODPUT_RTOL):
                assert got == plain == verdict.WINS, (value, b.topology)
                decided += 1
            elif g_hi * c_b < b_lo * c_p * (1 - 2 * GOODPUT_RTOL):
                assert got == plain == verdict.LOSES, (value, b.topology)
                decided += 1
    assert decided >= 5  # the check decided something


def test_a_fleet_checked_once_answers_below_a_meet_and_above_a_miss(solved) -> None:
    """PDD's fleet on a scenario answers from its checks where they decide (its feasible rates
    are an interval from 0), and those answers are the checks' own."""
    ls, out = solved
    mine = verdict._OnSample(verdict._Fleet.of(out.plan).on(ls.resolved))
    g = out.plan.goodput_rps
    assert mine.known(0.5 * g) is None  # nothing checked yet
    assert mine.check(0.9 * g).meets_sla
    assert not mine.check(1.2 * g).meets_sla
    for x, want in ((0.3 * g, True), (0.9 * g, True), (1.2 * g, False), (3.0 * g, False)):
        assert mine.known(x) is want
        assert mine.check(x).meets_sla is want  # the check agrees
    assert mine.known(1.0 * g * (1 - 2 * GOODPUT_RTOL)) is None  # between: not decided


def test_estimates_of_chips_no_fleet_has_leave_the_verdict(monkeypatch) -> None:
    """An estimate of a chip that none of the fleets has changes none of them (each fleet's
    problem holds its own instance kinds): at both ends of its range every fleet has the
    point's fleet key and cost, and the verdict check that skips rebuilding the fleets there
    answers as the one that rebuilds them."""
    ls = api.load_scenario("default", overrides={"roles.MD.chips": ["gpu-b", "l20"]})
    out = solve_scenario(ls.resolved)
    fleets = [verdict._Fleet.of(p) for p in (out.plan, *out.baselines)]
    assert not any("l20" in f.chips for f in fleets)  # the catalog's other chip: priced only
    found = inputs.collect_inputs(ls.resolved)[0]
    untouched = [i for i in found if verdict._leaves_fleets(i, fleets)]
    assert untouched and all(i.path.startswith("chips.l20.") for i in untouched)
    assert not any(verdict._leaves_fleets(i, fleets) for i in found if i not in untouched)

    def fingerprints(rs: Any) -> list[Any]:
        out = []
        for f in fleets:
            b = f.on(rs)
            out.append(
                None if b.plan is None else (b.solver.fleet_key(b.plan), b.plan.cost_usd_per_hour)
            )
        return out

    point = fingerprints(ls.resolved)
    for inp in untouched:
        for value in inputs.plausible_range(inp):
            assert fingerprints(verdict._resolved(_resolve(ls), inp, value)) == point, inp.path
    quick = verdict.check_verdict(_resolve(ls), ls.resolved, out)
    monkeypatch.setattr(verdict._Fleet, "reads", lambda self, inp: True)  # rebuild every fleet
    assert verdict.check_verdict(_resolve(ls), ls.resolved, out) == quick


def _fingerprint(c: Any) -> str:
    """A fleet check's every number, NaN included (``repr``: NaN is not equal to itself)."""
    return repr(c)


def test_a_fleet_an_input_leaves_is_checked_as_rebuilt(solved, monkeypatch) -> None:
    """An estimate of a chip a fleet does not have, of the WAN link where the fleet stays in one
    datacenter, or of the RDMA fabric where it crosses datacenters on a topology that relays
    nothing, leaves that fleet as it is (:meth:`_Fleet.reads`): rebuilt on either end of
    the input's range it costs what the point's build costs and its checks at rates around its
    goodput give the very same numbers. The verdict check that checks the point's build there
    answers as the one that rebuilds every fleet, bit for bit."""
    ls, out = solved
    fleets = [verdict._Fleet.of(p) for p in (out.plan, *out.baselines)]
    found = inputs.collect_inputs(ls.resolved)[0]
    left = [(f, i) for f in fleets for i in found if not f.reads(i)]
    same_dc = next(f for f in fleets if not f.topology.cross_dc)
    no_relay = next(f for f in fleets if f.topology.cross_dc and not f.topology.relay)
    kinds = {(f, i.path.split(".")[0]) for f, i in left}
    assert {(same_dc, "link"), (no_relay, "rdma")} < kinds  # and chips.gpu-b for same-dc
    assert all(k == "chips" for f, k in kinds - {(same_dc, "link"), (no_relay, "rdma")})
    assert all(f.reads(i) for f in fleets for i in found if i.path.startswith("workload."))
    point = {f: f.on(ls.resolved) for f in fleets}
    compared = 0
    for f, inp in left:
        kept = point[f]
        assert kept.plan is not None
        g = kept.plan.goodput_rps
        rates = [0.5 * g, 0.99 * g, g, 1.01 * g, 2.0 * g]
        for value in inputs.plausible_range(inp):
            again = f.on(verdict._resolved(_resolve(ls), inp, value))
            assert again.plan is not None
            assert again.plan.cost_usd_per_hour == kept.plan.cost_usd_per_hour
            for r in rates:
                assert _fingerprint(again.check(r)) == _fingerprint(kept.check(r)), inp.path
                compared += 1
    assert compared > 0
    quick = verdict.check_verdict(_resolve(ls), ls.resolved, out)
    monkeypatch.setattr(verdict._Fleet, "reads", lambda self, inp: True)
    assert verdict.check_verdict(_resolve(ls), ls.resolved, out) == quick


def test_a_builds_kept_checks_are_check_fleets(solved) -> None:
    """:meth:`_Built.check` keeps each rate's check: asked again, and asked first, it gives
    ``check_fleet``'s numbers without figures, bit for bit."""
    from pddplan.solver.fleet import check_fleet

    ls, out = solved
    built = verdict._Fleet.of(out.plan).on(ls.resolved)
    assert built.plan is not None
    g = built.plan.goodput_rps
    for r in (0.5 * g, g, 2.0 * g, g):
        plain = check_fleet(built.solver, built.plan, r, figures=False)
        assert _fingerprint(built.check(r)) == _fingerprint(plain)
    assert built.check(g) is built.check(g)  # kept


def test_a_baseline_that_is_pdds_fleet_ties_without_a_check(monkeypatch) -> None:
    """The default scenario's max-BCR plan relays nothing, and the baseline that keeps RLD for
    the anomalous requests only is sized alike: another topology name and routing choice, one
    fleet key and one cost. Against it every outcome is a tie taken with no fleet check, and the
    checks' own search (the shortcut turned off) finds that tie too, at the point and at both
    ends of two inputs' ranges. One more MD instance, or another cost, is no longer that fleet."""
    ls = api.load_scenario("default")
    out = solve_scenario(ls.resolved, max_bcr=True)
    twin = {b.topology: b for b in out.baselines}["no-relay-rld"]
    pdd, base = verdict._Fleet.of(out.plan), verdict._Fleet.of(twin)
    assert pdd.topology.name != base.topology.name and pdd.routing != base.routing
    mine = verdict._OnSample(pdd.on(ls.resolved))
    built = base.on(ls.resolved)
    solver, theirs = built.solver, built.plan
    assert theirs is not None and mine.same_as(solver, theirs)
    md_inst, n_md = theirs.roles["MD"]  # type: ignore[misc]
    bigger = replace(theirs, roles={**theirs.roles, "MD": (md_inst, n_md + 1)})
    assert not mine.same_as(solver, bigger)
    dearer = replace(theirs, cost_usd_per_hour=theirs.cost_usd_per_hour * (1 + 1e-12))
    assert not mine.same_as(solver, dearer)

    found = {i.path: i for i in inputs.collect_inputs(ls.resolved)[0]}
    scenarios = [ls.resolved]
    for path in ("link.rtt_ms", "workload.anomalous.share"):
        for value in inputs.plausible_range(found[path]):
            scenarios.append(verdict._resolved(_resolve(ls), found[path], value))
    (start,) = verdict._starts(
        ls.resolved, pdd, [base], [verdict._equal_rate_guess(out.plan, twin)]
    )
    checks = []
    inner = verdict.check_fleet

    def counted(*args: Any, **kwargs: Any) -> Any:
        checks.append(args[2])
        return inner(*args, **kwargs)

    monkeypatch.setattr(verdict, "check_fleet", counted)
    quick = [verdict._outcomes_on(rs, pdd, [base], [start])[0] for rs in scenarios]
    assert quick == [verdict.TIE] * len(scenarios) and checks == []
    monkeypatch.setattr(verdict._OnSample, "same_as", lambda self, solver, base: False)
    searched = [verdict._outcomes_on(rs, pdd, [base], [start])[0] for rs in scenarios]
    assert searched == quick and len(checks) >= 2 * len(scenarios)


def test_a_fleet_turns_where_its_first_term_crosses() -> None:
    """Closed bracket, term by term: the least root of the terms that cross 0 (a steep term
    overtaking a flat one inside the bracket), not the largest term's line; that line where a
    crossing term has no finite end or a term is NaN; None where no line crosses."""
    u_lo, u_hi = 0.0, 1.0
    # term 0, the largest at lo: -0.2 -> 0.1 (root 2/3); term 1: -3 -> 1 (root 3/4); the
    # largest terms' line (-0.2 -> 1) would say 1/6
    a, b = (-0.2, -3.0, -1.0), (0.1, 1.0, -1.0)
    assert verdict._turning(a, b, u_lo, u_hi) == pytest.approx(2 / 3, rel=1e-12)
    # term 0 does not cross (-0.2 -> -0.1): term 1 alone turns the fleet, at 0.5
    a, b = (-0.2, -1.0), (-0.1, 1.0)
    assert verdict._turning(a, b, u_lo, u_hi) == pytest.approx(0.5, rel=1e-12)
    # a crossing term with no finite end: the largest terms' line (-0.2 -> 1: 1/6), not the
    # other crossing term's root (0.5)
    a, b = (-0.2, -math.inf, -1.0), (-0.1, 1.0, 1.0)
    assert verdict._turning(a, b, u_lo, u_hi) == pytest.approx(1 / 6, rel=1e-12)
    a, b = (-0.2, math.nan, -1.0), (-0.1, 1.0, 1.0)  # a NaN term: the same
    assert verdict._turning(a, b, u_lo, u_hi) == pytest.approx(1 / 6, rel=1e-12)
    assert verdict._turning((-0.2,), (-0.3,), u_lo, u_hi) is None  # nothing crosses


def test_an_open_brackets_second_step_is_the_terms_secant() -> None:
    """Open bracket: the secant through each fleet's terms at the last two probes on one side
    (log rate), the least root going up (of the terms at most 0 there) and the largest going
    down, halfway between the two fleets; None where a fleet gives no root."""
    e = math.e
    # up from rate 1 (u=0) to e (u=1): fleet A's terms -2 -> -1 (root 2) and -0.6 -> -0.5
    # (root 6): the least, 2; a term already above 0 (0 -> 0.01, root 0) is not one that turns
    # it on the way up, and a falling one (-0.1 -> -0.2) is left out; fleet B's -0.5 -> -0.25
    # (root 2): halfway, e**2
    now = ((-1.0, -0.5, 0.01, -0.2), (-0.25,))
    before = (1.0, ((-2.0, -0.6, 0.0, -0.1), (-0.5,)))
    assert verdict._secant_step(e, now, before, up=True) == pytest.approx(e**2, rel=1e-12)
    # down from e**2 (u=2) to e (u=1): A's terms 2 -> 1 (root 0) and 0.9 -> 0.3 (root 0.5):
    # A meets once both are below 0, at the least, 0; B's 4 -> 1 (root 2/3): halfway, exp(1/3)
    now, before = ((1.0, 0.3), (1.0,)), (e**2, ((2.0, 0.9), (4.0,)))
    got = verdict._secant_step(e, now, before, up=False)
    assert got == pytest.approx(math.exp(1 / 3), rel=1e-12)
    # going down, a term above 0 that rises as the rate falls (0.5 -> 1): no root for A, though
    # its other term falls (2 -> 1, root 0)
    now, before = ((1.0, 1.0), (1.0,)), (e**2, ((2.0, 0.5), (4.0,)))
    assert verdict._secant_step(e, now, before, up=False) is None
    # nearly flat margins put the root past the float range: the probe is the factor 2
    probe = verdict._next_probe(
        2.0,
        math.inf,
        ((-0.5,), (-1.0,)),
        ((math.nan,), (math.nan,)),
        1,
        prev=(1.0, ((-0.5 - 1e-9,), (-2.0,))),
    )
    assert probe == 4.0


class _Model:
    """A fleet whose log margin terms are lines in the log rate: a flat TTFT-like term and a
    steep slot-wait-like term, turning at ``ttft_rps`` and ``slot_rps`` [req/s]."""

    def __init__(self, ttft_rps: float, slot_rps: float, with_terms: bool) -> None:
        from types import SimpleNamespace

        self.turns = (ttft_rps, slot_rps)
        self.with_terms = with_terms
        self.solver = SimpleNamespace(fleet_key=lambda plan, me=self: id(me))
        self.plan = SimpleNamespace(cost_usd_per_hour=100.0, rate_rps=2.0)
        self.checks = 0
        self.kept: dict[float, Any] = {}

    def early(self, rate: float) -> None:
        return None  # no first part: only the whole check tells

    def check(self, rate: float):
        from pddplan.solver.fleet import FleetCheck

        if rate in self.kept:  # kept by rate, as a build keeps its checks
            return self.kept[rate]
        self.checks += 1
        u = math.log(rate)
        logs = (0.5 * (u - math.log(self.turns[0])), 20.0 * (u - math.log(self.turns[1])))
        over = tuple(math.expm1(v) for v in logs)
        nan3 = (math.nan, math.nan, math.nan)
        self.kept[rate] = FleetCheck(
            rate, nan3, logs[0] <= 0, 0.0, 0.0, logs[1] <= 0, 0.0, max(over),
            over if self.with_terms else (),
        )  # fmt: skip
        return self.kept[rate]


def test_the_search_reads_each_term() -> None:
    """The outcome search on two fleets whose steep slot-wait term turns them (at 1.9 and
    1.95 req/s, at one cost) below where their largest term's line, a flat TTFT term, puts it:
    with the terms it lands between the two in two probes after the first; with the margin
    alone (the largest term's line) it needs more; both find that PDD loses."""
    checks = {}
    for with_terms in (True, False):
        mine, theirs = _Model(3.0, 1.9, with_terms), _Model(3.2, 1.95, with_terms)
        search = verdict._OnSample(mine)  # type: ignore[arg-type]
        got = search.outcome(theirs, verdict.Start(2.4, None))  # type: ignore[arg-type]
        assert got == verdict.LOSES
        checks[with_terms] = mine.checks + theirs.checks
    assert checks[True] == 6 < checks[False]


def test_the_verdict_benchmark_counts_what_the_check_does() -> None:
    """benchmarks/bench_verdict.py runs against the check as it is (its wrapper of
    :meth:`verdict._OnSample.outcome` once fell behind the method's signature): every outcome
    counted, and no outcome counted more checks than were made."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_verdict.py"
    spec = importlib.util.spec_from_file_location("bench_verdict", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    checks, outcomes, _seconds, partial = bench.measure(max_bcr=False)
    assert sum(outcomes.values()) > 0 and checks > 0 and partial >= 0
    assert sum(k * n for (k, _), n in outcomes.items()) <= checks
    assert {r for _, r in outcomes} <= {verdict.WINS, verdict.LOSES, verdict.TIE}
    # the functions it wraps are restored
    assert verdict.check_fleet.__name__ == "check_fleet"
    assert verdict.check_start.__name__ == "check_start"


def test_a_first_probe_reads_each_terms_own_slope() -> None:
    """Both fleets miss at the first guess, by their steep slot-wait terms (log slope 20),
    where the point's margin slopes were the flat TTFT term's (0.5): Newton's step term by
    term lands between the two turning rates (1.9 and 1.95 req/s) at once, a decision in two
    probes; the margins' step alone goes the factor 2 down and needs more."""
    checks = {}
    for term_slopes in (((0.5, 20.0), (0.5, 20.0)), None):
        mine, theirs = _Model(3.0, 1.9, True), _Model(3.2, 1.95, True)
        search = verdict._OnSample(mine)  # type: ignore[arg-type]
        start = verdict.Start(2.4, (0.5, 0.5), term_slopes)
        got = search.outcome(theirs, start)  # type: ignore[arg-type]
        assert got == verdict.LOSES
        checks[term_slopes is not None] = mine.checks + theirs.checks
    assert checks[True] == 4 < checks[False]


def test_term_turning_roots() -> None:
    # up from u=0: terms -1 (slope 2, root 0.5) and -0.3 (slope 0.1, root 3): the least
    assert verdict._term_turning((-1.0, -0.3), (2.0, 0.1), 0.0, up=True) == 0.5
    # a term with no rising slope does not turn the fleet on the way up
    assert verdict._term_turning((-1.0, -0.3), (2.0, 0.0), 0.0, up=True) == 0.5
    # but one above 0 already is no fleet that meets: no answer
    assert verdict._term_turning((-1.0, 0.3), (2.0, 1.0), 0.0, up=True) is None
    # down from u=1: terms 1 (slope 2, root 0.5) and 0.3 (slope 0.4, root 0.25) and one below
    # 0 already (left out): the least root of those above 0, where the last one falls below it
    got = verdict._term_turning((1.0, 0.3, -0.5), (2.0, 0.4, 7.0), 1.0, up=False)
    assert got == pytest.approx(0.25)
    # a term above 0 without a rising slope (a saturated slot wait): no Newton step
    assert verdict._term_turning((1.0, 0.3), (2.0, 0.0), 1.0, up=False) is None
    assert verdict._term_turning((1.0,), (2.0, 1.0), 1.0, up=False) is None  # unlike lists


def test_a_second_probe_after_terms_that_did_not_move_is_the_margins_newton_step() -> None:
    # both fleets miss at 2 and at 1.8 by terms that did not move (saturated): no secant, so
    # the margins' Newton step from 1.8 with the point's slopes (log margins 3 and 2, slopes
    # 10 and 5): exp(log 1.8 - (0.3 + 0.4) / 2)
    sat = ((3.0,), (2.0,))
    nan = ((math.nan,), (math.nan,))
    probe = verdict._next_probe(0.0, 1.8, nan, sat, 1, (10.0, 5.0), prev=(2.0, sat))
    assert probe == pytest.approx(1.8 * math.exp(-0.35), rel=1e-12)
    # without the point's slopes it shrinks by the factor 2
    assert verdict._next_probe(0.0, 1.8, nan, sat, 1, None, prev=(2.0, sat)) == 0.9


def test_a_flips_bisection_starts_between_the_rates_decided_on_either_side(
    monkeypatch,
) -> None:
    """Each bisection step's search starts halfway (on the log rate) between the PDD rates at
    which the outcome was decided at the values on either side (the point's and the end's
    first, then the nearest values decided on each side); where a value's outcome was not
    decided at a rate (a tie), the side keeps the rate it had. The bisection's values are the
    same whatever the starts."""
    inp = inputs.Input("x.y", 10.0, Relative(low=0.5, high=2.0), "scenario", "test")
    # scripted: the outcome at each value (w0 = True at the point; it flips past 14) and the
    # rate each is decided at (None: a tie at 15)
    script = {15.0: (False, None), 12.5: (True, 2.0), 13.75: (True, 1.8)}
    starts: list[float] = []

    def wins_at(resolve, inp_, value, pdd, bases, guesses, built=None, decided=None):
        starts.append(guesses[0].rate_rps)
        won, rate = script[value]
        if decided is not None:
            decided.append(rate)
        return [won]

    monkeypatch.setattr(verdict, "_wins_at", wins_at)
    guess = verdict.Start(2.5, (1.0, 1.0))
    fleets = (None, None, guess)
    flip = verdict._bisect(
        None,
        inp,
        (5.0, 20.0),
        "high",
        20.0,
        fleets,
        True,
        None,
        (3.0, 1.5),  # type: ignore[arg-type]
    )
    # 15 (a tie: not a win, so it flips; the end's 1.5 stays), 12.5 (holds at 2.0), 13.75
    assert (flip.holds_at, flip.flips_at) == (13.75, 15.0)
    assert starts == pytest.approx(
        [math.sqrt(3.0 * 1.5), math.sqrt(3.0 * 1.5), math.sqrt(2.0 * 1.5)]
    )
    # without the decided rates every step starts at the point's guess
    starts.clear()
    args = (None, inp, (5.0, 20.0), "high", 20.0, fleets, True)
    same = verdict._bisect(*args)  # type: ignore[arg-type]
    assert same == flip and starts == [2.5, 2.5, 2.5]


def test_a_baseline_that_served_nothing_misses_without_its_wait_table(solved, monkeypatch) -> None:
    """The no-relay baseline serves nothing on the default scenario's point estimate (goodput
    0): its fleet is marked so, and a probe of it reads only its TTFT offsets where they miss a
    target with no wait at all, without the whole check; the answer is the whole check's."""
    ls, out = solved
    rs = ls.resolved
    (base,) = [b for b in out.baselines if b.goodput_rps <= 0]
    fleet = verdict._Fleet.of(base)
    assert fleet.served_nothing and not verdict._Fleet.of(out.plan).served_nothing
    built = fleet.on(rs)
    calls = []
    inner = verdict.check_fleet
    monkeypatch.setattr(verdict, "check_fleet", lambda *a, **k: calls.append(a) or inner(*a, **k))
    rate = 0.5 * out.plan.goodput_rps
    assert built.early(rate) is False and not calls
    assert not built.check(rate).meets_sla and len(calls) == 1
