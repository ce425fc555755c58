"""Reading measurement CSV files: text, records, header and numeric cells.

Every error is a one-line :class:`pddplan.errors.ProfileError` that names the file, the line
and, for a cell, the column (``file:line: column: message``). The chip and link formats each
define their columns and rules (:mod:`pddplan.calibrate.chips`, :mod:`pddplan.calibrate.link`)
and build on these pieces.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pddplan.errors import ProfileError, did_you_mean
from pddplan.io import files


@dataclass(frozen=True)
class Where:
    """A place in a measurements file: the file and, when known, the line (1-based)."""

    file: str
    line: int | None = None

    def error(self, message: str, column: str | None = None) -> ProfileError:
        """A ProfileError at this place, naming ``column`` when given."""
        return ProfileError(message, file=self.file, key=column, line=self.line)


def read_text(path: Path, *, undecodable: str) -> str:
    """The text of a UTF-8 file (a byte-order mark is skipped).

    ``undecodable`` is the message for a file that is not UTF-8; ``{offset}`` in it is
    replaced by the offset of the first bad byte.
    """
    return files.read_text(path, what="measurement file", undecodable=undecodable)


def records(text: str, file: str) -> Iterator[tuple[int, list[str]]]:
    """CSV records with the line each one ends on; malformed CSV becomes a ProfileError."""
    reader = csv.reader(io.StringIO(text), strict=True)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise ProfileError(f"malformed CSV: {exc}", file=file, line=reader.line_num) from None
        yield reader.line_num, row


def is_blank(record: Sequence[str]) -> bool:
    """Whether a CSV record holds nothing but white space."""
    return not any(c.strip() for c in record)


def unknown_column(column: str, allowed: Sequence[str], at: Where, *, suggest: bool) -> None:
    """Raise for a header ``column`` not in ``allowed`` (with the closest name when
    ``suggest``); return when it is allowed."""
    if column in allowed:
        return
    hint = did_you_mean(column, allowed) if suggest else ""
    raise at.error(
        f"unknown column {column!r}{hint} (allowed: {', '.join(allowed)})", column or "(empty)"
    )


def cells(record: Sequence[str], header: Sequence[str], at: Where) -> dict[str, str]:
    """A data record's cells by column name, stripped; a record of the wrong length is an
    error."""
    if len(record) != len(header):
        raise at.error(f"expected {len(header)} fields, found {len(record)}")
    return {c: record[i].strip() for i, c in enumerate(header)}


def parse_number(text: str, column: str, at: Where, *, kind: str = "a number") -> float:
    """``text`` as a float; an error says ``expected {kind}`` otherwise."""
    try:
        return float(text)
    except ValueError:
        raise at.error(f"expected {kind}, got {text!r}", column) from None


def require(ok: bool, text: str, column: str, at: Where, rule: str) -> None:
    """Raise ``{rule}, got {text!r}`` for the cell unless ``ok``."""
    if not ok:
        raise at.error(f"{rule}, got {text!r}", column)


def at_most(value: float, text: str, column: str, at: Where, maxima: Mapping[str, float]) -> None:
    """Raise when ``value`` is above the column's entry in ``maxima`` (when it has one)."""
    hi = maxima.get(column)
    if hi is not None:
        require(value <= hi, text, column, at, f"must be at most {hi:g}")


#: [s] The shortest latency a measurement can be: below a nanosecond it is a typo or a unit
#: slip (and its log, which the fits use, is not a number a fit can stand on).
MIN_LATENCY_S = 1e-9


def at_least(value: float, text: str, column: str, at: Where, minima: Mapping[str, float]) -> None:
    """Raise when ``value`` is below the column's entry in ``minima`` (when it has one)."""
    lo = minima.get(column)
    if lo is not None:
        require(
            value >= lo,
            text,
            column,
            at,
            f"must be at least {lo:g} (a latency below 1 ns is not a measurement)",
        )
