"""The PDD paper's figures predicted by pddplan, side by side with the paper.

Usage: python examples/reproduce_paper.py [--json]

Only two things are calibrated, both on inputs rather than on the figures predicted:

(a) the same-datacenter baseline side: ``rate_rps`` of examples/pdd-paper.yaml is the highest
    rate at which that baseline (homogeneous GPU-A, RDMA only) needs the paper's 88 GPU-A
    (``python examples/calibrate_paper_rate.py``); no prefill-side serving knob is changed;
(b) the line: profiles/links/pdd-paper-line.yaml is wan-100g-cross-city with its RTT fitted to
    the paper's hand-over microbenchmark (``pddplan calibrate
    examples/measurements/pdd-brief-handover.csv --link wan-100g-cross-city``).

Everything else is predicted by the model untouched (pdd-brief.md sections 3-6 give the paper's
figures). Definitions used where the brief leaves one open:

- unoptimized cross-datacenter PD: the same-datacenter baseline's prefill pool and rate, with
  decode moved to datacenter B behind the line and no relay (every request's KV crosses it);
- PDD's TTFT reduction: PDD's plan at the same rate against that deployment; the brief does not
  say which statistic, so the mean and the three percentiles are all shown;
- P-RLD misrouting load ratio: RLD's decode load (busy slot-seconds per second) when relayed
  requests are finished on RLD (the excluded P-RLD pipeline) over its load when they hand over;
- the cost table: PDD's plan at the rate 1.278 x the baseline's (the paper's goodput gain),
  its chips, its cost against the baseline's and its BCR against the baseline's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from pddplan.io.loader import Registry, load_scenario
from pddplan.solver import NO_RELAY, SAME_DC, Solver, baseline_at_rate, build_problem
from pddplan.solver import solve_scenario as solve
from pddplan.timing import Routing

ROOT = Path(__file__).resolve().parent
PAPER = {
    "same_dc_chips": 88,
    "same_dc_ttft_p50_s": 4.2,
    "unoptimized_ttft_p50_s": 6.7,
    "unoptimized_ttft_p90_s": 18.3,
    "unoptimized_ttft_p99_s": 29.7,
    "pdd_ttft_reduction_pct": -51.5,
    "rld_output_token_share": 0.062,
    "misrouting_load_ratio": 15.2,
    "goodput_gain": 0.278,
    "pdd_gpu_a": 43,
    "pdd_gpu_b": 32,
    "cost_change_pct_b20": -3.5,
    "cost_change_pct_b30": -7.1,
    "bcr_change_pct": 37.5,
}


def ttft_stats(solver: Solver, p_inst, n_p: int, rate: float, route) -> dict[str, float]:
    """TTFT p50 / p90 / p99 and mean of a prefill pool of ``n_p`` instances at ``rate`` [s]."""
    offs, wts, _ = solver.ttft_offsets(p_inst, route)
    q, _, _ = solver.ttft_at(p_inst, n_p, rate, offs, wts)
    # the mean wait of the queue whose distribution gives the percentiles (the solver's own)
    mean_wait = solver.prefill_wait(p_inst, n_p, rate).mean_wait_s
    mean = float(mean_wait + np.sum(offs * wts) / np.sum(wts))
    return {"p50": q[0], "p90": q[1], "p99": q[2], "mean": mean}


def unoptimized_cross_dc(scenario: str, rate: float) -> dict[str, float]:
    """The same-datacenter baseline's prefill pool at ``rate`` with decode behind the line."""
    rs = load_scenario(scenario, Registry.default())
    same = baseline_at_rate(rs, SAME_DC, rate)
    p_inst, n_p = same.roles["P"]
    solver = Solver(build_problem(rs, NO_RELAY))
    p_cross = next(p for p in solver.pb.options["P"] if p.physics_key == p_inst.physics_key)
    return ttft_stats(solver, p_cross, n_p, rate, solver.route(rate, Routing.none()))


def misrouting_load_ratio(outcome) -> float:
    """RLD's decode load with relayed requests finished on RLD over its load with hand-over."""
    plan = outcome.plan
    pb = plan.problem
    if plan.roles.get("RLD") is None:
        return float("nan")
    solver = Solver(pb)
    m_inst, _ = plan.roles["MD"]
    mode = plan.handover if plan.handover in ("one-shot", "catch-up") else "one-shot"
    _ctx, _md, _ext, _stall, rld_time, _tok, _extra = solver.decode_load(plan.route, m_inst, mode)
    c = pb.classes
    w = c.weight
    misrouted = np.where(plan.route.relay | ~pb.on_decode_side, c.output_tokens * pb.tpot_s, 0.0)
    return float(np.sum(w * misrouted) / np.sum(w * rld_time))


