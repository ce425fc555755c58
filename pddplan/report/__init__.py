"""Renderers: table (rich's layout, written by :mod:`pddplan.report.plain` where it can be
without rich), CSV, markdown and JSON, all from a :class:`~pddplan.results.Report`.

``emit`` writes to ``-o FILE`` or stdout; only results go to stdout.
"""

from __future__ import annotations

import io
import math
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pddplan.errors import OptionError, write_failed
from pddplan.labels import UNITS
from pddplan.results import Report, Section, json_ready
from pddplan.results.base import Chart
from pddplan.results.invariants import check_report, check_text

if TYPE_CHECKING:
    from pddplan.report import plain

FORMATS = ("table", "csv", "md", "json")


def check_format(fmt: str) -> None:
    """Raise :class:`OptionError` (``format``) unless ``fmt`` is one of :data:`FORMATS`."""
    if fmt not in FORMATS:
        raise OptionError("format", f": {fmt!r} is not one of {', '.join(FORMATS)}")


def _display(v: Any) -> str:
    """Human rounding for table and markdown (machine formats are never rounded)."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v != 0 and (abs(v) >= 1e6 or abs(v) < 1e-3):
            return f"{v:.4g}"
        return f"{v:,.4g}" if abs(v) < 1e4 else f"{v:,.0f}"
    return str(v)


def _machine(v: Any) -> Any:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, dict | list | tuple):
        import json

        return json.dumps(json_ready(v), separators=(",", ":"))
    return v


def pick(rep: Report, table: str | None) -> list[Section]:
    """The sections ``--table`` selects: one by its name, or all of them (None)."""
    if table is None:
        return rep.sections
    for sec in rep.sections:
        if sec.slug == table:
            return [sec]
    raise no_table(table, [s.slug for s in rep.sections])


def no_table(table: str, names: Sequence[str]) -> OptionError:
    """The error for a ``--table`` name that is not among ``names`` (with a did-you-mean)."""
    from pddplan.errors import did_you_mean

    hint = did_you_mean(table, names) or ";"
    return OptionError("table", f": no table {table!r}{hint} tables: {', '.join(names)}")


def render_csv(rep: Report, table: str | None = None) -> str:
    """One tidy table (``table``, default the first): a header and rows, nothing else, so that
    ``pandas.read_csv`` and ``csv.DictReader`` load it unchanged."""
    import csv

    secs = pick(rep, table)
    buf = io.StringIO()
    if not secs:
        return ""
    sec = secs[0]
    cols = sec.column_names()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for r in sec.rows:
        w.writerow({k: ("" if r.get(k) is None else _machine(r.get(k))) for k in cols})
    return buf.getvalue()


_MD_BACKSLASH = re.compile(r"\\(?=[!-/:-@\[-`{-~])")
_MD_TAG = re.compile(r"<(?=[A-Za-z/!?])")
_MD_LINK = re.compile(r"\](?=[(\[])")


def md_escape(text: str) -> str:
    """``text`` safe in markdown: one line, and no raw HTML, link or image from it (a scenario
    name or a profile's source is the user's text). Plain text is left as it is: a backslash
    before punctuation is doubled, ``<`` before a tag letter becomes ``&lt;``, a ``]`` that
    would open a link target is escaped, line breaks become spaces."""
    text = " ".join(text.splitlines())
    text = _MD_BACKSLASH.sub(r"\\\\", text)
    return _MD_LINK.sub(r"\\]", _MD_TAG.sub("&lt;", text))


#: Decimal prefixes for byte columns shown to a person (sizes are decimal: 1 KB = 1000 B).
_BYTE_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K"))


def _byte_scale(sec: Section, col: str) -> tuple[float, str]:
    """The factor and prefix a byte column (unit B or B/s) is shown in: the largest decimal
    prefix its largest value reaches, so ``1.2e+10 [B]`` reads ``12 [GB]``; (1, "") for any
    other column. Machine formats (CSV, JSON) keep bytes."""
    head = header(col)
    unit = head.rsplit("[", 1)[-1] if head.endswith("]") else ""
    if unit not in ("B]", "B/s]") or col in sec.labels:
        return 1.0, ""
    vals = [
        abs(v)
        for r in sec.rows
        if isinstance(v := r.get(col), int | float) and not isinstance(v, bool) and math.isfinite(v)
    ]
    top = max(vals, default=0.0)
    return next(((f, p) for f, p in _BYTE_PREFIXES if top >= f), (1.0, ""))


def column_header(sec: Section, col: str) -> str:
    """A column's header as table, markdown and HTML write it: :func:`header`, with a byte
    column's unit in the prefix its values are shown in (:func:`_byte_scale`)."""
    head = header(col)
    _, prefix = _byte_scale(sec, col)
    return (
        f"{head[: head.rindex('[') + 1]}{prefix}{head[head.rindex('[') + 1 :]}" if prefix else head
    )


