"""Statistics of a replayed trace: hit-rate histograms, lengths, arrival rate, capacity curve.

Pure functions of per-request arrays; nothing here reads files except the curve CSV helpers.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pddplan import defaults
from pddplan.errors import OptionError, ProfileError, write_failed
from pddplan.io.files import read_text

DEFAULT_EDGES: tuple[float, ...] = defaults.HIT_RATE_BINS
"""The brief's seven hit-rate bins, [0, 0.9) up to [0.99, 1.0] (as in profiles/agent-64k)."""

HIGH_HIT = 0.95
"""``share_above_95`` counts requests with hit rate >= this (the bins' own convention)."""

PERCENTILES = (50, 90, 99)
PROBABILITY_DECIMALS = 6


def check_edges(edges: Sequence[float] | np.ndarray) -> np.ndarray:
    """Hit-rate bin edges: strictly increasing, from 0 to 1.

    Raises
    ------
    UsageError
        Otherwise.
    """
    e = np.asarray(list(edges), dtype=float)
    if e.size < 2:
        raise OptionError("bins", "needs at least two edges, e.g. 0,0.9,1")
    if e[0] != 0.0 or e[-1] != 1.0:
        raise OptionError("bins", f"must start at 0 and end at 1, got {e[0]:g} .. {e[-1]:g}")
    if np.any(np.diff(e) <= 0):
        raise OptionError("bins", "edges must increase strictly")
    return e


