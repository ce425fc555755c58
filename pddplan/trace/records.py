"""Streaming readers of request traces: Mooncake-style JSONL and per-request CSV.

A trace is read in blocks of about :data:`BLOCK_BYTES` of whole lines; each block becomes a
:class:`ParsedBlock` of flat numpy arrays (one entry per request, and for JSONL the hash ids of
all its requests concatenated). Nothing keeps more than a few blocks in memory, so a trace of any
size streams through. JSONL blocks can be parsed in worker processes (:func:`iter_blocks` with
``jobs > 1``); results come back in file order.

JSONL lines are parsed on a fast path (``orjson`` 3.9.15 or later when installed, else
:mod:`json`, with the fields checked on whole numpy arrays) and, when anything in a block looks
wrong, again line by line on a slow path that names the first bad line, or skips and counts bad
lines when asked.
"""

from __future__ import annotations

import codecs
import csv
import gc
import gzip
import hashlib
import json
import math
import re
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from itertools import chain, islice
from operator import itemgetter
from pathlib import Path
from typing import IO, Any, cast

import numpy as np

from pddplan import limits
from pddplan.errors import OptionError, ProfileError, UnreadableFileError, UsageError
from pddplan.io.files import MAX_JSON_DEPTH, json_depth

#: The first orjson whose ``loads`` limits its nesting depth: older ones overflow the C stack on
#: a deeply nested line and kill the process (CVE-2024-27454, fixed in orjson 3.9.15).
ORJSON_SAFE_VERSION = (3, 9, 15)


def orjson_is_safe(version: str) -> bool:
    """Whether an orjson of ``version`` (``"3.10.1"``) is :data:`ORJSON_SAFE_VERSION` or
    later; a version that does not parse is taken as unsafe."""
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", version)
    return m is not None and tuple(int(g or 0) for g in m.groups()) >= ORJSON_SAFE_VERSION


try:  # orjson is optional: used when installed and safe, never required
    import orjson

    if not orjson_is_safe(getattr(orjson, "__version__", "")):
        raise ImportError("orjson older than 3.9.15")
    _loads: Callable[[bytes], Any] = orjson.loads
    _JSON_ERRORS: tuple[type[Exception], ...] = (orjson.JSONDecodeError, ValueError)
except ImportError:  # pragma: no cover - depends on the environment
    _loads = json.loads
    _JSON_ERRORS = (ValueError,)

_FAST_ERRORS: tuple[type[Exception], ...] = (*_JSON_ERRORS, KeyError, TypeError, RecursionError)

BLOCK_BYTES = 8 << 20
"""Bytes of whole lines per parsed block."""

MAX_BAD_LINE_MESSAGES = 5
"""How many skipped lines' messages are kept for the report (all are counted)."""

MAX_LENGTH_TOKENS = 10**12
#: Largest timestamp magnitude [ms] (about 31,700 years): beyond it a trace's clock is nonsense.
MAX_TIMESTAMP_MS = 1e15
"""Longest input or output accepted [tokens]; longer is treated as a data error."""

JSONL_FIELDS = ("timestamp", "input_length", "output_length", "hash_ids")
CSV_TIMESTAMP_COLUMNS = {"timestamp": 1.0, "timestamp_ms": 1.0, "timestamp_s": 1000.0}
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


@dataclass
class ParsedBlock:
    """The requests of one block of a trace, in file order.

    Attributes
    ----------
    timestamp_ms : numpy.ndarray
        Arrival time of each request [ms]; NaN where the trace has no timestamps (CSV).
    input_tokens, output_tokens : numpy.ndarray
        Prompt and generated lengths [tokens], int64.
    line : numpy.ndarray
        Line number (1-based) of each request in the file.
    hash_ids : numpy.ndarray or None
        JSONL: the block hash ids of all requests, concatenated (int64).
    hash_counts : numpy.ndarray or None
        JSONL: how many hash ids each request has.
    cached_tokens : numpy.ndarray or None
        CSV: prompt tokens served from the cache (float64; ``hit_rate * input`` when the CSV gives
        a hit rate).
    bad_count : int
        Lines skipped as bad (only with ``skip_bad_lines``).
    bad_messages : list of str
        The first few skipped lines' messages.
    """

    timestamp_ms: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    line: np.ndarray
    hash_ids: np.ndarray | None = None
    hash_counts: np.ndarray | None = None
    cached_tokens: np.ndarray | None = None
    bad_count: int = 0
    bad_messages: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.input_tokens)


