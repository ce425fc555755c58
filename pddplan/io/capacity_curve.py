"""Capacity curves (prefix-cache capacity -> mean hit rate): read from the CSV that
``pddplan hitrate --curve-out`` writes, or taken from a mapping of arrays."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def capacity_curve(
    curve: str | os.PathLike[str] | Mapping[str, Any] | None,
) -> dict[str, Any] | None:
    """A capacity curve sorted by capacity: ``{"capacity_tokens": array, "mean_hit_rate":
    array}`` from a CSV file or a mapping with those arrays (None: None)."""
    import numpy as np

    if curve is None:
        return None
    if isinstance(curve, Mapping):
        caps = np.asarray(curve["capacity_tokens"], dtype=float)
        means = np.asarray(curve["mean_hit_rate"], dtype=float)
        order = np.argsort(caps)
        bad = _not_monotone(caps[order], means[order])
        if bad is not None:
            from pddplan.errors import OptionError

            raise OptionError("capacity_curve", f": mean_hit_rate {bad}")
        return {"capacity_tokens": caps[order], "mean_hit_rate": means[order]}
    return read_capacity_curve(Path(curve))


def _not_monotone(caps: Any, means: Any) -> str | None:
    """Why a sorted capacity curve is not one (None when it is): an LRU cache's hit rate never
    falls as it grows (its stack property), and a hit rate lies in [0, 1]."""
    for c, m in zip(caps, means, strict=True):
        if not 0.0 <= m <= 1.0:
            return f"{m:g} at capacity {c:g} tokens: allowed 0 to 1"
    for i in range(1, len(caps)):
        if means[i] < means[i - 1] - 1e-12:
            return (
                f"falls from {means[i - 1]:g} to {means[i]:g} as capacity_tokens "
                f"grows from {caps[i - 1]:g} to {caps[i]:g}: a capacity curve never falls"
            )
    return None


def read_capacity_curve(path: Path) -> dict[str, Any]:
    """Read a capacity curve CSV: columns capacity_tokens and mean_hit_rate."""
    import csv
    import io

    import numpy as np

    from pddplan.errors import ProfileError
    from pddplan.io.files import read_text
    from pddplan.labels import plain

    caps, means = [], []
    with io.StringIO(read_text(path, what="capacity curve"), newline="") as fh:
        reader = csv.DictReader(fh)
        for col in ("capacity_tokens", "mean_hit_rate"):
            if reader.fieldnames is None or col not in reader.fieldnames:
                raise ProfileError(
                    f"missing column {col!r} (have: {plain(reader.fieldnames or [])})",
                    file=str(path),
                    line=1,
                )
        for i, row in enumerate(reader, start=2):
            try:
                cap = row["capacity_tokens"].strip()
                caps.append(float("inf") if cap in ("unbounded", "inf") else float(cap))
                means.append(float(row["mean_hit_rate"]))
            except ValueError:
                raise ProfileError(
                    "not a number", file=str(path), key="capacity_tokens/mean_hit_rate", line=i
                ) from None
    if not caps:
        raise ProfileError("the capacity curve is empty", file=str(path))
    order = np.argsort(caps)
    out = {"capacity_tokens": np.asarray(caps)[order], "mean_hit_rate": np.asarray(means)[order]}
    bad = _not_monotone(out["capacity_tokens"], out["mean_hit_rate"])
    if bad is not None:
        raise ProfileError(bad, file=str(path), key="mean_hit_rate")
    return out
