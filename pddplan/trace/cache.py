"""Prefix caches replayed over a trace: how many leading blocks of each request hit.

The model
---------
Each request lists the hash ids of its prompt's blocks; an id names the block *and* its whole
prefix (ids chain), so the cache is a prefix tree keyed by id. A request's hit is the longest
leading run of its blocks present in the cache when it arrives. Then every block of the request
is touched (inserted if missing): the reference string of the replay is, per request, its
distinct blocks from the last to the first, so a request's first block is its most recently
used. With chained ids every access to a block also touches its ancestors afterwards, so an
ancestor is always more recent than its descendants and LRU evicts leaves first: the cached set
stays a prefix-closed subtree. Blocks evict whole.

LRU with a capacity of ``C`` blocks holds the ``C`` most recently used distinct blocks (the
state after a request is what a per-access LRU would hold, even when a request has more than
``C`` blocks). LRU is a stack algorithm: the cache of ``C`` blocks is contained in the cache of
``C + 1`` blocks at every moment, so a request's hit never falls when the capacity grows, and the
unbounded cache (every block ever seen) bounds them all.

Implementations
---------------
:class:`UnboundedReplayer`
    Vectorized over whole blocks of the trace (the first request to use each block).
:class:`LruStackReplayer`
    Exact LRU for several capacities in one pass, vectorized: for every access it computes the
    block's LRU stack distance (the number of distinct blocks used since its last use, itself
    included) at the request's arrival, with a Fenwick tree over access stamps; a block hits in a
    cache of ``C`` blocks when its distance is at most ``C``.
:class:`ReferenceLru`
    A plain ``OrderedDict`` LRU, one request at a time: the oracle of the tests, and the engine for
    capacities too small for the vectorized batches to pay off.

All take requests as a flat array of dense block ids (see :mod:`pddplan.trace.blockindex`)
and the number of ids of each request, and return each request's hit in blocks.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from itertools import repeat, takewhile

import numpy as np

_TOP32 = 2**31 - 1
# Per-block arrays hold 0 for "never": they are allocated zeroed (lazily, by the OS) and grown
# without writing a fill value. Minima are kept as _TOP32 - value under np.maximum.

SMALL_CAPACITY_BLOCKS = 2048
"""Capacities below this many blocks replay on :class:`ReferenceLru`: the vectorized engine's
batches may not exceed the smallest capacity, and below this size their overhead dominates."""


def _offsets(counts: np.ndarray) -> np.ndarray:
    off = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=off[1:])
    return off


def _grow(arr: np.ndarray, size: int) -> np.ndarray:
    """``arr`` extended with zeros to at least ``size`` entries (by an eighth at a time), in
    place."""
    if size <= len(arr):
        return arr
    n = len(arr)
    # in place (realloc, which moves big blocks by remapping pages): no old + new copy at once;
    # the arrays grown here own their data and no view of them outlives a call. The zeros
    # written make the spare entries resident: an eighth spare, not a half (a 1M-request
    # trace's 14.4M blocks left LRU's stamps 71 MB for 58 MB used), costs a few more remaps
    arr.resize(max(size, n + n // 8, 1024), refcheck=False)
    return arr


class UnboundedReplayer:
    """Unbounded prefix cache: a block hits once any earlier request has used it."""

    def __init__(self) -> None:
        # _TOP32 - (first request to use each block); 0: never used
        self.first_rev = np.zeros(0, dtype=np.int32)
        self.requests = 0

    def relayout(self, index: np.ndarray) -> None:
        self.first_rev = self.first_rev[index]

    def process(self, ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Hit blocks of each request (leading run of blocks used by earlier requests)."""
        n = len(counts)
        hits = counts.astype(np.int64, copy=True)
        r0 = self.requests
        self.requests += n
        if self.requests >= _TOP32:
            raise ValueError(f"more than {_TOP32 - 1} requests")
        if ids.size == 0:
            return hits
        self.first_rev = _grow(self.first_rev, int(ids.max()) + 1)
        off = _offsets(counts)
        q = np.repeat(np.arange(r0, r0 + n, dtype=np.int32), counts)
        rev = _TOP32 - q
        np.maximum.at(self.first_rev, ids, rev)
        miss = np.flatnonzero(self.first_rev[ids] <= rev)  # first use at or after q
        qm = q[miss] - r0
        np.minimum.at(hits, qm, miss - off[qm])
        return hits


