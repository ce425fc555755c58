"""The search's physics of every routing at a rate in one batch (:meth:`Solver._by_routing`)
holds, to the bit, what each routing's own calls give: routes, TTFT offsets, prefill counts and
decode loads; and a search finds the same plans with or without it."""

from __future__ import annotations

import math
import random
from dataclasses import fields

import numpy as np
import pytest

from pddplan import timing
from pddplan.errors import InfeasibleError
from pddplan.models import queueing
from pddplan.solver import Solver
from pddplan.solver.cache import SearchCache
from pddplan.solver.problem import PERCENTILES
from tests.batch_cases import MANY, SCENARIOS, problem, random_routings, same_bits


def _same_route(a: timing.Timeline, b: timing.Timeline) -> bool:
    for f in fields(timing.Timeline):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not same_bits(x, y):
                return False
        elif x != y:
            return False
    return True


@pytest.mark.parametrize("path", SCENARIOS)
def test_batched_values_are_each_routings_own(path: str | None) -> None:
    pb = problem(path)
    rng = random.Random(hash(path) & 0xFFFF)
    cap = pb.link_utilization_cap
    limit = pb.link_utilization_cap * pb.wan.goodput_bytes_per_s / max(pb.mean_wan_bytes, 1e-300)
    rates = [rng.uniform(0.05, 1.0) * min(limit, 50.0) for _ in range(4)] + [0.01]
    modes = pb.handover_modes if pb.topology.relay else ("one-shot",)
    for rate in rates:
        routings = random_routings(pb, rng)
        batched = Solver(pb, SearchCache())
        own = Solver(pb, SearchCache())
        fresh = batched.fresh_routes(rate, routings)
        assert fresh is not None
        tls, routes = fresh
        assert pb.topology.cross_dc or tls.link_utilization <= cap
        p = pb.options["P"][rng.randrange(len(pb.options["P"]))]
        batched.ttft_offsets_by_routing(p, tls, routes)
        batched.prefill_counts_by_routing(p, rate, routes)
        rows = list(range(len(routes)))
        for mode in modes:
            batched.decode_loads_by_routing(tls, routes, rows, pb.options["MD"], mode)
        for routing, route in zip(routings, routes, strict=True):
            mine = own.route(rate, routing)
            assert route is batched.route(rate, routing)  # the memo holds the batch's row
            assert _same_route(route, mine), (path, rate, routing)
            got = batched.ttft_offsets(p, route)
            want = own.ttft_offsets(p, mine)
            assert all(same_bits(x, y) for x, y in zip(got, want, strict=True))
            assert all(not a.flags.writeable for a in got)
            assert batched.prefill_count(p, rate, route) == own.prefill_count(p, rate, mine)
            for mode in modes:
                for m in pb.options["MD"]:
                    got_l = batched.decode_load(route, m, mode)
                    want_l = own.decode_load(mine, m, mode)
                    assert got_l[0] == want_l[0]
                    assert all(
                        same_bits(x, y) for x, y in zip(got_l[1:], want_l[1:], strict=True)
                    ), (path, rate, routing, mode)


def test_decode_loads_of_several_md_options_androutings() -> None:
    """Several MD options and routings in one split: each (option, routing) row is the split of
    that option alone on that routing alone (a scenario of several MD layouts)."""
    pb = problem(MANY)
    mds = pb.options["MD"]
    assert len(mds) > 1
    batched, own = Solver(pb, SearchCache()), Solver(pb, SearchCache())
    fresh = batched.fresh_routes(2.0, pb.routings)
    assert fresh is not None
    tls, routes = fresh
    for mode in pb.handover_modes:
        batched.decode_loads_by_routing(tls, routes, list(range(len(routes))), mds, mode)
        for routing, route in zip(pb.routings, routes, strict=True):
            for m in mds:
                got = batched.decode_load(route, m, mode)
                want = own.decode_load(own.route(2.0, routing), m, mode)
                assert all(same_bits(x, y) for x, y in zip(got[1:], want[1:], strict=True))


def test_row_reductions_sum_each_row_as_alone() -> None:
    """What the batched CDF relies on: numpy's sum along the last axis of a C-contiguous array
    gives each row the bits of that row's own sum (pairwise summation, row by row)."""
    rng = np.random.default_rng(7)
    for _ in range(400):
        r, t, n = (int(x) for x in rng.integers(1, [12, 5, 700]))
        a = rng.standard_normal((r, t, n)) * 10.0 ** rng.uniform(-6, 6, (r, t, n))
        full = np.add.reduce(a, axis=-1)
        for i in range(r):
            for j in range(t):
                assert full[i, j].tobytes() == np.add.reduce(a[i, j].copy()).tobytes()


