"""The horizon plot: the fleet and the rate over the day (first and last month) and over the
growth path, with the owned chips marked."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pddplan.report.plots import _pyplot, _save, check_plot_path

if TYPE_CHECKING:
    from pddplan.results.horizon import HorizonResult

COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown")


def horizon_plot(res: HorizonResult, path: Path) -> None:
    """Two panels. Left: over the typical day, each chip's chips per slot (steps; solid the
    first month, dashed the last) against its owned count (dotted), and the rate (grey, right
    axis). Right: over the months, each chip's peak and least chips in a day, the owned counts,
    and the peak and trough rates (grey, right axis)."""
    check_plot_path(path)
    plt = _pyplot()
    h = res.horizon
    owned = res.owned
    chips = sorted(res.economics)
    day = h.slots[0].day
    last = h.months - 1
    fig, (ax_d, ax_g) = plt.subplots(1, 2, figsize=(13, 5.2), constrained_layout=True)
    rate_d = ax_d.twinx()
    hours = h.slot_minutes / 60.0
    for month, ls in ((0, "-"), (last, "--")):
        pts = [(s, f) for s, f in res.slot_fleets() if s.month == month and s.day == day]
        xs = [s.slot * hours for s, _ in pts] + [24.0]
        for i, c in enumerate(chips):
            ys = [f.chips.get(c, 0) for _, f in pts]
            ax_d.step(
                xs,
                [*ys, ys[-1]],
                where="post",
                color=COLORS[i % 5],
                ls=ls,
                label=f"{c}, month {month + 1}",
            )
        rs = [s.rate_rps for s, _ in pts]
        rate_d.step(
            xs,
            [*rs, rs[-1]],
            where="post",
            color="0.55",
            ls=ls,
            lw=1.0,
            label=f"rate, month {month + 1}",
        )
    for i, c in enumerate(chips):
        if owned.get(c):
            ax_d.axhline(owned[c], color=COLORS[i % 5], ls=":", lw=1.4, label=f"{c} owned")
    ax_d.set_xlim(0, 24)
    ax_d.set_xticks(range(0, 25, 3))
    ax_d.set_xlabel(f"hour of the day ({day})")
    ax_d.set_ylabel("chips")
    rate_d.set_ylabel("rate [req/s]")
    ax_d.set_ylim(bottom=0)
    rate_d.set_ylim(bottom=0)
    ax_d.set_title("fleet over the day: owned base, rented peak")
    lines = ax_d.get_legend_handles_labels()
    lines2 = rate_d.get_legend_handles_labels()
    ax_d.legend(lines[0] + lines2[0], lines[1] + lines2[1], fontsize=7, loc="upper left")

    rate_g = ax_g.twinx()
    months = list(range(1, h.months + 1))
    for i, c in enumerate(chips):
        hi, lo = [], []
        for m in range(h.months):
            ns = [f.chips.get(c, 0) for s, f in res.slot_fleets() if s.month == m]
            hi.append(max(ns))
            lo.append(min(ns))
        col = COLORS[i % 5]
        ax_g.fill_between(months, lo, hi, color=col, alpha=0.15, step="mid")
        ax_g.step(months, hi, where="mid", color=col, label=f"{c}: peak and least in a day")
        if owned.get(c):
            ax_g.axhline(owned[c], color=col, ls=":", lw=1.4, label=f"{c} owned")
    rows = res.growth_rows()
    rate_g.plot(months, [r["peak_rate_rps"] for r in rows], color="0.45", lw=1.0, label="peak rate")
    rate_g.plot(
        months,
        [r["trough_rate_rps"] for r in rows],
        color="0.65",
        lw=1.0,
        ls="--",
        label="trough rate",
    )
    ax_g.set_xlabel("month of the amortization horizon")
    ax_g.set_ylabel("chips")
    rate_g.set_ylabel("rate [req/s]")
    ax_g.set_ylim(bottom=0)
    rate_g.set_ylim(bottom=0)
    ax_g.set_xlim(1, h.months)
    ax_g.set_title("fleet over the growth path")
    lines = ax_g.get_legend_handles_labels()
    lines2 = rate_g.get_legend_handles_labels()
    ax_g.legend(
        lines[0] + lines2[0], lines[1] + lines2[1], fontsize=7, loc="lower right", framealpha=0.9
    )
    fig.suptitle(f"pddplan horizon: {res.scenario}")
    _save(plt, fig, path)