class _BadLines:
    """Collects skipped lines, or raises at the first one."""

    def __init__(self, file: str, skip: bool) -> None:
        self.file = file
        self.skip = skip
        self.count = 0
        self.messages: list[str] = []

    def bad(self, line: int, message: str) -> None:
        if not self.skip:
            raise ProfileError(message, file=self.file, line=line)
        self.count += 1
        if len(self.messages) < MAX_BAD_LINE_MESSAGES:
            self.messages.append(f"line {line}: {message}")


# ------------------------------------------------------------------------------- validation


def _describe(v: Any) -> str:
    text = json.dumps(v) if not isinstance(v, bytes) else repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _as_int(v: Any) -> int | None:
    """``v`` as an int if it is an integer (or an integral float), else None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return int(v)
    return None


def _length(rec: dict[str, Any], key: str, minimum: int) -> int:
    if key not in rec:
        raise ValueError(f"missing field {key!r}")
    n = _as_int(rec[key])
    if n is None:
        raise ValueError(f"{key}: expected an integer number of tokens, got {_describe(rec[key])}")
    if n < minimum:
        what = "a negative length" if n < 0 else "zero"
        raise ValueError(f"{key}: {what} ({n}) is not allowed; need >= {minimum}")
    if n > MAX_LENGTH_TOKENS:
        raise ValueError(f"{key}: {n} tokens is implausibly large (limit {MAX_LENGTH_TOKENS:.0e})")
    return n


def _timestamp(rec: dict[str, Any]) -> float:
    if "timestamp" not in rec:
        raise ValueError("missing field 'timestamp'")
    v = rec["timestamp"]
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise ValueError(f"timestamp: expected a number of milliseconds, got {_describe(v)}")
    if abs(v) > MAX_TIMESTAMP_MS:
        raise ValueError(f"timestamp: {v:g} ms is beyond {MAX_TIMESTAMP_MS:g} ms")
    return float(v)


def string_block_id(s: str) -> int:
    """A stable signed 64-bit id for a string hash id (blake2b of its UTF-8 bytes)."""
    digest = hashlib.blake2b(s.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def _hash_ids(rec: dict[str, Any]) -> list[int]:
    if "hash_ids" not in rec:
        raise ValueError("missing field 'hash_ids'")
    ids = rec["hash_ids"]
    if not isinstance(ids, list):
        raise ValueError(f"hash_ids: expected a list of block ids, got {_describe(ids)}")
    out: list[int] = []
    for i, h in enumerate(ids):
        if isinstance(h, int) and not isinstance(h, bool):
            out.append(h if _INT64_MIN <= h <= _INT64_MAX else string_block_id(str(h)))
        elif isinstance(h, str):
            out.append(string_block_id(h))
        else:
            raise ValueError(
                f"hash_ids[{i}]: expected an integer or string block id, got {_describe(h)}"
            )
    return out


# ------------------------------------------------------------------------------------ JSONL


class LineError(Exception):
    """A bad line, numbered within its block (0-based); picklable across worker processes."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(line, message)
        self.line = line
        self.message = message


class _LocalBadLines:
    """Bad lines of one block, numbered within the block: raise at the first, or collect."""

    def __init__(self, skip: bool) -> None:
        self.skip = skip
        self.count = 0
        self.first: list[tuple[int, str]] = []

    def bad(self, line: int, message: str) -> None:
        if not self.skip:
            raise LineError(line, message)
        self.count += 1
        if len(self.first) < MAX_BAD_LINE_MESSAGES:
            self.first.append((line, message))


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Parsing allocates millions of small containers: cyclic GC passes over them are waste."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@dataclass
class LocalBlock:
    """A parsed block with lines numbered from 0 within the block (see :func:`parse_jsonl_local`)."""

    block: ParsedBlock
    lines: int
    bad: list[tuple[int, str]]


