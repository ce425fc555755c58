"""The table format's text without rich: the lines rich lays out for what
:func:`pddplan.report.render_table` prints, written by plain string work.

rich costs the table format about 30 ms of CPU a run (12 ms to import, the rest to measure, wrap
and pad every cell through its renderables); this writes the same bytes in about 3 ms. It
follows rich's own steps (``rich`` 15: ``Table._calculate_column_widths``, ``Text.wrap``,
``rich._wrap.divide_line``, ``Segment.split_and_crop_lines``) for exactly the objects
``render_table`` prints: ``Text`` lines (a title, an answer's sentence, a note, a chart) and
tables with the ``SIMPLE_HEAD`` box, one space between columns and none at the edges, on a
console that is not a terminal (no styles written). It answers only where all that text is
laid out one character a cell (printable ASCII, line breaks and a chart's block characters; no
tab, no control character, no emoji code), the file takes UTF-8 and rich would write plain text
to it (not on Windows, not in Jupyter); anywhere else :func:`render` returns None and rich
prints. ``tests/unit/report/test_plain_layout.py`` holds it to rich's bytes, for the commands'
reports and for random text and tables at many widths.
"""

from __future__ import annotations

import builtins
import re
import sys
from collections.abc import Iterable, Sequence
from typing import Any

#: rich's word: leading space, the word, the space after it (``rich._wrap.re_word``)
_WORD = re.compile(r"\s*\S+\s*")
#: trailing space (``rich.text._re_whitespace``)
_TRAILING_SPACE = re.compile(r"\s+$")
#: the rule under the header row of ``rich.box.SIMPLE_HEAD`` (its edges and dividers are spaces)
_RULE = "\u2500"


# plain classes, not dataclasses: three of those cost 1.7 ms of CPU to define at import


class Column:
    """A table column as ``rich.table.Table.add_column`` takes it (``overflow="fold"``)."""

    __slots__ = ("header", "width", "min_width", "max_width", "no_wrap", "justify")

    def __init__(
        self,
        header: str,
        width: int | None = None,
        min_width: int | None = None,
        max_width: int | None = None,
        no_wrap: bool = False,
        justify: str = "left",  # "left" or "right"
    ) -> None:
        self.header = header
        self.width = width
        self.min_width = min_width
        self.max_width = max_width
        self.no_wrap = no_wrap
        self.justify = justify

    def __repr__(self) -> str:
        return f"Column({', '.join(f'{k}={getattr(self, k)!r}' for k in self.__slots__)})"


