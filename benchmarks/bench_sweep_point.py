"""Where one point of a rate sweep spends its time, against the goal of 1,000 points a second.

A rate sweep changes the physics at every point (the line's load, the queues), so each point is
a whole solve: PDD's search over its two variants (the anomalous filter on and off), each over
every routing and hand-over mode; the chosen plan's final figures (the decode pools' working
steps, a fixed point, and the TTFT percentiles there), with the other variant's where their
costs tie; the baselines' searches; and each plan's fleet goodput (a bisection on the rate).
This script runs a rate sweep of the default scenario on one core with timers on those phases
and prints each one's time per point and its share, then counts the function calls a point
makes (a second sweep under :mod:`cProfile`): the figure that bounds what removing work from
the phases can reach, since a point's time is spread over that many calls of a few
microseconds each rather than spent in a few large ones.

Times are wall time (``time.perf_counter``: a phase's calls are microseconds long, below
what the CPU clock's calls resolve cheaply), so run it on an otherwise idle machine;
``bench_goals.py``'s sweep rows are CPU time. The phases are timed inclusively (a nested
phase is listed under its parent, indented); the timers add about 1% to a point. "other" is the point less the listed top-level phases: the
scenario's resolve, the problems' builds, the comparisons and the row.

Usage: python benchmarks/bench_sweep_point.py [--points N] [--no-baselines]
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import functools
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_goals import fresh_values  # noqa: E402  (one home: a run's own points)

from pddplan.solver import fleet, search, sizing  # noqa: E402
from pddplan.solver.cache import DEFAULT_CACHE  # noqa: E402
from pddplan.whatif import Axis, run_sweep  # noqa: E402

#: (label, depth, owner, attribute, which calls count): the phases timed, in report order.
#: ``which``: "pdd" for calls on PDD's problems only, "base" for the baselines' only, "" all.
PHASES: list[tuple[str, int, Any, str, str]] = [
    ("PDD's searches (both variants)", 0, search.Solver, "candidate_rate", "pdd"),
    ("physics of every routing at the rate (batched)", 1, search.Solver, "_by_routing", "pdd"),
    ("best plan of each routing and hand-over mode", 1, search.Solver, "_best_for", "pdd"),
    ("ties of equal cost ranked by TTFT", 1, search.Solver, "_after_ties", "pdd"),
    ("final figures of the plans compared", 0, search.Solver, "finalized", ""),
    ("TTFT at the decode pools' working steps", 1, sizing.Sizing, "_reported_ttft", ""),
    ("the working steps (a fixed point each)", 2, sizing.Sizing, "_first_steps", ""),
    ("the baselines' searches", 0, search.Solver, "candidate_rate", "base"),
    ("fleet goodputs (bisection on the rate)", 0, fleet, "_goodput_bracket", ""),
]


def _problem_of(args: tuple[Any, ...]) -> Any:
    """The problem a timed call runs on: its solver's (``self``), or the solver argument's."""
    owner = args[0] if args else None
    return getattr(owner, "pb", None)


def _timed(
    fn: Callable[..., Any], label: str, which: str, totals: collections.Counter[str]
) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if which:
            pb = _problem_of(args)
            is_pdd = pb is not None and pb.topology.name == "pdd"
            if is_pdd != (which == "pdd"):
                return fn(*args, **kwargs)
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            totals[label] += time.perf_counter() - t0

    return wrapper


def _sweep(rates: list[float], baselines: bool, run: int) -> float:
    """Seconds of one sweep over ``rates`` (:func:`fresh_values` of ``run``) on one core."""
    DEFAULT_CACHE.clear()
    t0 = time.perf_counter()
    run_sweep(None, [], [Axis("rate_rps", fresh_values(rates, run))], jobs=1, baselines=baselines)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=200)
    ap.add_argument("--no-baselines", action="store_true", help="sweep with --no-baselines")
    a = ap.parse_args()
    n = a.points
    baselines = not a.no_baselines
    rates = [round(1.0 + 2.0 * i / max(n - 1, 1), 6) for i in range(n)]
    run_sweep(None, [], [Axis("rate_rps", [r * 1.37 for r in rates[:3]])], baselines=baselines)

    bare = _sweep(rates, baselines, 1)  # no timers: the point's own time
    totals: collections.Counter[str] = collections.Counter()
    kept = []
    for label, _depth, owner, attr, which in PHASES:
        inner = getattr(owner, attr)
        kept.append((owner, attr, inner))
        setattr(owner, attr, _timed(inner, label, which, totals))
    try:
        timed = _sweep(rates, baselines, 2)
    finally:
        for owner, attr, inner in reversed(kept):
            setattr(owner, attr, inner)

    prof = cProfile.Profile()
    DEFAULT_CACHE.clear()
    prof.enable()
    run_sweep(None, [], [Axis("rate_rps", fresh_values(rates, 3))], jobs=1, baselines=baselines)
    prof.disable()
    stats = pstats.Stats(prof)
    calls = sum(nc for (_f, _l, _n), (_cc, nc, *_rest) in stats.stats.items())  # type: ignore[attr-defined]
    py_calls = sum(
        nc
        for (f, _l, _n), (_cc, nc, *_rest) in stats.stats.items()  # type: ignore[attr-defined]
        if f != "~"
    )

    ms = 1e3 / n
    what = "with the baselines" if baselines else "without the baselines (--no-baselines)"
    print(f"rate sweep of the default scenario, {n} points {what}, one core")
    print(f"  {n / bare:.0f} points/s untimed: {bare * ms:.2f} ms a point (goal >= 1,000: 1 ms)")
    print(f"  timed: {timed * ms:.2f} ms a point; by phase (inclusive), ms a point and share:")
    top = 0.0
    for label, depth, *_ in PHASES:
        v = totals[label]
        top += v if depth == 0 else 0.0
        print(f"    {'  ' * depth}{label:<{52 - 2 * depth}} {v * ms:6.2f}  {100 * v / timed:5.1f}%")
    other = timed - top
    print(f"    {'other':<52} {other * ms:6.2f}  {100 * other / timed:5.1f}%")
    print(
        f"  function calls a point: {calls / n:,.0f} ({py_calls / n:,.0f} of Python functions), "
        f"{bare / calls * 1e9:.0f} ns each on average untimed"
    )


if __name__ == "__main__":
    main()