def left_out(sec: Section, empty: list[str], *, keys: bool = False) -> str:
    """The line under a table that names the columns it leaves out (``empty``, from
    :meth:`~pddplan.results.Section.shown_columns`), in words (``keys``: by their keys)."""
    if sec.omit_empty_name and set(empty) == set(sec.omit_empty):
        names = sec.omit_empty_name
    else:
        names = ", ".join(c if keys else header(c) for c in empty)
    return f"(left out, empty in every row: {names}; -f csv and -f json keep them)"


def _cells(sec: Section, col: str, *, scaled: bool = True) -> list[str]:
    """A column's values as table and markdown write them (machine keys in words, bytes in the
    prefix of :func:`column_header`). ``scaled=False`` (``--wide``, whose headers are the raw
    keys, as in CSV): a byte column in the bytes its key names."""
    if col in sec.labels:
        return [header(str(r.get(col))) if r.get(col) is not None else "-" for r in sec.rows]
    factor, _ = _byte_scale(sec, col) if scaled else (1.0, "")
    if factor != 1.0:
        return [
            _display(v / factor)
            if isinstance(v := r.get(col), int | float) and not isinstance(v, bool)
            else _display(v)
            for r in sec.rows
        ]
    return [_display(r.get(col)) for r in sec.rows]


def render_md(rep: Report, table: str | None = None) -> str:
    """Markdown: the answer's sentences, then each table with headers in words and units."""
    out = [f"# {md_escape(rep.title)}", ""]
    if table is None and rep.answer:
        out += [f"- {md_escape(a)}" for a in rep.answer] + [""]
    for sec in pick(rep, table):
        cols, empty = sec.shown_columns()
        out += [f"## {md_escape(sec.title)}", ""]
        if not sec.rows:
            out += ["(none)", ""]
            continue
        out.append("| " + " | ".join(column_header(sec, c) for c in cols) + " |")
        out.append("|" + "|".join("---" for _ in cols) + "|")
        cells = {c: _cells(sec, c) for c in cols}
        for i in range(len(sec.rows)):
            out.append(
                "| " + " | ".join(md_escape(cells[c][i]).replace("|", "\\|") for c in cols) + " |"
            )
        out.append("")
        if empty:
            out += [md_escape(left_out(sec, empty)), ""]
    for n in rep.notes:
        out.append(f"- {md_escape(n)}")
    return "\n".join(out).rstrip() + "\n"


def render_json(rep: Report) -> str:
    import json

    return json.dumps(json_ready(rep.json_document()), indent=2) + "\n"


#: Long words of column names a compact header shortens.
ABBREVIATIONS = {"datacenter": "DC", "utilization": "util."}


#: Words a header writes in capitals (the brief's names for them).
ACRONYMS = {
    "ttft": "TTFT",
    "tpot": "TPOT",
    "bcr": "BCR",
    "rld": "RLD",
    "md": "MD",
    "sla": "SLA",
    "pdd": "PDD",
    "kv": "KV",
    "dc": "DC",
}


def _words(key: str) -> str:
    return " ".join(ACRONYMS.get(w, w) for w in key.replace(".", "_").split("_") if w)