_U64 = np.uint64

#: Capacities the stamp replay takes are below this [blocks] (2**40: its stamps stay int64).
MAX_CACHE_BLOCKS = 1 << 40


def _popcount_swar(x: np.ndarray) -> np.ndarray:
    """Set bits of each uint64 (numpy < 2.0 has no ``bitwise_count``)."""
    x = x - ((x >> _U64(1)) & _U64(0x5555555555555555))
    x = (x & _U64(0x3333333333333333)) + ((x >> _U64(2)) & _U64(0x3333333333333333))
    x = (x + (x >> _U64(4))) & _U64(0x0F0F0F0F0F0F0F0F)
    return ((x * _U64(0x0101010101010101)) >> _U64(56)).astype(np.uint8)


_popcount = getattr(np, "bitwise_count", _popcount_swar)
_BIT = np.left_shift(_U64(1), np.arange(64, dtype=np.uint64))  # _BIT[b] = 1 << b
_LOW = _BIT - _U64(1)  # _LOW[b]: bits below b


class _Fenwick:
    """Counts at integer positions 0 .. size - 1, vectorized queries and updates."""

    def __init__(self, size: int, ones: int = 0, counts: np.ndarray | None = None) -> None:
        self.size = size
        self.levels = max(1, size.bit_length())
        # node i (1-based) covers positions (i - low(i), i]: with C the running count (C[0] = 0),
        # node i holds C[i] - C[i - low(i)]
        if counts is None:
            counts = np.zeros(size, dtype=np.int64)
            counts[:ones] = 1
        run = np.zeros(size + 1, dtype=np.int64)
        np.cumsum(counts, out=run[1:])
        i = np.arange(1, size + 1, dtype=np.int64)
        tree = np.zeros(size + 2, dtype=np.int32)
        tree[1 : size + 1] = run[i] - run[i - (i & -i)]
        self.tree = tree

    def prefix(self, pos: np.ndarray) -> np.ndarray:
        """Counts at positions < ``pos`` (0-based)."""
        i = pos.astype(np.int64, copy=True)
        s = np.zeros(len(i), dtype=np.int64)
        for _ in range(self.levels):
            s += self.tree[i]
            i &= i - 1
        return s

    def add(self, pos: np.ndarray, delta: np.ndarray) -> None:
        """Add ``delta`` at positions ``pos`` (0-based, < size)."""
        i = pos.astype(np.int64) + 1
        d = delta.astype(np.int32)
        end = self.size + 1  # a dump slot: updates that climb past the root land there
        for _ in range(self.levels):
            np.add.at(self.tree, i, d)
            i += i & -i
            np.minimum(i, end, out=i)


class _Marks:
    """A set of marked positions 0 .. size - 1, with vectorized counts of marks below a position.

    One bit a position (64-position words) and a Fenwick tree over the marks of each word, so a
    count is a tree query over ``size / 64`` words plus one popcount, and the structure takes
    about 0.19 bytes a position.
    """

    def __init__(self, size: int, ones: int = 0) -> None:
        self.size = size
        nw = (size >> 6) + 1  # a word for position ``size`` too: prefix(size) reads it
        words = np.zeros(nw, dtype=np.uint64)
        counts = np.zeros(nw, dtype=np.int64)
        full, rest = divmod(ones, 64)
        words[:full] = ~_U64(0)
        counts[:full] = 64
        if rest:
            words[full] = _LOW[rest]
            counts[full] = rest
        self.words = words
        self.tree = _Fenwick(nw, counts=counts)

    def prefix(self, pos: np.ndarray) -> np.ndarray:
        """Marks at positions < ``pos`` (0-based, each <= size)."""
        p = pos.astype(np.int64)
        w = p >> 6
        low = _popcount(self.words[w] & _LOW[p & 63]).astype(np.int64)
        return self.tree.prefix(w) + low

    def move(self, off: np.ndarray, on: np.ndarray) -> None:
        """Unmark positions ``off`` (marked) and mark positions ``on`` (unmarked); all distinct."""
        off = off.astype(np.int64)
        on = on.astype(np.int64)
        np.bitwise_and.at(self.words, off >> 6, ~_BIT[off & 63])
        np.bitwise_or.at(self.words, on >> 6, _BIT[on & 63])
        self.tree.add(
            np.concatenate([off >> 6, on >> 6]),
            np.concatenate([np.full(len(off), -1), np.ones(len(on), dtype=np.int64)]),
        )

    def ranks(self) -> Callable[[np.ndarray], np.ndarray]:
        """A function from marked positions to their rank among the marks (0-based)."""
        cnt = _popcount(self.words)
        before = np.zeros(len(cnt), dtype=np.int64)
        np.cumsum(cnt[:-1], out=before[1:])
        words = self.words

        def rank(pos: np.ndarray) -> np.ndarray:
            w = pos >> 6
            return before[w] + _popcount(words[w] & _LOW[pos & 63])

        return rank


