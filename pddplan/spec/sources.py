"""Where a spec's numbers come from: one row per sourced group of a profile (its values, its
``source`` and which of them are ``estimated``), for the reports' assumptions tables."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

#: keys that describe a group rather than being one of its numbers
_NOT_VALUES = ("source", "estimated", "kind", "name", "display_name", "notes")


def source_rows(profile: str, spec: BaseModel, group: str = "") -> list[dict[str, Any]]:
    """One row per group of ``spec`` (itself and its nested models, depth first) that has a
    ``source``: ``profile``, ``group`` (its dotted path under ``group``; ``-`` for an unnamed
    top), ``values`` (its scalar values, at most 160 characters), ``source`` and
    ``estimated``."""
    rows: list[dict[str, Any]] = []
    _walk(rows, profile, group, spec)
    return rows


def _walk(rows: list[dict[str, Any]], profile: str, group: str, obj: Any) -> None:
    if not isinstance(obj, BaseModel):
        return
    if "source" in type(obj).model_fields:
        values = {
            k: v
            for k, v in obj.model_dump(exclude_none=True).items()
            if k not in _NOT_VALUES and not isinstance(v, dict | list)
        }
        text = ", ".join(
            f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items()
        )
        est = list(getattr(obj, "estimated", []) or [])
        rows.append(
            {
                "profile": profile,
                "group": group or "-",
                "values": text[:160] + ("..." if len(text) > 160 else ""),
                "source": obj.source,  # type: ignore[attr-defined]
                "estimated": ", ".join(est),
            }
        )
    for name in type(obj).model_fields:
        sub = getattr(obj, name)
        if isinstance(sub, BaseModel):
            _walk(rows, profile, f"{group}.{name}" if group else name, sub)
