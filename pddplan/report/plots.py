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


def bathtub_plot(res, hit_rates: np.ndarray, weights: np.ndarray, path: Path) -> None:
    """The bathtub curve with valleys shaded, singular points marked, and the workload's
    hit-rate histogram beneath."""
    check_plot_path(path)
    plt = _pyplot()
    x = np.array([p.hit_rate for p in res.points])
    y = np.array([getattr(p, res.metric) for p in res.points], dtype=float)
    fig, (ax, axh) = plt.subplots(
        2,
        1,
        figsize=(9, 6.5),
        sharex=True,
        gridspec_kw={"height_ratios": [3, 1.2]},
        constrained_layout=True,
    )
    label = {
        "revenue_per_cost": "revenue / cost (marginal)",
        "requests_per_usd": "requests per USD (marginal)",
    }[res.metric]
    ax.plot(x, y, color="tab:blue", lw=2, label=label)
    for i, v in enumerate(res.valleys):
        ax.axvspan(
            v.start_x, v.end_x, color="tab:red", alpha=0.15, label="valley" if i == 0 else None
        )
        ax.annotate(
            f"valley: -{v.depth_fraction:.0%}\nat h={v.deepest_x:.2f}",
            (v.deepest_x, v.deepest_y),
            textcoords="offset points",
            xytext=(0, 18),
            ha="center",
            color="tab:red",
            arrowprops={"arrowstyle": "->", "color": "tab:red"},
        )
    sx = [s["hit_rate"] for s in res.singular]
    if sx:
        sy = np.interp(sx, x, y)
        ax.scatter(sx, sy, marker="v", color="black", zorder=3, label="tail-chunk singular points")
    ax.set_ylabel(label + " [-]")
    finite = y[np.isfinite(y) & (y > 0)]
    if finite.size and finite.max() / finite.min() > 4:
        ax.set_yscale("log")  # keep a shallow valley visible next to a steep rim
        _plain_log_ticks(ax)
    import textwrap

    title = "Return against prefix hit rate"
    if not res.valleys:
        title += f" — no valley: {res.no_valley_reason}"
    ax.set_title("\n".join(textwrap.wrap(title, 95)), fontsize=10)
    ax.grid(alpha=0.3)
    re = np.array(
        [
            np.nan if p.reprovisioned_revenue_per_cost is None else p.reprovisioned_revenue_per_cost
            for p in res.points
        ],
        dtype=float,
    )
    if res.metric == "revenue_per_cost" and np.any(np.isfinite(re)):
        ax2 = ax.twinx()
        ax2.plot(x, re, color="tab:green", lw=1.2, ls="--", label="re-provisioned revenue / cost")
        ax2.set_ylabel("re-provisioned revenue / cost [-]", color="tab:green")
        ax2.tick_params(axis="y", colors="tab:green")
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        fig.legend(h1 + h2, l1 + l2, loc="outside lower center", ncols=3, fontsize=8)
    else:
        fig.legend(loc="outside lower center", ncols=3, fontsize=8)
    bins = np.linspace(0, 1, 51)
    axh.hist(hit_rates, bins=bins, weights=weights, color="tab:gray")
    for v in res.valleys:
        axh.axvspan(v.start_x, v.end_x, color="tab:red", alpha=0.15)
    axh.set_ylabel("share of requests [-]")
    axh.set_xlabel("prefix-cache hit rate [-]")
    axh.set_title("workload hit-rate distribution (the classes pddplan evaluates)", fontsize=9)
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
