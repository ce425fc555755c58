"""From a replayed trace to the statistics ``pddplan hitrate`` prints, and to its report.

:func:`analyze` applies the warm-up window and computes, per capacity, the hit-rate histogram and
curve point; :func:`build_report` lays the result out as flat, unit-suffixed rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pddplan import defaults
from pddplan.errors import OptionError, UsageError
from pddplan.spec import DEFAULT_ANOMALOUS_INPUT_TOKENS, DEFAULT_ANOMALOUS_OUTPUT_TOKENS
from pddplan.trace.replay import UNBOUNDED, TraceReplay, replay_trace, warmup_mask
from pddplan.trace.stats import (
    DEFAULT_EDGES,
    CapacityCurve,
    WindowStats,
    anomalous_mask,
    check_edges,
    curve_from_hits,
    window_stats,
)
from pddplan.trace.workload import WorkloadInputs


@dataclass
class TraceAnalysis:
    """A replayed trace's statistics over its window (after the warm-up).

    Attributes
    ----------
    replay : TraceReplay
        Per-request results of the whole trace.
    window : numpy.ndarray
        Boolean mask of the requests in the statistics window.
    warmup_s : float
        Warm-up excluded [s].
    edges : numpy.ndarray
        Hit-rate bin edges.
    stats : WindowStats
        Arrivals, lengths and anomalous count of the window.
    anomalous : numpy.ndarray
        Anomalous mask over the window's requests.
    curve : CapacityCurve
        Per capacity (sorted, unbounded last): mean and token-weighted hit rate, share above 95%,
        histogram.
    order : numpy.ndarray
        ``curve`` row ``i`` is replay column ``order[i]``.
    anomalous_input_tokens, anomalous_output_tokens : int
        Thresholds of the anomalous class [tokens].
    """

    replay: TraceReplay
    window: np.ndarray
    warmup_s: float
    edges: np.ndarray
    stats: WindowStats
    anomalous: np.ndarray
    curve: CapacityCurve
    order: np.ndarray
    anomalous_input_tokens: int
    anomalous_output_tokens: int

    def hit_rate(self, column: int) -> np.ndarray:
        """Per-request hit rate of the window at replay column ``column``."""
        r = self.replay
        return r.hit_tokens[self.window, column] / r.input_tokens[self.window]

    def workload_inputs(self, column: int = 0) -> WorkloadInputs:
        """The window's requests at replay column ``column`` (default: the first capacity asked)."""
        r = self.replay
        return WorkloadInputs(
            input_tokens=r.input_tokens[self.window],
            output_tokens=r.output_tokens[self.window],
            hit_rate=self.hit_rate(column),
            anomalous=self.anomalous,
            rate_rps=self.stats.rate_rps,
        )


def analyze(
    replay: TraceReplay,
    *,
    warmup_s: float = 0.0,
    edges: Sequence[float] | np.ndarray = DEFAULT_EDGES,
    anomalous_input_tokens: int = DEFAULT_ANOMALOUS_INPUT_TOKENS,
    anomalous_output_tokens: int = DEFAULT_ANOMALOUS_OUTPUT_TOKENS,
    keep_samples: bool = False,
) -> TraceAnalysis:
    """Statistics of ``replay`` after ``warmup_s`` seconds.

    Raises
    ------
    UsageError
        For bad bins, thresholds, or a warm-up that leaves no request.
    """
    e = check_edges(edges)
    if anomalous_input_tokens < 1 or anomalous_output_tokens < 1:
        raise UsageError("anomalous thresholds must be >= 1 token")
    window = warmup_mask(replay.timestamp_ms, warmup_s)
    if not window.any():
        t = replay.timestamp_ms
        span = (float(np.max(t)) - float(np.min(t))) / 1000.0
        raise OptionError(
            "warmup_s", f"{warmup_s:g} s leaves no requests: the trace spans {span:g} s"
        )
    inp = replay.input_tokens[window]
    out = replay.output_tokens[window]
    anom = anomalous_mask(inp, out, anomalous_input_tokens, anomalous_output_tokens)
    stats = window_stats(replay.timestamp_ms[window], inp, out, anom)
    cap = replay.capacity_tokens
    order = np.argsort(np.where(np.isnan(cap), np.inf, cap), kind="stable")
    curve = curve_from_hits(
        cap,
        inp,
        replay.hit_tokens,
        edges=e,
        block_tokens=replay.block_tokens or 1,
        keep_samples=keep_samples,
        rows=None if window.all() else window,
    )
    return TraceAnalysis(
        replay=replay,
        window=window,
        warmup_s=warmup_s,
        edges=e,
        stats=stats,
        anomalous=anom,
        curve=curve,
        order=order,
        anomalous_input_tokens=anomalous_input_tokens,
        anomalous_output_tokens=anomalous_output_tokens,
    )


def capacity_curve(
    path: Path,
    capacity_tokens: Sequence[float] = (UNBOUNDED,),
    *,
    block_tokens: int = defaults.TRACE_BLOCK_TOKENS,
    warmup_s: float = 0.0,
    edges: Sequence[float] = DEFAULT_EDGES,
    keep_samples: bool = False,
    skip_bad_lines: bool = False,
    jobs: int | None = None,
) -> CapacityCurve:
    """Replay a trace through LRU prefix caches and return the capacity curve.

    Parameters
    ----------
    path : Path
        A Mooncake-style JSONL trace (a CSV trace gives its single logged row).
    capacity_tokens : sequence of float
        Capacities [tokens]; ``math.inf`` (:data:`~pddplan.trace.replay.UNBOUNDED`) for unbounded.
    block_tokens : int
        Tokens per hash-id block.
    warmup_s : float
        Leading seconds replayed but left out of the statistics.
    edges : sequence of float
        Hit-rate bin edges of the histograms.
    keep_samples : bool
        Keep every request's hit rate per capacity (``curve.samples``).
    skip_bad_lines : bool
        Skip malformed lines instead of raising.
    jobs : int, optional
        Parser worker processes.

    Returns
    -------
    CapacityCurve
        Rows sorted by capacity, unbounded last: ``capacity_tokens``, ``mean_hit_rate``,
        ``token_weighted_hit_rate``, ``share_above_95``, ``no_hit_share``, ``histograms``
        (and ``samples``). ``curve.to_csv(path)`` / ``CapacityCurve.from_csv(path)`` store it.

    Examples
    --------
    >>> from pathlib import Path
    >>> curve = capacity_curve(Path("tests/data/mooncake_excerpt.jsonl"), [65536, math.inf])
    >>> curve.labels()
    ['65536', 'unbounded']
    """
    rep = replay_trace(
        path,
        capacity_tokens,
        block_tokens=block_tokens,
        skip_bad_lines=skip_bad_lines,
        jobs=jobs,
    )
    return analyze(rep, warmup_s=warmup_s, edges=edges, keep_samples=keep_samples).curve