def _jsonl_slow(lines: list[bytes], bad: _LocalBadLines) -> ParsedBlock:
    """Line-by-line parse with precise messages; bad lines raise or are skipped."""
    ts: list[float] = []
    inp: list[int] = []
    out: list[int] = []
    line_no: list[int] = []
    counts: list[int] = []
    ids: list[int] = []
    for n, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:  # the standard parser here: exact big integers, and clear messages
            rec = json.loads(raw) if json_depth(raw) <= MAX_JSON_DEPTH else None
        except (ValueError, UnicodeDecodeError) as exc:
            bad.bad(n, f"malformed JSON: {exc}")
            continue
        if rec is None and json_depth(raw) > MAX_JSON_DEPTH:
            bad.bad(n, f"nested deeper than {MAX_JSON_DEPTH} levels: not a trace record")
            continue
        try:
            if not isinstance(rec, dict):
                raise ValueError(f"expected a JSON object, got {_describe(rec)}")
            t = _timestamp(rec)
            li = _length(rec, "input_length", 1)
            lo = _length(rec, "output_length", 0)
            h = _hash_ids(rec)
        except ValueError as exc:
            bad.bad(n, str(exc))
            continue
        ts.append(t)
        inp.append(li)
        out.append(lo)
        line_no.append(n)
        counts.append(len(h))
        ids.extend(h)
    return ParsedBlock(
        timestamp_ms=np.asarray(ts, dtype=np.float64),
        input_tokens=np.asarray(inp, dtype=np.int64),
        output_tokens=np.asarray(out, dtype=np.int64),
        line=np.asarray(line_no, dtype=np.int64),
        hash_ids=np.asarray(ids, dtype=np.int64),
        hash_counts=np.asarray(counts, dtype=np.int64),
        bad_count=bad.count,
    )


def _int_column(values: list[Any], minimum: int) -> np.ndarray | None:
    """The column as int64 if every value is an integer in range, else None (slow path)."""
    try:
        arr = np.asarray(values)
    except ValueError:  # ragged lists
        return None
    if arr.ndim != 1:  # a list where a number belongs
        return None
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.floor(arr)):
            return None
    elif arr.dtype.kind != "i":
        return None
    if arr.size and (arr.min() < minimum or arr.max() > MAX_LENGTH_TOKENS):
        return None
    return arr.astype(np.int64, copy=False)


def _only_integers(raw: bytes, n_lines: int) -> bool:
    """Whether lines known to hold the four JSONL_FIELDS keys can hold nothing but integers.

    A cheap byte count instead of a type check of every hash id: exactly 8 quotes per line means
    no other key and no string value; exactly 3 ``e`` per line (one in each of ``timestamp``,
    ``input_length``, ``output_length``) means no ``true``, ``false`` or exponent; with no ``.``,
    ``E`` or ``null`` every value is an integer or a list of integers.
    """
    return (
        raw.count(b'"') == 8 * n_lines
        and raw.count(b"e") == 3 * n_lines
        and b"." not in raw
        and b"E" not in raw
        and b"null" not in raw
    )


def _jsonl_fast(lines: list[bytes], raw: bytes | None = None) -> ParsedBlock | None:
    """Whole-block parse; None when any line needs the slow path.

    ``raw`` is the block's bytes (the lines joined), for a cheap all-integers check.
    """
    try:
        recs = list(map(_loads, lines))
    except _FAST_ERRORS:
        return None
    return _records_block(recs, raw)


def _records_block(recs: list[Any], raw: bytes | None = None) -> ParsedBlock | None:
    """Request records (the JSONL_FIELDS of each, as :func:`json.loads` gives them) as one
    block, their lines numbered from 0; None where a record needs the slow path's checks.
    ``raw``: the records' JSON text, for a cheap all-integers check of their ids. ``recs`` is
    emptied once its columns are read: the records are freed before the arrays are built (a
    block's dicts would otherwise live beside its arrays)."""
    try:
        cols = [list(map(itemgetter(k), recs)) for k in JSONL_FIELDS]
    except _FAST_ERRORS:
        return None
    n = len(recs)
    recs.clear()
    try:
        ts = np.asarray(cols[0])
    except ValueError:
        return None
    if ts.ndim != 1 or ts.dtype.kind not in "if" or not np.all(np.isfinite(ts)):
        return None
    if ts.size and np.max(np.abs(ts)) > MAX_TIMESTAMP_MS:
        return None
    inp = _int_column(cols[1], 1)
    out = _int_column(cols[2], 0)
    if inp is None or out is None:
        return None
    lists = cols[3]
    if set(map(type, lists)) != {list}:
        return None
    counts = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    total = int(counts.sum())
    if total and not (raw is not None and _only_integers(raw, n)):
        if set(map(type, chain.from_iterable(lists))) != {int}:
            return None
    try:
        ids = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=total)
    except (OverflowError, TypeError, ValueError):  # a huge, nested or non-numeric id
        return None
    if ids.size and -(2**31) <= ids.min() and ids.max() < 2**31:
        ids = ids.astype(np.int32)  # half the bytes to ship back from a worker
    return ParsedBlock(
        timestamp_ms=ts.astype(np.float64),
        input_tokens=inp,
        output_tokens=out,
        line=np.arange(n, dtype=np.int64),
        hash_ids=ids,
        hash_counts=counts.astype(np.int32),
    )


