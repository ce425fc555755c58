"""Closed forms against the simulator on a grid of plans and rates (issue 13).

Twelve plans from the bundled scenarios and workloads, each simulated at 0.9, 1.0 and 1.1 times
its sized rate (the same fleet), with several seeds. Prints a markdown table of TTFT p50 / p90 /
p99, closed form against simulated (mean over seeds, with the 95% half-width over seeds), the
gap ``(simulated - closed) / closed`` in percent, and the plan's closed-form regime warnings.
A gap above 10% is marked ``**``; the last line counts the points with a percentile beyond 10%,
and those among them without a TTFT warning. Warning tags in parentheses are not about TTFT.

Usage: python benchmarks/bench_closed_form_grid.py [--requests N] [--seeds S] [--jobs J]
"""

from __future__ import annotations

import argparse
import math
import statistics
from concurrent.futures import ProcessPoolExecutor

from pddplan.io.loader import Registry, bundled_profiles_dir, load_scenario
from pddplan.sim import SimConfig, SimPlan, simulate
from pddplan.sim.compare import (
    closed_form_figures,
    closed_form_plan,
    regime_warning_for_plan,
    with_rate,
)
from pddplan.sim.figures import SimFigures
from pddplan.solver import solve_scenario

PLANS: list[tuple[str, str | None, dict]] = [
    ("default", None, {}),
    ("default 1 req/s", None, {"rate_rps": 1.0}),
    ("default all-relay", None, {"serving": {"routing": "all-relay"}}),
    ("10g 0.6 req/s", None, {"link": "wan-10g-cross-city", "rate_rps": 0.6}),
    ("25g cross-city", None, {"link": "wan-25g-cross-city"}),
    (
        "40g cross-country 2.5",
        None,
        {
            "link": "wan-40g-cross-country",
            "rate_rps": 2.5,
            "sla": {"ttft_p50_s": 3, "ttft_p90_s": 6, "ttft_p99_s": 12, "tpot_ms": 50},
        },
    ),
    ("pdd-paper", "examples/pdd-paper.yaml", {}),
    ("pdd-paper-b30 3 req/s", "examples/pdd-paper-b30.yaml", {"rate_rps": 3.0}),
    ("chat 100g 20 req/s", None, {"workload": "chat", "rate_rps": 20.0}),
    ("chat 10g 3 req/s", None, {"workload": "chat", "link": "wan-10g-cross-city", "rate_rps": 3.0}),
    ("agent-beta", None, {"workload": "agent-64k-beta"}),
    ("long-context", "examples/long-context.yaml", {}),
]
FACTORS = (0.9, 1.0, 1.1)
PCTS = (50, 90, 99)


#: Short names of the regime warnings; those marked True are about TTFT.
WARNING_TAGS: tuple[tuple[str, str, bool], ...] = (
    ("line utilization", "line", True),
    ("onset of the prefill wait", "onset", True),
    ("RLD decodes a step", "rld-step", False),
    ("every RLD slot", "rld-slot", True),
    ("every MD slot", "md-slot", True),
    ("prefill utilization", "p-util", True),
)


def _tags(warnings: list[str]) -> list[tuple[str, bool]]:
    out = []
    for w in warnings:
        for key, tag, ttft in WARNING_TAGS:
            if key in w:
                out.append((tag, ttft))
                break
        else:
            out.append(("other", True))
    return out


def _point(args: tuple[str, str | None, dict, float, int, int]) -> dict:
    label, path, patch, factor, requests, seeds = args
    reg = Registry(dirs=[bundled_profiles_dir()])
    out = solve_scenario(load_scenario(path, reg, patch or None), baselines=False)
    splan = SimPlan.of(out.plan)
    rate = out.plan.rate_rps * factor
    splan = with_rate(splan, rate)
    closed_plan = closed_form_plan(out.problem, splan, rate)
    closed = closed_form_figures(out.problem, closed_plan)
    sims = []
    for seed in range(seeds):
        res = simulate(out.problem, splan, SimConfig(requests=requests, seed=seed, rate_rps=rate))
        sims.append(SimFigures.from_engine(res.figures))
    row = {
        "label": label,
        "factor": factor,
        "rate": rate,
        "p_util": closed_plan.prefill.utilization,
        "line_util": closed_plan.route.link_utilization,
        "warn": _tags(regime_warning_for_plan(out.problem, closed_plan)),
    }
    for p in PCTS:
        key = f"ttft_p{p}_s"
        vals = [s.get(key) for s in sims]
        mean = statistics.fmean(vals)
        half = 1.96 * statistics.stdev(vals) / math.sqrt(len(vals)) if len(vals) > 1 else math.nan
        c = closed.get(key)
        row[p] = (c, mean, half, 100.0 * (mean - c) / c if c else math.nan)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=40_000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=8)
    a = ap.parse_args()
    work = [
        (label, path, patch, f, a.requests, a.seeds)
        for label, path, patch in PLANS
        for f in FACTORS
    ]
    with ProcessPoolExecutor(a.jobs) as ex:
        rows = list(ex.map(_point, work))
    print(
        "| plan | × rate | rate [req/s] | P util | line util | "
        + " | ".join(f"p{p} closed [s] | p{p} sim [s] | p{p} gap" for p in PCTS)
        + " | warnings |"
    )
    print("|---" * (6 + 3 * len(PCTS)) + "|")
    off = 0
    uncovered = 0
    worst = 0.0
    worst_uncovered = 0.0
    for r in rows:
        cells = []
        bad = False
        for p in PCTS:
            c, m, h, g = r[p]
            mark = "**" if abs(g) > 10 else ""
            bad = bad or abs(g) > 10
            worst = max(worst, abs(g))
            cells.append(f"{c:.3g} | {m:.3g} ± {h:.2g} | {mark}{g:+.1f}%{mark}")
        off += bad
        warned = any(ttft for _tag, ttft in r["warn"])
        if bad and not warned:
            uncovered += 1
            worst_uncovered = max(worst_uncovered, max(abs(r[p][3]) for p in PCTS))
        tags = ", ".join(tag if ttft else f"({tag})" for tag, ttft in r["warn"]) or "-"
        print(
            f"| {r['label']} | {r['factor']} | {r['rate']:.3g} | {r['p_util']:.2f} | "
            f"{r['line_util']:.2f} | " + " | ".join(cells) + f" | {tags} |"
        )
    print(
        f"\n{off} of {len(rows)} points have a TTFT percentile more than 10% off; "
        f"worst gap {worst:.1f}%; {uncovered} of them without a TTFT warning "
        f"(worst {worst_uncovered:.1f}%)"
    )


if __name__ == "__main__":
    main()
