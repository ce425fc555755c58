"""Speed of the tabulated mixture quantiles (:func:`pddplan.models.queueing._table_quantiles`).

Captures the calls one ``pddplan.api.solve(max_bcr=True, verdict_check=False)`` on the default
scenario makes (the quantile memo emptied first, so that these are the calls a fresh solve
computes), then times the function on them again: prints the calls, the offsets and quantiles
per call, the time per call (the best of ``--repeats`` passes) and calls per second.

Usage: python benchmarks/bench_quantiles.py [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from pddplan import api
from pddplan.models import queueing


def capture() -> list[tuple]:
    """The argument tuples of every ``_table_quantiles`` call of one max-BCR solve."""
    calls: list[tuple] = []
    inner = queueing._table_quantiles

    def recording(ps, d, w, a, wait_probability, conditional):
        calls.append(
            (list(ps), np.array(d), np.array(w), np.array(a), wait_probability, conditional)
        )
        return inner(ps, d, w, a, wait_probability, conditional)

    queueing._GAMMA_MEMO.clear()
    queueing._table_quantiles = recording  # type: ignore[assignment]
    try:
        api.solve(max_bcr=True, verdict_check=False)
    finally:
        queueing._table_quantiles = inner  # type: ignore[assignment]
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed passes (the best is kept)")
    args = parser.parse_args()
    calls = capture()
    if not calls:
        print("the solve made no tabulated quantile calls")
        return
    f = queueing._table_quantiles
    best_s = float("inf")
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        for c in calls:
            f(*c)
        best_s = min(best_s, time.perf_counter() - t0)
    per_call_s = best_s / len(calls)
    print(f"calls: {len(calls)}")
    print(f"offsets per call: median {statistics.median(len(c[1]) for c in calls):.0f}")
    print(f"quantiles per call: median {statistics.median(len(c[0]) for c in calls):.0f}")
    print(f"time per call: {per_call_s * 1e6:.1f} us (best of {args.repeats} passes)")
    print(f"calls per second: {1.0 / per_call_s:,.0f}")


if __name__ == "__main__":
    main()
