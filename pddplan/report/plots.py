"""Plots (matplotlib, from the ``plot`` extra, imported only when a plot is asked for)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import numpy as np

from pddplan.errors import OptionError, check_writable_path, write_failed


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise OptionError("plot", "needs matplotlib: pip install 'pddplan[plot]'") from None
    return plt


def _save(plt, fig, path: Path) -> None:
    try:
        fig.savefig(path, dpi=120)
    except OSError as exc:
        raise write_failed(path, exc, "plot") from None
    finally:
        plt.close(fig)


def check_plot_path(path: Path) -> None:
    if path.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise OptionError("plot", f"{path}: the file must end in .png, .svg or .pdf")
    check_writable_path(path, "plot")


def _curve_panel(ax, x, y, found, singular, label: str, color: str, valley_label: str) -> str:
    """One view of the bathtub: its curve, its valleys shaded and the deepest annotated.
    Returns " (log scale)" when the axis had to be logarithmic, else "" (for its label)."""
    ax.plot(x, y, color=color, lw=2, label=label)
    for i, v in enumerate(found):
        ax.axvspan(
            v.start_x, v.end_x, color="tab:red", alpha=0.12, label=valley_label if i == 0 else None
        )
    if found:
        v = max(found, key=lambda v: v.depth_fraction)
        ax.annotate(
            f"deepest: -{v.depth_fraction:.0%}\nat h = {v.deepest_x:.2f}",
            (v.deepest_x, v.deepest_y),
            textcoords="offset points",
            xytext=(0, 18),
            ha="center",
            color="tab:red",
            fontsize=8,
            arrowprops={"arrowstyle": "->", "color": "tab:red"},
            bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.85},
        )
    if singular:
        sy = np.interp(singular, x[np.isfinite(y)], y[np.isfinite(y)])
        ax.scatter(
            singular, sy, marker="v", color="black", zorder=3, label="tail-chunk singular points"
        )
    finite = y[np.isfinite(y) & (y > 0)]
    scale = ""
    if finite.size and finite.max() / finite.min() > 4:
        ax.set_yscale("log")  # keep a shallow valley visible next to a steep rim
        _plain_log_ticks(ax)
        scale = " (log scale)"
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8, framealpha=0.85)
    return scale


def bathtub_plot(res, hit_rates: np.ndarray, weights: np.ndarray, path: Path) -> None:
    """Both views of the bathtub, each on its own panel and axis with its valleys shaded (the
    marginal view with the tail-chunk singular points), and the workload's hit-rate histogram
    beneath. The views measure different things (one more request on the solved plan; the
    best plan for traffic all at one hit rate), so they do not share an axis."""
    import textwrap

    from pddplan.bathtub import MARGINAL_VIEW, REPROVISIONED_VIEW, view_verdicts
    from pddplan.labels import figure_label

    check_plot_path(path)
    plt = _pyplot()
    verdict = view_verdicts(res)
    x = np.array([p.hit_rate for p in res.points])
    y = np.array([getattr(p, res.metric) for p in res.points], dtype=float)
    re_key = (
        "reprovisioned_revenue_per_cost"
        if res.metric == "revenue_per_cost"
        else "reprovisioned_bcr_requests_per_usd"
    )
    re = np.array(
        [np.nan if getattr(p, re_key) is None else getattr(p, re_key) for p in res.points],
        dtype=float,
    )
    has_re = bool(np.any(np.isfinite(re)))
    fig, axes = plt.subplots(
        3 if has_re else 2,
        1,
        figsize=(9, 9.5 if has_re else 6.5),
        sharex=True,
        gridspec_kw={"height_ratios": [3, 3, 1.2] if has_re else [3, 1.2]},
        constrained_layout=True,
    )
    ax, axh = axes[0], axes[-1]
    what = figure_label(res.metric)
    scale = _curve_panel(
        ax,
        x,
        y,
        res.valleys,
        [s["hit_rate"] for s in res.singular],
        f"{what}, marginal",
        "tab:blue",
        "valley of the marginal view",
    )
    ax.set_ylabel(f"marginal: {what}{scale}")

    def title(view: str, text: str) -> str:
        return "\n".join(textwrap.wrap(f"{view}. {text[0].upper()}{text[1:]}", 110))

    ax.set_title(title(MARGINAL_VIEW, verdict["marginal"]), fontsize=9)
    if has_re:
        ax2 = axes[1]
        re_what = figure_label(re_key)
        re_scale = _curve_panel(
            ax2,
            x,
            re,
            res.reprovisioned_valleys,
            [],
            f"{re_what}, re-provisioned",
            "tab:green",
            "valley of the re-provisioned view",
        )
        ax2.set_ylabel(f"re-provisioned: {re_what}{re_scale}")
        ax2.set_title(title(REPROVISIONED_VIEW, verdict["reprovisioned"]), fontsize=9)
    fig.suptitle("Return against prefix hit rate: two views", fontsize=11)
    bins = np.linspace(0, 1, 51)
    axh.hist(hit_rates, bins=bins, weights=weights, color="tab:gray")
    for v in res.valleys:
        axh.axvspan(v.start_x, v.end_x, color="tab:red", alpha=0.12)
    axh.set_ylabel("share of requests")
    axh.set_xlabel(figure_label("hit_rate"))
    axh.set_title(
        "workload hit-rate distribution (the classes pddplan evaluates; marginal valleys shaded)",
        fontsize=9,
    )
    axh.set_xlim(0, 1)
    _save(plt, fig, path)


def _plain_log_ticks(ax) -> None:
    """Log-axis ticks as plain numbers (2, 3, 5, 10) rather than ``3x10^0``."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    fmt = FuncFormatter(lambda v, _pos: f"{v:g}")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(fmt)
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _pos: ""))


