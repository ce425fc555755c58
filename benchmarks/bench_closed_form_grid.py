"""Closed forms against the simulator on a grid of plans and rates (issues 13 and 20).

``--grid twelve`` (default): twelve plans from the bundled scenarios and workloads, each
simulated at 0.9, 1.0 and 1.1 times its sized rate (the same fleet), with several seeds.
``--grid second``: a grid kept apart from the first, for judging the regime warnings on plans
they were not written against: :data:`SECOND_GRID_PLANS` plans drawn by a seeded generator
(:func:`second_grid`) over the bundled scenarios, WAN lines, workloads, routings and rates, each
at its sized rate and at one drawn factor in [0.85, 1.15].

Prints a markdown table of TTFT p50 / p90 / p99, closed form against simulated (mean over seeds,
with the 95% half-width over seeds), the gap ``(simulated - closed) / closed`` in percent, and
the plan's closed-form regime warnings. A gap above 10% is marked ``**``. A point is covered
when every percentile beyond 10% is named by a TTFT warning (a warning naming no percentile
covers all three) whose stated direction (higher, lower, either way) matches the gap's; the
last line counts the points beyond 10% and those not covered. Warning tags in parentheses are
not about TTFT.

Usage: python benchmarks/bench_closed_form_grid.py [--grid twelve|second] [--requests N]
[--seeds S] [--jobs J]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from pddplan.io.loader import Registry, bundled_profiles_dir, load_scenario
from pddplan.sim import SimConfig, SimPlan, simulate
from pddplan.sim.compare import TTFT_PERCENTILES, closed_forms_at, gap_named, warning_tags
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
PCTS = TTFT_PERCENTILES

#: Plans of the second grid, and its generator's seed.
SECOND_GRID_PLANS = 12
SECOND_GRID_SEED = 20

_SCENARIOS = (None, "examples/pdd-paper.yaml", "examples/pdd-paper-b30.yaml")
_LINKS = tuple(
    f"wan-{g}-{reach}"
    for g in ("10g", "25g", "40g", "100g")
    for reach in ("same-city", "cross-city", "cross-country")
)
#: Rate ranges per workload [req/s]: around the bundled plans' own rates (agent 0.6-3 req/s on
#: one to a few prefill instances, chat 3-20 req/s).
_RATES = {"agent-64k": (0.5, 3.0), "agent-64k-beta": (0.5, 3.0), "chat": (2.0, 25.0)}
_ROUTINGS = ("optimize", "optimize", "all-relay", "no-relay")


def second_grid(seed: int = SECOND_GRID_SEED, plans: int = SECOND_GRID_PLANS) -> list:
    """The second grid's points ``(label, path, patch, factor)``: plans drawn uniformly over
    :data:`_SCENARIOS`, :data:`_LINKS`, workloads with their :data:`_RATES` and
    :data:`_ROUTINGS`, each at factor 1 and at one factor drawn in [0.85, 1.15]; drawn again
    while ``solve`` finds no plan."""
    rng = random.Random(seed)
    reg = Registry(dirs=[bundled_profiles_dir()])
    out: list[tuple[str, str | None, dict, float]] = []
    while len(out) < 2 * plans:
        path = rng.choice(_SCENARIOS)
        link = rng.choice(_LINKS)
        workload = rng.choice(sorted(_RATES))
        rate = round(rng.uniform(*_RATES[workload]), 2)
        routing = rng.choice(_ROUTINGS)
        factor = round(rng.uniform(0.85, 1.15), 3)
        patch = {"link": link, "workload": workload, "rate_rps": rate}
        if routing != "optimize":
            patch["serving"] = {"routing": routing}
        try:
            solve_scenario(load_scenario(_in_checkout(path), reg, patch), baselines=False)
        except Exception:  # noqa: BLE001 - an infeasible draw is drawn again
            continue
        name = (path or "default").removeprefix("examples/").removesuffix(".yaml")
        label = f"{name} {link.removeprefix('wan-')} {workload} {rate} req/s {routing}"
        out += [(label, path, patch, 1.0), (label, path, patch, factor)]
    return out


#: The checkout the grid's scenario files (``examples/...``, their labels and cache keys) are in.
_CHECKOUT = Path(__file__).resolve().parent.parent


def _in_checkout(path: str | None) -> str | None:
    """A grid point's scenario file in the checkout, wherever the script is run from."""
    return None if path is None else str(_CHECKOUT / path)


