"""Property tests of the prefix-cache replay (hypothesis).

What is true and tested: hit rates lie in [0, 1]; the vectorized LRU equals the reference LRU
however the trace is cut into calls and batches; for one trace, a request's hit never falls when
the LRU capacity grows (LRU is a stack algorithm on the replay's reference string, which does not
depend on the capacity, so the smaller cache's content is always inside the larger one's), hence
neither does the mean; the unbounded cache bounds every LRU capacity. These hold for arbitrary
id lists, chained or not.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pddplan.trace.blockindex import BlockIndex, IdHashMap
from pddplan.trace.cache import LruStackReplayer, UnboundedReplayer, prefix_hits
from pddplan.trace.stats import compress_empirical, probabilities

request = st.lists(st.integers(min_value=0, max_value=25), min_size=0, max_size=8)
traces = st.lists(request, min_size=1, max_size=30)
capacities = st.lists(st.integers(min_value=1, max_value=30), min_size=1, max_size=4, unique=True)


@st.composite
def chained_traces(draw: st.DrawFn) -> list[list[int]]:
    """Requests as paths in a prefix tree: each extends a random earlier request's prefix."""
    reqs: list[list[int]] = []
    next_id = 0
    for _ in range(draw(st.integers(min_value=1, max_value=30))):
        base: list[int] = []
        if reqs and draw(st.booleans()):
            parent = draw(st.sampled_from(reqs))
            base = parent[: draw(st.integers(min_value=0, max_value=len(parent)))]
        extra = draw(st.integers(min_value=0, max_value=5))
        reqs.append(base + list(range(next_id, next_id + extra)))
        next_id += extra
    return reqs


def _flat(reqs: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    ids = np.array([x for r in reqs for x in r], dtype=np.int64)
    return ids, np.array([len(r) for r in reqs], dtype=np.int64)


@settings(max_examples=150, deadline=None)
@given(st.one_of(traces, chained_traces()), capacities, st.integers(1, 40), st.data())
def test_vectorized_lru_equals_reference(
    reqs: list[list[int]], caps: list[int], batch: int, data: st.DataObject
) -> None:
    ids, counts = _flat(reqs)
    cut = data.draw(st.integers(min_value=0, max_value=len(reqs)))
    k = int(counts[:cut].sum())
    lru = LruStackReplayer(caps, batch_accesses=batch)
    got = np.vstack([lru.process(ids[:k], counts[:cut]), lru.process(ids[k:], counts[cut:])])
    for j, cap in enumerate(sorted(caps)):
        assert got[:, j].tolist() == prefix_hits(reqs, cap)
    unb = UnboundedReplayer()
    got_u = np.concatenate([unb.process(ids[:k], counts[:cut]), unb.process(ids[k:], counts[cut:])])
    assert got_u.tolist() == prefix_hits(reqs, None)


@settings(max_examples=150, deadline=None)
@given(st.one_of(traces, chained_traces()), capacities)
def test_hits_grow_with_capacity_and_unbounded_bounds_them(
    reqs: list[list[int]], caps: list[int]
) -> None:
    unbounded = prefix_hits(reqs, None)
    rows = [prefix_hits(reqs, c) for c in sorted(caps)]
    for small, big in zip(rows, rows[1:], strict=False):
        assert all(a <= b for a, b in zip(small, big, strict=True))
    for row in rows:
        assert all(a <= b for a, b in zip(row, unbounded, strict=True))
        assert all(0 <= h <= len(r) for h, r in zip(row, reqs, strict=True))


@settings(max_examples=100, deadline=None)
@given(
    chained_traces(),
    capacities,
    st.integers(min_value=1, max_value=1024),
    st.data(),
)
def test_hit_rates_are_fractions_and_means_grow(
    reqs: list[list[int]], caps: list[int], block_tokens: int, data: st.DataObject
) -> None:
    inputs = [
        data.draw(st.integers(min_value=1, max_value=max(1, len(r)) * block_tokens)) for r in reqs
    ]
    means = []
    for cap in [*sorted(caps), None]:
        hits = prefix_hits(reqs, cap)
        rates = [min(h * block_tokens, n) / n for h, n in zip(hits, inputs, strict=True)]
        assert all(0.0 <= x <= 1.0 for x in rates)
        means.append(sum(rates) / len(rates))
    assert all(a <= b + 1e-12 for a, b in zip(means, means[1:], strict=False))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=20),
        min_size=1,
        max_size=10,
    )
)
def test_hash_map_is_a_consistent_dense_numbering(batches: list[list[int]]) -> None:
    m = IdHashMap(bits=1)
    seen: dict[int, int] = {}
    for b in batches:
        out = m.get_or_add(np.array(b, dtype=np.int64)).tolist()
        for key, val in zip(b, out, strict=True):
            assert seen.setdefault(key, val) == val
    assert sorted(set(seen.values())) == list(range(len(seen)))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.integers(min_value=0, max_value=2**40), max_size=6), min_size=1, max_size=25
    )
)
def test_block_index_mode_switch_keeps_identities(reqs: list[list[int]]) -> None:
    idx = BlockIndex(direct_floor=64, direct_slack=2)
    engine = UnboundedReplayer()
    got = []
    for r in reqs:
        dense, relayout = idx.map(np.array(r, dtype=np.int64))
        if relayout is not None:
            engine.relayout(relayout)
        got.append(int(engine.process(dense, np.array([len(r)]))[0]))
    assert got == prefix_hits(reqs, None)


@given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=12))
def test_probabilities_always_sum_to_one(counts: list[int]) -> None:
    if sum(counts) == 0:
        return
    p = probabilities(np.array(counts))
    assert abs(math.fsum(p) - 1.0) <= 1e-9
    total = sum(counts)
    assert all(abs(x - c / total) < 1e-6 for x, c in zip(p, counts, strict=True))
    assert all(x >= 0 for x in p)


@given(
    st.lists(st.integers(min_value=1, max_value=10**6), min_size=1, max_size=400),
    st.integers(min_value=2, max_value=60),
)
def test_compress_empirical_bounds(values: list[int], max_points: int) -> None:
    v, w = compress_empirical(np.array(values), max_points)
    assert len(v) <= max(max_points, 1)
    assert sum(w) == len(values)
    assert all(x >= 1 for x in v) and v == sorted(set(v))
    assert abs(np.average(v, weights=w) - np.mean(values)) <= 0.5 + 1e-9
