"""The tornado plot of ``robust``: which estimate moves the point plan's BCR and SLA attainment.

Each bar spans the point plan's mean over the samples where one input sits in its lowest decile
to the mean where it sits in its highest; inputs are ordered by their sensitivity index.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pddplan.report.plots import _pyplot, _save, check_plot_path


def tornado_plot(
    sensitivity: Sequence[dict[str, Any]],
    overall_bcr: float,
    overall_sla: float,
    path: Path,
    title: str,
    top: int = 10,
    noise: str | None = None,
) -> None:
    """Two panels (BCR [requests/USD], SLA probability [%]) of the ``top`` inputs; an input
    whose row is not ``above_noise`` has its name in grey, which ``noise`` (a phrase: the
    index chance reaches) explains under the legend."""
    check_plot_path(path)
    plt = _pyplot()
    rows = list(sensitivity)[:top][::-1]
    from pddplan.labels import path_label

    labels = [path_label(r["input"]) for r in rows]
    fig, (ax1, ax2) = plt.subplots(
        1,
        2,
        figsize=(12, 0.45 * len(rows) + 2.2),
        sharey=True,
        constrained_layout=True,
    )
    for ax, lo_key, hi_key, mid, scale, xlabel in (
        (
            ax1,
            "bcr_low_decile_requests_per_usd",
            "bcr_high_decile_requests_per_usd",
            overall_bcr,
            1.0,
            "point plan's BCR [requests/USD]",
        ),
        (
            ax2,
            "sla_probability_low_decile",
            "sla_probability_high_decile",
            overall_sla,
            100.0,
            "point plan meets every SLA target [% of samples]",
        ),
    ):
        for i, r in enumerate(rows):
            lo, hi = r[lo_key] * scale, r[hi_key] * scale
            # side by side, so a bar on the same side as the other is not hidden under it
            ax.barh(i + 0.16, lo - mid * scale, left=mid * scale, color="#4477aa", height=0.3)
            ax.barh(i - 0.16, hi - mid * scale, left=mid * scale, color="#ee6677", height=0.3)
        ax.axvline(mid * scale, color="black", linewidth=0.8)
        ax.set_xlabel(xlabel)
        ax.grid(axis="x", alpha=0.3)
    ax1.set_yticks(range(len(rows)))
    ax1.set_yticklabels(labels, fontsize=8)
    quiet = [not r.get("above_noise", True) for r in rows]
    for tick, grey in zip(ax1.get_yticklabels(), quiet, strict=True):
        if grey:
            tick.set_color("#888888")
    from matplotlib.patches import Patch

    fig.legend(
        handles=[
            Patch(color="#4477aa", label="input in its lowest decile (upper bar)"),
            Patch(color="#ee6677", label="input in its highest decile (lower bar)"),
        ],
        loc="outside lower center",  # below the panels, clear of the bars
        ncols=2,
        fontsize=8,
    )
    if noise is not None and any(quiet):  # said under the title, clear of the legend
        title = f"{title}\nnames in grey: sensitivity index at or below {noise}"
    fig.suptitle(title)
    _save(plt, fig, path)


def robust_tornado_plot(res: Any, path: Path) -> None:
    """The tornado plot of a :class:`~pddplan.results.RobustResult` to ``path``."""
    tornado_plot(
        res.sensitivity,
        res.mean_bcr_requests_per_usd,
        res.sla_probability,
        path,
        res.tornado_title,
        noise=res.noise_phrase,
    )