def histogram(hit_rate: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Requests per bin ``[e_i, e_i+1)``, the last bin closed (a hit rate of 1.0 counts)."""
    counts, _ = np.histogram(np.clip(hit_rate, 0.0, 1.0), bins=edges)
    return counts.astype(np.int64)


def probabilities(counts: np.ndarray, decimals: int = PROBABILITY_DECIMALS) -> list[float]:
    """Counts as probabilities with ``decimals`` decimals that sum to 1.

    Largest-remainder rounding in units of ``10**-decimals``: the units sum to exactly
    ``10**decimals``, and each probability is within one unit of its exact share (and zero only
    for an empty bin, or a share below one unit).

    Raises
    ------
    ValueError
        If the counts sum to zero.
    """
    c = np.asarray(counts, dtype=float)
    total = float(c.sum())
    if total <= 0:
        raise ValueError("no requests to make probabilities of")
    scale = 10**decimals
    exact = c / total * scale
    units = np.floor(exact).astype(np.int64)
    short = scale - int(units.sum())
    if short > 0:
        order = np.argsort(-(exact - units), kind="stable")
        units[order[:short]] += 1
    return [round(int(u) / scale, decimals) for u in units]


def percentiles(values: np.ndarray) -> dict[str, float]:
    """Mean, P50/P90/P99 and max of ``values`` (NaN for no values)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return {"mean": math.nan, **{f"p{q}": math.nan for q in PERCENTILES}, "max": math.nan}
    qs = np.percentile(v, PERCENTILES)
    return {
        "mean": float(v.mean()),
        **{f"p{q}": float(x) for q, x in zip(PERCENTILES, qs, strict=True)},
        "max": float(v.max()),
    }


def compress_empirical(
    values: np.ndarray, max_points: int = defaults.WORKLOAD_MAX_POINTS
) -> tuple[list[int], list[int]]:
    """A length sample as at most ``max_points`` (value, weight) points.

    With no more distinct values than ``max_points`` the points are exact (weights are request
    counts). Otherwise the sorted sample is cut into slices at fixed quantiles, finer in both
    tails (0.1%, 0.5%, 1% and their mirrors), and each slice becomes its mean (rounded to a whole
    token) with its request count as weight: the mean is kept, the tails stay visible.

    Parameters
    ----------
    values : numpy.ndarray
        Positive integer lengths [tokens].
    max_points : int
        At most this many points (>= 2).

    Returns
    -------
    values, weights : list of int
        Increasing values; weights are request counts.
    """
    v = np.sort(np.asarray(values, dtype=np.int64))
    if v.size == 0:
        raise ValueError("no values to compress")
    uniq, cnt = np.unique(v, return_counts=True)
    if len(uniq) <= max_points:
        return [int(x) for x in uniq], [int(c) for c in cnt]
    tails = [0.001, 0.005, 0.01, 0.99, 0.995, 0.999]
    n_mid = max(1, max_points - len(tails) - 1)
    grid = np.unique(np.concatenate([np.linspace(0.0, 1.0, n_mid + 1), tails]))
    cuts = np.unique(np.round(grid * v.size).astype(np.int64))
    csum = np.concatenate([[0], np.cumsum(v, dtype=np.float64)])
    out_v: list[int] = []
    out_w: list[int] = []
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        if b <= a:
            continue
        mean = (csum[b] - csum[a]) / (b - a)
        val = max(1, int(round(mean)))
        if out_v and out_v[-1] == val:
            out_w[-1] += int(b - a)
        else:
            out_v.append(val)
            out_w.append(int(b - a))
    return out_v, out_w


@dataclass(frozen=True)
class WindowStats:
    """Arrivals and lengths of the requests in the statistics window (after the warm-up)."""

    requests: int
    duration_s: float | None
    rate_rps: float | None
    input_tokens: dict[str, float]
    output_tokens: dict[str, float]
    anomalous_requests: int

    @property
    def anomalous_share(self) -> float:
        return self.anomalous_requests / self.requests if self.requests else math.nan


def arrival_rate(timestamp_ms: np.ndarray) -> tuple[float | None, float | None]:
    """(span [s], rate [req/s]) of sorted-or-not arrival times: ``(n - 1) / (last - first)``.

    None where there are no timestamps (NaN), fewer than two requests, or a zero span.
    """
    t = np.asarray(timestamp_ms, dtype=float)
    if t.size < 2 or np.isnan(t).any():
        return None, None
    span_s = (float(t.max()) - float(t.min())) / 1000.0
    if span_s <= 0:
        return span_s, None
    return span_s, (t.size - 1) / span_s


def anomalous_mask(
    input_tokens: np.ndarray,
    output_tokens: np.ndarray,
    input_threshold_tokens: int,
    output_threshold_tokens: int,
) -> np.ndarray:
    """Long-input / short-output requests: input >= threshold and output < threshold."""
    return (np.asarray(input_tokens) >= input_threshold_tokens) & (
        np.asarray(output_tokens) < output_threshold_tokens
    )


def window_stats(
    timestamp_ms: np.ndarray,
    input_tokens: np.ndarray,
    output_tokens: np.ndarray,
    anomalous: np.ndarray,
) -> WindowStats:
    span_s, rate = arrival_rate(timestamp_ms)
    return WindowStats(
        requests=int(len(input_tokens)),
        duration_s=span_s,
        rate_rps=rate,
        input_tokens=percentiles(input_tokens),
        output_tokens=percentiles(output_tokens),
        anomalous_requests=int(np.count_nonzero(anomalous)),
    )


# ------------------------------------------------------------------------- capacity curve


def capacity_label(capacity_tokens: float) -> str:
    """``unbounded`` for inf, ``trace`` for NaN (cached tokens as logged), else the integer."""
    if math.isnan(capacity_tokens):
        return "trace"
    if math.isinf(capacity_tokens):
        return "unbounded"
    return str(int(capacity_tokens))


def _bin_column(lo: float, hi: float) -> str:
    return f"share_hit_{lo:g}_{hi:g}"


@dataclass
class CapacityCurve:
    """Hit-rate statistics against prefix-cache capacity.

    Attributes
    ----------
    capacity_tokens : numpy.ndarray
        Cache capacities [tokens], ascending; ``inf`` is the unbounded cache and NaN the cached
        tokens a CSV trace logged.
    mean_hit_rate, token_weighted_hit_rate, share_above_95, no_hit_share : numpy.ndarray
        Per capacity: mean per-request hit rate, cached / input tokens, share of requests with
        hit rate >= 0.95, share with no hit at all.
    bin_edges : numpy.ndarray
        Hit-rate bin edges.
    histograms : numpy.ndarray
        ``(capacities, bins)`` share of requests per bin (rows sum to 1).
    requests : int
        Requests behind each row.
    block_tokens : int
        Tokens per cache block.
    samples : list of numpy.ndarray or None
        Per capacity, every request's hit rate (float32), when asked for.
    """

    capacity_tokens: np.ndarray
    mean_hit_rate: np.ndarray
    token_weighted_hit_rate: np.ndarray
    share_above_95: np.ndarray
    no_hit_share: np.ndarray
    bin_edges: np.ndarray
    histograms: np.ndarray
    requests: int
    block_tokens: int = defaults.TRACE_BLOCK_TOKENS
    samples: list[np.ndarray] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.capacity_tokens)

    def labels(self) -> list[str]:
        return [capacity_label(float(c)) for c in self.capacity_tokens]

    def bins(self, i: int) -> tuple[list[float], list[float]]:
        """Edges and probabilities (summing to 1) of row ``i``, as a workload's ``hit_rate.bins``."""
        return [float(e) for e in self.bin_edges], probabilities(self.histograms[i])

    def smallest_capacity(
        self, *, share_above_95: float | None = None, mean_hit_rate: float | None = None
    ) -> float | None:
        """Smallest capacity [tokens] whose row reaches the given target(s); None if none does."""
        ok = np.ones(len(self), dtype=bool)
        if share_above_95 is not None:
            ok &= self.share_above_95 >= share_above_95
        if mean_hit_rate is not None:
            ok &= self.mean_hit_rate >= mean_hit_rate
        idx = np.flatnonzero(ok & ~np.isnan(self.capacity_tokens))
        return float(self.capacity_tokens[idx[0]]) if idx.size else None

    def rows(self) -> list[dict[str, object]]:
        """One flat row per capacity (the CSV's and the report's columns)."""
        out: list[dict[str, object]] = []
        e = self.bin_edges
        for i, label in enumerate(self.labels()):
            cap = float(self.capacity_tokens[i])
            row: dict[str, object] = {
                "cache_tokens": label if not math.isfinite(cap) else int(cap),
                "cache_blocks": int(cap // self.block_tokens) if math.isfinite(cap) else None,
                "requests": self.requests,
                "mean_hit_rate": float(self.mean_hit_rate[i]),
                "token_weighted_hit_rate": float(self.token_weighted_hit_rate[i]),
                "share_above_95": float(self.share_above_95[i]),
                "no_hit_share": float(self.no_hit_share[i]),
            }
            for b in range(len(e) - 1):
                row[_bin_column(float(e[b]), float(e[b + 1]))] = float(self.histograms[i, b])
            out.append(row)
        return out

    def to_csv(self, path: Path) -> None:
        """Write the curve as CSV, one row per capacity (``unbounded`` spelled out).

        Columns: ``capacity_tokens``, ``capacity_blocks`` (the report's ``cache_tokens`` and
        ``cache_blocks``), ``requests``, ``mean_hit_rate``, ``token_weighted_hit_rate``,
        ``share_above_95``, ``no_hit_share``, ``share_hit_LO_HI`` per bin, ``block_tokens``.
        """
        rename = {"cache_tokens": "capacity_tokens", "cache_blocks": "capacity_blocks"}
        rows = [{rename.get(k, k): v for k, v in r.items()} for r in self.rows()]
        try:
            with path.open("w", encoding="utf-8", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=[*rows[0], "block_tokens"], lineterminator="\n")
                w.writeheader()
                for r in rows:
                    out = {k: ("" if v is None else v) for k, v in r.items()}
                    w.writerow({**out, "block_tokens": self.block_tokens})
        except OSError as exc:
            raise write_failed(path, exc, "curve_out") from None

    @classmethod
    def from_csv(cls, path: Path) -> CapacityCurve:
        """Read a curve written by :meth:`to_csv` (samples are not stored).

        The capacity column may be ``capacity_tokens`` or ``cache_tokens``.
        """
        file = str(path)
        text = read_text(path, what="capacity curve")
        block_tokens = defaults.TRACE_BLOCK_TOKENS
        lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
        reader = csv.DictReader(lines)
        cols = list(reader.fieldnames or [])
        cap_col = "capacity_tokens" if "capacity_tokens" in cols else "cache_tokens"
        need = (
            cap_col,
            "requests",
            "mean_hit_rate",
            "token_weighted_hit_rate",
            "share_above_95",
            "no_hit_share",
        )
        for c in need:
            if c not in cols:
                raise ProfileError(f"capacity curve lacks column {c!r}", file=file, line=1)
        bin_cols = [c for c in cols if c.startswith("share_hit_")]
        if not bin_cols:
            raise ProfileError("capacity curve has no share_hit_LO_HI columns", file=file, line=1)
        try:
            edges = [float(bin_cols[0].split("_")[2])] + [float(c.split("_")[3]) for c in bin_cols]
        except (IndexError, ValueError):
            raise ProfileError("bad share_hit_LO_HI column names", file=file, line=1) from None
        caps: list[float] = []
        vals: dict[str, list[float]] = {k: [] for k in need[2:]}
        hists: list[list[float]] = []
        req = 0
        for i, r in enumerate(reader, start=2):
            try:
                lab = r[cap_col].strip()
                caps.append(
                    math.inf if lab == "unbounded" else math.nan if lab == "trace" else float(lab)
                )
                for k in vals:
                    vals[k].append(float(r[k]))
                hists.append([float(r[c]) for c in bin_cols])
                req = int(float(r["requests"]))
                if (r.get("block_tokens") or "").strip():
                    block_tokens = int(float(r["block_tokens"]))
            except (ValueError, AttributeError, TypeError) as exc:
                raise ProfileError(f"bad capacity curve row: {exc}", file=file, line=i) from None
        if not caps:
            raise ProfileError("capacity curve has no rows", file=file)
        return cls(
            capacity_tokens=np.asarray(caps, dtype=float),
            mean_hit_rate=np.asarray(vals["mean_hit_rate"]),
            token_weighted_hit_rate=np.asarray(vals["token_weighted_hit_rate"]),
            share_above_95=np.asarray(vals["share_above_95"]),
            no_hit_share=np.asarray(vals["no_hit_share"]),
            bin_edges=np.asarray(edges, dtype=float),
            histograms=np.asarray(hists, dtype=float),
            requests=req,
            block_tokens=block_tokens,
        )


def _running_sum(acc: np.ndarray | None, part: np.ndarray) -> np.ndarray:
    """Column sums of ``acc`` (the sums so far) then the rows of ``part``, in row order.

    With two columns or more, a reduction over axis 0 adds rows one after another, so summing
    chunk by chunk this way gives the very same floats as one ``sum(axis=0)`` over all rows.
    """
    if acc is None:
        return np.add.reduce(part, axis=0)
    return np.add.reduce(np.concatenate([acc[None, :], part]), axis=0)


def curve_from_hits(
    capacity_tokens: Sequence[float] | np.ndarray,
    input_tokens: np.ndarray,
    hit_tokens: np.ndarray,
    *,
    edges: Sequence[float] | np.ndarray = DEFAULT_EDGES,
    block_tokens: int = defaults.TRACE_BLOCK_TOKENS,
    keep_samples: bool = False,
    rows: np.ndarray | None = None,
    chunk_rows: int = 1 << 16,
) -> CapacityCurve:
    """The capacity curve of requests whose cached tokens per capacity are known.

    Parameters
    ----------
    capacity_tokens : sequence of float
        Capacity of each column of ``hit_tokens`` [tokens] (inf: unbounded).
    input_tokens : numpy.ndarray
        Prompt length of each request [tokens] (of the requests in ``rows`` only, when given).
    hit_tokens : numpy.ndarray
        ``(requests, capacities)`` cached prompt tokens.
    edges, block_tokens, keep_samples
        See :class:`CapacityCurve`.
    rows : numpy.ndarray, optional
        Boolean mask over the rows of ``hit_tokens``: the requests counted (default: all).
    chunk_rows : int
        Rows handled at a time when there are two capacities or more (memory is then a few arrays
        of this many rows, whatever the trace); a single column is handled in one piece.

    Returns
    -------
    CapacityCurve
        Rows sorted by capacity (unbounded last).
    """
    e = check_edges(edges)
    cap = np.asarray(list(capacity_tokens), dtype=float)
    order = np.argsort(np.where(np.isnan(cap), np.inf, cap), kind="stable")
    inp = np.asarray(input_tokens, dtype=float)
    k = len(cap)
    hit_all = np.asarray(hit_tokens).reshape(-1, k)
    if rows is not None and len(rows) != len(hit_all):
        raise ValueError("rows must mask the rows of hit_tokens")
    n = len(inp)
    if n == 0:
        raise ValueError("no requests")
    rate_sum: np.ndarray | None = None
    hit_sum: np.ndarray | None = None
    high = np.zeros(k, dtype=np.int64)
    none = np.zeros(k, dtype=np.int64)
    counts = np.zeros((k, len(e) - 1), dtype=np.int64)
    samples: list[list[np.ndarray]] = [[] for _ in range(k)]
    done = 0  # window requests handled
    # one column is summed pairwise by numpy (contiguous): in one piece, as one sum over all rows
    step = max(1, chunk_rows) if k > 1 else max(1, len(hit_all))
    for r0 in range(0, len(hit_all), step):
        hits = np.asarray(hit_all[r0 : r0 + step], dtype=float)
        if rows is not None:
            hits = hits[rows[r0 : r0 + step]]
        if len(hits) == 0:
            continue
        rate = hits / inp[done : done + len(hits), None]
        done += len(hits)
        rate_sum = _running_sum(rate_sum, rate)
        hit_sum = _running_sum(hit_sum, hits)
        high += np.count_nonzero(rate >= HIGH_HIT, axis=0)
        none += np.count_nonzero(hits <= 0, axis=0)
        for i in range(k):
            counts[i] += histogram(rate[:, i], e)
            if keep_samples:
                samples[i].append(rate[:, i].astype(np.float32))
    if done != n:
        raise ValueError("input_tokens must have one entry per request counted")
    assert rate_sum is not None and hit_sum is not None
    total_in = inp.sum()
    hist = np.stack([counts[i] / n for i in order]) if k else np.zeros((0,))
    return CapacityCurve(
        capacity_tokens=cap[order],
        mean_hit_rate=(rate_sum / n)[order],
        token_weighted_hit_rate=(hit_sum / total_in)[order],
        share_above_95=(high / n)[order],
        no_hit_share=(none / n)[order],
        bin_edges=e,
        histograms=hist,
        requests=n,
        block_tokens=block_tokens,
        samples=[np.concatenate(samples[i]) for i in order] if keep_samples else None,
    )
