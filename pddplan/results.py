"""Flat, unit-suffixed result records: the single input of every renderer.

A :class:`Report` holds sections of flat rows (column names end in their unit) for the table,
CSV and markdown renderers, and a nested JSON document (with ``schema_version``) that scripts
rely on. Renderers never compute; commands never format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = "1.0"

Row = dict[str, Any]


@dataclass
class Section:
    title: str
    rows: list[Row]
    columns: list[str] | None = None

    def column_names(self) -> list[str]:
        if self.columns is not None:
            return self.columns
        cols: list[str] = []
        for r in self.rows:
            for k in r:
                if k not in cols:
                    cols.append(k)
        return cols


@dataclass
class Report:
    title: str
    sections: list[Section]
    payload: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    chart: str | None = None  # a compact text chart, table mode only
    warnings: list[str] = field(default_factory=list)  # to stderr; also in the JSON document

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
