"""What every printed result must satisfy, checked once before anything is written.

A result that breaks one of these is a bug in pddplan, not an answer: :func:`check_report`
raises :class:`~pddplan.errors.InvariantError` (exit 1, a bug report on stderr) instead of
letting a wrong figure out with exit 0. The rules:

- percentiles of one quantity are ordered (``x_p50_s <= x_p90_s <= x_p99_s``, and the same for
  ``{"p50": ..., "p90": ...}`` mappings), wherever they sit in a row or the JSON document;
- times and costs (keys ending in a time or money unit, not a rate ``_per_s``) are not
  negative, unless the key names a difference (``delta``, ``saving``, ``slack`` ...);
- the JSON document carries no infinity and no number written as a string (an undefined
  figure, NaN inside, is ``null``, with a reason beside it where the result knows one);
- machine formats parse back: the JSON text loads, every CSV row has the header's columns
  (:func:`check_text`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

from pddplan.errors import InvariantError

#: Unit suffixes of times and costs, which cannot be negative.
TIME_COST_SUFFIXES = (
    "_s",
    "_ms",
    "_us",
    "_usd",
    "_usd_per_hour",
    "_usd_per_month",
    "_usd_per_mtok",
)
#: Words in a key that make it a difference or a signed quantity (may be negative).
SIGNED_WORDS = (
    "delta",
    "change",
    "diff",
    "saving",
    "slack",
    "margin",
    "gap",
    "error",
    "residual",
    "offset",
    "shift",
    "profit",
    "net_",
    "headroom",
    "minus",
    "gain",
    "advantage",
    "elasticity",
    "sensitivity",
    "swing",
)
#: Words in a key that make its percentiles not the quantity's own (a confidence interval's
#: width, a spread, a difference): those need not be ordered.
UNORDERED_WORDS = ("ci:", "ci_", "_ci", "width", "std", "err", *SIGNED_WORDS)
_PCT = re.compile(r"^(.*?)(?:^|_)p(50|90|95|99|999)(?=_|$)(.*)$")
#: A string that reads as a number (JSON must carry numbers as numbers).
_NUMERIC = re.compile(
    r"^\s*[+-]?(inf|infinity|nan|\d+\.?\d*(e[+-]?\d+)?|\.\d+(e[+-]?\d+)?)\s*$", re.I
)
#: Keys whose string values are not numbers even when they read like one.
_TEXT_KEYS = frozenset({"schema_version", "version", "name", "chip", "model", "link", "source"})


def _number(v: Any) -> float | None:
    t = type(v)
    if t is float:  # the common cases first: most values of a document are plain numbers
        return v  # type: ignore[no-any-return]
    if t is int:
        return float(v)
    if isinstance(v, bool) or not isinstance(v, int | float):
        if hasattr(v, "item") and callable(v.item) and not isinstance(v, str | bytes):
            return _number(v.item())
        return None
    return float(v)


def _time_or_cost(key: str) -> bool:
    k = key.lower()
    if k.endswith("_per_s") or not k.endswith(TIME_COST_SUFFIXES):
        return False
    return not any(w in k for w in SIGNED_WORDS)


def _percentiles(m: Mapping[str, Any], where: str) -> Iterator[str]:
    """Violations of percentile order among the keys of one mapping."""
    groups: dict[tuple[str, str], list[tuple[float, str, float]]] = {}
    for k, v in m.items():
        pct = _percentile_of(str(k))
        if pct is None:
            continue
        x = _number(v)
        if x is None or math.isnan(x):
            continue
        group, p = pct
        groups.setdefault(group, []).append((p, str(k), x))
    for pts in groups.values():
        pts.sort()
        for (_, k1, a), (_, k2, b) in zip(pts, pts[1:], strict=False):
            if b < a * (1 - 1e-9) - 1e-12:
                yield f"{where}: {k2} ({b!r}) is below {k1} ({a!r})"


def _percentile_of(key: str) -> tuple[tuple[str, str], float] | None:
    """A key's percentile group (the quantity's name around the ``pNN``) and its percentile, or
    None where it names no percentile of an ordered quantity (or is a dotted scenario PATH); kept by key (a document's rows
    repeat a few keys many times; at most :data:`_PERCENTILE_KEYS` kept, then started afresh)."""
    try:
        return _PERCENTILE_OF[key]
    except KeyError:
        pass
    match = _PCT.match(key)
    out = None
    # a dotted key is a scenario PATH: a value given (a sweep's axis, sla.ttft_p50_s), not a
    # figure computed, and a sweep may give its points any values (a point whose targets are
    # out of order is a row of its own, with its error)
    if match and "." not in key and not any(w in key.lower() for w in UNORDERED_WORDS):
        out = ((match[1], match[3]), float(match[2]))
    if len(_PERCENTILE_OF) >= _PERCENTILE_KEYS:
        _PERCENTILE_OF.clear()
    _PERCENTILE_OF[key] = out
    return out


_PERCENTILE_KEYS = 4096
_PERCENTILE_OF: dict[str, tuple[tuple[str, str], float] | None] = {}


def _walk(o: Any, where: str, strict: bool) -> Iterator[str]:
    """Violations in a row, a list or the JSON document; ``strict``: JSON rules too."""
    if type(o) is dict or isinstance(o, Mapping):
        yield from _percentiles(o, where)
        for k, v in o.items():
            at = f"{where}.{k}" if where else str(k)
            x = _number(v)
            if x is not None:
                if strict and math.isinf(x):
                    yield f"{at}: not a finite number ({x!r})"
                elif x < 0 and _time_or_cost(str(k)):
                    yield f"{at}: a time or cost below zero ({x!r})"
            elif strict and isinstance(v, str) and str(k) not in _TEXT_KEYS and _NUMERIC.match(v):
                yield f"{at}: a number written as a string ({v!r})"
            else:
                yield from _walk(v, at, strict)
    elif type(o) is list or isinstance(o, list | tuple):
        for i, v in enumerate(o):
            x = _number(v)
            if x is not None:
                if strict and math.isinf(x):
                    yield f"{where}[{i}]: not a finite number ({x!r})"
            else:
                yield from _walk(v, f"{where}[{i}]", strict)


def violations(rep: Any, fmt: str) -> list[str]:
    """Every broken rule in ``rep`` (a :class:`~pddplan.results.Report`) as rendered in ``fmt``.

    The rows of every section are checked in every format; the JSON document too in ``json``.
    """
    found: list[str] = []
    for sec in rep.sections:
        for i, row in enumerate(sec.rows):
            found += _walk(row, f"{sec.slug}[{i}]", strict=False)
    if fmt == "json":
        found += _walk(rep.json_document(), "", strict=True)
    return found


def _raise(found: list[str]) -> None:
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    raise InvariantError(f"{found[0]}{more}")


def check_report(rep: Any, fmt: str) -> None:
    """Raise :class:`InvariantError` if ``rep`` breaks a rule (:func:`violations`)."""
    found = violations(rep, fmt)
    if found:
        _raise(found)


def check_document(doc: Any) -> None:
    """Raise :class:`InvariantError` if a JSON document breaks a rule (the API's ``to_json``)."""
    found = list(_walk(doc, "", strict=True))
    if found:
        _raise(found)


def check_text(text: str, fmt: str) -> None:
    """Raise :class:`InvariantError` unless ``text`` parses back as ``fmt`` (json, csv)."""
    if fmt == "json":
        import json

        try:
            json.loads(text)
        except ValueError as exc:
            _raise([f"the JSON output does not parse: {exc}"])
    elif fmt == "csv" and text:
        import csv
        import io

        rows = list(csv.reader(io.StringIO(text)))
        width = len(rows[0]) if rows else 0
        for n, r in enumerate(rows[1:], start=2):
            if len(r) != width:
                _raise([f"CSV line {n} has {len(r)} fields, the header {width}"])
