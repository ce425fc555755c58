"""Speed of what-if sweeps (issue: what-if and procurement).

Prints sweep points per second on one core on the default scenario: a GPU-B price sweep with the
two baselines sized at every point (the default) and without them (price-independent parts of
the search are memoized, so a price sweep reuses them), a rate sweep (nothing reused), and the
wall time of a price sweep of N points with baselines on J processes (default 10,000 on 2).

Usage: python benchmarks/bench_sweep.py [--points N] [--jobs J] [--single N]
"""

from __future__ import annotations

import argparse
import time

from pddplan.whatif import Axis, run_sweep


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--single", type=int, default=300, help="points for the one-core figure")
    a = ap.parse_args()

    def axis(n: int) -> list[Axis]:
        prices = [round(2.0 + 2.0 * i / max(n - 1, 1), 6) for i in range(n)]
        return [Axis("chips.gpu-b.price_usd_per_hour", prices)]

    run_sweep(None, [], axis(3))  # warm the caches and imports
    t0 = time.perf_counter()
    rows = run_sweep(None, [], axis(a.single), jobs=1)
    one_core = a.single / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    run_sweep(None, [], axis(a.single), jobs=1, baselines=False)
    one_core_pdd = a.single / (time.perf_counter() - t0)
    # a rate sweep changes the physics at every point, so nothing is reused between points
    rates = [
        Axis("rate_rps", [round(1.0 + 2.0 * i / max(a.single - 1, 1), 6) for i in range(a.single)])
    ]
    t0 = time.perf_counter()
    run_sweep(None, [], rates, jobs=1)
    one_core_rates = a.single / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    rows = run_sweep(None, [], axis(a.points), jobs=a.jobs)
    wall = time.perf_counter() - t0
    ok = sum(1 for r in rows if r.get("feasible"))
    print(
        f"one core: {one_core:7.1f} sweep points/s with baselines (3 solves a point)   (goal >= 2,000)"
    )
    print(
        f"one core: {one_core_pdd:7.1f} sweep points/s without baselines (--no-baselines)   (goal >= 2,000)"
    )
    print(
        f"one core: {one_core_rates:7.1f} sweep points/s sweeping the rate (no reuse between points)"
        "   (goal >= 1,000)"
    )
    print(
        f"{a.points} points on {a.jobs} processes: {wall:6.1f} s, {ok} feasible   (goal < 60 s for 10,000 on 2)"
    )


if __name__ == "__main__":
    main()
