"""Renderers: table (rich), CSV, markdown and JSON, all from a :class:`~pddplan.results.Report`.

``emit`` writes to ``-o FILE`` or stdout; only results go to stdout.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from pathlib import Path
from typing import Any

from pddplan.errors import UsageError
from pddplan.results import Report, json_ready

FORMATS = ("table", "csv", "md", "json")


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
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def render_csv(rep: Report) -> str:
    buf = io.StringIO()
    for i, sec in enumerate(rep.sections):
        if len(rep.sections) > 1:
            if i:
                buf.write("\n")
            buf.write(f"# {sec.title}\n")
        cols = sec.column_names()
        w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n", extrasaction="ignore")
        w.writeheader()
        for r in sec.rows:
            w.writerow({k: ("" if r.get(k) is None else _machine(r.get(k))) for k in cols})
    return buf.getvalue()


def render_md(rep: Report) -> str:
    out = [f"# {rep.title}", ""]
    for sec in rep.sections:
        cols = sec.column_names()
        out += [f"## {sec.title}", ""]
        if not sec.rows:
            out += ["(none)", ""]
            continue
        out.append("| " + " | ".join(cols) + " |")
        out.append("|" + "|".join("---" for _ in cols) + "|")
        for r in sec.rows:
            out.append(
                "| " + " | ".join(_display(r.get(c)).replace("|", "\\|") for c in cols) + " |"
            )
        out.append("")
    for n in rep.notes:
        out.append(f"- {n}")
    return "\n".join(out).rstrip() + "\n"


def render_json(rep: Report) -> str:
    return json.dumps(json_ready(rep.json_document()), indent=2) + "\n"


def render_table(rep: Report, file: Any, is_terminal: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    # a pipe gets a console wide enough that nothing is truncated or folded
    console = Console(
        file=file, width=None if is_terminal else 100_000, force_terminal=False, highlight=False
    )
    console.print(f"[bold]{rep.title}[/bold]")
    for sec in rep.sections:
        cols = sec.column_names()
        t = Table(title=sec.title, title_justify="left", show_lines=False)
        for c in cols:
            t.add_column(c, overflow="fold" if is_terminal else "ignore", no_wrap=not is_terminal)
        for r in sec.rows:
            t.add_row(*(_display(r.get(c)) for c in cols))
        if not is_terminal:
            t.width = None
        console.print(t)
    if rep.chart:
        console.print(rep.chart, markup=False)
    for n in rep.notes:
        console.print(f"- {n}", markup=False)


def emit(rep: Report, fmt: str, output: Path | None) -> None:
    """Write the report to ``output`` (or stdout) in ``fmt``; its warnings go to stderr."""
    if fmt not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    for w in rep.warnings:
        sys.stderr.write(f"pddplan: warning: {w}\n")
    if fmt == "table":
        if output is None:
            render_table(rep, sys.stdout, sys.stdout.isatty())
            return
        buf = io.StringIO()
        render_table(rep, buf, False)
        _write(output, buf.getvalue())
        return
    text = {"csv": render_csv, "md": render_md, "json": render_json}[fmt](rep)
    if output is None:
        sys.stdout.write(text)
    else:
        _write(output, text)


def _write(path: Path, text: str) -> None:
    """Write ``text`` to ``path``; a full disk or a bad path is one error line."""
    try:
        with path.open("w", encoding="utf-8", newline="") as fh:
            fh.write(text)
    except IsADirectoryError:
        raise UsageError(f"cannot write {path}: it is a directory") from None
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
