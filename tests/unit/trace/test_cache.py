"""Unit tests of pddplan.trace.cache and pddplan.trace.blockindex, against hand-computed hits."""

from __future__ import annotations

import numpy as np
import pytest

from pddplan.trace.blockindex import BlockIndex, IdHashMap
from pddplan.trace.cache import (
    LruStackReplayer,
    ReferenceLru,
    UnboundedReplayer,
    _Fenwick,
    _Marks,
    hits_from_distances,
    prefix_hits,
)

# Four requests sharing prefixes (ids chain: [1, 2, 4] shares the prefix [1, 2] with [1, 2, 3]).
SHARED = [[1, 2, 3], [1, 2, 4], [1, 5], [1, 2, 3]]
# Hits by hand. Each request touches its blocks last-to-first, so its first block is the MRU.
#   unbounded: R1 cold 0; R2 1,2 seen, 4 new -> 2; R3 1 seen, 5 new -> 1; R4 1,2,3 seen -> 3.
#   LRU 2 blocks: R1 -> 0, keeps {2, 1} (3 evicted: the leaf goes first); R2 1,2 hit -> 2,
#     touch 4,2,1 keeps {2, 1}; R3 1 hit, 5 miss -> 1, touch 5,1 keeps {5, 1}; R4 1 hit, 2 miss -> 1.
#   LRU 3 blocks: R1 -> 0 {3, 2, 1}; R2 -> 2, keeps {4, 2, 1}; R3 -> 1, keeps {2, 5, 1};
#     R4 1, 2 hit, 3 miss -> 2.
#   LRU 1 block: only the request's first block survives it -> 0, 1, 1, 1.
HAND = {None: [0, 2, 1, 3], 1: [0, 1, 1, 1], 2: [0, 2, 1, 1], 3: [0, 2, 1, 2]}


