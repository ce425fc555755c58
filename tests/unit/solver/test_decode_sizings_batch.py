"""The decode sizings of every routing at a rate in one batch
(:meth:`Solver.decode_sizings_by_routing`, from :meth:`Solver._by_routing`) hold, to the bit,
what each routing's own :meth:`Solver._decode_sizings_compute` gives: the MD rows, the (MD row,
RLD option) pairs and their RLD counts, and RLD's context."""

from __future__ import annotations

import random
from dataclasses import fields

import numpy as np
import pytest

from pddplan.models import queueing
from pddplan.solver import Solver
from pddplan.solver.cache import SearchCache
from pddplan.solver.plan import DecodeSizing
from pddplan.timing import Routing
from tests.batch_cases import MANY, MORE, SCENARIOS, problem, random_routings, same_bits

#: The bundled scenarios, :data:`MANY` and :data:`MORE`.
DECODE_SCENARIOS = [*SCENARIOS[:2], MORE, *SCENARIOS[2:]]


def _same_value(x, y) -> bool:
    """Equal plain values of one type (floats by their text: -0.0 is not 0.0), arrays to the
    bit."""
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return type(x) is type(y) and same_bits(x, y)
    if isinstance(x, DecodeSizing):
        return type(y) is DecodeSizing and all(
            _same_value(getattr(x, f.name), getattr(y, f.name)) for f in fields(DecodeSizing)
        )
    if isinstance(x, list | tuple):
        return (
            type(x) is type(y)
            and len(x) == len(y)
            and all(_same_value(a, b) for a, b in zip(x, y, strict=True))
        )
    return type(x) is type(y) and (repr(x) == repr(y) if isinstance(x, float) else x == y)


def _same_sizings(got, want) -> bool:
    """Two :meth:`Solver._decode_sizings` values alike to the bit."""
    (rows_g, pairs_g), (rows_w, pairs_w) = got, want
    return _same_value(rows_g, rows_w) and all(
        _same_value(getattr(pairs_g, f), getattr(pairs_w, f))
        for f in ("rows", "rld", "rld_instances", "_conc", "_b_r", "_bound", "_ctx_r")
    )


def _mismatches(pb, rate: float, routings: list[Routing]) -> tuple[int, int]:
    """``(batched entries, those unlike their routing's own call)`` after one
    :meth:`Solver._by_routing` of ``routings`` at ``rate``."""
    modes = pb.handover_modes if pb.topology.relay else ("one-shot",)
    batched = Solver(pb, SearchCache())
    own = Solver(pb, SearchCache())
    batched._by_routing(rate, routings, modes)
    seen = bad = 0
    for routing in routings:
        route = batched.route(rate, routing)
        mine = own.route(rate, routing)
        for mode in modes:
            key = batched._decode_sizings_key(rate, route, mode)
            if key not in batched.cache:
                continue  # not batched: a mode that a route which does not relay never visits
            seen += 1
            got = batched._decode_sizings(rate, route, mode)
            want = own._decode_sizings_compute(rate, mine, mode)
            if not _same_sizings(got, want):
                bad += 1
    return seen, bad


def _rates(pb, rng: random.Random) -> list[float]:
    limit = pb.link_utilization_cap * pb.wan.goodput_bytes_per_s / max(pb.mean_wan_bytes, 1e-300)
    return [rng.uniform(0.05, 1.0) * min(limit, 50.0) for _ in range(4)] + [0.01]


@pytest.mark.parametrize("path", DECODE_SCENARIOS)
def test_batched_decode_sizings_are_each_routings_own(path: str | None) -> None:
    pb = problem(path)
    rng = random.Random(hash(path) & 0xFFFF)
    for rate in _rates(pb, rng):
        seen, bad = _mismatches(pb, rate, random_routings(pb, rng))
        assert seen > 0, (path, rate)
        assert bad == 0, (path, rate)


@pytest.mark.parametrize("path", DECODE_SCENARIOS)
def test_rld_contexts_of_every_routing_are_each_routings_own(path: str | None) -> None:
    pb = problem(path)
    rng = random.Random(hash(path) & 0xFFFF)
    for rate in _rates(pb, rng):
        routings = random_routings(pb, rng)
        s = Solver(pb, SearchCache())
        fresh = s.fresh_routes(rate, routings)
        assert fresh is not None
        tls, routes = fresh
        got = s.rld_context_tokens_by_routing(tls)
        want = [Solver(pb, SearchCache()).rld_context_tokens(route) for route in routes]
        assert _same_value(got, want), (path, rate)


