"""The picture of a topology plan (``pddplan topology --plot``): sites, lines, flows.

Sites sit at their longitude and latitude when every site gives them (``lat_deg``,
``lon_deg``; an equirectangular projection, which is all a picture needs), else on a circle.
A leased line is drawn solid, as thick as its count, labelled with the lines leased and the
highest utilization of a pipeline's bundle on it; a line not leased is dashed. Each source's
flows are arrows in its colour from the P site to the MD site (a ring where both are one
site), a dotted line from the entry to a P site elsewhere.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pddplan.report.plots import _pyplot, _save

if TYPE_CHECKING:
    from pddplan.results.topology import TopologyResult

#: [points] How far a site's label sits from its marker.
LABEL_OFFSET_PT = 14.0


def site_positions(res: TopologyResult) -> dict[str, tuple[float, float]]:
    """Site -> (x, y): (longitude x cos(mean latitude), latitude) when every site gives both,
    else a unit circle in file order."""
    sites = res.plan.site_specs
    if sites and all(s.lat_deg is not None and s.lon_deg is not None for s in sites):
        mean_lat = sum(float(s.lat_deg or 0.0) for s in sites) / len(sites)
        k = math.cos(math.radians(mean_lat))
        return {s.name: (float(s.lon_deg or 0.0) * k, float(s.lat_deg or 0.0)) for s in sites}
    n = len(sites)
    return {
        s.name: (math.cos(2 * math.pi * i / n), math.sin(2 * math.pi * i / n))
        for i, s in enumerate(sites)
    }


def _away(pos: dict[str, tuple[float, float]], name: str) -> tuple[float, float]:
    """A unit direction pointing away from the nearest other site (for the label)."""
    x, y = pos[name]
    others = [(ox, oy) for n, (ox, oy) in pos.items() if n != name]
    if not others:
        return (0.0, 1.0)
    ox, oy = min(others, key=lambda p: (p[0] - x) ** 2 + (p[1] - y) ** 2)
    cx = sum(p[0] for p in pos.values()) / len(pos)
    cy = sum(p[1] for p in pos.values()) / len(pos)
    dx, dy = (x - ox) + 0.3 * (x - cx), (y - oy) + 0.3 * (y - cy)
    d = math.hypot(dx, dy) or 1.0
    return (dx / d, dy / d)


#: Where a line's label may go: (share of the way along the line, offset beside it [points]),
#: tried in order until the label overlaps no other label or site.
LINE_LABEL_SPOTS = tuple(
    (t, d)
    for d in (6.0, -6.0, 18.0, -18.0, 32.0, -32.0)
    for t in (0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8)
)


def _place_line_labels(
    fig: Any,
    ax: Any,
    labels: list[tuple[tuple[float, float], tuple[float, float], str]],
    pos: dict[str, tuple[float, float]],
) -> None:
    """Each line's label at the first of :data:`LINE_LABEL_SPOTS` where it overlaps no text
    already drawn and no site marker (the last spot when none is free)."""
    from matplotlib.transforms import Bbox

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    taken = [t.get_window_extent(renderer).expanded(1.05, 1.1) for t in ax.texts]
    for x, y in pos.values():
        px, py = ax.transData.transform((x, y))
        taken.append(Bbox.from_extents(px - 9, py - 9, px + 9, py + 9))

    def screen_length(item: tuple[tuple[float, float], tuple[float, float], str]) -> float:
        (a0, b0), (a1, b1) = ax.transData.transform(item[0]), ax.transData.transform(item[1])
        return float(math.hypot(a1 - a0, b1 - b0))

    for (x0, y0), (x1, y1), text in sorted(labels, key=screen_length):  # short lines first
        (a0, b0), (a1, b1) = ax.transData.transform((x0, y0)), ax.transData.transform((x1, y1))
        d = math.hypot(a1 - a0, b1 - b0) or 1.0
        nx, ny = -(b1 - b0) / d, (a1 - a0) / d
        if nx < 0:
            nx, ny = -nx, -ny
        ann = None
        for t, off in LINE_LABEL_SPOTS:
            if ann is not None:
                ann.remove()
            ann = ax.annotate(
                text,
                (x0 + t * (x1 - x0), y0 + t * (y1 - y0)),
                xytext=(off * nx, off * ny),
                textcoords="offset points",
                ha="left" if off * nx >= 0 else "right",
                va="center",
                fontsize=7,
                color="0.2",
                zorder=6,
                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "0.8", "alpha": 0.9},
                arrowprops={"arrowstyle": "-", "color": "0.6", "lw": 0.6} if abs(off) > 6 else None,
            )
            box = ann.get_window_extent(renderer)
            if not any(box.overlaps(o) for o in taken):
                break
        if ann is not None:
            taken.append(ann.get_window_extent(renderer))


def topology_plot(res: TopologyResult, path: Path) -> None:
    """Draw ``res`` to ``path`` (.png, .svg or .pdf)."""
    plt = _pyplot()
    from matplotlib.lines import Line2D

    tp = res.plan
    pos = site_positions(res)
    fig, ax = plt.subplots(figsize=(10, 9))
    line_rows = {r["line"]: r for r in res.line_rows()}
    labels: list[tuple[tuple[float, float], tuple[float, float], str]] = []
    # lines
    for ln in tp.line_specs:
        (x0, y0), (x1, y1) = pos[ln.sites[0]], pos[ln.sites[1]]
        row = line_rows[ln.label]
        leased = int(row["lines_leased"])
        if leased:
            ax.plot([x0, x1], [y0, y1], color="0.35", lw=1.5 + 2.0 * leased, zorder=1,
                    solid_capstyle="round")  # fmt: skip
            labels.append(
                (
                    (x0, y0),
                    (x1, y1),
                    f"{ln.label}: {leased}x, {row['line_utilization_max']:.0%}",
                )
            )
        else:
            ax.plot([x0, x1], [y0, y1], color="0.7", lw=1.0, ls="--", zorder=1)
    # flows, one colour per source
    colours = plt.get_cmap("tab10").colors
    handles = []
    sources = list(tp.sources)
    for i, s in enumerate(sources):
        c = colours[i % len(colours)]
        t = tp.sources[s]
        mine = [r for r in res.flow_rows() if r["source"] == s]
        for j, r in enumerate(mine):
            p, m = r["p_site"], r["md_site"]
            if p != t.entry:
                (ex, ey), (px, py) = pos[t.entry], pos[p]
                ax.plot([ex, px], [ey, py], color=c, lw=1.2, ls=":", zorder=2)
            if p == m:
                ax.scatter(*pos[p], s=700 + 250 * j, facecolors="none", edgecolors=[c], lw=2.5,
                           zorder=3)  # fmt: skip
                continue
            ax.annotate(
                "",
                pos[m],
                xytext=pos[p],
                arrowprops={
                    "arrowstyle": "-|>",
                    "color": c,
                    "lw": 1.0 + 3.0 * float(r["share"]),
                    "connectionstyle": f"arc3,rad={0.18 + 0.08 * j}",
                    "shrinkA": 9,
                    "shrinkB": 9,
                },
                zorder=4,
            )
        shares = ", ".join(f"{r['p_site']}->{r['md_site']} {float(r['share']):.0%}" for r in mine)
        handles.append(
            Line2D(
                [], [], color=c, lw=2.5, label=f"{s} ({t.rate_rps:g} req/s at {t.entry}): {shares}"
            )  # fmt: skip
        )
    # sites: filled where P may run, open where only MD; the chips the plan uses beside them
    used: dict[str, list[str]] = {}
    for r in res.site_rows():
        used.setdefault(str(r["site"]), []).append(f"{r['chips']} {r['chip']}")
    for site in tp.site_specs:
        x, y = pos[site.name]
        prefill = site.roles.P is not None
        ax.scatter(x, y, s=130, marker="o" if prefill else "s", zorder=5, edgecolors="black",
                   facecolors="black" if prefill else "white", lw=1.5)  # fmt: skip
        ux, uy = _away(pos, site.name)
        text = site.name + ("\n" + ", ".join(used[site.name]) if site.name in used else "")
        ax.annotate(
            text,
            (x, y),
            xytext=(LABEL_OFFSET_PT * ux, LABEL_OFFSET_PT * uy),
            textcoords="offset points",
            ha="left" if ux > 0.3 else ("right" if ux < -0.3 else "center"),
            va="bottom" if uy > 0.3 else ("top" if uy < -0.3 else "center"),
            fontsize=8.5,
            fontweight="bold" if site.name in used else "normal",
            zorder=7,
            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8},
        )
    handles += [
        Line2D([], [], marker="o", color="black", ls="", label="site that may prefill (P)"),
        Line2D([], [], marker="s", mfc="white", color="black", ls="", label="decode-only site"),
        Line2D([], [], color="0.35", lw=3.5, label="leased line: lines leased x, top utilization"),
        Line2D([], [], color="0.7", lw=1, ls="--", label="line not leased"),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=8, frameon=False,
               title="flows: P site -> MD site, share of the source's rate")  # fmt: skip
    ax.set_title(f"{tp.spec_name}: {tp.cost_usd_per_hour:.2f} $/h ({tp.objective})")
    ax.set_aspect("equal", adjustable="datalim")
    ax.margins(0.15)
    ax.set_xticks([])
    ax.set_yticks([])
    for sp in ax.spines.values():
        sp.set_visible(False)
    fig.subplots_adjust(left=0.04, right=0.96, top=0.95, bottom=0.17)
    _place_line_labels(fig, ax, labels, pos)  # last: it needs the final layout
    _save(plt, fig, path)