def axis_label(path: str) -> str:
    """A swept PATH in words with its unit (:func:`pddplan.labels.path_label`)."""
    from pddplan.labels import path_label

    return path_label(path)


def _ratio_keys(rows: list[dict]) -> list[str]:
    """The ``bcr_ratio_vs_<baseline>`` columns of any row, in first-seen order."""
    from pddplan.labels import ratio_baseline

    keys: list[str] = []
    for r in rows:
        keys += [c for c in r if ratio_baseline(c) and c not in keys]
    return keys


def _ratio(r: dict, key: str) -> float:
    """A point's BCR ratio, NaN where PDD has no plan or the ratio is undefined (the baseline
    has no plan within the SLA: its BCR is 0, the ratio infinite or null, or its column absent)."""
    v = _num(r.get(key)) if r.get("feasible") else float("nan")
    return v if np.isfinite(v) else float("nan")


def _show(v) -> str:
    return f"{v:g}" if isinstance(v, float | int) else str(v)


def _mark_infeasible(ax, xs: list, rows: list[dict], legend: bool) -> None:
    """A red cross at the foot of the panel for every grid point with no feasible plan, one
    legend entry per binding constraint."""
    seen: set[str] = set()
    for x, r in zip(xs, rows, strict=True):
        if r.get("feasible"):
            continue
        why = str(r.get("binding") or "no plan")
        label = f"no feasible plan ({why} binds)" if legend and why not in seen else None
        seen.add(why)
        ax.scatter(
            [x],
            [0.04],
            marker="x",
            s=70,
            color="tab:red",
            transform=ax.get_xaxis_transform(),
            clip_on=False,
            zorder=5,
            label=label,
        )


