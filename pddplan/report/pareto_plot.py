"""The pareto plot: goodput and TTFT p99 against cost, PDD's frontier and the baselines."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pddplan.report.plots import _pyplot, _save, check_plot_path

if TYPE_CHECKING:
    from pddplan.solver.pareto import Frontier

#: Colour and marker of each topology, and its name in the legend.
STYLE = {
    "pdd": ("tab:blue", "o", "PDD"),
    "same-dc": ("tab:orange", "s", "one datacenter (same-dc)"),
    "no-relay": ("tab:green", "^", "cross-datacenter, no relay (no-relay)"),
    "no-relay-rld": ("tab:purple", "D", "no relay, RLD for anomalous only (no-relay-rld)"),
}


def pareto_plot(frontier: Frontier, path: Path) -> None:
    """Two panels over cost [$/h]: goodput [req/s] and TTFT p99 at the target rate [s]. Each
    topology's frontier plans are joined by a line (PDD filled, baselines hollow), the plans
    another of their kind dominates are faint, and the plans that miss the SLA are crosses."""
    check_plot_path(path)
    plt = _pyplot()
    fig, (ax_g, ax_t) = plt.subplots(1, 2, figsize=(12, 5.4), constrained_layout=True)
    for topo in frontier.topologies():
        color, marker, name = STYLE.get(topo, ("tab:gray", "v", topo))
        pdd = topo == "pdd"
        front = frontier.frontier(topo)
        pts = [p for p in frontier.points if p.topology == topo and p.plan is not None]
        off = [p for p in pts if p.meets_sla and not p.on_frontier]
        miss = [p for p in pts if not p.meets_sla]
        for ax, k in ((ax_g, 1), (ax_t, 2)):
            xs = [p.objectives[0] for p in front]
            ys = [p.objectives[k] for p in front]
            if front:
                ax.plot(
                    xs, ys, color=color, lw=1.6 if pdd else 1.0, ls="-" if pdd else "--", zorder=2
                )
                ax.scatter(
                    xs,
                    ys,
                    s=46 if pdd else 80,
                    marker=marker,
                    zorder=4 if pdd else 3,
                    facecolors=color if pdd else "none",
                    edgecolors=color,
                    linewidths=1.5,
                    label=f"{name}: frontier" if k == 1 else None,
                )
            kinds = (
                (
                    off,
                    "off its frontier",
                    {
                        "marker": marker,
                        "facecolors": "none",
                        "edgecolors": color,
                        "alpha": 0.45,
                        "s": 30,
                    },
                ),
                (
                    miss,
                    "misses the TTFT SLA (sized for capacity)",
                    {"marker": "x", "color": color, "alpha": 0.8, "s": 40, "clip_on": False},
                ),
            )
            for group, what, style in kinds:
                if group:
                    ax.scatter(
                        [p.objectives[0] for p in group],
                        [p.objectives[k] for p in group],
                        zorder=2,
                        label=f"{name}: {what}" if k == 1 else None,
                        **style,
                    )
    target = frontier.problem.ttft_targets_s[2]
    ax_t.axhline(target, color="tab:red", lw=1, ls=":", label=None)
    ax_t.annotate(
        f"TTFT p99 target {target:.3g} s",
        (0.01, target),
        xycoords=("axes fraction", "data"),
        xytext=(0, 4),
        textcoords="offset points",
        color="tab:red",
        fontsize=8,
    )
    ax_g.set_ylabel("goodput: highest rate within every SLA target [req/s]")
    ax_t.set_ylabel("TTFT p99 at the plan's target rate [s]")
    ax_g.set_ylim(bottom=0)
    ax_t.set_ylim(bottom=0, top=max(ax_t.get_ylim()[1], target * 1.1))
    for ax in (ax_g, ax_t):
        ax.set_xlabel("cost of chips and line [$/h]")
        ax.grid(alpha=0.3)
    ax_g.set_title("more goodput for the money: up and to the left", fontsize=9)
    ax_t.set_title("lower tail latency: down and to the left", fontsize=9)
    r = frontier.rates_rps
    title = (
        f"Plans over cost, goodput and TTFT p99: scenario {frontier.scenario_name}\n"
        f"{len(r)} target rates from {r[0]:.3g} to {r[-1]:.3g} req/s, each point the plan "
        "`pddplan solve --rate` gives there"
    )
    fig.suptitle(title, fontsize=10)
    fig.legend(loc="outside lower center", ncols=3, fontsize=8)
    _save(plt, fig, path)
