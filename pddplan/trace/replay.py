"""Replay a trace through prefix caches of given capacities: per-request arrays for statistics.

JSONL traces stream: blocks of lines are parsed (in worker processes for big files), mapped to
dense block ids and fed, in timestamp order, to one engine per kind of cache (see
:mod:`pddplan.trace.cache`). What is kept per request is its arrival time, lengths and cached
blocks and tokens per capacity (about 28 + 12 x capacities bytes); the hash ids are dropped
block by block, so memory is the cache state (proportional to the distinct blocks) plus those
few numbers per request.

A JSONL trace must be replayed in timestamp order. When a timestamp goes backwards the replay
starts again with the whole trace in memory, sorted (stable) by timestamp, and says so on the
``warn`` callback: that fallback holds every hash id at once.

CSV traces carry their own cached tokens (as the serving system logged them): there is nothing to
replay, and the only "capacity" is the logged one (NaN in ``capacity_tokens``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from pddplan import defaults, limits
from pddplan.errors import OptionError, ProfileError, UsageError
from pddplan.trace.blockindex import BlockIndex
from pddplan.trace.cache import (
    MAX_CACHE_BLOCKS,
    SMALL_CAPACITY_BLOCKS,
    LruStackReplayer,
    ReferenceLru,
    UnboundedReplayer,
)
from pddplan.trace.records import (
    BLOCK_BYTES,
    MAX_BAD_LINE_MESSAGES,
    ParsedBlock,
    detect_format,
    iter_csv_blocks,
    iter_jsonl_blocks,
    records_blocks,
)
from pddplan.units import parse_scaled_count

UNBOUNDED = math.inf

#: Largest finite cache capacity taken [tokens] (its home: :mod:`pddplan.defaults`).
MAX_CACHE_TOKENS = defaults.MAX_CACHE_TOKENS


def parse_capacity(text: str) -> float:
    """One capacity [tokens]: ``unbounded`` (no limit), an integer, ``1.5M``, ``64k``, ``1e6``,
    ``64Ki``. A non-finite number (``inf``, ``nan``) is not a count: the one spelling of no
    limit is ``unbounded``.

    Suffixes k, M, G, T are powers of 1000; Ki, Mi, Gi, Ti powers of 1024.

    Raises
    ------
    UsageError
        For anything else.
    """
    t = text.strip().lower()
    if t == "unbounded":
        return UNBOUNDED
    if t.lstrip("+-") in ("inf", "infinity", "infinite", "nan"):
        raise OptionError(
            "cache_tokens",
            f": {text.strip()!r} is not a token count; for no limit write 'unbounded'",
        )
    try:
        value = parse_scaled_count(t)
    except ValueError:
        raise OptionError(
            "cache_tokens",
            f": {text.strip()!r} is not a token count (e.g. 2000000, 2M, 64k) or 'unbounded'",
        ) from None
    if value > MAX_CACHE_TOKENS:
        raise OptionError(
            "cache_tokens",
            f": {text.strip()!r} is above the largest capacity taken, {MAX_CACHE_TOKENS:.0e} "
            "tokens (or 'unbounded')",
        )
    if not value.is_integer() or value <= 0:
        raise OptionError("cache_tokens", f": {text.strip()!r} must be a positive whole number")
    return value


def parse_capacities(text: str, block_tokens: int) -> list[float]:
    """Comma-separated capacities, in the order given, duplicates dropped.

    Raises
    ------
    UsageError
        For a bad entry, or a capacity smaller than one block.
    """
    out: list[float] = []
    for part in text.split(","):
        if not part.strip():  # '' or '64k,,1M': a capacity left out, not one to skip
            raise OptionError("cache_tokens", f": an empty capacity in {text!r}")
        cap = parse_capacity(part)
        if cap < block_tokens:
            raise OptionError(
                "cache_tokens",
                f": {part.strip()} tokens holds no whole block of {block_tokens} "
                "tokens; capacities are counted in whole blocks",
            )
        if math.isfinite(cap) and cap / block_tokens >= MAX_CACHE_BLOCKS:
            raise OptionError(
                "cache_tokens",
                f": {part.strip()} tokens is {cap / block_tokens:.3g} blocks of {block_tokens} "
                f"tokens; the replay takes fewer than {MAX_CACHE_BLOCKS:,} blocks",
            )
        if cap not in out:
            out.append(cap)
    if not out:
        raise OptionError("cache_tokens", ": no capacity given")
    return out


def default_jobs() -> int:
    """Worker processes for parsing: the usable CPUs, at most 4."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        n = os.cpu_count() or 1
    return max(1, min(4, n))