def sweep_plot(rows: list[dict], paths: list[str], path: Path, title: str | None = None) -> None:
    """One swept parameter: stacked panels of PDD's BCR ratio to each baseline, its BCR
    [requests/USD] and its cost [$/h], infeasible points marked with a cross. Two: a heatmap of
    the BCR ratio to one datacenter (or PDD's BCR without baselines) whose cells also give the
    cost; an infeasible cell says so. A ratio that is undefined at every point (its baseline
    never meets the SLA) gets no legend entry, a note instead."""
    from pddplan.labels import baseline_label, figure_label, ratio_baseline

    check_plot_path(path)
    plt = _pyplot()  # a clean error without matplotlib, before any matplotlib import
    from matplotlib.colors import TwoSlopeNorm

    from pddplan.results.whatif import free_point  # PDD's plan costs nothing at the point

    keys = _ratio_keys(rows)
    if len(paths) == 1:
        raw = [r[paths[0]] for r in rows]
        numeric = all(isinstance(v, int | float) for v in raw)
        xs = raw if numeric else list(range(len(raw)))
        fig, axes = plt.subplots(
            3 if keys else 2,
            1,
            figsize=(8, 9 if keys else 6.5),
            sharex=True,
            constrained_layout=True,
        )
        notes: list[str] = []
        if keys:
            ax = axes[0]
            for key in keys:
                ys = [_ratio(r, key) for r in rows]
                base = baseline_label(ratio_baseline(key) or key)
                undefined = [
                    (v, r)
                    for v, y, r in zip(raw, ys, rows, strict=True)
                    if r.get("feasible") and not np.isfinite(y)
                ]
                # why a ratio has no value: PDD's plan costs nothing (its BCR unbounded), or
                # the baseline has no plan within the SLA (its BCR 0)
                free = [_show(v) for v, r in undefined if free_point(r)]
                none = [_show(v) for v, r in undefined if not free_point(r)]
                whys = [f"{', '.join(free)}: PDD's plan costs nothing"] if free else []
                whys += [f"{', '.join(none)}: no baseline plan within the SLA"] if none else []
                if not any(np.isfinite(ys)):
                    notes.append(
                        f"PDD BCR / {base} BCR not drawn: undefined at every feasible point "
                        f"(at {'; at '.join(whys)})"
                    )
                    continue
                label = f"vs {base}"
                if whys:
                    label += f" (undefined at {'; at '.join(whys)})"
                ax.plot(xs, ys, marker="o", label=label)
            ax.axhline(1.0, color="gray", lw=0.8, ls="--", label="parity (1.0)")
            ax.set_ylabel("PDD BCR / baseline BCR\n(above 1: PDD better)")
            _mark_infeasible(ax, xs, rows, legend=True)
            ax.legend(fontsize=8, loc="best", framealpha=0.85)
            ax.grid(alpha=0.3)
        for ax, key, color in (
            (axes[-2], "bcr_requests_per_usd", "tab:blue"),
            (axes[-1], "cost_usd_per_hour", "tab:purple"),
        ):
            ys = [_num(r.get(key)) if r.get("feasible") else np.nan for r in rows]
            label = "PDD plan"
            unbounded = [_show(v) for v, y in zip(raw, ys, strict=True) if np.isinf(y)]
            if unbounded:  # a BCR at a point where PDD's plan costs nothing
                ys = [np.nan if np.isinf(y) else y for y in ys]
                label += f" (unbounded at {', '.join(unbounded)}: its plan costs nothing)"
            ax.plot(xs, ys, marker="o", color=color, label=label)
            _mark_infeasible(ax, xs, rows, legend=not keys and ax is axes[-2])
            ax.set_ylabel(figure_label(key).replace(": ", ":\n", 1))
            ax.legend(fontsize=8, loc="best", framealpha=0.85)
            ax.grid(alpha=0.3)
        axes[-1].set_xlabel(axis_label(paths[0]))
        pad = 0.05 * ((max(xs) - min(xs)) or 1)
        axes[-1].set_xlim(min(xs) - pad, max(xs) + pad)  # the infeasible crosses stay in view
        if not numeric:
            axes[-1].set_xticks(xs, [str(v) for v in raw])
        if notes:
            # wrapped to the figure's width (about 150 characters at this size)
            lines = [ln for n in notes for ln in textwrap.wrap(n, 150)]
            fig.text(0.01, 0.005, "\n".join(lines), fontsize=8, color="dimgray", va="bottom")
            fig.get_layout_engine().set(rect=(0, 0.03 * len(lines), 1, 1 - 0.03 * len(lines)))
        fig.suptitle(title or f"PDD's plan against {axis_label(paths[0])}", fontsize=10)
    else:
        fig, ax = plt.subplots(figsize=(8, 5.6), constrained_layout=True)
        xs = sorted({r[paths[0]] for r in rows})
        ys = sorted({r[paths[1]] for r in rows})
        k: str | None = (
            "bcr_ratio_vs_same-dc"
            if "bcr_ratio_vs_same-dc" in keys
            else (keys[0] if keys else None)
        )
        z = np.full((len(ys), len(xs)), np.nan)
        cost = np.full((len(ys), len(xs)), np.nan)
        feasible = np.zeros((len(ys), len(xs)), dtype=bool)
        free_cell = np.zeros((len(ys), len(xs)), dtype=bool)  # PDD's plan costs nothing there
        for r in rows:
            at = ys.index(r[paths[1]]), xs.index(r[paths[0]])
            feasible[at] = bool(r.get("feasible"))
            if r.get("feasible"):
                z[at] = _ratio(r, k) if k else _num(r.get("bcr_requests_per_usd"))
                cost[at] = _num(r.get("cost_usd_per_hour"))
                free_cell[at] = free_point(r)
        z[free_cell] = np.nan  # an unbounded BCR has no colour on a finite scale
        finite = z[np.isfinite(z)]
        if k:
            lo = float(min(finite.min(), 0.99)) if finite.size else 0.5
            hi = float(max(finite.max(), 1.01)) if finite.size else 1.5
            norm: Any = TwoSlopeNorm(vcenter=1.0, vmin=lo, vmax=hi)
            cmap = plt.get_cmap("RdBu").with_extremes(bad="lightgray")
        else:
            from matplotlib.colors import Normalize

            norm = Normalize(*(finite.min(), finite.max()) if finite.size else (0, 1))
            cmap = plt.get_cmap("viridis").with_extremes(bad="lightgray")
        im = ax.imshow(np.ma.masked_invalid(z), origin="lower", aspect="auto", cmap=cmap, norm=norm)
        for yi in range(len(ys)):
            for xi in range(len(xs)):
                v = z[yi, xi]
                if not feasible[yi, xi]:
                    text = "infeasible"
                elif free_cell[yi, xi]:  # PDD's plan costs nothing: no ratio, no finite BCR
                    text = f"BCR unbounded\n{cost[yi, xi]:.4g} $/h"
                elif not np.isfinite(v):
                    text = f"ratio undefined\n{cost[yi, xi]:.4g} $/h"
                else:
                    text = f"{v:.3g}{'x' if k else ' req/$'}\n{cost[yi, xi]:.4g} $/h"
                dark = np.isfinite(v) and abs(norm(v) - 0.5) > 0.3
                ax.text(
                    xi,
                    yi,
                    text,
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if dark else "black",
                )
        ax.set_xticks(range(len(xs)), [_show(v) for v in xs])
        ax.set_yticks(range(len(ys)), [_show(v) for v in ys])
        ax.set_xlabel(axis_label(paths[0]))
        ax.set_ylabel(axis_label(paths[1]))
        if k:
            base = baseline_label(ratio_baseline(k) or k)
            what = f"PDD BCR / {base} BCR (above 1: PDD better)"
        else:
            what = f"PDD plan: {figure_label('bcr_requests_per_usd')}"
        fig.colorbar(im, ax=ax, label=what)
        ax.set_title(
            title
            or f"{what}\neach cell: the ratio and PDD's cost; gray: no feasible plan or no ratio",
            fontsize=9,
        )
    _save(plt, fig, path)


def _num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")