class LruStackReplayer:
    """Exact LRU prefix caches of several capacities, replayed together (see module doc).

    Parameters
    ----------
    capacities_blocks : sequence of int
        Cache capacities [blocks], each >= 1.
    batch_accesses : int
        Target accesses per vectorized batch (smaller when the smallest capacity is smaller).
    min_stamps : int
        Smallest stamp space (tests set it low to renumber stamps often).

    Notes
    -----
    Within a batch every request's queries see the cache as it stood when the batch began,
    corrected exactly for the batch's earlier requests: a block already used earlier in the batch
    has a stack distance below the batch's access count, which is kept below the smallest
    capacity, so it hits; a block last used before the batch has distance
    ``live(>= L) - moved(>= L) + distinct``, where ``live(>= L)`` comes from the Fenwick tree,
    ``distinct`` counts the blocks the batch used before this request, and ``moved(>= L)``
    (blocks among those whose previous use was at or after ``L``) is computed exactly only when
    its bounds leave a capacity undecided.

    Memory: one int32 a block (``1 +`` the stamp of its last use) and, over the stamps, a bitmap
    of the live ones with a Fenwick tree over its 64-stamp words (about 0.19 bytes a stamp).
    Stamps are renumbered ``0 .. live - 1`` (order kept) whenever the next batch would run past
    the stamp space, which is then sized to four times the distinct blocks, so stamps stay below
    ``2**31 - 1`` and memory proportional to the distinct blocks. Within a batch the same int32
    array serves as scratch for each block's first position in the batch (negative values).
    """

    def __init__(
        self,
        capacities_blocks: Sequence[int],
        batch_accesses: int = 8192,
        min_stamps: int = 1 << 16,
    ) -> None:
        given = list(capacities_blocks)
        if any(c >= MAX_CACHE_BLOCKS for c in given):
            raise ValueError(f"capacities must be below {MAX_CACHE_BLOCKS:,} blocks")
        caps = np.unique(np.asarray(given, dtype=np.int64))
        if caps.size == 0 or caps[0] < 1:
            raise ValueError("capacities must be >= 1 block")
        self.caps = caps
        self.limit = int(max(1, min(batch_accesses, caps[0])))
        self.min_stamps = max(64, int(min_stamps))
        self.last = np.zeros(0, dtype=np.int32)  # 1 + stamp of each block's last use; 0: never
        self.live = 0  # distinct blocks seen (= marked stamps)
        self.pos = 0  # next stamp
        self.marks = _Marks(self.min_stamps)

    def relayout(self, index: np.ndarray) -> None:
        self.last = self.last[index]

    # ---------------------------------------------------------------------------- stamps

    def _compact(self, need: int, chunk: int = 1 << 17) -> None:
        """Renumber live stamps 0 .. live - 1 (order kept); size the space for ``need`` more.
        ``chunk`` blocks at a time: each chunk's stamps pass through some ten int64 arrays of
        its length (a chunk of 2**20 blocks raised a 1M-request trace's peak RSS by 8 MB)."""
        if self.live + need > _TOP32 - 1:
            raise ValueError(f"more than {_TOP32 - 1} distinct blocks and batch accesses")
        rank = self.marks.ranks()
        last = self.last
        for s0 in range(0, len(last), chunk):
            part = last[s0 : s0 + chunk]  # a view: renumbered in place
            used = np.flatnonzero(part)
            part[used] = rank(part[used].astype(np.int64) - 1) + 1  # the new stamp + 1
        del rank
        self.pos = self.live
        del self.marks  # free the old bitmap before the new one exists
        size = min(_TOP32, max(self.min_stamps, 4 * (self.live + need)))
        self.marks = _Marks(size, ones=self.live)

    # --------------------------------------------------------------------------- replay

    def distances(self, ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Stack distance of every access at its request's arrival, as far as the caps need.

        Any returned value is on the same side of every capacity as the true distance (values
        are exact only where that takes exactness); a distance above every capacity is returned
        as ``caps[-1] + 1`` and a never-seen block as ``caps[-1] + 2``.
        """
        out = np.empty(len(ids), dtype=np.int64)
        if ids.size == 0:
            return out
        size = int(ids.max()) + 1
        self.last = _grow(self.last, size)
        off = _offsets(counts)
        starts = off[:-1]
        n = len(counts)
        r = 0
        while r < n:
            e = int(np.searchsorted(starts, starts[r] + self.limit, side="left"))
            e = max(e, r + 1)
            s, t = int(off[r]), int(off[e])
            out[s:t] = self._batch(ids[s:t], counts[r:e])
            r = e
        return out

    def _batch(self, a: np.ndarray, n: np.ndarray) -> np.ndarray:
        m = len(a)
        caps = self.caps
        over, never = caps[-1] + 1, caps[-1] + 2
        if m == 0:
            return np.empty(0, dtype=np.int64)
        if self.pos + m > self.marks.size:
            self._compact(m)
        nr = len(n)
        off = _offsets(n)
        j = np.arange(m, dtype=np.int64)
        q = np.repeat(np.arange(nr, dtype=np.int64), n)
        k = j - off[q]
        stamp = self.pos + off[q] + (n[q] - 1 - k)  # last block first: the first is the MRU
        last0 = self.last[a].astype(np.int64) - 1  # -1: never used
        # scratch in `last` until the update below: j - m (< 0) of each block's first access
        np.minimum.at(self.last, a, (j - m).astype(np.int32))
        fp = self.last[a].astype(np.int64) + m
        first_req = q[fp]
        is_first = fp == j
        earlier = first_req < q  # used by an earlier request of this batch: a hit (see Notes)
        old = is_first & (last0 >= 0)
        distinct = np.cumsum(np.bincount(q[is_first], minlength=nr)) - np.bincount(
            q[is_first], minlength=nr
        )
        moved_n = np.bincount(q[old], minlength=nr)
        moved = np.cumsum(moved_n) - moved_n

        d = np.full(m, never, dtype=np.int64)
        d[earlier] = 1
        ca = np.flatnonzero(~earlier & (last0 >= 0))
        if ca.size:
            lq = last0[ca]
            rq = q[ca]
            live_ge = self.live - self.marks.prefix(lq)
            hi = live_ge + distinct[rq]
            lo = hi - moved[rq]
            i = np.searchsorted(caps, lo, side="left")
            undecided = (i < len(caps)) & (caps[np.minimum(i, len(caps) - 1)] < hi)
            if undecided.any():
                u = np.flatnonzero(undecided)
                pr = q[old]
                pl = last0[old]
                exact = np.empty(len(u), dtype=np.int64)
                step = max(1, (1 << 22) // max(1, len(pr)))
                for s0 in range(0, len(u), step):
                    uu = u[s0 : s0 + step]
                    both = (pr[None, :] < rq[uu, None]) & (pl[None, :] >= lq[uu, None])
                    exact[s0 : s0 + step] = both.sum(axis=1)
                hi[u] -= exact
                lo[u] = hi[u]
            d[ca] = np.minimum(hi, over)

        # update: every block used here gets its newest stamp
        np.maximum.at(self.last, a, (stamp + 1).astype(np.int32))  # over the scratch (< 0)
        blocks = a[is_first]
        prev = last0[is_first]
        had = prev >= 0
        self.marks.move(prev[had], self.last[blocks].astype(np.int64) - 1)
        self.live += int(len(blocks) - had.sum())
        self.pos += m
        return d

    def process(
        self, ids: np.ndarray, counts: np.ndarray, piece_accesses: int = 1 << 17
    ) -> np.ndarray:
        """Hit blocks of each request, one column per capacity (sorted ascending).

        Requests go through in pieces of about ``piece_accesses`` accesses, so the per-access
        temporaries stay that small whatever the block of the trace (the result is the same).
        """
        out = np.empty((len(counts), len(self.caps)), dtype=np.int64)
        off = _offsets(counts)
        starts = off[:-1]
        n = len(counts)
        r = 0
        while r < n:
            e = int(np.searchsorted(starts, starts[r] + piece_accesses, side="left"))
            e = max(e, r + 1)
            s, t = int(off[r]), int(off[e])
            d = self.distances(ids[s:t], counts[r:e])
            out[r:e] = hits_from_distances(d, counts[r:e], self.caps)
            r = e
        return out


def hits_from_distances(d: np.ndarray, counts: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """Leading run of each request whose stack distances are within each capacity.

    Parameters
    ----------
    d : numpy.ndarray
        Stack distance of each access (flat, requests in order), each <= ``caps[-1] + 2``.
    counts : numpy.ndarray
        Accesses per request.
    caps : numpy.ndarray
        Capacities [blocks], ascending.

    Returns
    -------
    numpy.ndarray
        ``(requests, len(caps))`` hit blocks.
    """
    n = len(counts)
    out = np.zeros((n, len(caps)), dtype=np.int64)
    if d.size == 0:
        return out
    q = np.repeat(np.arange(n, dtype=np.int64), counts)
    span = int(caps[-1]) + 3
    running = np.maximum.accumulate(d + q * span) - q * span  # running max within a request
    for c, cap in enumerate(caps):
        out[:, c] = np.bincount(q, weights=running <= cap, minlength=n).astype(np.int64)
    return out


class ReferenceLru:
    """A plain LRU (``OrderedDict``) prefix cache, one request at a time.

    Parameters
    ----------
    capacity_blocks : int or None
        Capacity [blocks]; None for unbounded.
    """

    def __init__(self, capacity_blocks: int | None) -> None:
        if capacity_blocks is not None and capacity_blocks < 1:
            raise ValueError("capacity must be >= 1 block")
        self.capacity_blocks = capacity_blocks
        self.cache: OrderedDict[int, None] = OrderedDict()

    def relayout(self, index: np.ndarray) -> None:
        new_of_old = {int(o): i for i, o in enumerate(index.tolist())}
        self.cache = OrderedDict((new_of_old[k], None) for k in self.cache)

    def request(self, ids: list[int]) -> int:
        """Replay one request (its block ids in prompt order); return its hit [blocks]."""
        cache = self.cache
        hit = len(list(takewhile(cache.__contains__, ids)))
        distinct = list(dict.fromkeys(ids))
        list(map(cache.pop, distinct, repeat(None)))
        cache.update(zip(reversed(distinct), repeat(None)))
        if self.capacity_blocks is not None:
            extra = len(cache) - self.capacity_blocks
            if extra > 0:
                list(map(cache.popitem, repeat(False, extra)))
        return hit

    def process(self, ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Hit blocks of each request."""
        flat = ids.tolist()
        off = _offsets(counts).tolist()
        return np.fromiter(
            (self.request(flat[off[i] : off[i + 1]]) for i in range(len(counts))),
            dtype=np.int64,
            count=len(counts),
        )


def prefix_hits(requests: Sequence[Sequence[int]], capacity_blocks: int | None) -> list[int]:
    """Hit blocks of each request replayed through one prefix cache (reference engine).

    Parameters
    ----------
    requests : sequence of sequences of int
        Each request's block hash ids, in prompt order, requests in arrival order.
    capacity_blocks : int or None
        LRU capacity [blocks]; None for unbounded.

    Returns
    -------
    list of int
        Leading blocks of each request found in the cache on arrival.

    Examples
    --------
    >>> prefix_hits([[1, 2], [1, 2, 3], [1, 4]], None)
    [0, 2, 1]
    """
    lru = ReferenceLru(capacity_blocks)
    return [lru.request(list(r)) for r in requests]