#: Requests a block of :func:`records_blocks` holds at most.
RECORDS_PER_BLOCK = 1 << 16


def records_blocks(records: Iterable[dict[str, Any]]) -> Iterator[ParsedBlock]:
    """Request records made in memory (a session model's trace, :mod:`pddplan.trace.synth`),
    in blocks of :data:`RECORDS_PER_BLOCK`, each as :func:`iter_jsonl_blocks` gives the block
    of their JSONL lines (the same conversion, lines numbered from 1), without writing or
    parsing the text.

    Raises
    ------
    ValueError
        For a record that JSONL's fast path would not take (a maker's bug, not a file's).
    """
    first_line = 1
    it = iter(records)
    while chunk := list(islice(it, RECORDS_PER_BLOCK)):
        n = len(chunk)
        blk = _records_block(chunk)
        if blk is None:
            raise ValueError("a request record that a JSONL trace line could not hold")
        yield _globalize(LocalBlock(blk, n, []), first_line)
        first_line += n


def parse_jsonl_local(data: bytes, skip_bad_lines: bool = False) -> LocalBlock:
    """Parse whole JSONL lines, numbering them from 0 within ``data``.

    Raises
    ------
    LineError
        At the first bad line (its number within ``data``), unless ``skip_bad_lines``.
    """
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    with _gc_paused():
        blk = _jsonl_fast(lines, data) if lines else None
        if blk is not None:
            return LocalBlock(blk, len(lines), [])
        bad = _LocalBadLines(skip_bad_lines)
        return LocalBlock(_jsonl_slow(lines, bad), len(lines), bad.first)


def _globalize(local: LocalBlock, first_line: int) -> ParsedBlock:
    blk = local.block
    blk.line = blk.line + first_line
    blk.bad_messages = [f"line {first_line + n}: {m}" for n, m in local.bad]
    return blk


def parse_jsonl_block(
    data: bytes, first_line: int, file: str, skip_bad_lines: bool = False
) -> ParsedBlock:
    """Parse whole JSONL lines.

    Parameters
    ----------
    data : bytes
        Whole lines (the last may lack its newline).
    first_line : int
        Line number (1-based) of the first line of ``data``.
    file : str
        File name for messages.
    skip_bad_lines : bool
        Skip and count bad lines instead of raising.

    Returns
    -------
    ParsedBlock

    Raises
    ------
    ProfileError
        At the first malformed line, missing field, negative length or non-integer block id,
        naming the file and line, unless ``skip_bad_lines``.
    """
    try:
        local = parse_jsonl_local(data, skip_bad_lines)
    except LineError as exc:
        raise ProfileError(exc.message, file=file, line=first_line + exc.line) from None
    return _globalize(local, first_line)


def _open_binary(path: Path) -> IO[bytes]:
    try:
        if path.suffix == ".gz":
            with path.open("rb") as probe:
                magic = probe.read(2)
            if magic != b"\x1f\x8b":
                raise ProfileError(
                    "named .gz but not gzip-compressed (rename it without .gz)", file=str(path)
                )
            return cast(IO[bytes], gzip.open(path, "rb"))
        return path.open("rb")
    except OSError as exc:
        raise UnreadableFileError(f"cannot read trace: {exc.strerror}", file=str(path)) from None


def _line_too_long(path: Path, line_bytes: int) -> ProfileError:
    return ProfileError(
        f"a line longer than {line_bytes:,} bytes: not a trace (set the environment variable "
        f"{limits.TRACE_LINE_BYTES.env} to raise the cap)",
        file=str(path),
    )


