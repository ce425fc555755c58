"""``hitrate``: a request trace turned into a workload, and what prefix-cache capacity does to
its hit rates."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pddplan import defaults
from pddplan.api.command_options import HitrateOptions
from pddplan.api.options import validate_args
from pddplan.api.scenario import PathLike, library_warning
from pddplan.errors import OptionError, check_writable_path

if TYPE_CHECKING:
    from pddplan.results import HitrateResult

_D = HitrateOptions()


def hitrate(
    trace: PathLike,
    *,
    cache_tokens: str | Sequence[float | int | str] | None = None,
    workload_cache_tokens: str | float | None = None,
    block_tokens: int = _D.block_tokens,
    bins: str | Sequence[float] | None = None,
    warmup_s: float = _D.warmup_s,
    anomalous_input_tokens: int = _D.anomalous_input_tokens,
    anomalous_output_tokens: int = _D.anomalous_output_tokens,
    workload_out: PathLike | None = None,
    curve_out: PathLike | None = None,
    max_points: int = _D.max_points,
    skip_bad_lines: bool = _D.skip_bad_lines,
    trace_format: str = _D.trace_format,
    jobs: int = _D.jobs,
    made_by: str | None = None,
    warn: Callable[[str], None] | None = None,
) -> HitrateResult:
    """A request trace turned into a workload: hit-rate distributions, lengths, rate, and what
    prefix-cache capacity does to them.

    Parameters
    ----------
    trace : Mooncake-style JSONL (hash ids) or CSV (cached tokens); ``.gz`` is read too.
    cache_tokens : [tokens] LRU capacities to replay (``"64k,unbounded"`` or a list); default
        unbounded.
    workload_cache_tokens : [tokens] the capacity whose hit rates the workload profile takes
        (``"1M"``, ``"unbounded"`` or a number); replayed too when ``cache_tokens`` does not list
        it (without ``cache_tokens``: the only one). Default: the first of ``cache_tokens``. It
        needs ``workload_out`` and a JSONL trace.
    block_tokens : [tokens] per hash-id block.
    bins : hit-rate bin edges from 0 to 1 (default: the brief's seven bins).
    warmup_s : [s] from the first arrival that warm the cache, left out of the statistics.
    anomalous_input_tokens, anomalous_output_tokens : [tokens] a request is anomalous with
        input >= the first and output < the second.
    workload_out : write a workload profile (YAML) there; its name is the file's stem.
    curve_out : write the capacity curve (CSV) there.
    max_points : points per length distribution in the workload profile.
    skip_bad_lines : skip and count malformed lines instead of stopping.
    trace_format : ``auto`` (from the suffix), ``jsonl`` or ``csv``.
    jobs : parser processes for big JSONL traces (0: usable CPUs, at most 4).
    made_by : how the workload profile says it was made (default: this call).
    warn : receives diagnostics (default: :class:`PddplanWarning` warnings).
    """
    o = validate_args(HitrateOptions, locals())
    from pddplan.results.hitrate import HitrateResult, build_report

    say = warn or library_warning
    trace = Path(trace)
    if not trace.is_file():  # a trace is read more than once: a pipe will not do
        from pddplan.io.files import unreadable

        raise unreadable(trace, "trace")
    edges = _bins(bins)
    if workload_out is not None and Path(workload_out).suffix.lower() not in (".yaml", ".yml"):
        raise OptionError(  # it wrote YAML into w.txt, which no profile search finds
            "workload_out",
            f": the workload profile file must end in .yaml, not {Path(workload_out).name!r}",
        )
    if curve_out is not None:  # before the replay, as -o is (a profile's folder is made)
        check_writable_path(curve_out, "curve_out")
    caps = _capacities(trace, cache_tokens, o)
    column = 0
    if workload_cache_tokens is not None:
        caps, column = _workload_capacity(
            trace, workload_cache_tokens, workload_out, cache_tokens, caps, o
        )
    replay, analysis = _analyze(trace, caps, edges, o, say)
    workload_file = curve_file = None
    cap = float(replay.capacity_tokens[column])  # [tokens] inf: unbounded; NaN: a CSV's logged
    if workload_out is not None:
        cmd = made_by or f"pddplan.hitrate({str(trace)!r})"
        workload_file = _write_workload(
            Path(workload_out), trace, replay, analysis, o, cap, column, cmd
        )
    if curve_out is not None:
        analysis.curve.to_csv(Path(curve_out))
        curve_file = str(curve_out)
    built = build_report(analysis, workload_file=workload_file, curve_file=curve_file)
    return HitrateResult(
        analysis,
        workload_file,
        curve_file,
        built,
        workload_cache_tokens=cap if workload_file is not None else None,
        workload_cache_chosen=workload_cache_tokens is not None,
    )


def _analyze(
    trace: Path, caps: list[float], edges: list[float], o: HitrateOptions, say: Any
) -> tuple[Any, Any]:
    """The trace replayed through the caches and analysed: ``(replay, analysis)``."""
    from pddplan.trace.analysis import analyze
    from pddplan.trace.replay import replay_trace

    replay = replay_trace(
        trace,
        caps,
        block_tokens=o.block_tokens,
        fmt=o.trace_format,
        skip_bad_lines=o.skip_bad_lines,
        jobs=o.jobs or None,
        warn=say,
    )
    analysis = analyze(
        replay,
        warmup_s=o.warmup_s,
        edges=edges,
        anomalous_input_tokens=o.anomalous_input_tokens,
        anomalous_output_tokens=o.anomalous_output_tokens,
    )
    if replay.bad_lines:
        first = replay.bad_line_messages[0] if replay.bad_line_messages else ""
        say(f"skipped {replay.bad_lines} bad lines (first: {first})")
    return replay, analysis


def _capacities(
    trace: Path, cache_tokens: str | Sequence[float | int | str] | None, o: HitrateOptions
) -> list[float]:
    """[tokens] the LRU capacities to replay (default: unbounded)."""
    from pddplan.trace.records import detect_format
    from pddplan.trace.replay import UNBOUNDED, parse_capacities

    caps_text = (
        cache_tokens
        if cache_tokens is None or isinstance(cache_tokens, str)
        else ",".join(str(c) for c in cache_tokens)
    )
    if detect_format(trace, o.trace_format) == "csv" and caps_text is not None:
        raise OptionError(
            "cache_tokens",
            "needs a JSONL trace with hash_ids; a CSV trace carries its own cached tokens",
        )
    return parse_capacities(caps_text, o.block_tokens) if caps_text is not None else [UNBOUNDED]


def _workload_capacity(
    trace: Path,
    text: str | float,
    workload_out: PathLike | None,
    cache_tokens: object,
    caps: list[float],
    o: HitrateOptions,
) -> tuple[list[float], int]:
    """The capacities to replay with ``workload_cache_tokens`` among them, and its column."""
    from pddplan.trace.records import detect_format
    from pddplan.trace.replay import parse_capacities

    option = "workload_cache_tokens"
    try:
        (cap,) = parse_capacities(str(text), o.block_tokens)
    except OptionError as exc:
        raise OptionError(option, exc.detail) from None
    except ValueError:  # more than one capacity
        raise OptionError(option, f": {text!r} is not one token count") from None
    if workload_out is None:
        raise OptionError(
            option, "chooses the cache of the workload profile written: give a workload file too"
        )
    if detect_format(trace, o.trace_format) == "csv":
        raise OptionError(
            option, "needs a JSONL trace with hash_ids; a CSV trace carries its own cached tokens"
        )
    if cache_tokens is None:
        return [cap], 0
    if cap not in caps:
        caps = [*caps, cap]
    return caps, caps.index(cap)


def _write_workload(
    out_path: Path,
    trace: Path,
    replay: Any,
    analysis: Any,
    o: HitrateOptions,
    capacity_tokens: float,
    column: int,
    cmd: str,
) -> str:
    """Write the workload profile of the capacity in replay column ``column``; its name is the
    file's stem."""
    from pddplan.trace.workload import (
        WORKLOAD_NOTES,
        workload_document,
        workload_source,
        write_workload,
    )

    source = workload_source(
        trace.name,
        replay.format,
        analysis.stats.requests,
        capacity_tokens=capacity_tokens,
        block_tokens=o.block_tokens,
        warmup_s=o.warmup_s,
        anomalous_input_tokens=o.anomalous_input_tokens,
        anomalous_output_tokens=o.anomalous_output_tokens,
        made_by=cmd,
    )
    doc = workload_document(
        out_path.stem,
        source,
        analysis.workload_inputs(column),
        edges=analysis.edges,
        anomalous_input_tokens=o.anomalous_input_tokens,
        anomalous_output_tokens=o.anomalous_output_tokens,
        max_points=o.max_points,
        notes=WORKLOAD_NOTES,
        cache_tokens=capacity_tokens,
    )
    write_workload(out_path, doc, header=f"Written by {cmd}")
    return str(out_path)


def _bins(bins: str | Sequence[float] | None) -> list[float]:
    if bins is None:
        return list(defaults.HIT_RATE_BINS)
    if isinstance(bins, str):
        try:
            edges = [float(x) for x in bins.split(",") if x.strip()]
        except ValueError:
            raise OptionError(
                "bins", f"{bins!r} is not a comma-separated list of numbers"
            ) from None
    else:
        try:
            edges = [float(x) for x in bins]
        except (TypeError, ValueError):
            raise OptionError("bins", f": {bins!r} is not a list of numbers") from None
    if not all(math.isfinite(e) and 0.0 <= e <= 1.0 for e in edges):
        raise OptionError("bins", f": every edge must be a finite number in [0, 1], not {bins!r}")
    if len(edges) > 10_001:
        raise OptionError("bins", f": at most 10001 edges, not {len(edges)}")
    return edges
