"""Plots (matplotlib, from the ``plot`` extra, imported only when a plot is asked for)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pddplan.errors import OptionError, UsageError


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
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    finally:
        plt.close(fig)


def check_plot_path(path: Path) -> None:
    if path.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise OptionError("plot", f"{path}: the file must end in .png, .svg or .pdf")


def _curve_panel(ax, x, y, found, singular, label: str, color: str, valley_label: str) -> None:
    """One view of the bathtub: its curve, its valleys shaded and the deepest annotated."""
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
        )
    if singular:
        sy = np.interp(singular, x[np.isfinite(y)], y[np.isfinite(y)])
        ax.scatter(
            singular, sy, marker="v", color="black", zorder=3, label="tail-chunk singular points"
        )
    finite = y[np.isfinite(y) & (y > 0)]
    if finite.size and finite.max() / finite.min() > 4:
        ax.set_yscale("log")  # keep a shallow valley visible next to a steep rim
        _plain_log_ticks(ax)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8, framealpha=0.85)


def bathtub_plot(res, hit_rates: np.ndarray, weights: np.ndarray, path: Path) -> None:
    """Both views of the bathtub, each on its own panel and axis with its valleys shaded (the
    marginal view with the tail-chunk singular points), and the workload's hit-rate histogram
    beneath. The views measure different things (one more request on the solved plan; the
    best plan for traffic all at one hit rate), so they do not share an axis."""
    import textwrap

    from pddplan.bathtub import MARGINAL_VIEW, REPROVISIONED_VIEW, view_verdicts
    from pddplan.report.labels import figure_label

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
    _curve_panel(
        ax,
        x,
        y,
        res.valleys,
        [s["hit_rate"] for s in res.singular],
        f"{what}, marginal",
        "tab:blue",
        "valley of the marginal view",
    )
    ax.set_ylabel(f"marginal: {what}")

    def title(view: str, text: str) -> str:
        return "\n".join(textwrap.wrap(f"{view}. {text[0].upper()}{text[1:]}", 110))

    ax.set_title(title(MARGINAL_VIEW, verdict["marginal"]), fontsize=9)
    if has_re:
        ax2 = axes[1]
        re_what = figure_label(re_key)
        _curve_panel(
            ax2,
            x,
            re,
            res.reprovisioned_valleys,
            [],
            f"{re_what}, re-provisioned",
            "tab:green",
            "valley of the re-provisioned view",
        )
        ax2.set_ylabel(f"re-provisioned: {re_what}")
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
    """A swept PATH with its unit, from its suffix (``link.bandwidth_gbit_per_s`` -> ``...
    [Gbit/s]``); dimensionless paths get ``[-]``."""
    from pddplan.report import UNITS

    leaf = path.rsplit(".", 1)[-1]
    for suffix, unit in UNITS:
        if leaf.endswith(suffix):
            return f"{path} [{unit}]"
    return f"{path} [-]"


def sweep_plot(rows: list[dict], paths: list[str], path: Path, title: str | None = None) -> None:
    """BCR ratio against one swept parameter (lines) or two (a heatmap with its values, on a
    diverging scale centred at 1.0). The ratio columns come from every row, so an infeasible
    first point does not blank the plot."""
    check_plot_path(path)
    plt = _pyplot()  # a clean error without matplotlib, before any matplotlib import
    from matplotlib.colors import TwoSlopeNorm

    keys: list[str] = []
    for r in rows:
        keys += [c for c in r if c.startswith("bcr_ratio_vs_") and c not in keys]
    fig, ax = plt.subplots(figsize=(8, 5.2), constrained_layout=True)
    if len(paths) == 1:
        x = [r[paths[0]] for r in rows]
        for key in keys:
            ax.plot(
                x,
                [_num(r.get(key)) if r.get("feasible") else np.nan for r in rows],
                marker="o",
                label=key.replace("bcr_ratio_vs_", "BCR ratio vs "),
            )
        ax.axhline(1.0, color="gray", lw=0.8, ls="--")
        ax.set_xlabel(axis_label(paths[0]))
        ax.set_ylabel("PDD BCR / baseline BCR [-]")
        if keys:
            fig.legend(loc="outside lower center", ncols=max(len(keys), 1), fontsize=8)
        ax.grid(alpha=0.3)
        ax.set_title(title or f"BCR ratio against {paths[0]}", fontsize=10)
    else:
        xs = sorted({r[paths[0]] for r in rows})
        ys = sorted({r[paths[1]] for r in rows})
        k: str | None = (
            "bcr_ratio_vs_same-dc"
            if "bcr_ratio_vs_same-dc" in keys
            else (keys[0] if keys else None)
        )
        z = np.full((len(ys), len(xs)), np.nan)
        for r in rows:
            if k and r.get("feasible"):
                z[ys.index(r[paths[1]]), xs.index(r[paths[0]])] = _num(r.get(k))
        finite = z[np.isfinite(z)]
        lo = float(min(finite.min(), 0.99)) if finite.size else 0.5
        hi = float(max(finite.max(), 1.01)) if finite.size else 1.5
        norm = TwoSlopeNorm(vcenter=1.0, vmin=lo, vmax=hi)
        cmap = plt.get_cmap("RdBu").with_extremes(bad="lightgray")
        im = ax.imshow(np.ma.masked_invalid(z), origin="lower", aspect="auto", cmap=cmap, norm=norm)
        for yi in range(len(ys)):
            for xi in range(len(xs)):
                v = z[yi, xi]
                text = "infeasible" if not np.isfinite(v) else f"{v:.3g}"
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
        ax.set_xticks(range(len(xs)), [f"{v:g}" if isinstance(v, float) else str(v) for v in xs])
        ax.set_yticks(range(len(ys)), [f"{v:g}" if isinstance(v, float) else str(v) for v in ys])
        ax.set_xlabel(axis_label(paths[0]))
        ax.set_ylabel(axis_label(paths[1]))
        label = (k or "").replace("bcr_ratio_vs_", "BCR ratio vs ").replace("_", "-")
        fig.colorbar(im, ax=ax, label=f"{label} [-] (above 1: PDD better)")
        ax.set_title(title or f"{label}: {paths[0]} x {paths[1]}", fontsize=10)
    _save(plt, fig, path)


def _num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")