def test_cdf_rows_are_each_rows_own_reading() -> None:
    """:meth:`cdf_at_targets_by_row` against :meth:`cdf_at_targets` row by row, a row with an
    infinite offset (read 0 at every target) among them, with and without a queue's wait."""
    pb = problem(None)
    s = Solver(pb, SearchCache())
    rng = np.random.default_rng(3)
    p = pb.options["P"][0]
    wait = s.prefill_wait(p, 4, 0.9 * 4 / s.mean_prefill_s(p))
    for _ in range(20):
        n = int(rng.integers(1, 300))
        rows = rng.uniform(0.0, 2.0 * max(pb.ttft_targets_s), (int(rng.integers(1, 9)), n))
        if rng.random() < 0.5:
            rows[int(rng.integers(len(rows))), int(rng.integers(n))] = math.inf
        wts = rng.uniform(0.0, 1.0, n)
        for pw, cond in ((0.0, None), (wait.wait_probability, wait.conditional)):
            got = s.cdf_at_targets_by_row(rows, wts, pw, cond)
            assert got == [s.cdf_at_targets(row, wts, pw, cond) for row in rows]
            meets = [s.cdf_meets(row, wts, pw, cond) for row in rows]
            assert [all(f >= q for f, q in zip(g, PERCENTILES, strict=True)) for g in got] == meets


def test_first_token_points_of_every_routing() -> None:
    pb = problem("examples/long-context.yaml")
    c = pb.classes
    s = Solver(pb, SearchCache())
    for util in (0.0, 0.3, 0.9):
        tls = timing.timelines(
            pb.paths,
            pb.routings,
            c.input_tokens,
            c.hit_rate,
            c.output_tokens,
            pb.on_decode_side,
            util,
        )
        pre = s.prefill_s(pb.options["P"][0])
        got = timing.first_token_points_by_routing(pb.paths, tls, pre, c.weight)
        for i, routing in enumerate(pb.routings):
            tl = timing.timeline(
                pb.paths,
                routing,
                c.input_tokens,
                c.hit_rate,
                c.output_tokens,
                pb.on_decode_side,
                util,
            )
            assert _same_route(tls.row(i), tl)
            want = timing.first_token_points(pb.paths, tl, pre, c.weight)
            assert all(same_bits(x, y) for x, y in zip(got[i], want, strict=True))


def _summary(plan) -> tuple:
    return (
        plan.cost_usd_per_hour,
        plan.routing,
        plan.handover,
        tuple((r, None if v is None else (v[0].physics_key, v[1])) for r, v in plan.roles.items()),
        plan.prefill,
        tuple(sorted(plan.decode.items())),
        plan.md_stall_s,
        plan.rld_output_token_share,
        plan.binding,
        plan.rld_extra_s.tobytes(),
    )


@pytest.mark.parametrize("path", [None, MANY, "examples/long-context.yaml"])
def test_search_plans_are_the_same_without_the_batch(
    path: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    pb = problem(path)
    rng = random.Random(11)
    rates = [rng.uniform(0.2, 6.0) for _ in range(6)]

    def plans() -> list:
        s = Solver(pb, SearchCache())
        out = []
        for rate in rates:
            try:
                out.append(_summary(s.solve_rate(rate)))
            except InfeasibleError as exc:
                out.append((str(exc), exc.binding))
        return out

    with_batch = plans()
    monkeypatch.setattr(Solver, "_by_routing", lambda self, rate, routings, modes: None)
    assert plans() == with_batch


def test_mixture_cdf_over_rows_is_each_rows() -> None:
    """:func:`~pddplan.models.queueing.mixture_cdf` with offsets of a leading row axis (the
    targets' axis between): each row's values are its own call's."""
    rng = np.random.default_rng(5)
    t = np.array([0.5, 1.0, 2.0])
    for _ in range(20):
        d = rng.uniform(0.0, 2.0, (5, int(rng.integers(1, 250))))
        w = rng.uniform(0.0, 1.0, d.shape[1])
        got = queueing.mixture_cdf(t, d[:, None, :], w, 0.3, tail_rate_per_s=2.0)
        for i in range(len(d)):
            assert got[i].tobytes() == queueing.mixture_cdf(t, d[i], w, 0.3, 2.0).tobytes()