def _trace_too_large(path: Path, most_bytes: int) -> ProfileError:
    return ProfileError(
        f"more than {most_bytes:,} bytes (decompressed): above the cap (set the environment "
        f"variable {limits.TRACE_BYTES.env} to raise it)",
        file=str(path),
    )


def _bounded_lines(path: Path, fh: IO[bytes]) -> Iterator[str]:
    """The text lines of ``fh``, each read with a bound (a file without newlines, such as
    /dev/zero, is one endless line) and their total within the trace cap."""
    line_bytes, most_bytes = limits.TRACE_LINE_BYTES.value(), limits.TRACE_BYTES.value()
    total = 0
    while True:
        raw = fh.readline(line_bytes + 1)
        if not raw:
            return
        if len(raw) > line_bytes:
            raise _line_too_long(path, line_bytes)
        if total == 0:  # a byte-order mark (a spreadsheet's UTF-8 export) is no header text
            raw = raw.removeprefix(codecs.BOM_UTF8)
        total += len(raw)
        if total > most_bytes:
            raise _trace_too_large(path, most_bytes)
        yield raw.decode("utf-8")


def _raw_blocks(path: Path, block_bytes: int) -> Iterator[bytes]:
    """Whole-line byte blocks of the file (the last may lack its newline)."""
    carry = b""
    total_bytes, most_bytes = 0, limits.TRACE_BYTES.value()
    line_bytes = limits.TRACE_LINE_BYTES.value()
    with _open_binary(path) as fh:
        while True:
            try:
                raw = fh.read(block_bytes)
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                raise ProfileError(f"cannot read trace: {exc}", file=str(path)) from None
            total_bytes += len(raw)
            if total_bytes > most_bytes:
                raise _trace_too_large(path, most_bytes)
            if not raw:
                if carry:
                    yield carry
                return
            cut = raw.rfind(b"\n") + 1
            if cut == 0:
                carry += raw
                if len(carry) > line_bytes:
                    raise _line_too_long(path, line_bytes)
                continue
            yield carry + raw[:cut] if carry else raw[:cut]
            carry = raw[cut:]


def _block_ranges(path: Path, block_bytes: int) -> Iterator[tuple[int, int]]:
    """(start, end) byte ranges of whole lines, found by seeking (uncompressed files)."""
    try:
        size = path.stat().st_size
        fh = path.open("rb")
    except OSError as exc:
        raise UnreadableFileError(f"cannot read trace: {exc.strerror}", file=str(path)) from None
    if size > limits.TRACE_BYTES.value():
        fh.close()
        raise ProfileError(
            f"{size:,} bytes: above the cap of {limits.TRACE_BYTES.value():,} (set the "
            f"environment variable {limits.TRACE_BYTES.env} to raise it)",
            file=str(path),
        )
    line_bytes = limits.TRACE_LINE_BYTES.value()
    with fh:
        start = 0
        while start < size:
            end = start + block_bytes
            while end < size:
                fh.seek(end)
                probe = fh.read(1 << 16)
                cut = probe.find(b"\n")
                if cut >= 0:
                    end += cut + 1
                    break
                end += len(probe)
                if end - start - block_bytes > line_bytes:
                    raise _line_too_long(path, line_bytes)
            end = min(end, size)
            yield start, end
            start = end


def _parse_range(path: str, start: int, end: int, skip_bad_lines: bool) -> LocalBlock:
    """Worker job: read ``[start, end)`` of a plain file and parse it."""
    with open(path, "rb") as fh:
        fh.seek(start)
        data = fh.read(end - start)
    return parse_jsonl_local(data, skip_bad_lines)


