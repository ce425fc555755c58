"""Speed of the discrete-event simulator (issue 7, part 2: 100,000 requests in under 30 s on one
core).

Simulates the bundled default scenario's plan (P-MD and anomalous P-RLD traffic) and the same
scenario with every request relayed (RLD relay and One-Shot hand-over on each request, the most
events per request), and prints requests per second and the wall time of N requests.

Usage: python benchmarks/bench_sim.py [--requests N] [--seed S]
"""

from __future__ import annotations

import argparse
import os
import time

from pddplan.io.loader import Registry, bundled_profiles_dir, load_scenario
from pddplan.sim import SimConfig, SimPlan, simulate
from pddplan.solver import solve_scenario

GOAL_S = 30.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    reg = Registry(dirs=[bundled_profiles_dir()])
    for label, patch in (
        ("default plan", None),
        ("all requests relayed", {"serving": {"routing": "all-relay"}}),
    ):
        out = solve_scenario(load_scenario(None, reg, patch), baselines=False)
        plan = SimPlan.of(out.plan)
        simulate(out.problem, plan, SimConfig(requests=2_000, seed=a.seed))  # warm up
        t0 = time.perf_counter()
        res = simulate(out.problem, plan, SimConfig(requests=a.requests, seed=a.seed))
        wall = time.perf_counter() - t0
        verdict = "ok" if wall < GOAL_S * a.requests / 100_000 else "SLOW"
        print(
            f"{label:22s} {a.requests:,} requests: {wall:6.2f} s, "
            f"{a.requests / wall:9,.0f} requests/s, {res.events / wall:10,.0f} events/s "
            f"(goal < {GOAL_S:.0f} s per 100,000: {verdict})"
        )


if __name__ == "__main__":
    main()