@dataclass
class TraceReplay:
    """Per-request results of replaying a trace.

    Attributes
    ----------
    file, format : str
        The trace and its format (``jsonl`` or ``csv``).
    block_tokens : int
        Tokens per cache block.
    capacity_tokens : numpy.ndarray
        The capacities, in the order asked [tokens]; inf: unbounded; NaN: as logged (CSV).
    timestamp_ms : numpy.ndarray
        Arrival times [ms], in replay order; NaN when the trace has none.
    input_tokens, output_tokens : numpy.ndarray
        Lengths [tokens].
    hit_tokens : numpy.ndarray
        ``(requests, capacities)`` cached prompt tokens: the leading run of cached blocks times
        ``block_tokens``, capped at the input length.
    hit_blocks : numpy.ndarray or None
        ``(requests, capacities)`` leading cached blocks (JSONL only).
    block_counts : numpy.ndarray or None
        Hash ids per request (JSONL only).
    bad_lines : int
        Lines skipped (``skip_bad_lines``).
    bad_line_messages : list of str
        The first few of them.
    sorted_in_memory : bool
        Whether the trace was out of order and sorted in memory.
    distinct_blocks : int or None
        Distinct hash ids in the trace (JSONL only).
    """

    file: str
    format: str
    block_tokens: int
    capacity_tokens: np.ndarray
    timestamp_ms: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    hit_tokens: np.ndarray
    hit_blocks: np.ndarray | None = None
    block_counts: np.ndarray | None = None
    bad_lines: int = 0
    bad_line_messages: list[str] = field(default_factory=list)
    sorted_in_memory: bool = False
    distinct_blocks: int | None = None

    def __len__(self) -> int:
        return len(self.input_tokens)

    def ids_past_input(self) -> int:
        """Requests that list more hash ids than blocks of :attr:`block_tokens` hold their
        input (JSONL only; 0 for CSV): a sign that the trace's blocks are smaller."""
        if self.block_counts is None:
            return 0
        held = -(-self.input_tokens.astype(np.int64) // self.block_tokens)  # ceil
        return int(np.count_nonzero(self.block_counts > held))


class _Engine(Protocol):
    def process(self, ids: np.ndarray, counts: np.ndarray) -> np.ndarray: ...

    def relayout(self, index: np.ndarray) -> None: ...


def _engines(
    capacity_tokens: Sequence[float], block_tokens: int
) -> list[tuple[_Engine, list[int]]]:
    """One engine per kind of cache, with the result columns each one fills."""
    plan: list[tuple[_Engine, list[int]]] = []
    unbounded = [i for i, c in enumerate(capacity_tokens) if math.isinf(c)]
    if unbounded:
        plan.append((UnboundedReplayer(), unbounded))
    blocks = {i: int(c // block_tokens) for i, c in enumerate(capacity_tokens) if math.isfinite(c)}
    large = {i: b for i, b in blocks.items() if b >= SMALL_CAPACITY_BLOCKS}
    if large:
        lru = LruStackReplayer(sorted(set(large.values())))
        # LruStackReplayer returns its capacities sorted and de-duplicated
        col_of = {int(b): j for j, b in enumerate(lru.caps)}
        plan.append((_Columns(lru, [col_of[b] for b in large.values()]), list(large)))
    for i, b in blocks.items():
        if b < SMALL_CAPACITY_BLOCKS:
            plan.append((ReferenceLru(b), [i]))
    return plan


class _Columns:
    """An engine whose result columns are picked (and repeated) for the capacities asked."""

    def __init__(self, engine: LruStackReplayer, columns: list[int]) -> None:
        self.engine = engine
        self.columns = columns

    def process(self, ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
        return self.engine.process(ids, counts)[:, self.columns]

    def relayout(self, index: np.ndarray) -> None:
        self.engine.relayout(index)


class _Unsorted(Exception):
    pass


class _Growing:
    """Rows appended to one array grown in place (realloc: big blocks are remapped, not copied),
    so that the per-request results never exist as pieces and a concatenated copy at once."""

    def __init__(self) -> None:
        self.arr: np.ndarray | None = None
        self.n = 0

    def append(self, rows: np.ndarray) -> None:
        need = self.n + len(rows)
        if self.arr is None:
            self.arr = np.zeros((max(need, 1024), *rows.shape[1:]), dtype=rows.dtype)
        elif need > len(self.arr):
            # by a quarter at a time: the zeros written make the spare rows resident (doubling
            # could leave as many spare rows as used ones: 40 MB of a 1M-request trace's hits
            # at 10 capacities)
            n = len(self.arr)
            self.arr.resize((max(need, n + n // 4), *rows.shape[1:]), refcheck=False)
        self.arr[self.n : need] = rows
        self.n = need

    def take(self) -> np.ndarray:
        """The rows appended, as one array (the buffer is handed over, trimmed)."""
        arr = self.arr
        assert arr is not None
        arr.resize((self.n, *arr.shape[1:]), refcheck=False)
        self.arr = None
        return arr


@dataclass
class _Collected:
    timestamp_ms: _Growing = field(default_factory=_Growing)
    input_tokens: _Growing = field(default_factory=_Growing)
    output_tokens: _Growing = field(default_factory=_Growing)
    hit_blocks: _Growing = field(default_factory=_Growing)
    block_counts: _Growing = field(default_factory=_Growing)
    bad_lines: int = 0
    bad_line_messages: list[str] = field(default_factory=list)
    distinct_blocks: int = 0


def _replay_blocks(
    blocks: Iterable[ParsedBlock],
    capacity_tokens: Sequence[float],
    block_tokens: int,
    check_order: bool,
) -> _Collected:
    plan = _engines(capacity_tokens, block_tokens)
    index = BlockIndex()
    got = _Collected()
    prev = -math.inf
    seen = 0
    for blk in blocks:
        seen += len(blk)
        limits.TRACE_REQUESTS.check(seen, "the trace's requests")
        got.bad_lines += blk.bad_count
        got.bad_line_messages.extend(blk.bad_messages)
        if len(blk) == 0:
            continue
        assert blk.hash_ids is not None and blk.hash_counts is not None
        if check_order:
            t = blk.timestamp_ms
            if t[0] < prev or (len(t) > 1 and np.any(t[1:] < t[:-1])):
                raise _Unsorted
            prev = float(t[-1])
        dense, relayout = index.map(blk.hash_ids)
        if relayout is not None:
            for engine, _ in plan:
                engine.relayout(relayout)
        h = np.empty((len(blk), len(capacity_tokens)), dtype=np.int64)
        for engine, cols in plan:
            h[:, cols] = engine.process(dense, blk.hash_counts).reshape(len(blk), len(cols))
        got.timestamp_ms.append(blk.timestamp_ms)
        got.input_tokens.append(blk.input_tokens)
        got.output_tokens.append(blk.output_tokens)
        got.hit_blocks.append(h.astype(np.int32))  # a request has < 2**31 blocks
        got.block_counts.append(blk.hash_counts.astype(np.int32))
    got.distinct_blocks = index.distinct()
    return got


def _sorted_blocks(
    blocks: Iterator[ParsedBlock], piece_accesses: int = 1 << 20
) -> Iterator[ParsedBlock]:
    """All blocks in memory, re-cut into pieces in stable timestamp order."""
    got = list(blocks)
    bad = sum(b.bad_count for b in got)
    messages = [m for b in got for m in b.bad_messages]
    live = [b for b in got if len(b)]
    if not live:
        empty = np.zeros(0, dtype=np.int64)
        yield ParsedBlock(
            empty, empty, empty, empty, empty, empty, bad_count=bad, bad_messages=messages
        )
        return
    ts = np.concatenate([b.timestamp_ms for b in live])
    inp = np.concatenate([b.input_tokens for b in live])
    out = np.concatenate([b.output_tokens for b in live])
    line = np.concatenate([b.line for b in live])
    counts = np.concatenate([b.hash_counts for b in live if b.hash_counts is not None])
    ids = np.concatenate([b.hash_ids for b in live if b.hash_ids is not None])
    del got, live
    order = np.argsort(ts, kind="stable")
    off = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=off[1:])
    new_counts = counts[order]
    new_off = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(new_counts, out=new_off[1:])
    gather = np.repeat(off[:-1][order] - new_off[:-1], new_counts) + np.arange(
        int(new_off[-1]), dtype=np.int64
    )
    ids = ids[gather]
    first = True
    r = 0
    n = len(order)
    while r < n:
        e = int(np.searchsorted(new_off, new_off[r] + piece_accesses, side="left"))
        e = min(max(e, r + 1), n)
        sel = order[r:e]
        yield ParsedBlock(
            timestamp_ms=ts[sel],
            input_tokens=inp[sel],
            output_tokens=out[sel],
            line=line[sel],
            hash_ids=ids[new_off[r] : new_off[e]],
            hash_counts=new_counts[r:e],
            bad_count=bad if first else 0,
            bad_messages=messages if first else [],
        )
        first = False
        r = e


def replay_trace(
    path: Path,
    capacity_tokens: Sequence[float] = (UNBOUNDED,),
    *,
    block_tokens: int = defaults.TRACE_BLOCK_TOKENS,
    fmt: str = "auto",
    skip_bad_lines: bool = False,
    jobs: int | None = None,
    warn: Callable[[str], None] | None = None,
    block_bytes: int = BLOCK_BYTES,
) -> TraceReplay:
    """Replay a trace through prefix caches.

    Parameters
    ----------
    path : Path
        JSONL (Mooncake-style, hash ids) or CSV (cached tokens or hit rate per request).
    capacity_tokens : sequence of float
        Cache capacities [tokens]; ``math.inf`` is the unbounded cache. Ignored for CSV (the
        logged cached tokens are the only column).
    block_tokens : int
        Tokens per block of a hash id.
    fmt : str
        ``auto``, ``jsonl`` or ``csv``.
    skip_bad_lines : bool
        Count and skip malformed lines instead of stopping at the first.
    jobs : int, optional
        Parser worker processes (default: usable CPUs, at most 4).
    warn : callable, optional
        Receives one-line warnings (the out-of-order fallback).
    block_bytes : int
        Bytes of whole lines parsed at a time.

    Returns
    -------
    TraceReplay

    Raises
    ------
    ProfileError
        For a bad line (naming it), or an empty trace.
    UsageError
        For an unknown format or a bad capacity.
    """
    if block_tokens < 1:
        raise OptionError("block_tokens", "must be >= 1")
    fmt = detect_format(path, fmt)
    if fmt == "csv":
        return _replay_csv(path, skip_bad_lines, warn)
    jobs = default_jobs() if jobs is None or jobs < 1 else jobs
    return _replay_jsonl(
        lambda: iter_jsonl_blocks(
            path, skip_bad_lines=skip_bad_lines, jobs=jobs, block_bytes=block_bytes
        ),
        str(path),
        capacity_tokens,
        block_tokens,
        warn,
    )


def replay_records(
    records: Callable[[], Iterable[dict[str, Any]]],
    file: str,
    capacity_tokens: Sequence[float] = (UNBOUNDED,),
    *,
    block_tokens: int = defaults.TRACE_BLOCK_TOKENS,
    warn: Callable[[str], None] | None = None,
) -> TraceReplay:
    """:func:`replay_trace` of request records made in memory (a session model's trace,
    :func:`pddplan.trace.synth.synthetic_requests`), as the replay of the JSONL file they
    would be written to (:func:`pddplan.trace.records.records_blocks`: the same blocks,
    without the text). ``records`` makes them afresh at each call (a second pass sorts them
    where their timestamps are out of order); ``file`` names them in messages."""
    if block_tokens < 1:
        raise OptionError("block_tokens", "must be >= 1")
    return _replay_jsonl(
        lambda: records_blocks(records()), file, capacity_tokens, block_tokens, warn
    )


def _replay_jsonl(
    blocks: Callable[[], Iterator[ParsedBlock]],
    file: str,
    capacity_tokens: Sequence[float],
    block_tokens: int,
    warn: Callable[[str], None] | None,
) -> TraceReplay:
    """:func:`replay_trace` of a JSONL trace's blocks (``blocks`` reads them afresh at each
    call: a second pass sorts them where their timestamps are out of order)."""
    caps = [float(c) for c in capacity_tokens]
    for c in caps:
        if not (math.isinf(c) or c >= block_tokens):
            raise UsageError(f"capacity {c:g} tokens holds no whole block of {block_tokens}")
    sorted_in_memory = False
    try:
        parts = _replay_blocks(blocks(), caps, block_tokens, check_order=True)
    except _Unsorted:
        if warn is not None:
            warn(
                f"{file}: timestamps are not in order; sorting the whole trace in memory "
                "(memory grows with the trace)"
            )
        sorted_in_memory = True
        parts = _replay_blocks(_sorted_blocks(blocks()), caps, block_tokens, check_order=False)
    if parts.input_tokens.n == 0:
        raise ProfileError(_empty_message(parts.bad_lines), file=file)
    input_tokens = parts.input_tokens.take()
    hit_blocks = parts.hit_blocks.take()
    # column by column: no (requests, capacities) temporaries besides the result
    hit_tokens = np.empty(hit_blocks.shape, dtype=np.float64)
    for c in range(hit_blocks.shape[1]):
        np.minimum(
            hit_blocks[:, c].astype(np.float64) * block_tokens, input_tokens, out=hit_tokens[:, c]
        )
    replay = TraceReplay(
        file=file,
        format="jsonl",
        block_tokens=block_tokens,
        capacity_tokens=np.asarray(caps, dtype=float),
        timestamp_ms=parts.timestamp_ms.take(),
        input_tokens=input_tokens,
        output_tokens=parts.output_tokens.take(),
        hit_tokens=hit_tokens,
        hit_blocks=hit_blocks,
        block_counts=parts.block_counts.take(),
        bad_lines=parts.bad_lines,
        bad_line_messages=parts.bad_line_messages[:MAX_BAD_LINE_MESSAGES],
        sorted_in_memory=sorted_in_memory,
        distinct_blocks=parts.distinct_blocks,
    )
    past = replay.ids_past_input()
    if past and warn is not None:
        warn(
            f"{file}: {past:,} of {len(replay):,} requests list more hash ids than blocks of "
            f"{block_tokens} tokens hold their input: the trace's blocks are likely smaller "
            "(set the block size to the trace's); each hit is capped at the input length"
        )
    return replay


def _empty_message(bad: int) -> str:
    if bad:
        return f"the trace has no valid requests ({bad} bad lines skipped)"
    return "the trace is empty: no requests"


def _replay_csv(
    path: Path, skip_bad_lines: bool, warn: Callable[[str], None] | None = None
) -> TraceReplay:
    """:func:`replay_trace` of a CSV trace: its logged hits, in the order of arrival (rows out
    of order are sorted, stably, as a JSONL trace's are: a replay's first requests are its
    earliest, whatever the format)."""
    ts, inp, out, cached = [], [], [], []
    bad = 0
    messages: list[str] = []
    seen = 0
    for blk in iter_csv_blocks(path, skip_bad_lines=skip_bad_lines):
        seen += len(blk)
        limits.TRACE_REQUESTS.check(seen, "the trace's requests")
        bad += blk.bad_count
        messages.extend(blk.bad_messages)
        if len(blk):
            assert blk.cached_tokens is not None
            ts.append(blk.timestamp_ms)
            inp.append(blk.input_tokens)
            out.append(blk.output_tokens)
            cached.append(blk.cached_tokens)
    if not inp:
        raise ProfileError(_empty_message(bad), file=str(path))
    t = np.concatenate(ts)
    order = slice(None)
    unsorted = len(t) > 1 and bool(np.all(np.isfinite(t))) and bool(np.any(t[1:] < t[:-1]))
    if unsorted:
        if warn is not None:
            warn(f"{path}: timestamps are not in order; sorting the trace by arrival")
        order = np.argsort(t, kind="stable")  # type: ignore[assignment]
    return TraceReplay(
        file=str(path),
        format="csv",
        block_tokens=0,
        capacity_tokens=np.asarray([math.nan]),
        timestamp_ms=t[order],
        input_tokens=np.concatenate(inp)[order],
        output_tokens=np.concatenate(out)[order],
        hit_tokens=np.concatenate(cached)[order, None],
        bad_lines=bad,
        bad_line_messages=messages[:MAX_BAD_LINE_MESSAGES],
        sorted_in_memory=unsorted,
    )


def warmup_mask(timestamp_ms: np.ndarray, warmup_s: float) -> np.ndarray:
    """Requests at or after ``first arrival + warmup_s`` (all when ``warmup_s`` is 0).

    Raises
    ------
    UsageError
        For a warm-up on a trace without timestamps, or a negative warm-up.
    """
    if warmup_s < 0:
        raise OptionError("warmup_s", "must be >= 0 seconds")
    n = len(timestamp_ms)
    if warmup_s == 0:
        return np.ones(n, dtype=bool)
    if n and np.isnan(timestamp_ms).any():
        raise OptionError("warmup_s", "needs timestamps; this trace has none")
    t0 = float(np.min(timestamp_ms)) if n else 0.0
    return timestamp_ms >= t0 + warmup_s * 1000.0