def iter_jsonl_blocks(
    path: Path,
    *,
    skip_bad_lines: bool = False,
    jobs: int = 1,
    block_bytes: int = BLOCK_BYTES,
) -> Iterator[ParsedBlock]:
    """Parse a JSONL trace block by block, in file order.

    Parameters
    ----------
    path : Path
        The trace (``.gz`` is decompressed on the fly, in this process).
    skip_bad_lines : bool
        Skip and count bad lines instead of raising at the first.
    jobs : int
        Worker processes for parsing; 1 parses in this process. Workers only start for an
        uncompressed file of more than one block; each reads its own byte range, and at most
        ``2 * jobs`` blocks are in flight.
    block_bytes : int
        Bytes of whole lines per block.

    Yields
    ------
    ParsedBlock

    Raises
    ------
    ProfileError
        For a bad line (unless ``skip_bad_lines``), naming the file and line.
    """
    file = str(path)
    first_line = 1

    def finish(get: Callable[[], LocalBlock]) -> ParsedBlock:
        nonlocal first_line
        try:
            local = get()
        except LineError as exc:
            raise ProfileError(exc.message, file=file, line=first_line + exc.line) from None
        blk = _globalize(local, first_line)
        first_line += local.lines
        return blk

    if path.suffix == ".gz":
        for data in _raw_blocks(path, block_bytes):
            yield finish(partial(parse_jsonl_local, data, skip_bad_lines))
        return
    ranges = _block_ranges(path, block_bytes)
    head = list(islice(ranges, 2))
    if len(head) < 2 or jobs <= 1:
        for a, b in chain(head, ranges):
            yield finish(partial(_parse_range, file, a, b, skip_bad_lines))
        return

    from concurrent.futures import Future, ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    window = 2 * jobs
    pending: deque[Future[LocalBlock]] = deque()
    pool = ProcessPoolExecutor(max_workers=jobs)
    try:
        for a, b in chain(head, ranges):
            pending.append(pool.submit(_parse_range, file, a, b, skip_bad_lines))
            while len(pending) > window:
                yield finish(pending.popleft().result)
        while pending:
            yield finish(pending.popleft().result)
    except BrokenProcessPool:
        raise UsageError(
            f"a parser process for {file} died (out of memory?); retry with --jobs 1"
        ) from None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


# -------------------------------------------------------------------------------------- CSV


def _csv_number(row: dict[str, str], key: str) -> float:
    text = (row.get(key) or "").strip()
    if not text:
        raise ValueError(f"missing field {key!r}")
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"{key}: expected a number, got {text!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{key}: expected a finite number, got {text!r}")
    return v


def _csv_length(row: dict[str, str], key: str, minimum: int) -> int:
    v = _csv_number(row, key)
    if not v.is_integer():
        raise ValueError(f"{key}: expected an integer number of tokens, got {v:g}")
    if v < minimum:
        what = "a negative length" if v < 0 else "zero"
        raise ValueError(f"{key}: {what} ({v:g}) is not allowed; need >= {minimum}")
    if v > MAX_LENGTH_TOKENS:
        raise ValueError(
            f"{key}: {v:g} tokens is implausibly large (limit {MAX_LENGTH_TOKENS:.0e})"
        )
    return int(v)


