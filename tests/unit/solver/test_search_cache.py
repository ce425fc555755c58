"""The search's memo (:class:`pddplan.solver.cache.SearchCache`): a bounded LRU."""

from __future__ import annotations

import math

from pddplan.solver.cache import SearchCache


def test_a_kept_value_is_returned_without_computing_again() -> None:
    cache = SearchCache()
    calls: list[str] = []

    def compute() -> float:
        calls.append("x")
        return 2.5

    assert cache.get(("route", 1.0), compute) == 2.5
    assert cache.get(("route", 1.0), compute) == 2.5
    assert calls == ["x"]
    assert (cache.hits, cache.misses) == (1, 1)


def test_falsy_values_are_kept_like_any_other() -> None:
    """None, 0 and an empty tuple are values (a search that found nothing), not misses."""
    cache = SearchCache()
    for key, value in (("none", None), ("zero", 0.0), ("empty", ())):
        calls: list[object] = []

        def compute(v: object = value, seen: list[object] = calls) -> object:
            seen.append(v)
            return v

        assert cache.get(key, compute) == value
        assert cache.get(key, compute) == value
        assert len(calls) == 1, key
    assert (cache.hits, cache.misses) == (3, 3)


def test_the_least_recently_used_entry_goes_first() -> None:
    cache = SearchCache(max_entries=2)
    cache.get("a", lambda: 1)
    cache.get("b", lambda: 2)
    cache.get("a", lambda: -1)  # a hit: "a" is now the most recently used
    cache.get("c", lambda: 3)  # over the bound: "b" goes
    assert "a" in cache and "c" in cache and "b" not in cache
    assert len(cache) == 2
    assert cache.get("b", lambda: 20) == 20  # computed again
    assert "a" not in cache  # "a" was the least recently used then


