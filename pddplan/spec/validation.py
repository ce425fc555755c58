"""The translation of pydantic's validation errors into one-line profile errors.

A spec is validated from a document (:class:`Document`: its data and the line of every key,
:class:`pddplan.io.yamldoc.YamlDoc` when parsed from a file); the first error becomes a :class:`~pddplan.errors.ProfileError` that names the file, the
key path, the line and, for a number, the allowed range.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, Protocol

from pydantic import BaseModel, ValidationError

from pddplan.errors import ProfileError, unknown_key
from pddplan.errors import dotted as dotted  # re-exported
from pddplan.errors import line_for as line_for  # re-exported

Path_ = tuple[str | int, ...]


class Document(Protocol):
    """A document validated: its data, the line (1-based) of every key path (may be empty)
    and its file (:class:`pddplan.io.yamldoc.YamlDoc` is the parsed one)."""

    @property
    def data(self) -> Any: ...

    @property
    def lines(self) -> Mapping[Path_, int]: ...

    @property
    def file(self) -> str: ...


class Unparsed(NamedTuple):
    """A :class:`Document` of data that was not parsed from a file (no lines)."""

    data: Any
    file: str
    lines: Mapping[Path_, int] = types.MappingProxyType({})


# ------------------------------------------------------------------------- validation errors


def unwrap(tp: Any) -> list[type[BaseModel]]:
    """The BaseModel classes reachable from an annotation (through Optional, list, dict, union)."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return unwrap(typing.get_args(tp)[0])
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [tp]
    if origin in (typing.Union, types.UnionType, list, dict, tuple):
        out: list[type[BaseModel]] = []
        for arg in typing.get_args(tp):
            out.extend(unwrap(arg))
        return out
    return []


def classes_at(root: type[BaseModel], parts: Iterable[str | int]) -> list[type[BaseModel]]:
    classes = [root]
    for part in parts:
        if isinstance(part, int):
            continue
        nxt: list[type[BaseModel]] = []
        for cls in classes:
            fld = cls.model_fields.get(part)
            if fld is not None:
                nxt.extend(unwrap(fld.annotation))
        if nxt:
            classes = nxt
    return classes


def data_path(loc: tuple[Any, ...], data: Any) -> Path_:
    """Drop pydantic's union tags from an error location, keeping the keys present in the data."""
    out: list[str | int] = []
    cur = data
    for part in loc:
        if isinstance(cur, dict) and part in cur:
            out.append(part)
            cur = cur[part]
        elif isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur):
            out.append(part)
            cur = cur[part]
        elif isinstance(cur, dict | list):
            # a union tag such as 'function-after[...]' or a class name: skip it
            if isinstance(part, str) and ("[" in part or part[:1].isupper()):
                continue
            out.append(part)
            cur = None
        else:
            out.append(part)
            cur = None
    return tuple(out)


def validation_to_profile_error(
    exc: ValidationError, cls: type[BaseModel], doc: Document
) -> ProfileError:
    """Turn pydantic's first error into one line naming file, key path and line."""
    errors = exc.errors(include_url=False)
    # prefer errors that are not union fan-out noise: shortest data path first
    # a misspelt key shows up twice: as an unknown key and as a missing one; name the typo
    best = min(
        errors,
        key=lambda e: (
            e["type"] == "union_tag_invalid",
            len(e["loc"]),
            e["type"] != "extra_forbidden",
        ),
    )
    path = data_path(best["loc"], doc.data)
    msg = best["msg"]
    if best["type"] == "extra_forbidden":
        key = str(path[-1]) if path else "?"
        allowed = sorted({f for c in classes_at(cls, path[:-1]) for f in c.model_fields})
        msg = unknown_key(key, allowed)
    elif best["type"] == "missing":
        missing = best["loc"][-1] if best["loc"] else "?"
        if path and path[-1] == missing:
            path = path[:-1]
        msg = f"required key {missing!r} is missing"
    else:
        msg = msg.removeprefix("Value error, ")
        if "input" in best and not isinstance(best["input"], dict | list):
            msg += f" (got {best['input']!r})"
        if best["type"] in _RANGE_ERRORS or best["type"] == "finite_number":
            bounds = _allowed_range(cls, path)
            if bounds:
                msg += f"; allowed range {bounds}"
    return ProfileError(msg, file=doc.file, key=dotted(path), line=line_for(doc, path))


_RANGE_ERRORS = ("greater_than", "greater_than_equal", "less_than", "less_than_equal")


def _allowed_range(root: type[BaseModel], path: Path_) -> str | None:
    """The documented range of the number at ``path`` ("0.001 to 1e+06"), from the schema."""
    keys = [p for p in path if isinstance(p, str)]
    if not keys:
        return None
    for cls in classes_at(root, keys[:-1]):
        fld = cls.model_fields.get(keys[-1])
        if fld is None:
            continue
        lo = hi = None
        metas = list(fld.metadata)
        args = typing.get_args(fld.annotation)
        for arg in (fld.annotation, *args):
            if typing.get_origin(arg) is typing.Annotated:
                metas += [m for a in typing.get_args(arg)[1:] for m in getattr(a, "metadata", [a])]
            elif typing.get_origin(arg) is list:
                for inner in typing.get_args(arg):
                    if typing.get_origin(inner) is typing.Annotated:
                        metas += [
                            m
                            for a in typing.get_args(inner)[1:]
                            for m in getattr(a, "metadata", [a])
                        ]
        for m in metas:
            for name in ("ge", "gt"):
                if getattr(m, name, None) is not None:
                    lo = f"{'[' if name == 'ge' else '('}{getattr(m, name):g}"
            for name in ("le", "lt"):
                if getattr(m, name, None) is not None:
                    hi = f"{getattr(m, name):g}{']' if name == 'le' else ')'}"
        if lo or hi:
            return f"{lo or '(-inf'}, {hi or 'inf)'}"
    return None