def iter_csv_blocks(
    path: Path, *, skip_bad_lines: bool = False, block_rows: int = 200_000
) -> Iterator[ParsedBlock]:
    """Parse a per-request CSV trace block by block.

    Columns: ``input_length``, ``output_length``, and ``cached_tokens`` or ``hit_rate`` (if both,
    ``cached_tokens`` is used); optional ``timestamp`` or ``timestamp_ms`` [ms] or
    ``timestamp_s`` [s]. Other columns are ignored.

    Raises
    ------
    ProfileError
        For a missing column, or a bad row (naming its line) unless ``skip_bad_lines``.
    """
    file = str(path)
    with _open_binary(path) as raw_fh:
        reader = csv.DictReader(_bounded_lines(path, raw_fh))
        try:
            header = reader.fieldnames
        except (UnicodeDecodeError, csv.Error) as exc:
            raise ProfileError(f"unreadable CSV header: {exc}", file=file, line=1) from None
        if not header:
            raise ProfileError("the trace is empty: no CSV header and no requests", file=file)
        cols = {h.strip(): h for h in header if h is not None}
        for need in ("input_length", "output_length"):
            if need not in cols:
                raise ProfileError(
                    f"CSV header lacks column {need!r} (columns: {', '.join(cols)})",
                    file=file,
                    line=1,
                )
        hit_col = "cached_tokens" if "cached_tokens" in cols else "hit_rate"
        if hit_col not in cols:
            raise ProfileError(
                "CSV header needs a 'cached_tokens' or a 'hit_rate' column "
                f"(columns: {', '.join(cols)})",
                file=file,
                line=1,
            )
        ts_col = next((c for c in CSV_TIMESTAMP_COLUMNS if c in cols), None)
        ts_scale = CSV_TIMESTAMP_COLUMNS[ts_col] if ts_col else 1.0
        bad = _BadLines(file, skip_bad_lines)
        ts: list[float] = []
        inp: list[int] = []
        out: list[int] = []
        cached: list[float] = []
        lines: list[int] = []

        def flush() -> ParsedBlock:
            blk = ParsedBlock(
                timestamp_ms=np.asarray(ts, dtype=np.float64),
                input_tokens=np.asarray(inp, dtype=np.int64),
                output_tokens=np.asarray(out, dtype=np.int64),
                line=np.asarray(lines, dtype=np.int64),
                cached_tokens=np.asarray(cached, dtype=np.float64),
                bad_count=bad.count,
                bad_messages=list(bad.messages),
            )
            for lst in (ts, inp, out, cached, lines):
                lst.clear()
            bad.count = 0
            bad.messages = []
            return blk

        while True:
            try:
                row_raw = next(reader, None)
            except (OSError, EOFError, zlib.error) as exc:
                raise ProfileError(f"cannot read trace: {exc}", file=file) from None
            except UnicodeDecodeError as exc:
                raise ProfileError(
                    f"not UTF-8 text: {exc.reason}", file=file, line=reader.line_num + 1
                ) from None
            except csv.Error as exc:
                bad.bad(reader.line_num, f"malformed CSV row: {exc}")
                continue
            if row_raw is None:
                break
            line = reader.line_num
            if None in row_raw:  # fields past the header's (csv.DictReader's rest key)
                extra = len(row_raw[None])  # type: ignore[index]
                bad.bad(line, f"{len(header) + extra} fields where the header has {len(header)}")
                continue
            row = {k.strip(): v for k, v in row_raw.items() if isinstance(k, str)}
            if all(not (v or "").strip() for v in row.values() if isinstance(v, str)):
                continue  # a blank row
            try:
                li = _csv_length(row, "input_length", 1)
                lo = _csv_length(row, "output_length", 0)
                if hit_col == "cached_tokens":
                    c = _csv_number(row, "cached_tokens")
                    if not c.is_integer():
                        raise ValueError(
                            f"cached_tokens: expected an integer number of tokens, got {c:g}"
                        )
                    if c < 0 or c > li:
                        raise ValueError(
                            f"cached_tokens: {c:g} is outside [0, input_length = {li}]"
                        )
                else:
                    h = _csv_number(row, "hit_rate")
                    if not 0.0 <= h <= 1.0:
                        raise ValueError(f"hit_rate: {h:g} is outside [0, 1]")
                    c = h * li
                t = _csv_number(row, ts_col) * ts_scale if ts_col else math.nan
                if abs(t) > MAX_TIMESTAMP_MS:
                    raise ValueError(f"{ts_col}: {t:g} ms is beyond {MAX_TIMESTAMP_MS:g} ms")
            except ValueError as exc:
                bad.bad(line, str(exc))
                continue
            ts.append(t)
            inp.append(li)
            out.append(lo)
            cached.append(c)
            lines.append(line)
            if len(inp) >= block_rows:
                yield flush()
        yield flush()


# ------------------------------------------------------------------------------- detection


def detect_format(path: Path, fmt: str = "auto") -> str:
    """``jsonl`` or ``csv``: from ``fmt``, else the file suffix, else the first character.

    Raises
    ------
    ProfileError : a gzip-compressed file whose name does not end in ``.gz`` (it would be read
        as text, and fail on its first byte with a message that does not say why).
    """
    if path.suffix != ".gz":
        try:
            with path.open("rb") as probe:
                gzipped = probe.read(2) == b"\x1f\x8b"
        except OSError:
            gzipped = False  # the reader names the file and why it cannot be read
        if gzipped:
            raise ProfileError(
                f"gzip-compressed, but its name does not end in .gz (rename it {path.name}.gz)",
                file=str(path),
            )
    if fmt in ("jsonl", "csv"):
        return fmt
    if fmt != "auto":
        raise OptionError("trace_format", f"must be auto, jsonl or csv, not {fmt!r}")
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    last = suffixes[-1] if suffixes else ""
    if last in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    if last == ".csv":
        return "csv"
    with _open_binary(path) as fh:
        try:
            head = fh.read(4096).lstrip()
        except (OSError, EOFError) as exc:
            raise ProfileError(f"cannot read trace: {exc}", file=str(path)) from None
    return "jsonl" if head.startswith(b"{") else "csv"
