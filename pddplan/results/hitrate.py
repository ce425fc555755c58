"""The result of ``hitrate``: a trace's hit-rate distributions, lengths, rate and capacity curve."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pddplan.results.base import Report, Result, Section
from pddplan.trace.stats import HIGH_HIT, capacity_label, histogram
from pddplan.trace.workload import cache_words

if TYPE_CHECKING:
    from pddplan.trace.analysis import TraceAnalysis
    from pddplan.trace.stats import CapacityCurve


@dataclass(frozen=True)
class HitrateResult(Result):
    """A trace replayed through prefix caches, with its report built from the analysis.

    Attributes
    ----------
    analysis : the trace analysis (replay, statistics, capacity curve).
    workload_file, curve_file : files written (None when not asked for).
    built : the sections and JSON document, computed when the result was built.
    workload_cache_tokens : [tokens] the prefix-cache capacity whose hit rates the workload
        profile holds (inf: unbounded; NaN: a CSV trace's logged ones; None: none written).
    workload_cache_chosen : whether the caller chose it (``workload_cache_tokens``), rather
        than the default (the first capacity replayed).
    """

    analysis: TraceAnalysis
    workload_file: str | None
    curve_file: str | None
    built: Report
    workload_cache_tokens: float | None = None
    workload_cache_chosen: bool = False

    @property
    def curve(self) -> CapacityCurve:
        return self.analysis.curve

    @property
    def rate_rps(self) -> float | None:
        """[req/s] the trace's arrival rate (None without timestamps)."""
        return self.analysis.stats.rate_rps

    def report(self) -> Report:
        return copy.deepcopy(self.built)

    def workload_cache_note(self) -> str | None:
        """One line on the capacity the workload profile's hit rates come from, when it was the
        default rather than chosen (None otherwise, and for a CSV trace's logged hit rates)."""
        cap = self.workload_cache_tokens
        if self.workload_cache_chosen or cap is None or math.isnan(cap):
            return None
        several = len(self.analysis.replay.capacity_tokens) > 1
        which = "the first --cache-tokens capacity" if several else "the default"
        return (
            f"the workload profile's hit rates are from {cache_words(cap)} ({which}; choose "
            "another with --workload-cache-tokens N)"
        )


def _bin_label(lo: float, hi: float, last: bool) -> str:
    return f"[{lo:g}, {hi:g}" + ("]" if last else ")")


def _none_if_nan(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def build_report(
    a: TraceAnalysis,
    *,
    workload_file: str | None = None,
    workload_column: int = 0,
    curve_file: str | None = None,
) -> Report:
    """The ``hitrate`` report: flat sections for table/CSV/markdown and a nested JSON payload."""
    r = a.replay
    s = a.stats
    trace_row: dict[str, Any] = {
        "trace": r.file,
        "format": r.format,
        "requests_read": len(r),
        "bad_lines_skipped": r.bad_lines,
        "block_accesses": int(r.block_counts.sum()) if r.block_counts is not None else None,
        "distinct_blocks": r.distinct_blocks,
        "warmup_s": a.warmup_s,
        "requests": s.requests,
        "duration_s": s.duration_s,
        "rate_rps": s.rate_rps,
        "anomalous_requests": s.anomalous_requests,
        "anomalous_share": s.anomalous_share,
    }
    length_rows = [
        {"length": name, **{f"{k}_tokens": _none_if_nan(v) for k, v in d.items()}}
        for name, d in (("input", s.input_tokens), ("output", s.output_tokens))
    ]
    curve_rows = []
    for row in a.curve.rows():
        curve_rows.append({k: v for k, v in row.items() if not k.startswith("share_hit_")})
    e = a.edges
    regular = ~a.anomalous
    dists: list[dict[str, Any]] = []
    sections = [
        Section("trace", [trace_row]),
        Section("lengths", length_rows),
        Section("hit rate by cache capacity", curve_rows),
    ]
    for i, col in enumerate(a.order):
        h = a.hit_rate(int(col))
        counts = histogram(h, e)
        counts_reg = histogram(h[regular], e)
        n_reg = max(int(regular.sum()), 1)
        rows = []
        for b in range(len(e) - 1):
            rows.append(
                {
                    "bin": _bin_label(float(e[b]), float(e[b + 1]), b == len(e) - 2),
                    "hit_rate_lo": float(e[b]),
                    "hit_rate_hi": float(e[b + 1]),
                    "requests": int(counts[b]),
                    "share": float(counts[b]) / len(h),
                    "share_regular": float(counts_reg[b]) / n_reg,
                }
            )
        label = capacity_label(float(a.curve.capacity_tokens[i]))
        title = "hit-rate distribution, " + (
            "cached tokens as logged"
            if label == "trace"
            else "unbounded cache"
            if label == "unbounded"
            else f"cache {label} tokens"
        )
        sections.append(Section(title, rows))
        # a number where the cache has a size; "unbounded" or "trace" (as logged) otherwise
        dists.append({"cache_tokens": int(label) if label.isdigit() else label, "bins": rows})
    block = f"{r.block_tokens}-token blocks" if r.format == "jsonl" else "the logged cached tokens"
    notes = [
        f"hit rate = cached prompt tokens / input tokens, from {block}"
        + (", capped at the input length" if r.format == "jsonl" else ""),
        f"share_above_95 counts requests with hit rate >= {HIGH_HIT:g}; "
        "token_weighted_hit_rate = all cached tokens / all input tokens",
        f"anomalous: input >= {a.anomalous_input_tokens} tokens and output < "
        f"{a.anomalous_output_tokens} tokens; share_regular leaves them out "
        "(the workload's hit_rate bins)",
    ]
    if a.warmup_s:
        notes.append(
            f"the first {a.warmup_s:g} s are a warm-up: replayed through the cache, left out of "
            "every statistic"
        )
    if r.sorted_in_memory:
        notes.append("timestamps were out of order: the trace was sorted in memory first")
    if r.bad_lines:
        notes.append(
            f"{r.bad_lines} bad lines skipped; first: " + "; ".join(r.bad_line_messages[:3])
        )
    if workload_file:
        label = capacity_label(float(r.capacity_tokens[workload_column]))
        notes.append(f"workload profile written to {workload_file} (hit rate at cache {label})")
    if curve_file:
        notes.append(f"capacity curve written to {curve_file}")
    payload: dict[str, Any] = {
        "trace": trace_row,
        "lengths": {
            row["length"]: {k: v for k, v in row.items() if k != "length"} for row in length_rows
        },
        "capacity_curve": curve_rows,
        "distributions": dists,
        "bad_line_examples": r.bad_line_messages,
        "workload_file": workload_file,
        "curve_file": curve_file,
    }
    return Report(
        f"hit-rate analysis of {r.file}",
        sections,
        payload=payload,
        notes=notes,
    )
