"""Flat, unit-suffixed result records: the single input of every renderer.

A :class:`Report` holds sections of flat rows (column names end in their unit) for the table,
CSV and markdown renderers, and a nested JSON document (with ``schema_version``) that scripts
rely on. Renderers never compute; commands never format.

:class:`Result` is the base of the typed result of every command: its figures are computed
when it is built (by :mod:`pddplan.api`); :meth:`Result.report` only arranges them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = "1.0"

Row = dict[str, Any]


@dataclass
class Section:
    title: str
    rows: list[Row]
    columns: list[str] | None = None
    key: str | None = None  # the name ``--table`` selects it by (default: from the title)
    #: columns whose values are machine keys (``rate_rps``): table and markdown write them in
    #: words with their unit (``rate [req/s]``), CSV and JSON keep the keys
    labels: tuple[str, ...] = ()
    #: columns the table and markdown formats leave out where no row has a value, with a line
    #: naming them (:meth:`shown_columns`); CSV and JSON keep every column (one schema)
    omit_empty: tuple[str, ...] = ()
    #: what :attr:`omit_empty` holds, in words, for the line where every one of them is left out
    #: (else the line names each column left out)
    omit_empty_name: str = ""

    @property
    def slug(self) -> str:
        """The section's name for ``--table``: its key, or its title in lower-case-and-dashes."""
        if self.key:
            return self.key
        import re

        return re.sub(r"[^a-z0-9]+", "-", self.title.split(" (")[0].lower()).strip("-")

    def column_names(self) -> list[str]:
        if self.columns is not None:
            return self.columns
        cols: list[str] = []
        for r in self.rows:
            for k in r:
                if k not in cols:
                    cols.append(k)
        return cols

    def shown_columns(self) -> tuple[list[str], list[str]]:
        """The columns the table and markdown formats show, and those they leave out: the
        :attr:`omit_empty` columns that no row has a value in (all of them ``None``)."""
        cols = self.column_names()
        empty = [
            c for c in cols if c in self.omit_empty and all(r.get(c) is None for r in self.rows)
        ]
        return [c for c in cols if c not in empty], empty


@dataclass(frozen=True)
class Chart:
    """A compact terminal chart's data: ``ys`` against ``xs`` (hit rate, 0 to 1), the ``shade``
    intervals marked below it; :mod:`pddplan.report` draws it in table mode."""

    xs: list[float]
    ys: list[float]
    shade: list[tuple[float, float]]
    title: str


@dataclass
class Report:
    title: str
    sections: list[Section]
    payload: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    chart: str | Chart | None = None  # a compact text chart, table mode only
    warnings: list[str] = field(default_factory=list)  # to stderr; also in the JSON document
    #: the answer in a few sentences, above the tables in table and markdown formats
    answer: list[str] = field(default_factory=list)
    #: what to do about a warning with this command (replaces a warning's generic advice)
    warning_action: str | None = None

    def json_document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
        if self.payload:
            doc.update(self.payload)
        else:
            doc["sections"] = {s.title: s.rows for s in self.sections}
        if self.notes:
            doc.setdefault("notes", self.notes)
        if self.warnings:
            doc.setdefault("warnings", self.warnings)
        return doc


def json_ready(o: Any) -> Any:
    """``o`` as plain JSON data: numpy scalars to Python, nan to null, infinities to strings.

    Machine formats are never rounded.
    """
    if isinstance(o, dict):
        return {str(k): json_ready(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [json_ready(v) for v in o]
    if hasattr(o, "item") and callable(o.item):
        o = o.item()
    if isinstance(o, float) and (math.isnan(o) or math.isinf(o)):
        return None if math.isnan(o) else ("inf" if o > 0 else "-inf")
    return o


class Result:
    """Base of the typed result of a command.

    Subclasses hold the computed figures as typed fields and implement :meth:`report`, which
    arranges them into sections of flat rows and the JSON document, without computing.
    """

    def report(self) -> Report:
        raise NotImplementedError

    def sections(self) -> list[Section]:
        """The result's tables (flat rows whose column names end in their unit)."""
        return self.report().sections

    def rows(self, section: str | None = None) -> list[Row]:
        """The rows of one section (by title; default: the first), as for CSV."""
        secs = self.sections()
        if section is None:
            return secs[0].rows if secs else []
        for s in secs:
            if s.title == section:
                return s.rows
        raise KeyError(f"no section {section!r}; sections: {[s.title for s in secs]}")

    def to_json(self) -> dict[str, Any]:
        """The JSON document that ``--format json`` prints (with ``schema_version``).

        Raises :class:`~pddplan.errors.InvariantError` where the document breaks a rule every
        answer satisfies (:mod:`pddplan.results.invariants`).
        """
        from pddplan.results.invariants import check_document

        doc = self.report().json_document()
        check_document(doc)
        return json_ready(doc)