class Table:
    """A table to print: its columns and its rows of cell text."""

    __slots__ = ("columns", "rows")

    def __init__(self, columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> None:
        self.columns = columns
        self.rows = rows

    def __repr__(self) -> str:
        return f"Table({self.columns!r}, {self.rows!r})"


class Line:
    """Text printed on its own (``Console.print``): a title (``bold``), an answer's sentence, a
    note or a chart (``literal``: a ``str`` printed without markup, its emoji codes replaced
    where ``emoji``), or a blank line (``text`` None)."""

    __slots__ = ("text", "bold", "literal", "emoji")

    def __init__(
        self, text: str | None, bold: bool = False, literal: bool = False, emoji: bool = False
    ) -> None:
        self.text = text
        self.bold = bold
        self.literal = literal
        self.emoji = emoji

    def __repr__(self) -> str:
        return f"Line({self.text!r}, bold={self.bold}, literal={self.literal}, emoji={self.emoji})"


Block = Line | Table


def _plain(text: str) -> bool:
    """Text rich lays out one character a cell: printable ASCII, line breaks, and the box and
    block characters of a chart (U+2500 to U+25FC, one cell each in rich)."""
    if not text.replace("\n", " ").isprintable():
        return False
    return text.isascii() or all(c < "\x7f" or "\u2500" <= c <= "\u25fc" for c in text)


def writes_plain(file: Any) -> bool:
    """Whether rich (a ``Console(file=file, force_terminal=False)``) would write its text to
    ``file`` unchanged: UTF-8 (else it draws the box in ASCII), not legacy Windows, not Jupyter
    (which shows it as HTML)."""
    if sys.platform == "win32" or hasattr(builtins, "get_ipython"):
        return False
    out = getattr(file, "rich_proxied_file", file)
    if out is None:
        return False
    return (getattr(out, "encoding", "utf-8") or "utf-8").lower().startswith("utf")


def render(blocks: Iterable[Block], width: int, soft_wrap: bool) -> str | None:
    """The text rich prints for ``blocks`` on a console ``width`` wide (``soft_wrap``: rich's
    soft wrap, lines neither wrapped nor cropped), or None where this does not follow rich
    (see the module's text)."""
    if width < 1:
        return None
    out: list[str] = []
    for block in blocks:
        if isinstance(block, Table):
            lines = _table(block, width)
            if lines is None:
                return None
            out += lines if soft_wrap else [line[:width] for line in lines]
        elif block.text is None:
            out.append("")
        elif not _plain(block.text) or block.emoji:
            return None
        elif soft_wrap:
            out += block.text.split("\n")
        else:
            for line in block.text.split("\n"):
                out += [piece[:width] for piece in _wrap(line, width)]
    return "".join(line + "\n" for line in out)


def _divide_line(text: str, width: int) -> list[int]:
    """Where rich breaks a line of ``text`` to fit ``width`` (``rich._wrap.divide_line``, fold
    on): at the start of a word that does not fit, inside a word longer than a line."""
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(text):
        start = match.start()
        word = match.group()
        word_length = len(word.rstrip())
        if width - offset >= word_length:
            offset += len(word)
        elif word_length > width:  # folded across lines
            chunks = [word[i : i + width] for i in range(0, len(word), width)]
            for chunk in chunks[:-1]:
                if start:
                    breaks.append(start)
                start += len(chunk)
            if start:
                breaks.append(start)
            offset = len(chunks[-1])
        elif offset and start:
            breaks.append(start)
            offset = len(word)
    return breaks


def _wrap(line: str, width: int) -> list[str]:
    """One line of text wrapped to ``width`` as ``Text.wrap`` divides it: each piece keeps the
    space after its last word, up to ``width``."""
    cuts = [0, *_divide_line(line, width), len(line)]
    pieces = []
    for start, end in zip(cuts, cuts[1:], strict=False):
        piece = line[start:end]
        excess = len(piece) - width
        if excess > 0 and (space := _TRAILING_SPACE.search(piece)) is not None:
            piece = piece[: len(piece) - min(len(space.group()), excess)]
        pieces.append(piece)
    return pieces


def _cell_lines(text: str, width: int, justify: str, no_wrap: bool) -> list[str]:
    """A cell's text laid out ``width`` wide: wrapped (unless ``no_wrap``), justified, cropped
    and padded (``Text.wrap`` with ``overflow="fold"``, then ``Console.render_lines``)."""
    out = []
    for line in text.split("\n"):
        for piece in [line] if no_wrap else _wrap(line, width):
            if justify == "right":
                piece = piece.rstrip()[:width]
                out.append(" " * (width - len(piece)) + piece)
            else:
                out.append(piece[:width].ljust(width))
    return out


def _text_measure(text: str) -> tuple[int, int]:
    """``Text.__rich_measure__``: the longest word, the longest line."""
    lines = text.splitlines()
    longest = max((len(line) for line in lines), default=0)
    words = text.split()
    return max((len(w) for w in words), default=longest), longest


def _measure_cell(text: str, pad: int, width: int) -> tuple[int, int]:
    """``Measurement.get`` of a cell (``Padding(Text)``, ``pad`` columns of padding) in
    ``width``: the text's measure and the padding, at most ``width``. (rich's normalizing
    changes nothing here: a word is never longer than its line.)"""
    if width < 1:
        return 0, 0
    if width - pad < 1:
        return width, width
    lo, hi = _text_measure(text)
    return min(lo + pad, width), min(hi + pad, width)


def _measure_column(table: Table, index: int, pad: int, width: int) -> int:
    """The widest a column is laid out in ``width`` (``Table._measure_column``'s maximum)."""
    if width < 1:
        return 0
    col = table.columns[index]
    if col.width is not None:
        return min(col.width + pad, width)
    cells = [_measure_cell(col.header, pad, width)]
    cells += [_measure_cell(row[index], pad, width) for row in table.rows]
    lo, hi = max(c[0] for c in cells), max(c[1] for c in cells)
    lo, hi = min(lo, width), min(hi, width)
    if col.min_width is not None:
        least = max(0, col.min_width + pad)
        lo, hi = max(lo, least), max(hi, least)
    if col.max_width is not None:
        lo, hi = min(lo, col.max_width + pad), min(hi, col.max_width + pad)
    return hi


def _ratio_reduce(
    total: int, ratios: list[int], maximums: list[int], values: list[int]
) -> list[int]:
    """``rich._ratio.ratio_reduce``."""
    ratios = [ratio if most else 0 for ratio, most in zip(ratios, maximums, strict=True)]
    total_ratio = sum(ratios)
    if not total_ratio:
        return values[:]
    remaining = total
    out = []
    for ratio, most, value in zip(ratios, maximums, values, strict=True):
        if ratio and total_ratio > 0:
            given = min(most, round(ratio * remaining / total_ratio))
            out.append(value - given)
            remaining -= given
            total_ratio -= ratio
        else:
            out.append(value)
    return out


def _collapse(widths: list[int], wrapable: list[bool], max_width: int) -> list[int]:
    """``Table._collapse_widths``: the widest wrapable columns narrowed to the next widest."""
    total = sum(widths)
    excess = total - max_width
    if any(wrapable):
        while total and excess > 0:
            widest = max(w for w, ok in zip(widths, wrapable, strict=True) if ok)
            second = max(
                w if ok and w != widest else 0 for w, ok in zip(widths, wrapable, strict=True)
            )
            ratios = [
                1 if w == widest and ok else 0 for w, ok in zip(widths, wrapable, strict=True)
            ]
            if not any(ratios) or not widest - second:
                break
            widths = _ratio_reduce(
                excess, ratios, [min(excess, widest - second)] * len(widths), widths
            )
            total = sum(widths)
            excess = total - max_width
    return widths


def _table(table: Table, width: int) -> list[str] | None:
    """A table's lines as rich draws it ``width`` wide (before the console crops them), or None
    where a cell has no room (rich then draws no line of it)."""
    cols = table.columns
    n = len(cols)
    if not n:
        return [""]
    texts = [col.header for col in cols] + [cell for row in table.rows for cell in row]
    if not all(_plain(t) for t in texts):
        return None
    # padding (0, 1): one space each side of a cell, none at the table's left and right edges
    lefts = [0] + [1] * (n - 1)
    rights = [1] * (n - 1) + [0]
    pads = [lf + rt for lf, rt in zip(lefts, rights, strict=True)]
    room = max(0, width - (n + 1))  # the edges and the dividers
    widths = [_measure_column(table, i, pads[i], room) or 1 for i in range(n)]
    if sum(widths) > room:
        wrapable = [col.width is None and not col.no_wrap for col in cols]
        widths = _collapse(widths, wrapable, room)
        if sum(widths) > room:
            widths = _ratio_reduce(sum(widths) - room, [1] * n, widths, widths)
        widths = [_measure_column(table, i, pads[i], max(0, w)) for i, w in enumerate(widths)]
    if any(w - p < 1 for w, p in zip(widths, pads, strict=True)):
        return None
    rows = [[col.header for col in cols], *table.rows]
    out = [" " * (sum(widths) + n + 1)]
    for r, row in enumerate(rows):
        cells = []
        for i, col in enumerate(cols):
            inner = widths[i] - pads[i]
            lines = _cell_lines(row[i], inner, col.justify, col.no_wrap)
            cells.append([" " * lefts[i] + line + " " * rights[i] for line in lines])
        height = max(len(c) for c in cells)
        for c, w in zip(cells, widths, strict=True):
            blank = [" " * w] * (height - len(c))
            c[:] = blank + c if r == 0 else c + blank  # the header at the bottom, rows at the top
        out += [" " + " ".join(parts) + " " for parts in zip(*cells, strict=True)]
        if r == 0:
            out.append(" " + _RULE * (sum(widths) + n - 1) + " ")
    out.append(out[0])
    return out
