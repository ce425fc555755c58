"""Words and units for plot axes: a parameter's dotted PATH or a figure's key, as a reader says it.

One mapping for every plot (sweep axes, tornado inputs, bathtub and sweep figures): a PATH in
:data:`PATH_WORDS` reads as written there; any other PATH is read off its keys (profile group,
name, leaf words, then the unit its suffix names, from :data:`UNITS`).
Dimensionless values get no bracket.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: Unit suffixes of result keys and their units as written in headers (longest first).
UNITS = (
    ("_usd_per_chip_hour", "$/chip-h"),
    ("_usd_per_hour", "$/h"),
    ("_usd_per_month", "$/month"),
    ("_usd_per_mtok", "$/Mtok"),
    ("_requests_per_usd", "req/$"),
    ("_gbit_per_s", "Gbit/s"),
    ("_gb_per_s", "GB/s"),
    ("_tb_per_s", "TB/s"),
    ("_bytes_per_s", "B/s"),
    ("_tokens_per_s", "tok/s"),
    ("_usd", "$"),
    ("_rps", "req/s"),
    ("_bytes", "B"),
    ("_tokens", "tok"),
    ("_ms", "ms"),
    ("_us", "us"),
    ("_s", "s"),
    ("_gb", "GB"),
    ("_tflops", "TFLOPS"),
    ("_pct", "%"),
)

#: Swept or sampled PATHs whose words are not read off their keys.
PATH_WORDS = {
    "rate_rps": "request rate [req/s]",
    "link.bandwidth_gbit_per_s": "line bandwidth [Gbit/s]",
    "link.rtt_ms": "line round-trip time [ms]",
    "link.loss_rate": "line packet-loss rate",
    "link.efficiency": "line efficiency (goodput / bandwidth)",
    "link.jitter_cv": "line transfer-time jitter (coefficient of variation)",
    "link.streams_per_transfer": "TCP streams per KV transfer",
    "link.max_window_bytes": "line TCP window [B]",
    "link.price_usd_per_month": "line price [$/month]",
    "rdma.efficiency": "in-datacenter RDMA efficiency (goodput / bandwidth)",
    "sla.ttft_p50_s": "TTFT p50 target [s]",
    "sla.ttft_p90_s": "TTFT p90 target [s]",
    "sla.ttft_p99_s": "TTFT p99 target [s]",
    "sla.tpot_ms": "TPOT target [ms]",
    "serving.chunk_size_tokens": "prefill chunk size [tokens]",
    "workload.hit_rate.shift": "hit-rate shift (added to every request's hit rate)",
    "workload.hit_rate.scale": "hit-rate scale (multiplies every request's hit rate)",
    "workload.hit_rate.mix_weight": "hit-rate mix weight",
    "workload.anomalous.share": "share of anomalous requests",
    "model.dtypes.kv_cache": "KV-cache data type",
    "revenue.cached_input_price_fraction": "cached input price (fraction of the uncached)",
}

#: Figures (result keys) as axis labels.
FIGURE_WORDS = {
    "bcr_requests_per_usd": "BCR: requests within SLA per USD",
    "served_bcr_requests_per_usd": "BCR at the traffic served: requests served per USD",
    "cost_usd_per_hour": "cost of chips and line [$/h]",
    "goodput_rps": "goodput: highest rate within every SLA target [req/s]",
    "revenue_per_cost": "revenue per USD of cost",
    "requests_per_usd": "requests per USD",
    "reprovisioned_revenue_per_cost": "revenue per USD of cost",
    "reprovisioned_bcr_requests_per_usd": "requests within SLA per USD",
    "hit_rate": "prefix-cache hit rate (share of the prompt cached)",
}

#: Profile groups as the first word of a label read off the keys (None: the group says nothing).
GROUP_WORDS = {
    "link": "line",
    "rdma": "RDMA",
    "chips": None,
    "workload": "workload",
    "model": "model",
    "serving": None,
    "sla": "SLA",
    "revenue": "revenue",
    "derates": None,
}

#: Key words spelt out.
WORD_FIXES = {"cv": "CV", "rtt": "round-trip time", "kv": "KV", "ttft": "TTFT", "tpot": "TPOT"}

_RATIO_KEY = re.compile(r"^bcr_ratio_vs_([a-z0-9-]+)$")


def _unit(leaf: str) -> tuple[str, str | None]:
    """``leaf`` without its unit suffix, and the unit (None when dimensionless)."""
    for suffix, unit in UNITS:
        if leaf.endswith(suffix) and len(leaf) > len(suffix):
            return leaf[: -len(suffix)], "tokens" if unit == "tok" else unit
    return leaf, None


def _words(key: str) -> str:
    return " ".join(WORD_FIXES.get(w, w) for w in key.split("_") if w)


def path_label(path: str) -> str:
    """A dotted PATH in words with its unit: ``link.bandwidth_gbit_per_s`` -> ``line bandwidth
    [Gbit/s]``, ``chips.gpu-b.price_usd_per_hour`` -> ``gpu-b price [$/h]``,
    ``chips.gpu-b.derates.layer_latency_us`` -> ``gpu-b layer latency [us]``."""
    if path in PATH_WORDS:
        return PATH_WORDS[path]
    parts = path.split(".")
    leaf, unit = _unit(parts[-1])
    words: list[str] = []
    for i, p in enumerate(parts[:-1]):
        if p in GROUP_WORDS:
            group = GROUP_WORDS[p]
            if group is not None and i == 0:
                words.append(group)
            continue
        words.append(p if parts[0] == "chips" and i == 1 else _words(p))
    words.append(_words(leaf))
    text = " ".join(words)
    return f"{text} [{unit}]" if unit else text


def figure_label(key: str) -> str:
    """A result key in words with its unit (``cost_usd_per_hour`` -> ``cost of chips and line
    [$/h]``); keys not in :data:`FIGURE_WORDS` are read off like a PATH's leaf."""
    return FIGURE_WORDS.get(key) or path_label(key)


def ratio_baseline(key: str) -> str | None:
    """The baseline a ``bcr_ratio_vs_<topology>`` column compares with, else None."""
    m = _RATIO_KEY.match(key)
    return m.group(1) if m else None


#: Baselines in words.
BASELINE_WORDS = {
    "same-dc": "one datacenter (same-dc)",
    "no-relay": "no relay (no-relay)",
    "no-relay-rld": "no relay, RLD for anomalous only (no-relay-rld)",
}


def baseline_label(topology: str) -> str:
    return BASELINE_WORDS.get(topology, topology)


def plain(items: Iterable[object]) -> str:
    """A list as a message writes it: ``["h100-sxm", "h2O"]`` -> ``h100-sxm, h2O`` (a list
    inside it in brackets: ``[h100-sxm, h20]``), never Python's ``['h100-sxm', 'h2O']``."""
    return ", ".join(
        f"[{plain(x)}]" if isinstance(x, list | tuple | set | frozenset) else str(x) for x in items
    )


def plain_value(value: object) -> str:
    """A value a user gave, as a message echoes it: a list in brackets (``[h100-sxm, h2O]``, by
    :func:`plain`), anything else as Python writes it (``'h2O'``, ``0.5``)."""
    if isinstance(value, list | tuple | set | frozenset):
        return f"[{plain(value)}]"
    return repr(value)
