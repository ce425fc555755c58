"""Plots a person reads without the README: legend entries match drawn lines, infeasible
points are drawn, axis labels are words (no dotted keys)."""

from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("Agg")

from pddplan.labels import path_label  # noqa: E402
from pddplan.report import plots  # noqa: E402

ROWS = [
    {"link.bandwidth_gbit_per_s": 10, "feasible": False, "binding": "line utilization"},
    {
        "link.bandwidth_gbit_per_s": 25,
        "feasible": True,
        "cost_usd_per_hour": 141.7,
        "bcr_requests_per_usd": 51.2,
        "bcr_ratio_vs_same-dc": 1.30,
        "bcr_ratio_vs_no-relay-rld": 1.10,
    },
    {
        "link.bandwidth_gbit_per_s": 40,
        "feasible": True,
        "cost_usd_per_hour": 145.8,
        "bcr_requests_per_usd": 51.7,
        "bcr_ratio_vs_same-dc": 1.31,
        "bcr_ratio_vs_no-relay": None,  # the baseline never meets the SLA
        "bcr_ratio_vs_no-relay-rld": 1.04,
    },
]


@pytest.fixture
def figures(monkeypatch):
    figs: list = []

    def keep(plt, fig, path):
        fig.savefig(path)
        figs.append(fig)

    monkeypatch.setattr(plots, "_save", keep)
    return figs


def _labels(fig) -> list[str]:
    return [t for ax in fig.axes for t in (ax.get_xlabel(), ax.get_ylabel()) if t]


def test_path_labels_are_words_with_units() -> None:
    assert path_label("link.bandwidth_gbit_per_s") == "line bandwidth [Gbit/s]"
    assert path_label("chips.gpu-b.price_usd_per_hour") == "gpu-b price [$/h]"
    assert path_label("chips.gpu-b.derates.layer_latency_us") == "gpu-b layer latency [us]"
    assert "." not in path_label("workload.anomalous.share")


def test_sweep_plot_one_parameter(tmp_path, figures) -> None:
    plots.sweep_plot(ROWS, ["link.bandwidth_gbit_per_s"], tmp_path / "s.png")
    (fig,) = figures
    assert (tmp_path / "s.png").stat().st_size > 10_000
    ratio, bcr, cost = fig.axes
    # every legend entry is a drawn line (or the infeasible marker); the ratio undefined at every
    # point gets no entry, a note instead
    drawn = {ln.get_label() for ln in ratio.get_lines()}
    texts = [t.get_text() for t in ratio.get_legend().get_texts()]
    assert not any("(no-relay)" in t for t in texts)
    assert {t for t in texts if not t.startswith("no feasible plan")} == drawn
    assert any("no-relay" in t.get_text() and "not drawn" in t.get_text() for t in fig.texts)
    # the infeasible point is drawn, at its x, in every panel
    for ax in (ratio, bcr, cost):
        xs = [off[0] for c in ax.collections for off in c.get_offsets()]
        assert 10 in xs
    assert any("line utilization" in t for t in texts)
    assert "cost" in cost.get_ylabel() and "$/h" in cost.get_ylabel()
    for label in _labels(fig):
        assert "_" not in label and "bandwidth_gbit" not in label
    assert ratio.get_xlim()[0] < 10


def test_sweep_plot_two_parameters_marks_infeasible_cells(tmp_path, figures) -> None:
    rows = [{**r, "chips.gpu-b.price_usd_per_hour": p} for p in (2.4, 3.0) for r in ROWS]
    plots.sweep_plot(
        rows, ["link.bandwidth_gbit_per_s", "chips.gpu-b.price_usd_per_hour"], tmp_path / "h.png"
    )
    fig = figures[0]
    cells = [t.get_text() for t in fig.axes[0].texts]
    assert cells.count("infeasible") == 2
    assert sum("$/h" in c for c in cells) == 4  # cost beside the ratio
    assert fig.axes[0].get_ylabel() == "gpu-b price [$/h]"


def test_tornado_legend_is_clear_of_the_bars(tmp_path, figures) -> None:
    from pddplan.report.tornado import tornado_plot

    sens = [
        {
            "input": f"chips.gpu-b.derates.layer_latency_us{i}" if i else "rate_rps",
            "bcr_low_decile_requests_per_usd": 40 - i,
            "bcr_high_decile_requests_per_usd": 44 + i,
            "sla_probability_low_decile": 0.1,
            "sla_probability_high_decile": 0.5,
        }
        for i in range(5)
    ]
    tornado_plot(sens, 42.0, 0.3, tmp_path / "t.png", "test")
    fig = figures[0]
    assert not any(ax.get_legend() for ax in fig.axes)  # the legend sits outside the panels
    assert fig.legends
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "request rate [req/s]" in ticks
    assert not any(t.startswith("chips.") for t in ticks)