def test_put_replaces_a_value_and_counts_as_a_use() -> None:
    cache = SearchCache(max_entries=2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("a", 10)  # replaced, and now the most recently used
    cache.put("c", 3)
    assert cache.get("a", lambda: -1) == 10
    assert "b" not in cache


def test_a_key_kept_while_its_value_is_computed_ends_most_recent() -> None:
    """A miss's value is kept as :meth:`put` keeps it, also where computing it kept the same
    key (a batch computation that fills its siblings): replaced, and the most recently used."""
    cache = SearchCache(max_entries=3)
    cache.get("a", lambda: 1)

    def fills_b_and_c() -> int:
        cache.put("b", -2)
        cache.put("c", 3)
        return 2

    assert cache.get("b", fills_b_and_c) == 2  # the computed value replaces the one kept
    cache.get("d", lambda: 4)  # over the bound: "a" goes, then "c" (b was used last)
    assert list(cache._data) == ["c", "b", "d"]
    cache.get("e", lambda: 5)
    assert "c" not in cache and cache.get("b", lambda: -1) == 2


def test_clear_forgets_values_and_counts() -> None:
    cache = SearchCache()
    cache.get("a", lambda: 1)
    cache.get("a", lambda: 1)
    cache.clear()
    assert len(cache) == 0 and (cache.hits, cache.misses) == (0, 0)
    assert cache.get("a", lambda: 7) == 7


def test_the_line_rate_limit_is_kept_per_physics_and_is_each_problems_own() -> None:
    """``Solver.line_rate_limit`` is memoized on the problem's physics key: a problem of other
    physics (a narrower line, another KV size, one datacenter) gets its own figure, and each
    equals the formula on its own problem (the line's goodput at its cap over the mean bytes a
    request sends it)."""
    from dataclasses import replace

    import numpy as np

    from pddplan.io.loader import Registry, load_scenario
    from pddplan.solver import Solver, build_problem
    from pddplan.solver.problem import SAME_DC

    def direct(pb) -> float:
        if not pb.topology.cross_dc:
            return math.inf
        per_req = float(np.sum(pb.classes.weight * pb.wan_bytes))
        return pb.link_utilization_cap * pb.wan.goodput_bytes_per_s / per_req

    rs = load_scenario(None, Registry.default())
    narrow = load_scenario(
        None,
        Registry.default(),
        {"overrides": {"links": {rs.link.name: {"bandwidth_gbit_per_s": 25}}}},
    )
    cache = SearchCache()
    pb = build_problem(rs)
    problems = [
        pb,
        build_problem(narrow),
        replace(pb, link_utilization_cap=0.5),
        build_problem(rs, SAME_DC),
    ]
    got = [Solver(p, cache).line_rate_limit() for p in problems]
    assert got == [direct(p) for p in problems]
    assert len(set(got)) == 4 and math.isinf(got[3]) and got[1] < got[0]
    # kept: a second solver of the first physics reads it back
    hits = cache.hits
    assert Solver(build_problem(rs), cache).line_rate_limit() == got[0] and cache.hits == hits + 1


def test_the_kept_means_are_the_sums_they_stand_for() -> None:
    """A prefill option's mean service time and the mean KV a request sends are kept once per
    instance and per problem; each is the weighted sum over the classes, to the bit, as the
    utilization, the cap count, the line's load and its saturating rate read it."""
    import numpy as np

    from pddplan.api.scenario import load
    from pddplan.solver import Solver, build_problem

    rs = load("examples/pdd-paper.yaml", None, None).resolved
    pb = build_problem(rs)
    solver = Solver(pb, SearchCache())
    w = pb.classes.weight
    for inst in pb.options["P"]:
        want = float(np.sum(w * solver.prefill_s(inst)))
        assert solver.mean_prefill_s(inst) == want
        assert solver.prefill_utilization(inst, 3, 2.0) == 2.0 * want / 3
        cap = pb.prefill_utilization_cap
        assert solver.prefill_cap_count(inst, 2.0) == max(1, math.ceil(2.0 * want / cap - 1e-9))
    per_request = float(np.sum(w * pb.wan_bytes))
    assert pb.mean_wan_bytes == per_request > 0
    assert solver.line_rate_limit() == pb.link_utilization_cap * pb.wan.goodput_bytes_per_s / (
        per_request
    )


def test_the_kept_capped_step_is_the_computed_one() -> None:
    """RLD's working step, which a plan's first token and its hand-over figures both read, is
    kept per instance physics, batch and context: a second reading is the first, and both are
    the step computed afresh and capped at the TPOT target, to the bit."""
    from pddplan.io.loader import Registry, load_scenario
    from pddplan.solver import Solver, build_problem

    pb = build_problem(load_scenario(None, Registry.default()))
    solver = Solver(pb, SearchCache())
    for inst in pb.options["RLD"] + pb.options["MD"]:
        for batch in (1.0, 1.7, 12.25, 4096.0):
            for ctx in (900.0, 90347.9564703008):
                want = min(float(inst.decode_step_s(batch, ctx)), pb.tpot_s)
                misses = solver.cache.misses
                assert solver.capped_step(inst, batch, ctx) == want
                assert solver.capped_step(inst, batch, ctx) == want
                assert solver.cache.misses == misses + 1  # the second was kept


def test_the_kept_md_context_is_each_topologys_own_mean() -> None:
    """MD's mean context is kept per request classes object and the topology's filter of
    anomalous requests: problems of one scenario on every topology (which share the classes)
    each read their own weighted mean, to the bit, kept or not, and a second solver of the
    same classes reads it back."""
    from pddplan import timing
    from pddplan.io.loader import Registry, load_scenario
    from pddplan.solver import Solver, build_problem
    from pddplan.solver.problem import NO_RELAY, PDD, PDD_UNFILTERED, SAME_DC
    from pddplan.solver.sizing import _MD_CONTEXT

    rs = load_scenario(None, Registry.default())
    _MD_CONTEXT.__init__()  # cold: the first problem computes it, the others share its classes
    got = {}
    for topo in (PDD, PDD_UNFILTERED, SAME_DC, NO_RELAY):
        pb = build_problem(rs, topo)
        c = pb.classes
        want = timing.md_context_tokens(
            c.input_tokens, c.output_tokens, c.weight, pb.on_decode_side
        )
        got[topo.name, topo.anomalous_filter] = Solver(pb, SearchCache()).md_context_tokens()
        assert got[topo.name, topo.anomalous_filter] == want
        assert Solver(build_problem(rs, topo), SearchCache()).md_context_tokens() == want
    # the anomalous requests' context counts on MD only where the filter keeps them off it
    assert got["pdd", True] != got["pdd", False] == got["same-dc", False]