def _flat(requests: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    ids = np.array([x for r in requests for x in r], dtype=np.int64)
    counts = np.array([len(r) for r in requests], dtype=np.int64)
    return ids, counts


@pytest.mark.parametrize("capacity", [None, 1, 2, 3])
def test_reference_engine_matches_hand_computed_hits(capacity: int | None) -> None:
    assert prefix_hits(SHARED, capacity) == HAND[capacity]


def test_unbounded_engine_matches_hand_computed_hits() -> None:
    ids, counts = _flat(SHARED)
    assert UnboundedReplayer().process(ids, counts).tolist() == HAND[None]


@pytest.mark.parametrize("batch", [1, 2, 3, 8192])
def test_vectorized_lru_matches_hand_computed_hits(batch: int) -> None:
    ids, counts = _flat(SHARED)
    hits = LruStackReplayer([1, 2, 3], batch_accesses=batch).process(ids, counts)
    assert hits.T.tolist() == [HAND[1], HAND[2], HAND[3]]


def test_engines_keep_state_across_calls() -> None:
    ids, counts = _flat(SHARED)
    cut = 2  # the first two requests in one call, the rest in another
    k = int(counts[:cut].sum())
    unb = UnboundedReplayer()
    lru = LruStackReplayer([2, 3])
    got_u = np.concatenate([unb.process(ids[:k], counts[:cut]), unb.process(ids[k:], counts[cut:])])
    got_l = np.vstack([lru.process(ids[:k], counts[:cut]), lru.process(ids[k:], counts[cut:])])
    assert got_u.tolist() == HAND[None]
    assert got_l.T.tolist() == [HAND[2], HAND[3]]


def test_hit_is_the_leading_run_only() -> None:
    # block 2 is cached but the request starts with the unseen block 9: no hit at all
    assert prefix_hits([[1, 2], [9, 2], [1, 2, 8], [9, 2]], None) == [0, 0, 2, 2]


def test_lru_evicts_leaves_first() -> None:
    # a 3-block request through a 2-block cache leaves its 2-block prefix, so it hits 2 next time
    assert prefix_hits([[1, 2, 3], [1, 2, 3]], 2) == [0, 2]
    ids, counts = _flat([[1, 2, 3], [1, 2, 3]])
    assert LruStackReplayer([2]).process(ids, counts)[:, 0].tolist() == [0, 2]


def test_lru_two_blocks_evicts_the_least_recent_chain() -> None:
    # [1, 2] then [7, 8]: the 2-block cache now holds only [7, 8], so [1, 2] misses again
    assert prefix_hits([[1, 2], [7, 8], [1, 2], [7, 8]], 2) == [0, 0, 0, 0]
    # with 4 blocks both chains fit
    assert prefix_hits([[1, 2], [7, 8], [1, 2], [7, 8]], 4) == [0, 0, 2, 2]


def test_duplicate_ids_in_one_request() -> None:
    reqs = [[1, 1, 2], [1, 2, 2], [3, 1]]
    ids, counts = _flat(reqs)
    for cap in (1, 2, 3):
        want = prefix_hits(reqs, cap)
        assert LruStackReplayer([cap]).process(ids, counts)[:, 0].tolist() == want
    assert UnboundedReplayer().process(ids, counts).tolist() == prefix_hits(reqs, None)


def test_empty_requests_hit_nothing() -> None:
    reqs = [[], [1, 2], [], [1, 2]]
    ids, counts = _flat(reqs)
    assert UnboundedReplayer().process(ids, counts).tolist() == [0, 0, 0, 2]
    assert LruStackReplayer([4]).process(ids, counts)[:, 0].tolist() == [0, 0, 0, 2]
    assert ReferenceLru(4).process(ids, counts).tolist() == [0, 0, 0, 2]


def test_vectorized_lru_equals_reference_after_stamp_compaction() -> None:
    # enough accesses to outgrow the initial Fenwick tree (2**16 stamps) several times
    rng = np.random.default_rng(7)
    reqs = [list(rng.integers(0, 4000, rng.integers(0, 40))) for _ in range(6000)]
    ids, counts = _flat(reqs)
    caps = [50, 700, 2500]
    lru = LruStackReplayer(caps, batch_accesses=256)
    got = lru.process(ids, counts)
    assert lru.pos < int(counts.sum())  # stamps were renumbered at least once
    for j, cap in enumerate(caps):
        assert got[:, j].tolist() == prefix_hits(reqs, cap)


def test_lru_rejects_bad_capacities() -> None:
    with pytest.raises(ValueError):
        LruStackReplayer([0])
    with pytest.raises(ValueError):
        LruStackReplayer([])
    with pytest.raises(ValueError):
        ReferenceLru(0)


def test_hits_from_distances_by_hand() -> None:
    # request A: distances 1, 5, 2 -> running max 1, 5, 5; request B: 9 (never seen: cap + 2)
    d = np.array([1, 5, 2, 9])
    counts = np.array([3, 1])
    out = hits_from_distances(d, counts, np.array([1, 4, 5, 7]))
    assert out.tolist() == [[1, 1, 3, 3], [0, 0, 0, 0]]


def test_fenwick_prefix_counts() -> None:
    f = _Fenwick(10, ones=4)
    assert f.prefix(np.arange(11)).tolist() == [0, 1, 2, 3, 4, 4, 4, 4, 4, 4, 4]
    f.add(np.array([1, 7, 9]), np.array([-1, 1, 1]))
    assert f.prefix(np.array([0, 2, 8, 10])).tolist() == [0, 1, 4, 5]


def test_marks_count_below_like_a_plain_set() -> None:
    rng = np.random.default_rng(3)
    size = 1000
    m = _Marks(size, ones=130)  # two full words and part of a third
    marked = set(range(130))
    for _ in range(20):
        off = rng.choice(sorted(marked), size=min(15, len(marked)), replace=False)
        free = sorted(set(range(size)) - marked)
        on = rng.choice(free, size=25, replace=False)
        m.move(off, on)
        marked -= set(off.tolist())
        marked |= set(on.tolist())
        pos = np.arange(size + 1)
        want = np.cumsum([0] + [int(p in marked) for p in range(size)])
        assert m.prefix(pos).tolist() == want.tolist()
    rank = m.ranks()
    srt = np.array(sorted(marked), dtype=np.int64)
    assert rank(srt).tolist() == list(range(len(srt)))


def test_lru_stamps_stay_int32_and_results_exact_over_many_renumberings() -> None:
    # a stamp space of 64 renumbers every few batches; results must still match brute force
    rng = np.random.default_rng(11)
    reqs = [list(rng.integers(0, 300, rng.integers(0, 12))) for _ in range(3000)]
    ids, counts = _flat(reqs)
    caps = [3, 40, 200]
    lru = LruStackReplayer(caps, batch_accesses=2, min_stamps=64)
    got = lru.process(ids, counts)
    assert lru.last.dtype == np.int32
    assert lru.pos <= lru.marks.size < 64 * 300
    assert int(lru.last.max()) <= lru.pos  # every stored stamp + 1 is below the next stamp + 1
    for j, cap in enumerate(caps):
        assert got[:, j].tolist() == prefix_hits(reqs, cap)


# ----------------------------------------------------------------------------- block index


def test_block_index_direct_mode_keeps_small_ids() -> None:
    idx = BlockIndex()
    dense, relayout = idx.map(np.array([5, 0, 5, 3]))
    assert dense.tolist() == [5, 0, 5, 3]
    assert relayout is None
    assert idx.mode == "direct" and idx.size == 6


def test_block_index_switches_to_hash_mode_for_big_ids() -> None:
    idx = BlockIndex(direct_floor=100)
    idx.map(np.array([3, 7, 3]))
    dense, relayout = idx.map(np.array([2**60, 7, -5]))
    assert idx.mode == "hash"
    assert relayout is not None and relayout.tolist() == [3, 7]  # new dense 0 <- old id 3, ...
    assert dense.tolist() == [2, 1, 3]
    again, _ = idx.map(np.array([-5, 3, 2**60]))
    assert again.tolist() == [3, 0, 2]


def test_relayout_keeps_replay_results() -> None:
    reqs = [[1, 2], [1, 2, 3], [2**40, 1], [1, 2, 3], [2**40, 1]]
    idx = BlockIndex(direct_floor=16)
    engines = [UnboundedReplayer(), LruStackReplayer([2]), ReferenceLru(2)]
    got: list[list[int]] = [[], [], []]
    for r in reqs:  # one request at a time, so the switch happens mid-replay
        dense, relayout = idx.map(np.array(r, dtype=np.int64))
        for e in engines:
            if relayout is not None:
                e.relayout(relayout)
        for k, e in enumerate(engines):
            got[k].append(int(np.ravel(e.process(dense, np.array([len(r)])))[0]))
    assert idx.mode == "hash"
    assert got[0] == prefix_hits(reqs, None) == [0, 2, 0, 3, 2]
    assert got[1] == got[2] == prefix_hits(reqs, 2)


def test_hash_map_assigns_dense_ids_in_first_seen_batches() -> None:
    m = IdHashMap(bits=2)  # tiny: forces growth and probing
    a = m.get_or_add(np.array([10, -3, 10, 2**62, 7]))
    assert a[0] == a[2]
    assert sorted(set(a.tolist())) == [0, 1, 2, 3]
    b = m.get_or_add(np.array([7, 99, -3]))
    assert b[0] == a[4] and b[2] == a[1] and b[1] == 4