def test_the_batch_covers_several_options_and_the_per_route_counts() -> None:
    """The scenarios of several options size RLD on several (MD row, RLD option) pairs, and
    the larger one's routes leave their RLD counts to their own call (more pairs than a search
    element by element takes)."""
    for path, over in ((MANY, False), (MORE, True)):
        pb = problem(path)
        s = Solver(pb, SearchCache())
        s._by_routing(2.0, pb.routings, pb.handover_modes)
        n_pairs = []
        for routing in pb.routings:
            route = s.route(2.0, routing)
            _rows, pairs = s._decode_sizings(2.0, route, pb.handover_modes[0])
            n_pairs.append(len(pairs.rows))
        assert max(n_pairs) > 1
        assert (max(n_pairs) > 16) == over  # 16: queueing's search element by element


@pytest.mark.parametrize("path", [None, MANY])
def test_swapped_rows_are_found(path: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above sees a batch that gives a routing another routing's sums or RLD
    context (its rows rolled by one)."""
    pb = problem(path)
    routings = list(pb.routings)
    assert _mismatches(pb, 2.0, routings)[1] == 0
    sums = Solver.decode_sums

    def rolled_sums(self, rate, md_busy_s, extend_busy_s, rld_busy_s):
        out = sums(self, rate, md_busy_s, extend_busy_s, rld_busy_s)
        return tuple(np.roll(a, 1, axis=-1) if np.ndim(a) else a for a in out)

    with monkeypatch.context() as m:
        m.setattr(Solver, "decode_sums", rolled_sums)
        assert _mismatches(pb, 2.0, routings)[1] > 0
    ctx = Solver._rld_context_tokens

    def rolled_ctx(self, tl):
        out = ctx(self, tl)
        return np.roll(out, 1) if np.ndim(out) else out

    with monkeypatch.context() as m:
        m.setattr(Solver, "_rld_context_tokens", rolled_ctx)
        assert _mismatches(pb, 2.0, routings)[1] > 0


def test_decode_sums_of_rows_are_each_rows_own() -> None:
    """:meth:`Solver.decode_sums` over (option, routing) rows: each row's sums are its own
    call's, bit for bit, as floats (loads of wide ranges, zeros and negative zeros among
    them)."""
    pb = problem(None)
    s = Solver(pb, SearchCache())
    rng = np.random.default_rng(17)
    n = len(pb.classes)
    for _ in range(50):
        shape = (int(rng.integers(1, 5)), int(rng.integers(1, 12)), n)
        parts = [rng.standard_normal(shape) * 10.0 ** rng.uniform(-4, 4, shape) for _ in range(3)]
        parts[0][rng.random(shape) < 0.2] = -0.0
        rate = float(rng.uniform(0.01, 40.0))
        full = [a.tolist() for a in s.decode_sums(rate, *parts)]
        for i in range(shape[0]):
            for j in range(shape[1]):
                own = s.decode_sums(rate, *(a[i, j].copy() for a in parts))
                assert all(_same_value(f[i][j], float(o)) for f, o in zip(full, own, strict=True))


def test_units_for_wait_by_element_whatever_the_size() -> None:
    """``by_element`` searches each element as a small call does: several small calls'
    elements in one call hold each call's counts."""
    rng = np.random.default_rng(23)
    for cap in (0.01, 0.2, 1.0):
        a = rng.uniform(0.0, 400.0, (9, 4, 3))
        a[rng.random(a.shape) < 0.1] = 0.0
        k = rng.integers(1, 64, (9, 1, 3)).astype(float)
        n = np.maximum(np.ceil(a / k), 1.0).astype(np.int64)
        got = queueing.units_for_wait_array(a, k, n, cap, by_element=True)
        assert got.dtype == np.int64 and got.shape == a.shape
        for i in range(len(a)):
            assert queueing.searches_by_element(a[i].size)
            want = queueing.units_for_wait_array(a[i], k[i], n[i], cap)
            assert same_bits(got[i], want)
