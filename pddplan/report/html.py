"""The procurement report as one self-contained HTML page (no network: styles inline, images
as ``data:`` URIs) or as markdown with its images beside it."""

from __future__ import annotations

import base64
import html
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pddplan.report import _cells, column_header
from pddplan.results import Section

#: The page's sections: (id, heading); a test checks every one.
SECTIONS = (
    ("plan", "Plan"),
    ("procurement", "Chips: owned, rented, bought"),
    ("baselines", "Against one datacenter and against no relay"),
    ("classes", "Hit-rate classes"),
    ("bathtub", "Return against hit rate (bathtub)"),
    ("sweep", "Line bandwidth x hit-rate shift"),
    ("assumptions", "Assumptions and their sources"),
    ("warnings", "Warnings and notes"),
)

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1100px;
margin:2em auto;padding:0 1em;color:#1b1b1b;line-height:1.45}
h1{font-size:1.5em;border-bottom:2px solid #333;padding-bottom:.3em}
h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.6em 0;font-size:.85em}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:right;vertical-align:top}
th{background:#f2f2f2}td.text,th.text{text-align:left}.wide{overflow-x:auto}
.src{border:1px solid #ccc;padding:.3em .8em;margin:.5em 0;font-size:.85em}
.src h3{font-size:1.05em;margin:.3em 0}.src p{margin:.3em 0}
.vals{font-family:ui-monospace,Menlo,Consolas,monospace;color:#444;overflow-wrap:anywhere}
.key{font-size:1.05em;background:#f6f9ff;border:1px solid #c9d8f5;padding:.8em 1em}
.est{background:#fff4d6}.muted{color:#666;font-size:.85em}img{max-width:100%}
"""


def _table(sec: Section, text_cols: tuple[str, ...] = ()) -> str:
    """A section as a table; a column of words (any cell not a number) is aligned left, its
    header too, and a table wider than the page scrolls within its box."""
    cols = sec.column_names()
    if not sec.rows:
        return "<p class='muted'>(none)</p>"
    words = {
        c
        for c in cols
        if c in text_cols or any(isinstance(r.get(c), str) and not _numeric(r[c]) for r in sec.rows)
    }
    head = "".join(
        f"<th{' class=text' if c in words else ''}>{html.escape(column_header(sec, c))}</th>"
        for c in cols
    )
    shown = {c: _cells(sec, c) for c in cols}  # as table and markdown write them
    body = []
    for i, r in enumerate(sec.rows):
        cls = " class='est'" if r.get("estimated") else ""
        cells = []
        for c in cols:
            td = "<td class='text'>" if c in words else "<td>"
            cells.append(f"{td}{html.escape(shown[c][i])}</td>")
        body.append(f"<tr{cls}>{''.join(cells)}</tr>")
    return (
        f"<div class='wide'><table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}"
        "</tbody></table></div>"
    )


def _sources(sec: Section) -> str:
    """The assumptions, one block per sourced group: what it is, its values, its source in
    full at the page's width, and the keys of it that are estimates (highlighted)."""
    esc = html.escape
    out = []
    for r in sec.rows:
        group = r.get("group") or "-"
        head = esc(str(r["profile"])) + ("" if group == "-" else f": {esc(str(group))}")
        parts = [f"<h3>{head}</h3>"]
        if r.get("values"):
            parts.append(f"<p class='vals'>{esc(str(r['values']))}</p>")
        parts.append(f"<p><b>Source:</b> {esc(str(r['source']))}</p>")
        if r.get("estimated"):
            parts.append(f"<p><b>Estimates:</b> {esc(str(r['estimated']))}</p>")
        cls = "src est" if r.get("estimated") else "src"
        out.append(f"<div class='{cls}'>{''.join(parts)}</div>")
    return "".join(out) or "<p class='muted'>(none)</p>"


def _numeric(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True


def png_of(draw: Callable[[Path], None]) -> bytes | None:
    """The PNG ``draw(path)`` writes, or None without matplotlib (the plot extra)."""
    from pddplan.errors import UsageError

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "plot.png"
        try:
            draw(p)
        except UsageError:
            return None
        return p.read_bytes()


def images(res: Any) -> dict[str, bytes | None]:
    """The report's figures as PNG bytes: the bathtub and the sweep's heatmap; a topology
    plan's picture (``pddplan topology --plot``)."""
    from pddplan.report.plots import bathtub_plot, sweep_plot
    from pddplan.results.planreport import BANDWIDTH_PATH, SHIFT_PATH
    from pddplan.results.topology import TopologyResult

    if isinstance(res, TopologyResult):
        from pddplan.report.topology_plot import topology_plot

        return {"topology": png_of(lambda p: topology_plot(res, p))}

    b = res.bathtub
    return {
        "bathtub": png_of(
            lambda p: bathtub_plot(b.analysis, b.traffic_hit_rate, b.traffic_weight, p)
        ),
        "sweep": png_of(
            lambda p: sweep_plot(
                res.sweep.points,
                [BANDWIDTH_PATH, SHIFT_PATH],
                p,
                title="PDD BCR / same-datacenter BCR by line bandwidth and hit-rate shift",
            )
        ),
    }


def render_html(res: Any, pngs: dict[str, bytes | None]) -> str:
    """The page: every text written for a reader without the repository
    (:func:`~pddplan.report.reader.for_reader`)."""
    from pddplan.report.reader import reader_report

    rep = reader_report(res.report())
    by = {s.slug: s for s in rep.sections}
    esc = html.escape
    from pddplan.results.topology import TopologyResult

    if isinstance(res, TopologyResult):
        return _plain_html(rep, pngs)
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{esc(rep.title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{esc(rep.title)}</h1>",
        "<div class='key'>" + "".join(f"<p>{esc(s)}</p>" for s in rep.answer) + "</div>",
    ]

    def img(key: str, alt: str) -> str:
        data = pngs.get(key)
        if not data:
            return "<p class='muted'>(plot not drawn: install the plot extra, matplotlib)</p>"
        b64 = base64.b64encode(data).decode("ascii")
        return f"<img alt='{esc(alt)}' src='data:image/png;base64,{b64}'>"

    for sid, heading in SECTIONS:
        parts.append(f"<section id='{sid}'><h2>{esc(heading)}</h2>")
        if sid == "plan":
            parts.append(_table(by["plan"]) + _table(by["summary"]))
        elif sid == "bathtub":
            parts.append(img("bathtub", "bathtub: return against prefix hit rate"))
            parts.append(_table(by["bathtub"]))
        elif sid == "sweep":
            parts.append(img("sweep", "BCR ratio by line bandwidth and hit-rate shift"))
            parts.append(_table(by["sweep"]))
        elif sid == "assumptions":
            parts.append(
                "<p>Every number pddplan uses comes from a profile with its source; groups "
                "<span class='est'>highlighted</span> hold estimates (their keys are named).</p>"
            )
            parts.append(_sources(by["assumptions"]))
        elif sid == "warnings":
            ws = by["warnings"].rows
            parts.append(
                "<ul>" + "".join(f"<li>{esc(w['warning'])}</li>" for w in ws) + "</ul>"
                if ws
                else "<p>None.</p>"
            )
        else:
            parts.append(_table(by[sid]))
        parts.append("</section>")
    parts.append(
        "<p class='muted'>Made by pddplan, an analytical model: the figures are predictions "
        "under the assumptions above, not measurements.</p></body></html>"
    )
    return "\n".join(parts) + "\n"


def _plain_html(rep: Any, pngs: dict[str, bytes | None]) -> str:
    """A page of a report's answer, its images, then each section as a table (a topology
    plan's flows, sites, lines and failures)."""
    esc = html.escape
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{esc(rep.title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{esc(rep.title)}</h1>",
        "<div class='key'>" + "".join(f"<p>{esc(s)}</p>" for s in rep.answer) + "</div>",
    ]
    for key, data in pngs.items():
        if data:
            b64 = base64.b64encode(data).decode("ascii")
            parts.append(f"<img alt='{esc(key)}' src='data:image/png;base64,{b64}'>")
        else:
            parts.append(
                "<p class='muted'>(plot not drawn: install the plot extra, matplotlib)</p>"
            )
    for sec in rep.sections:
        parts.append(f"<section id='{esc(sec.slug)}'><h2>{esc(sec.title)}</h2>")
        parts.append(_table(sec) + "</section>")
    if rep.warnings:
        parts.append(
            "<section id='warnings'><h2>Warnings</h2><ul>"
            + "".join(f"<li>{esc(w)}</li>" for w in rep.warnings)
            + "</ul></section>"
        )
    parts.append(
        "<p class='muted'>Made by pddplan, an analytical model: the figures are predictions "
        "under the assumptions of its profiles, not measurements.</p></body></html>"
    )
    return "\n".join(parts) + "\n"


def render_markdown(res: Any, pngs: dict[str, bytes | None], out: Path) -> str:
    """Markdown, written for a reader like the page; the images are written beside ``out``
    (``NAME-bathtub.png``, ...)."""
    from pddplan.report import md_escape, render_md
    from pddplan.report.reader import reader_report

    rep = reader_report(res.report())
    lines = [f"# {md_escape(rep.title)}", ""]
    lines += [f"- {md_escape(s)}" for s in rep.answer] + [""]
    for key in pngs:
        data = pngs.get(key)
        if data:
            name = f"{out.stem}-{key}.png"
            (out.parent / name).write_bytes(data)
            lines += [f"![{key}]({name})", ""]
    from dataclasses import replace

    body = render_md(replace(rep, answer=[])).split("\n", 2)[2]  # without its title line
    return "\n".join(lines) + body


def write_page(res: Any, path: Path) -> None:
    """Write the procurement report to ``path``: one self-contained HTML page (``.html``,
    ``.htm``), or markdown with its images beside it (``.md``)."""
    from pddplan.report import _write

    pngs = images(res)
    md = path.suffix.lower() == ".md"
    _write(path, render_markdown(res, pngs, path) if md else render_html(res, pngs))