def header(col: str) -> str:
    """A compact header: words, then the unit in brackets (``cost_usd_per_hour`` -> ``cost
    [$/h]``, ``ttft_p99_s`` -> ``TTFT p99 [s]``)."""
    if col in ABBREVIATIONS:
        return ABBREVIATIONS[col]
    if " " in col:  # a key and a qualifier: "cost_usd_per_hour p5/p50/p95"
        key, extra = col.split(" ", 1)
        head = header(key)
        if head.endswith("]"):
            words, unit = head.rsplit(" [", 1)
            return f"{words} {extra} [{unit}"
        return f"{head} {extra}"
    for suffix, unit in UNITS:
        if col.endswith(suffix) and len(col) > len(suffix):
            return f"{_words(col[: -len(suffix)])} [{unit}]"
    return _words(col)


def table_width(is_terminal: bool, wide: bool) -> int:
    """The width tables are laid out for: the terminal's (``COLUMNS`` when set), 100 columns
    when piped or written to a file, unbounded with ``--wide``."""
    import os
    import shutil

    if wide:
        return 100_000
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 20:
        return int(env)
    if is_terminal:
        return shutil.get_terminal_size((100, 24)).columns
    return 100


_TEXT_MIN = 12  # text columns fold down to this width


def _groups(cols: list[str], mins: dict[str, int], width: int) -> list[list[str]]:
    """Columns packed into groups that fit ``width`` (the first column repeated in each), each
    column at least its :func:`min_width` (``mins``)."""

    def need(c: str) -> int:
        return mins[c] + 3  # padding and the (blank) column rule

    def fits(group: list[str]) -> bool:
        # a table without padding at its edges: the columns, 3 between each, 1 at each side
        return sum(need(c) for c in group) - 1 <= width

    if not cols:
        return [cols]
    groups: list[list[str]] = []
    cur: list[str] = [cols[0]]
    for c in cols[1:]:
        if not fits([*cur, c]) and len(cur) > 1:
            groups.append(cur)
            cur = [cols[0], c]
        else:
            cur.append(c)
    groups.append(cur)
    # no continuation of one column: move columns over from the group before while both fit
    while len(groups) > 1 and len(groups[-1]) == 2 and len(groups[-2]) > 3:
        moved = [cols[0], groups[-2][-1], *groups[-1][1:]]
        if not fits(moved):
            break
        groups[-2], groups[-1] = groups[-2][:-1], moved
    return groups


def column_widths(
    group: list[str], cells: dict[str, list[str]], mins: dict[str, int], width: int
) -> dict[str, int]:
    """Fixed widths for a group of columns wider than ``width``, or {} when it fits as it is.

    Every column gets its :func:`min_width` (``mins``); the space left goes to the columns that
    would use it (their longest cell or header past their minimum), a character at a time to the
    one furthest from its natural width. Left to itself, rich narrows the widest column first,
    even where that column cannot fold (a dotted name), and the table then runs past the edge.
    """
    # a header folds at its words, so a column's natural width is its longest cell (or word)
    natural = {c: max([len(v) for v in cells[c]] + [mins[c]]) for c in group}
    rules = 3 * len(group) - 1  # 3 between columns and 1 at each edge, no padding at the edges
    if sum(natural.values()) + rules <= width:
        return {}
    out = {c: mins[c] for c in group}
    spare = width - rules - sum(out.values())
    while spare > 0:
        c = max(group, key=lambda k: natural[k] - out[k])
        if natural[c] - out[c] <= 0:
            break
        out[c] += 1
        spare -= 1
    return out


def min_width(head_text: str, vals: list[str]) -> int:
    """The narrowest a column may be: its longest number (never folded), its longest header
    word (of ``head_text``), and up to :data:`_TEXT_MIN` characters of text."""
    longest = max((len(v) for v in vals), default=1)
    head = max((len(w) for w in head_text.split()), default=1)
    numeric = all(_is_number(v) for v in vals)
    if numeric:
        return max(longest, head)
    word = max((len(w) for v in vals for w in v.split()), default=1)  # never folded inside
    return max(min(longest, _TEXT_MIN), word, head)


