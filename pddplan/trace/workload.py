"""A trace's statistics as a workload profile that ``solve`` and ``bathtub`` load as is.

The workload's ``input_tokens``, ``output_tokens`` and ``hit_rate`` describe the regular
requests; the long-input / short-output requests (output below ``output_threshold_tokens`` and
input at least ``input_threshold_tokens``) form the ``anomalous`` class with their share, their
own length distributions and their mean hit rate, because the planner routes them apart (RLD
finishes them locally). Lengths are empirical distributions of at most ``max_points`` points
(see :func:`pddplan.trace.stats.compress_empirical`); the hit rate is the trace's histogram in the
chosen bins, probabilities rounded to six decimals and summing to 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pddplan import defaults
from pddplan.errors import write_failed
from pddplan.trace.stats import compress_empirical, histogram, probabilities


@dataclass(frozen=True)
class WorkloadInputs:
    """Per-request arrays of the statistics window, for one cache capacity."""

    input_tokens: np.ndarray
    output_tokens: np.ndarray
    hit_rate: np.ndarray
    anomalous: np.ndarray
    rate_rps: float | None


def _empirical(values: np.ndarray, max_points: int) -> dict[str, Any]:
    vals, weights = compress_empirical(np.maximum(values, 1), max_points)
    if len(vals) == 1:
        return {"fixed": vals[0]}
    return {"empirical": {"values": vals, "weights": weights}}


def workload_document(
    name: str,
    source: str,
    data: WorkloadInputs,
    *,
    edges: np.ndarray,
    anomalous_input_tokens: int,
    anomalous_output_tokens: int,
    max_points: int = defaults.WORKLOAD_MAX_POINTS,
    notes: str = "",
    cache_tokens: float | None = None,
) -> dict[str, Any]:
    """The workload profile as plain data (validates as :class:`pddplan.spec.Workload`).

    Parameters
    ----------
    name : str
        Profile name (the loader wants it equal to the file stem).
    source : str
        Where the numbers come from (trace file and command).
    data : WorkloadInputs
        The requests to describe.
    edges : numpy.ndarray
        Hit-rate bin edges (an edge at :data:`ZERO_HIT_EDGE` is added where requests hit
        nothing: :func:`zero_hit_edges`).
    anomalous_input_tokens, anomalous_output_tokens : int
        The anomalous-class thresholds [tokens].
    max_points : int
        Points per empirical length distribution.
    notes : str
        Free text.
    cache_tokens : float or None
        [tokens] The prefix-cache capacity the hit rates were replayed at (``inf``: unbounded),
        written as ``cache_tokens``; None or NaN (a CSV trace's logged hit rates): not written.

    Returns
    -------
    dict
    """
    n = len(data.input_tokens)
    if n == 0:
        raise ValueError("no requests")
    anom = data.anomalous
    regular = ~anom
    if not regular.any():  # every request is anomalous: describe them all as regular too
        regular = np.ones(n, dtype=bool)
    edges = zero_hit_edges(edges, data.hit_rate[regular])
    counts = histogram(data.hit_rate[regular], edges)
    doc: dict[str, Any] = {
        "kind": "workload",
        "name": name,
        "source": source,
    }
    if notes:
        doc["notes"] = notes
    doc["input_tokens"] = _empirical(data.input_tokens[regular], max_points)
    doc["output_tokens"] = _empirical(data.output_tokens[regular], max_points)
    doc["hit_rate"] = {
        "bins": {
            "edges": [float(e) for e in edges],
            "probabilities": probabilities(counts),
        }
    }
    if cache_tokens is not None and not math.isnan(cache_tokens):
        doc["cache_tokens"] = "unbounded" if math.isinf(cache_tokens) else int(cache_tokens)
    n_anom = int(np.count_nonzero(anom))
    if n_anom:
        doc["anomalous"] = {
            "share": round(n_anom / n, 6),
            "input_tokens": _empirical(data.input_tokens[anom], max_points),
            "output_tokens": _empirical(data.output_tokens[anom], max_points),
            "hit_rate": round(float(np.mean(data.hit_rate[anom])), 6),
            "output_threshold_tokens": int(anomalous_output_tokens),
        }
    if data.rate_rps is not None and data.rate_rps > 0 and math.isfinite(data.rate_rps):
        doc["rate_rps"] = round(float(data.rate_rps), 6)
    return doc


#: [-] The upper edge of the bin that holds the requests with no prefix hit in a written
#: workload (:func:`zero_hit_edges`): a bin's classes sit evenly inside it, so these requests
#: are planned at hit rates of 0.0002-0.0008, as good as none.
ZERO_HIT_EDGE = 0.001


def zero_hit_edges(edges: np.ndarray, hit_rate: np.ndarray) -> np.ndarray:
    """The bin edges a workload is written with: ``edges``, and :data:`ZERO_HIT_EDGE` where
    requests hit below it and the first bin reaches past it. A bin's classes are spread evenly
    over it, so without this the requests that hit nothing (most of a trace, often) would be
    planned at the first bin's 0.15, 0.45 and 0.75 of the brief's ``[0, 0.9)``: the trace
    excerpt's 99.7% of no-hit requests read as a mean hit rate of 0.40, and a plan's goodput
    came out 26% higher than with them at 0."""
    e = np.asarray(edges, dtype=float)
    if e[0] == 0.0 and e[1] > ZERO_HIT_EDGE and bool(np.any(hit_rate < ZERO_HIT_EDGE)):
        return np.concatenate(([0.0, ZERO_HIT_EDGE], e[1:]))
    return e


def workload_yaml(doc: dict[str, Any], header: str = "") -> str:
    """YAML text of a workload document (keys in schema order, short lists inline)."""
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    def _list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
        return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)

    _Dumper.add_representer(list, _list)
    body = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=100, allow_unicode=True)
    lines = [f"# {ln}" if ln else "#" for ln in header.splitlines()]
    return ("\n".join(lines) + "\n" if lines else "") + body


def write_workload(path: Path, doc: dict[str, Any], header: str = "") -> None:
    """Validate ``doc`` as a Workload and write it as YAML (its folder made if missing, as
    every profile written is: :func:`pddplan.io.profile_writer.write_profile`).

    Raises
    ------
    UsageError
        If the file cannot be written.
    """
    from pddplan.spec import Workload

    Workload.model_validate(doc)  # a bug here must not reach the user's file
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(workload_yaml(doc, header), encoding="utf-8")
    except OSError as exc:
        raise write_failed(path, exc, "workload_out") from None


#: what a written workload profile's ``notes`` say about how its numbers were made
WORKLOAD_NOTES = (
    "input_tokens, output_tokens and hit_rate describe the regular requests; "
    "anomalous ones are their own class. Lengths are empirical (weights = request "
    "counts); rate_rps = (requests - 1) / span of their arrivals."
)


def cache_words(capacity_tokens: float) -> str:
    """A prefix cache in words: ``an unbounded prefix cache`` (``inf``) or ``a 64000-token LRU
    prefix cache``."""
    if math.isinf(capacity_tokens):
        return "an unbounded prefix cache"
    return f"a {int(capacity_tokens)}-token LRU prefix cache"


def workload_source(
    trace_name: str,
    trace_format: str,
    requests: int,
    *,
    capacity_tokens: float,
    block_tokens: int,
    warmup_s: float,
    anomalous_input_tokens: int,
    anomalous_output_tokens: int,
    made_by: str,
) -> str:
    """The ``source`` of a workload profile made from a trace: the file, its format and
    requests, the warm-up, the prefix cache (``capacity_tokens`` [tokens], ``inf``: unbounded;
    a CSV trace's logged cached tokens), the anomalous thresholds [tokens] and the command."""
    csv = trace_format == "csv"
    cache = "logged cached tokens" if csv else cache_words(capacity_tokens)
    return (
        f"request trace {trace_name} ({trace_format}, {requests} requests"
        + (f" after a {warmup_s:g} s warm-up" if warmup_s else "")
        + f"), hit rates from {'the ' if csv else ''}{cache}"
        + (f" in {block_tokens}-token blocks" if trace_format == "jsonl" else "")
        + f"; anomalous = input >= {anomalous_input_tokens} and output < "
        f"{anomalous_output_tokens} tokens; made by: {made_by}"
    )
