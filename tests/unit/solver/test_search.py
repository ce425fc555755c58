"""The solver's search is exact within the model: it matches brute-force enumeration."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pddplan.errors import InfeasibleError
from pddplan.io.loader import Registry, load_scenario
from pddplan.models import queueing
from pddplan.solver import Solver, build_problem

SMALL = {
    "roles": {
        "P": {"chips": ["gpu-a", "h800-sxm"], "chips_per_instance": [4, 8]},
        "RLD": {"chips": ["gpu-a", "h20"], "chips_per_instance": [4, 8]},
        "MD": {"chips": ["gpu-b", "h20"], "chips_per_instance": [4, 8]},
    }
}


def _problem(rate_patch: dict | None = None):
    rs = load_scenario(
        "examples/pdd-paper.yaml", Registry.default(), {**SMALL, **(rate_patch or {})}
    )
    return build_problem(rs)


def _slots(slots: int, load: float, pb) -> bool:
    """The decode slot-wait bound, by Erlang B's recursion (independent of the solver's
    closed form)."""
    return queueing.erlang_c_recursive(slots, load) <= pb.decode_slot_wait_probability_cap


def _brute_force_cost(pb, rate: float) -> float:
    """Least cost by enumerating every routing, mode, option triple and count."""
    s = Solver(pb)
    best = math.inf
    n_max = 40
    for routing in pb.routings:
        route = s.route(rate, routing)
        if route.link_utilization > pb.link_utilization_cap:
            continue
        p_costs = []
        for p in pb.options["P"]:
            offs, wts, _ = s.ttft_offsets(p, route)
            mean_s = float(np.sum(pb.classes.weight * s.prefill_s(p)))
            for n in range(1, n_max + 1):
                if rate * mean_s / n > pb.prefill_utilization_cap:
                    continue
                q, _, _ = s.ttft_at(p, n, rate, offs, wts)
                if all(qi <= ti * (1 + 1e-9) for qi, ti in zip(q, pb.ttft_targets_s, strict=True)):
                    p_costs.append(n * p.price_usd_per_hour)
                    break
        if not p_costs:
            continue
        for mode in pb.handover_modes:
            has_rld = bool(np.any(route.relay | ~pb.on_decode_side))
            for m in pb.options["MD"]:
                ctx, md_time, ext_busy, _, rld_time, rld_tokens, _ = s.decode_load(route, m, mode)
                b_m = m.max_batch_at_tpot(ctx, pb.tpot_s)
                if b_m < 1:
                    continue
                conc_m = float(np.sum(rate * pb.classes.weight * md_time))
                ext = float(np.sum(pb.classes.weight * ext_busy))
                a_m = conc_m + rate * ext * b_m
                n_m = next(
                    n
                    for n in range(1, 10_000)
                    if n >= conc_m / b_m + rate * ext - 1e-9 and _slots(n * b_m, a_m, pb)
                )
                cost_m = n_m * m.price_usd_per_hour
                r_costs = [0.0] if not has_rld else []
                if has_rld:
                    ctx_r = s.rld_context_tokens(route)
                    conc_r = float(np.sum(rate * pb.classes.weight * rld_time))
                    for r in pb.options["RLD"]:
                        b_r = r.max_batch_at_tpot(ctx_r, pb.tpot_s)
                        if b_r < 1:
                            continue
                        n_r = next(
                            n
                            for n in range(1, 10_000)
                            if n * b_r >= conc_r - 1e-9 and _slots(n * b_r, conc_r, pb)
                        )
                        r_costs.append(n_r * r.price_usd_per_hour)
                if not r_costs:
                    continue
                best = min(best, min(p_costs) + cost_m + min(r_costs))
    return best + pb.wan.price_usd_per_hour


@pytest.mark.parametrize("rate", [0.5, 2.35, 6.0])
def test_solver_matches_brute_force(rate: float) -> None:
    pb = _problem()
    plan = Solver(pb).solve_rate(rate)
    assert plan.cost_usd_per_hour == pytest.approx(_brute_force_cost(pb, rate), rel=1e-9)


def test_returned_plan_meets_every_constraint_by_the_model() -> None:
    pb = _problem()
    s = Solver(pb)
    plan = s.solve_rate(3.0)
    p, n_p = plan.roles["P"]
    offs, wts, _ = s.ttft_offsets(p, plan.route)
    q, _, util = s.ttft_at(p, n_p, 3.0, offs, wts)
    assert all(qi <= ti * (1 + 1e-9) for qi, ti in zip(q, pb.ttft_targets_s, strict=True))
    assert util <= pb.prefill_utilization_cap
    assert plan.route.link_utilization <= pb.link_utilization_cap
    md = plan.decode["MD"]
    assert md is not None and md.instances * md.batch_per_instance >= md.concurrency


@pytest.mark.parametrize("rate", [1.0, 3.0])
def test_ttft_bound_plan_names_the_percentile_that_binds(rate: float) -> None:
    """A prefill pool the TTFT targets size names the percentile closest to its target (at
    the sizing's figures) in its sizing and in the plan's binding constraints, though the
    search names it only for the plan it returns."""
    pb = _problem()
    s = Solver(pb)
    plan = s.solve_rate(rate)
    p, n_p = plan.roles["P"]
    offs, wts, _ = s.ttft_offsets(p, plan.route)
    q, _, _ = s.ttft_at(p, n_p, rate, offs, wts)
    worst = max(range(3), key=lambda i: q[i] / pb.ttft_targets_s[i])
    name = f"TTFT p{(50, 90, 99)[worst]}"
    assert plan.prefill.bound_by == name
    assert plan.binding[0] == f"P: {name}"


def test_ties_of_one_ttft_key_skip_the_percentiles() -> None:
    """Plans of equal cost whose TTFT figures share a key are ordered by :func:`plan_key`
    without reading their percentiles; other keys read them."""
    from dataclasses import replace

    from pddplan.solver.search import better_plan, plan_key

    plan = Solver(_problem()).solve_rate(1.0)
    other = replace(plan, handover="catch-up" if plan.handover != "catch-up" else "one-shot")
    read: list[int] = []

    def ttft_s(p):
        read.append(1)
        return p.prefill.ttft_s

    got = better_plan(plan, other, ttft_s, lambda p: "same")
    assert got == (plan_key(plan) < plan_key(other)) and not read
    better_plan(plan, other, ttft_s, id)
    assert read


def test_plan_search_finalizes_only_plans_whose_costs_tie(monkeypatch) -> None:
    """The variants' plans get their final figures only where a tie needs them; the plan
    returned is the one a comparison of every final plan picks."""
    from pddplan.api.scenario import load
    from pddplan.solver.modes import PlanSearch
    from pddplan.solver.search import better_plan

    def problem(overrides):
        return build_problem(load("examples/pdd-paper.yaml", overrides, None).resolved)

    pb, dearer = problem({}), problem({"chips.gpu-b.price_usd_per_hour": 9.0})
    calls: list[Solver] = []
    real = Solver.finalized

    def counted(self, plan):
        calls.append(self)
        return real(self, plan)

    monkeypatch.setattr(Solver, "finalized", counted)
    for problems, finals in (([dearer, pb], 1), ([pb, pb], 2)):
        calls.clear()
        got = PlanSearch(problems).solve_rate(2.35)
        assert len(calls) == finals
        plans = [Solver(p).solve_rate(2.35) for p in problems]
        want = plans[1] if better_plan(plans[1], plans[0]) else plans[0]
        assert got.cost_usd_per_hour == want.cost_usd_per_hour
        assert got.prefill == want.prefill and got.roles == want.roles


def test_ttft_offsets_are_shared_and_read_only() -> None:
    """The TTFT offsets of one instance and route are computed once (the same read-only
    arrays), equal to the timeline's, and a rate that loads the line differently has its own."""
    from pddplan import timing

    pb = _problem()
    s = Solver(pb)
    p = pb.options["P"][0]
    route = s.route(1.0, pb.routings[0])
    first, again = s.ttft_offsets(p, route), s.ttft_offsets(p, route)
    assert all(a is b and not a.flags.writeable for a, b in zip(first, again, strict=True))
    direct = timing.first_token_points(pb.paths, route, s.prefill_s(p), pb.classes.weight)
    assert all(np.array_equal(a, b) for a, b in zip(first, direct, strict=True))
    other = s.ttft_offsets(p, s.route(3.0, pb.routings[0]))
    assert other[0] is not first[0]


def test_prefill_times_are_kept_per_instance_object_and_equal_the_timing() -> None:
    """A sizing's prefill times of an instance are one array (and its bytes one string),
    equal to the timing's; an equal instance built anew gets equal times of its own, and a
    sizing of another chunk size computes its own."""
    from dataclasses import replace

    from pddplan import timing

    pb = _problem()
    s = Solver(pb)
    c = pb.classes
    for p in pb.options["P"]:
        first = s.prefill_s(p)
        assert s.prefill_s(p) is first
        want = timing.prefill_s(
            p, c.uncached_tokens, c.cached_tokens, pb.chunk_size_tokens, pb.cache
        )
        assert np.array_equal(first, want)
        assert s._prefill_bytes(p) is s._prefill_bytes(p) and s._prefill_bytes(p) == first.tobytes()
        twin = replace(p)
        assert twin is not p and np.array_equal(s.prefill_s(twin), first)
    p = pb.options["P"][0]
    small = Solver(replace(pb, chunk_size_tokens=pb.chunk_size_tokens // 4))
    want = timing.prefill_s(
        p, c.uncached_tokens, c.cached_tokens, pb.chunk_size_tokens // 4, pb.cache
    )
    assert np.array_equal(small.prefill_s(p), want)
    assert not np.array_equal(small.prefill_s(p), s.prefill_s(p))


def test_infeasible_names_the_line_and_the_relaxation() -> None:
    pb = _problem()
    s = Solver(pb)
    too_fast = s.line_rate_limit() * 1.5
    with pytest.raises(InfeasibleError) as err:
        s.solve_rate(too_fast)
    assert err.value.binding == "line utilization"
    assert "Gbit/s" in str(err.value) and err.value.exit_code == 3


def test_infeasible_ttft_names_the_percentile() -> None:
    pb = _problem(
        {"sla": {"ttft_p50_s": 0.01, "ttft_p90_s": 0.02, "ttft_p99_s": 0.03, "tpot_ms": 50}}
    )
    with pytest.raises(InfeasibleError) as err:
        Solver(pb).solve_rate(1.0)
    assert err.value.binding.startswith("TTFT p")
    assert "needs at least" in str(err.value)


def _brute_force_fleets(pb, hi: float, points: int = 60, cap: bool = False):
    """The least-cost plan at each of ``points`` rates up to ``hi``, with its fleet goodput."""
    from dataclasses import replace

    from pddplan.solver.fleet import goodput_rps

    s = Solver(pb)
    out = []
    for r in np.geomspace(hi / 200, hi, points):
        try:
            plan = s.solve_rate(float(r))
        except InfeasibleError:
            continue
        g = goodput_rps(s, plan, 1e-7)
        if cap:  # max-BCR counts goodput up to the walk's ceiling (traffic above is not there)
            g = min(g, hi)
        out.append(replace(plan, fleet_goodput_rps=g))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("hi", [5.0])
def test_max_bcr_matches_brute_force(hi: float) -> None:
    from pddplan.solver.modes import solve_max_bcr

    pb = _problem()
    got = solve_max_bcr(Solver(pb), hi)
    brute = max(p.bcr_requests_per_usd for p in _brute_force_fleets(pb, hi, cap=True))
    assert got.bcr_requests_per_usd >= brute * (1 - 1e-6)
    assert got.rate_rps <= hi


@pytest.mark.slow
@pytest.mark.parametrize("budget", [90.0, 260.0])
def test_budget_matches_brute_force(budget: float) -> None:
    from pddplan.solver.modes import solve_budget

    pb = _problem()
    got = solve_budget(Solver(pb), budget, 8.0)
    assert got.cost_usd_per_hour <= budget
    fits = [p for p in _brute_force_fleets(pb, 8.0) if p.cost_usd_per_hour <= budget]
    assert got.goodput_rps >= max(p.goodput_rps for p in fits) * (1 - 1e-6)


@pytest.mark.slow
def test_ties_do_not_depend_on_list_order() -> None:
    """Reversing every option list gives the same plan and TTFT, in every mode."""
    from pddplan.solver.answer import solve_scenario

    def roles(order):
        return {
            "roles": {
                "P": {"chips": order(["gpu-a", "h800-sxm"]), "chips_per_instance": order([8, 16])},
                "RLD": {"chips": order(["gpu-a", "h20"]), "chips_per_instance": order([8, 16])},
                "MD": {"chips": order(["gpu-b", "h20"]), "chips_per_instance": order([8, 16])},
            }
        }

    def key(o):
        p = o.plan
        return (
            p.cost_usd_per_hour,
            p.prefill.ttft_s,
            p.routing,
            p.handover,
            {k: (v[0].chip.name, v[0].tensor_parallel, v[1]) for k, v in p.roles.items() if v},
        )

    for kw in ({}, {"budget_usd_per_hour": 176.0, "rate_rps": None}, {"max_bcr": True}):
        outs = []
        for order in (list, lambda xs: list(reversed(xs))):
            rs = load_scenario("examples/pdd-paper.yaml", Registry.default(), roles(order))
            outs.append(key(solve_scenario(rs, baselines=False, max_rate_rps=4.0, **kw)))
        assert outs[0] == outs[1]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["max-bcr", "budget"])
def test_walks_pick_what_a_walk_of_final_plans_picks(mode: str) -> None:
    """The max-BCR and budget walks take candidates and finalize only ties and the plan they
    return (``Finals``): the plan equals, field for field, what the same walk returns when every
    fleet it takes is already final (``solve_rate`` at each step, ties ranked on their own final
    TTFTs), and it comes back with its final figures."""
    from pddplan.api.scenario import load
    from pddplan.solver.modes import PlanSearch, solve_budget, solve_max_bcr

    class FinalEveryStep:
        """A search whose candidates are its final plans, as the walk took them before."""

        def __init__(self, search: PlanSearch) -> None:
            self.candidate_rate = search.solve_rate
            self.solve_rate = search.solve_rate
            self.cost_floor = search.cost_floor
            self.step_end_for_goodput = search.step_end_for_goodput
            self.goodput_bound_for_cost = search.goodput_bound_for_cost
            self.cost_floor_for_goodput = search.cost_floor_for_goodput

        def finalized(self, plan):
            return plan

    rs = load("examples/pdd-paper.yaml", None, None).resolved
    problems = [build_problem(rs)]
    hi, budget = 4.0, 150.0

    def answer(solver):
        if mode == "max-bcr":
            return solve_max_bcr(solver, hi)
        return solve_budget(solver, budget, hi)

    got = answer(PlanSearch(problems))
    assert got == answer(FinalEveryStep(PlanSearch(problems)))
    assert got.prefill.has_figures and all(math.isfinite(t) for t in got.prefill.ttft_s)
    assert got.handover_inputs is None


def test_routings_are_the_classes_thresholds_shared_per_classes_object() -> None:
    """``Problem.routings``: relay nothing, relay below each threshold, relay all. The
    thresholds are the workload's hit-rate bins' interior edges (within its hit rates) or,
    without bins, the midpoints between its distinct non-anomalous hit rates. The tuple is
    kept per classes object and each problem handed its own list; relay-only drops the first,
    no-relay keeps it alone."""
    from dataclasses import replace

    from pddplan.solver.problem import MAX_ROUTING_THRESHOLDS, RELAY_ONLY
    from pddplan.timing import Routing

    def rule(c) -> list[Routing]:
        h = np.unique(c.hit_rate[~c.anomalous])
        if c.routing_edges is not None:
            e = c.routing_edges
            cuts = e[(e > h.min()) & (e <= h.max())]
        else:
            cuts = (h[:-1] + h[1:]) / 2
            if len(cuts) > MAX_ROUTING_THRESHOLDS:  # at most this many, at their quantiles
                cuts = np.quantile(cuts, np.linspace(0, 1, MAX_ROUTING_THRESHOLDS))
        return [
            Routing.none(),
            *(Routing.below(float(x)) for x in sorted(set(cuts))),
            Routing.all(),
        ]

    pb = _problem()
    c = pb.classes
    assert c.routing_edges is not None and len(pb.routings) > 4
    assert pb.routings == rule(c)
    again = _problem()
    assert again.classes is c and again.routings == pb.routings
    assert again.routings is not pb.routings  # a list each: changing one changes no other
    assert all(a is b for a, b in zip(again.routings, pb.routings, strict=True))
    want = list(pb.routings)
    pb.routings.pop()
    assert replace(pb, routing="auto").routings == want
    assert replace(pb, routing=RELAY_ONLY).routings == want[1:]
    assert replace(pb, routing="no-relay").routings == [Routing.none()]
    # other classes, other thresholds: the midpoints without bins, a shifted workload's
    for other in (
        replace(c, routing_edges=None),
        replace(c, hit_rate=c.hit_rate * 0.5, routing_edges=None),
    ):
        got = replace(pb, classes=other).routings
        assert got == rule(other) and got != want and len(got) > 4


@pytest.mark.parametrize("rate", [1.0, 2.0, 3.0])
def test_finalized_is_finalize_of_with_figures_in_one_copy(rate: float) -> None:
    """``Solver.finalized`` makes :meth:`with_figures`' and :meth:`finalize`'s changes in one
    copy of the candidate: every field as the two copies made it (arrays to the bit)."""
    from dataclasses import fields

    pb = _problem()
    s = Solver(pb)
    cand = s.candidate_rate(rate)
    assert not cand.prefill.has_figures  # the figures are the first copy's change
    one = s.finalized(cand)
    two = s.finalize(s.with_figures(cand))
    for f in fields(one):
        a, b = getattr(one, f.name), getattr(two, f.name)
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, b), f.name
        else:
            assert a == b, f.name
    assert one.prefill.has_figures and one.prefill.ttft_s != cand.prefill.ttft_s


@pytest.mark.slow
def test_budget_walks_past_a_fleet_above_the_budget() -> None:
    """The least cost can fall as the rate grows: RLD's batch is sized for RLD's mean context
    at the rate, which shrinks as the line loads, so near the line's capacity a bigger batch and
    fewer RLD serve a higher rate for less. pdd-paper with the line capped at 0.99 and L40S RLD
    (found by a dense rate scan, 2026-12-05): 771.16 $/h at 10.83 req/s, 743.32 $/h at 10.88.
    A budget walk that stopped at the first fleet above the budget returned 745.00 $/h and
    10.83 req/s of goodput for a budget of 750 $/h. The budget's answer must serve at least what
    any plan within the budget serves, the rate mode's plans included."""
    from pddplan.api import solve

    scenario = "examples/pdd-paper.yaml"
    ov = {"serving.link_utilization_cap": 0.99, "roles.RLD.chips": ["l40s"]}
    at_rate = solve(scenario, overrides=ov, rate_rps=10.88, baselines=False, verdict_check=False)
    assert at_rate.plan.cost_usd_per_hour < 750.0  # the cheaper fleet past the dearer one
    got = solve(
        scenario, overrides=ov, budget_usd_per_hour=750.0, baselines=False, verdict_check=False
    ).plan
    assert got.cost_usd_per_hour <= 750.0
    assert got.goodput_rps >= at_rate.plan.goodput_rps * (1 - 1e-6)
    # a fleet above the budget before the plan does not bound it: at 775 $/h the walk meets
    # 778.12 $/h at 10.83 req/s, then takes 771.16 $/h, which serves more than the 750 $/h
    # plan (10.8996 against 10.8806 req/s; 778.12 $/h reaches the line's cap, 10.8997)
    at_775 = solve(
        scenario, overrides=ov, budget_usd_per_hour=775.0, baselines=False, verdict_check=False
    ).plan
    assert 750.0 < at_775.cost_usd_per_hour <= 775.0
    assert at_775.goodput_rps > got.goodput_rps


@pytest.mark.slow
def test_a_walk_that_sees_the_least_cost_fall_says_so() -> None:
    """Where the walk meets a fleet cheaper than the one before it (the case above), the
    solve's notes say that the least cost fell and where; the default scenario's walks, whose
    least cost only grows, say nothing of it."""
    from pddplan.api import solve

    ov = {"serving.link_utilization_cap": 0.99, "roles.RLD.chips": ["l40s"]}
    kw = {"baselines": False, "verdict_check": False}
    fell = solve("examples/pdd-paper.yaml", overrides=ov, max_bcr=True, **kw)
    said = [n for n in fell.outcome.notes if n.startswith("the least cost fell")]
    assert len(said) == 1 and "the max-bcr walk" in said[0]
    for mode in ({"max_bcr": True}, {"budget_usd_per_hour": 300.0}):
        notes = solve(None, **mode, **kw).outcome.notes
        assert not any(n.startswith("the least cost fell") for n in notes)


def test_cost_floor_counts_no_main_decode_where_nothing_decodes_there() -> None:
    """Where every request is anomalous, RLD finishes them all and the search sizes no MD
    instance (:meth:`Sizing.size_decode` of no load): the search's lower bound and the walks'
    cost floor must not count one either, or they exceed the cost of the plan they bound (one
    gpu-b x8 MD instance too many before: a floor of 158.60 $/h under a 155.40 $/h plan at
    0.5 req/s)."""
    from pddplan.api import solve
    from pddplan.solver.plan import role_costs

    ov = {
        "workload.anomalous.share": 1.0,
        "sla.ttft_p50_s": 30.0,
        "sla.ttft_p90_s": 60.0,
        "sla.ttft_p99_s": 120.0,
    }
    for rate in (0.5, 1.0, 2.0):  # at 0.5 the old lower bound exceeded the plan's cost
        plan = solve(
            "examples/pdd-paper.yaml",
            overrides=ov,
            rate_rps=rate,
            baselines=False,
            verdict_check=False,
        ).plan
        assert plan.roles["MD"] is None or plan.roles["MD"][1] == 0
        s = Solver(plan.problem)
        assert s.cost_floor(rate) <= plan.cost_usd_per_hour
        assert s.lower_bound(rate, plan.route) <= plan.cost_usd_per_hour
        # each pool's term bounds that pool's own cost (the prefill term alone is loose
        # enough here to hide an MD term too high in the sums above)
        costs = role_costs(plan.roles, plan.problem.pricing)
        p_lb, md_lb = s._pool_lower_bounds(rate)
        assert p_lb <= costs["P"] and md_lb <= costs.get("MD", 0.0)


def test_sizes_with_no_layout_of_the_model_are_named_not_blamed_on_memory() -> None:
    # tp = 3 divides none of mixtral's 32 attention heads: no instance of 3 chips exists; the
    # error said no option held the weights in memory
    import pddplan
    from pddplan.errors import InfeasibleError

    sizes = {f"roles.{r}.chips_per_instance": [3] for r in ("P", "RLD", "MD")}
    with pytest.raises(InfeasibleError, match="3 chips: tp=3 does not divide the model's 32"):
        pddplan.solve(overrides={"model": "mixtral-8x7b", **sizes}, verdict_check=False)