def _is_number(v: str) -> bool:
    t = v.replace(",", "").replace("-", "").replace(".", "").replace("e+", "").replace("e", "")
    return t.isdigit() or v in ("-", "inf", "-inf", "nan", "yes", "no")


def render_table(
    rep: Report, file: Any, is_terminal: bool, *, table: str | None = None, wide: bool = False
) -> None:
    """Tables laid out for the width (:func:`table_width`): compact headers with units, numbers
    to 4 significant digits never folded, long text folded, and tables wider than the width
    split into column groups. ``wide``: the columns' keys as headers (as CSV writes them), their
    values in the keys' units (bytes not scaled to MB or GB), nothing folded.

    rich lays the blocks out (:func:`_table_blocks`); where :mod:`pddplan.report.plain` writes
    the same text without it (printable ASCII to a UTF-8 file), that does."""
    from pddplan.report import plain

    width = table_width(is_terminal, wide)
    blocks = list(_table_blocks(rep, table, wide, width))
    text = plain.render(blocks, width, soft_wrap=wide) if plain.writes_plain(file) else None
    if text is None:
        _print_rich(blocks, file, width, wide)
        return
    out = getattr(file, "rich_proxied_file", file)  # as rich writes past a live display
    out.write(text)
    out.flush()


def _table_blocks(rep: Report, table: str | None, wide: bool, width: int) -> Iterator[plain.Block]:
    """What the table format prints, in order: the title, the answer, each table (in column
    groups that fit ``width``) under its title, the chart and the notes."""
    import textwrap

    from pddplan.report.plain import Column, Line, Table

    yield Line(rep.title, bold=True)
    if table is None and rep.answer:
        for a in rep.answer:  # the answer first, a sentence a paragraph, wrapped at words
            yield Line(a)
        yield Line(None)
    for sec in pick(rep, table):
        cols, empty = sec.shown_columns()
        # --wide heads each column with its key, so its values are in the key's unit (bytes)
        cells = {c: _cells(sec, c, scaled=not wide) for c in cols}
        heads = {c: column_header(sec, c) for c in cols}
        mins = {c: min_width(heads[c], cells[c]) for c in cols}
        groups = [cols] if wide else _groups(cols, mins, width)
        for gi, group in enumerate(groups):
            title = sec.title if gi == 0 else f"{sec.title} (continued)"
            yield Line(title, bold=True)  # above the table: never wrapped to it
            fixed = {} if wide else column_widths(group, cells, mins, width)
            columns = []
            for c in group:
                numeric = all(_is_number(v) for v in cells[c])
                mw = mins[c]
                columns.append(
                    Column(
                        c if wide else "\n".join(textwrap.wrap(heads[c], mw)),
                        width=fixed.get(c),
                        min_width=None if wide else mw,
                        max_width=mw if numeric and not wide else None,
                        no_wrap=wide or numeric,
                        justify="right" if numeric and not wide else "left",
                    )
                )
            rows = [[cells[c][i] for c in group] for i in range(len(sec.rows))]
            yield Table(columns, rows)
        if empty:
            yield Line(left_out(sec, empty, keys=wide), literal=True)
    chart = render_chart(rep.chart) if rep.chart and table is None else ""
    if chart:
        yield Line(chart, literal=True, emoji=may_hold_emoji_code(chart))
    for n in rep.notes if table is None else []:
        line = f"- {n}"
        yield Line(line, literal=True, emoji=may_hold_emoji_code(line))