def _fleet(splan: SimPlan) -> str:
    """The simulated fleet in words (the key of a cached simulation)."""
    roles = ", ".join(f"{k} {r.instances}" for k, r in sorted(splan.roles.items()))
    return f"{roles}; rate {splan.rate_rps:.6g}; routing {splan.routing}"


def _point(args: tuple) -> dict:
    label, path, patch, factor, requests, seeds, cached = args
    reg = Registry(dirs=[bundled_profiles_dir()])
    out = solve_scenario(load_scenario(_in_checkout(path), reg, patch or None), baselines=False)
    splan, closed_plan, closed, warnings = closed_forms_at(out.problem, out.plan, factor)
    rate = splan.rate_rps
    fleet = _fleet(splan)
    key = f"{label} x{factor} n{requests} s{seeds}"
    if key in cached and cached[key]["fleet"] == fleet:
        vals_by_p = {int(p): v for p, v in cached[key]["sim"].items()}
    else:
        sims = []
        for seed in range(seeds):
            cfg = SimConfig(requests=requests, seed=seed, rate_rps=rate)
            sims.append(SimFigures.from_engine(simulate(out.problem, splan, cfg).figures))
        vals_by_p = {p: [s.get(f"ttft_p{p}_s") for s in sims] for p in PCTS}
    row = {
        "key": key,
        "fleet": fleet,
        "sim": vals_by_p,
        "label": label,
        "factor": factor,
        "rate": rate,
        "p_util": closed_plan.prefill.utilization,
        "line_util": closed_plan.route.link_utilization,
        "warn": warning_tags(warnings),
    }
    for p in PCTS:
        vals = vals_by_p[p]
        mean = statistics.fmean(vals)
        half = 1.96 * statistics.stdev(vals) / math.sqrt(len(vals)) if len(vals) > 1 else math.nan
        c = closed.get(f"ttft_p{p}_s")
        row[p] = (c, mean, half, 100.0 * (mean - c) / c if c else math.nan)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=40_000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--grid", choices=("twelve", "second"), default="twelve")
    ap.add_argument(
        "--sims",
        type=Path,
        help="JSON file of simulated percentiles: read for points whose fleet is unchanged "
        "(closed forms and warnings recomputed), written with every point after the run",
    )
    a = ap.parse_args()
    cached = json.loads(a.sims.read_text()) if a.sims and a.sims.exists() else {}
    if a.grid == "twelve":
        points = [(label, path, patch, f) for label, path, patch in PLANS for f in FACTORS]
    else:
        points = second_grid()
    work = [
        (label, path, patch, f, a.requests, a.seeds, cached) for label, path, patch, f in points
    ]
    with ProcessPoolExecutor(a.jobs) as ex:
        rows = list(ex.map(_point, work))
    if a.sims:
        cached.update({r["key"]: {"fleet": r["fleet"], "sim": r["sim"]} for r in rows})
        a.sims.write_text(json.dumps(cached, indent=1, sort_keys=True))
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
        missed = []
        for p in PCTS:
            c, m, h, g = r[p]
            beyond = abs(g) > 10
            mark = "**" if beyond else ""
            bad = bad or beyond
            worst = max(worst, abs(g))
            if beyond and not gap_named(g, p, r["warn"]):
                missed.append(abs(g))
                mark = "!!"
            cells.append(f"{c:.3g} | {m:.3g} ± {h:.2g} | {mark}{g:+.1f}%{mark}")
        off += bad
        if missed:
            uncovered += 1
            worst_uncovered = max(worst_uncovered, *missed)
        tags = (
            ", ".join(
                f"{w.tag} {'/'.join(f'p{p}' for p in sorted(w.percentiles))} {w.direction}"
                if w.ttft
                else f"({w.tag})"
                for w in r["warn"]
            )
            or "-"
        )
        print(
            f"| {r['label']} | {r['factor']} | {r['rate']:.3g} | {r['p_util']:.2f} | "
            f"{r['line_util']:.2f} | " + " | ".join(cells) + f" | {tags} |"
        )
    print(
        f"\n{off} of {len(rows)} points have a TTFT percentile more than 10% off; "
        f"worst gap {worst:.1f}%; {uncovered} of them with a percentile beyond 10% that no "
        f"TTFT warning names with its direction (marked !!; worst {worst_uncovered:.1f}%)"
    )


if __name__ == "__main__":
    main()
