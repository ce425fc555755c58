"""A trace's first requests as arrays to replay in time: arrivals (rescaled to a rate if asked),
prefix hit rates from an unbounded cache, and lengths."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pddplan import defaults
from pddplan.errors import UsageError


@dataclass(frozen=True)
class TraceArrivals:
    """Per-request arrays of a replayed trace, in the trace's order."""

    arrival_s: np.ndarray  #: [s] arrival times
    hit_rate: np.ndarray  #: [-] cached share of the input (unbounded prefix cache)
    input_tokens: np.ndarray  #: [tokens]
    output_tokens: np.ndarray  #: [tokens]


def trace_arrivals(
    path: Path,
    limit: int,
    rate_rps: float | None = None,
    *,
    block_tokens: int = defaults.TRACE_BLOCK_TOKENS,
) -> TraceArrivals:
    """The first ``limit`` requests of a trace, replayed through an unbounded prefix cache.

    Parameters
    ----------
    path : a trace file (see :func:`pddplan.trace.replay.replay_trace`).
    limit : most requests to keep.
    rate_rps : [req/s] rescale the arrival times to this mean rate (None: as logged).
    block_tokens : [tokens] per hash id of a JSONL trace.

    Notes
    -----
    The rescaled times are :math:`t' = (t - t_0) \\cdot \\frac{n - 1}{\\mathrm{span}} / r`: the
    ``n - 1`` gaps between ``n`` arrivals span ``(n - 1) / r`` seconds.

    Raises
    ------
    UsageError : the trace has no requests, or no timestamps, or (with ``rate_rps``) its
        requests all arrive at one time, which no clock rescales to a rate.
    """
    from pddplan.trace.replay import replay_trace

    tr = replay_trace(path, [math.inf], block_tokens=block_tokens)
    n = min(len(tr), limit)
    if n < 1:
        raise UsageError(f"{path}: the trace has no requests")
    t_s = np.asarray(tr.timestamp_ms[:n], dtype=float) / 1e3
    if not np.all(np.isfinite(t_s)):
        raise UsageError(f"{path}: the trace has no timestamps; it cannot be replayed in time")
    inp = np.asarray(tr.input_tokens[:n], dtype=float)
    hit = np.where(inp > 0, np.asarray(tr.hit_tokens[:n, 0], dtype=float) / np.maximum(inp, 1), 0.0)
    if rate_rps is not None and n > 1:
        span = float(np.max(t_s) - np.min(t_s))
        if span <= 0:
            raise UsageError(
                f"{path}: its first {n:,} requests all arrive at one time: no clock rescales "
                f"them to {rate_rps:g} req/s (replay it without a rate)"
            )
        t_s = (t_s - np.min(t_s)) * ((n - 1) / span) / rate_rps
    return TraceArrivals(t_s, hit, inp, np.asarray(tr.output_tokens[:n], dtype=float))