def _print_rich(blocks: Iterable[plain.Block], file: Any, width: int, wide: bool) -> None:
    """Print ``blocks`` with rich (``box.SIMPLE_HEAD``, no padding at the table's edges)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from pddplan.report.plain import Table as Grid

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich would exit 1 itself; a closed pipe is the caller's to handle (the CLI: exit 0)
            raise BrokenPipeError

    console = _Console(
        file=file, width=width, force_terminal=False, highlight=False, soft_wrap=wide
    )
    for block in blocks:
        if isinstance(block, Grid):
            t = Table(show_lines=False, box=box.SIMPLE_HEAD, pad_edge=False, expand=False)
            for col in block.columns:
                t.add_column(
                    Text(col.header),
                    overflow="fold",
                    width=col.width,
                    min_width=col.min_width,
                    max_width=col.max_width,
                    no_wrap=col.no_wrap,
                    justify="right" if col.justify == "right" else "left",
                )
            for row in block.rows:
                t.add_row(*(Text(v) for v in row))
            console.print(t)
        elif block.text is None:
            console.print()
        elif block.literal:
            console.print(block.text, markup=False, emoji=block.emoji)
        else:
            console.print(Text(block.text, style="bold" if block.bold else ""))


#: What rich reads as an emoji code in printed text (``:name:``, ``:name-emoji:``): two colons
#: with no space between them.
_EMOJI_CODE = re.compile(r":\S*?:")


def may_hold_emoji_code(text: str) -> bool:
    """Whether rich could replace an emoji code in ``text``: one printed with rich's emoji codes
    off where this says no prints the same, without loading rich's table of codes (2 ms)."""
    return _EMOJI_CODE.search(text) is not None


def render_chart(chart: str | Chart) -> str:
    """A report's chart as text (a :class:`Chart` drawn by :func:`~pddplan.report.bathtub.
    text_chart`)."""
    if isinstance(chart, str):
        return chart
    from pddplan.report.bathtub import text_chart

    return text_chart(chart.xs, chart.ys, chart.shade, chart.title)


#: The generic advice a closed-form warning ends in; a command's own action replaces it.
GENERIC_ADVICE = "; check with `pddplan simulate`"


def short_warning(w: str, action: str | None = None) -> str:
    """A warning whole (its reason kept), its generic advice replaced by ``action``, the one
    that works for the command that printed it (none: the advice is dropped)."""
    if w.endswith(GENERIC_ADVICE):
        body = w[: -len(GENERIC_ADVICE)]
        return f"{body}; {action}" if action else body
    return w


def emit(
    rep: Report,
    fmt: str,
    output: Path | None,
    *,
    table: str | None = None,
    wide: bool = False,
) -> None:
    """Write the report to ``output`` (or stdout) in ``fmt``; its warnings go to stderr.

    ``table`` picks one section (CSV always writes one: the first by default); ``wide`` lays
    tables out without a width limit.
    """
    import textwrap

    if fmt not in FORMATS:
        raise OptionError("format", f"must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if table is not None:
        pick(rep, table)  # an unknown name fails before anything is written
    check_report(rep, fmt)  # a broken invariant is a bug report, before anything is written
    width = table_width(sys.stderr.isatty(), wide)
    for w in rep.warnings:
        text = short_warning(w, rep.warning_action)
        lines = textwrap.wrap(
            f"pddplan: warning: {text}",
            width=max(width, 40),
            subsequent_indent="  ",
            break_on_hyphens=False,  # file names and profile names stay whole
            break_long_words=False,
        )
        sys.stderr.write("\n".join(lines) + "\n")
    if fmt == "table":
        if output is None:
            render_table(rep, sys.stdout, sys.stdout.isatty(), table=table, wide=wide)
            return
        buf = io.StringIO()
        render_table(rep, buf, False, table=table, wide=wide)
        _write(output, buf.getvalue())
        return
    if fmt == "csv":
        text = render_csv(rep, table)
    elif fmt == "md":
        text = render_md(rep, table)
    else:
        text = render_json(rep)
    check_text(text, fmt)
    if output is None:
        sys.stdout.write(text)
    else:
        _write(output, text)


def _write(path: Path, text: str) -> None:
    """Write ``text`` to ``path``; a full disk or a bad path is one error line."""
    try:
        with path.open("w", encoding="utf-8", newline="") as fh:
            fh.write(text)
    except OSError as exc:
        raise write_failed(path, exc) from None