def reproduce(
    scenario: str = str(ROOT / "pdd-paper.yaml"), b30: str = str(ROOT / "pdd-paper-b30.yaml")
) -> dict[str, Any]:
    rs = load_scenario(scenario, Registry.default())
    rate = rs.scenario.rate_rps
    out = solve(rs, rate_rps=rate)
    same = next(b for b in out.baselines if b.topology == "same-dc")
    unopt = unoptimized_cross_dc(scenario, rate)
    p_inst, n_p = out.plan.roles["P"]
    pdd_ttft = ttft_stats(Solver(out.plan.problem), p_inst, n_p, rate, out.plan.route)
    reduction = {k: (pdd_ttft[k] / unopt[k] - 1) * 100 for k in ("mean", "p50", "p90", "p99")}
    rate_hi = rate * (1 + PAPER["goodput_gain"])
    hi = solve(rs, rate_rps=rate_hi)
    chips = hi.plan.chips_of()
    rs30 = load_scenario(b30, Registry.default())
    hi30 = solve(rs30, rate_rps=rate_hi)
    same30 = next(b for b in solve(rs30, rate_rps=rate).baselines if b.topology == "same-dc")
    return {
        "rate_rps": rate,
        "same_dc_chips": sum(same.chips_of().values()),
        "same_dc_ttft_s": dict(zip(("p50", "p90", "p99"), same.prefill.ttft_s, strict=True)),
        "unoptimized_ttft_s": unopt,
        "pdd_ttft_s": pdd_ttft,
        "pdd_ttft_change_pct": reduction,
        "pdd_plan_at_rate": {
            "chips": out.plan.chips_of(),
            "cost_usd_per_hour": out.plan.cost_usd_per_hour,
            "bcr_requests_per_usd": out.plan.bcr_requests_per_usd,
            "routing": str(out.plan.routing),
        },
        "rld_output_token_share": out.plan.rld_output_token_share,
        "misrouting_load_ratio": misrouting_load_ratio(out),
        "cost_table": {
            "rate_rps": rate_hi,
            "gpu_a": chips.get("gpu-a", 0),
            "gpu_b": chips.get("gpu-b", 0),
            "cost_usd_per_hour": hi.plan.cost_usd_per_hour,
            "baseline_cost_usd_per_hour": same.cost_usd_per_hour,
            "cost_change_pct_b20": (hi.plan.cost_usd_per_hour / same.cost_usd_per_hour - 1) * 100,
            "cost_change_pct_b30": (hi30.plan.cost_usd_per_hour / same30.cost_usd_per_hour - 1)
            * 100,
            "bcr_change_pct": (hi.plan.bcr_requests_per_usd / same.bcr_requests_per_usd - 1) * 100,
            "goodput_rps": hi.plan.goodput_rps,
            "baseline_goodput_rps": same.goodput_rps,
        },
        "notes": out.notes + hi.notes,
    }


def table(r: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(figure, paper, predicted, gap) rows."""

    def pct(model: float, paper: float) -> str:
        return f"{(model / paper - 1) * 100:+.0f}%"

    ct = r["cost_table"]
    u = r["unoptimized_ttft_s"]
    red = r["pdd_ttft_change_pct"]
    rows = [
        ("same-DC GPU-A (calibrated: rate)", "88", f"{r['same_dc_chips']}", "calibrated"),
        (
            "same-DC TTFT P50",
            "4.2 s",
            f"{r['same_dc_ttft_s']['p50']:.2f} s",
            pct(r["same_dc_ttft_s"]["p50"], 4.2),
        ),
        ("unoptimized cross-DC TTFT P50", "6.7 s", f"{u['p50']:.2f} s", pct(u["p50"], 6.7)),
        ("unoptimized cross-DC TTFT P90", "18.3 s", f"{u['p90']:.2f} s", pct(u["p90"], 18.3)),
        ("unoptimized cross-DC TTFT P99", "29.7 s", f"{u['p99']:.2f} s", pct(u["p99"], 29.7)),
        (
            "PDD TTFT vs unoptimized (mean / P50 / P90 / P99)",
            "-51.5%",
            " / ".join(f"{red[k]:+.1f}%" for k in ("mean", "p50", "p90", "p99")),
            f"{red['mean'] - (-51.5):+.1f} points (mean)",
        ),
        (
            "RLD share of output tokens (64K total, 1K out)",
            "6.2%",
            f"{r['rld_output_token_share'] * 100:.1f}%",
            pct(r["rld_output_token_share"], 0.062),
        ),
        (
            "P-RLD misrouting: RLD load ratio",
            "15.2x",
            f"{r['misrouting_load_ratio']:.1f}x",
            pct(r["misrouting_load_ratio"], 15.2),
        ),
        (
            "PDD chips at +27.8% goodput (GPU-A + GPU-B)",
            "43 + 32",
            f"{ct['gpu_a']} + {ct['gpu_b']}",
            f"{ct['gpu_a'] - 43:+d} / {ct['gpu_b'] - 32:+d}",
        ),
        (
            "PDD cost vs baseline (GPU-B +20% / +30%)",
            "-3.5% / -7.1%",
            f"{ct['cost_change_pct_b20']:+.1f}% / {ct['cost_change_pct_b30']:+.1f}%",
            f"{ct['cost_change_pct_b20'] + 3.5:+.1f} / {ct['cost_change_pct_b30'] + 7.1:+.1f} points",
        ),
        (
            "PDD BCR vs baseline",
            "+37.5%",
            f"{ct['bcr_change_pct']:+.1f}%",
            f"{ct['bcr_change_pct'] - 37.5:+.1f} points",
        ),
    ]
    return rows


def main() -> None:
    r = reproduce()
    if "--json" in sys.argv[1:]:
        print(json.dumps(r, indent=2, default=float))
        return
    print("| figure | paper | pddplan | gap |")
    print("|---|---|---|---|")
    for row in table(r):
        print("| " + " | ".join(row) + " |")
    print(f"\nrate {r['rate_rps']:.4g} req/s; notes: {'; '.join(r['notes']) or 'none'}")


if __name__ == "__main__":
    main()
