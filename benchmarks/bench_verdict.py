"""Work of the verdict check (:func:`pddplan.robust.verdict.check_verdict`): fleet checks and
their time (the solve memoized, so the check is most of it).

Counts the fleet checks (:func:`pddplan.solver.fleet.check_fleet`) one ``pddplan.api.solve`` of
the default scenario makes in its verdict check, in the rate mode and the max-BCR mode, with how
many checks each outcome took, and the wall time of the check on one core (the solve itself is
done first, so that the check's own work is what is timed). The counts are the same on every
machine: they move only when the search does.

Usage: python benchmarks/bench_verdict.py
"""

from __future__ import annotations

import collections
import time

from pddplan import api
from pddplan.robust import verdict


def measure(max_bcr: bool) -> tuple[int, collections.Counter[tuple[int, str]], float, int]:
    """(fleet checks, outcomes by (checks, result), seconds, checks left at their first part)
    of one solve's verdict check: a probe that a fleet's line or decode pools decide reads no
    TTFT distribution (:func:`pddplan.solver.fleet.check_start`)."""
    checks = starts = finished = 0
    inner_check = verdict.check_fleet
    inner_start = verdict.check_start
    inner_outcome = verdict._OnSample.outcome
    outcomes: collections.Counter[tuple[int, str]] = collections.Counter()

    def counting(*args, **kwargs):
        nonlocal checks, finished
        checks += 1
        finished += kwargs.get("start") is not None
        return inner_check(*args, **kwargs)

    def starting(*args, **kwargs):
        nonlocal starts
        starts += 1
        return inner_start(*args, **kwargs)

    def outcome(self, theirs, start):
        before = checks
        got = inner_outcome(self, theirs, start)
        outcomes[(checks - before, got)] += 1
        return got

    verdict.check_fleet = counting  # type: ignore[assignment]
    verdict.check_start = starting  # type: ignore[assignment]
    verdict._OnSample.outcome = outcome  # type: ignore[method-assign]
    try:
        api.solve(max_bcr=max_bcr, verdict_check=False)  # the solve's own work, memoized
        t0 = time.perf_counter()
        api.solve(max_bcr=max_bcr)
        seconds = time.perf_counter() - t0
    finally:
        verdict.check_fleet = inner_check  # type: ignore[assignment]
        verdict.check_start = inner_start  # type: ignore[assignment]
        verdict._OnSample.outcome = inner_outcome  # type: ignore[method-assign]
    return checks, outcomes, seconds, starts - finished


def main() -> None:
    for label, max_bcr in (("rate mode", False), ("max-BCR mode", True)):
        checks, outcomes, seconds, partial = measure(max_bcr)
        one = sum(n for (k, _), n in outcomes.items() if k <= 2)
        print(
            f"default scenario, {label}: {checks} fleet checks (and {partial} left at their "
            f"first part, a line or decode pool that misses), {sum(outcomes.values())} "
            f"outcomes ({one} decided in one step), solve with its verdict check {seconds:.2f} s"
        )
        by = sorted(outcomes.items())
        print("  checks x outcomes: " + ", ".join(f"{k}:{r} x{n}" for (k, r), n in by))


if __name__ == "__main__":
    main()
