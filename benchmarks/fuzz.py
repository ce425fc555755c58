"""Fuzz pddplan's input surfaces and print how each case ended.

Usage: python benchmarks/fuzz.py [--cases 5000] [--jobs 2] [--seed 0] [--surface NAME ...]

Cases come from the Hypothesis strategies of tests/fuzz/fuzz_harness.py (scenario and profile
YAML, hostile YAML text, CLI options, traces, calibration CSVs, plan JSON, API overrides, link
calibration --fit/--fix, robust and its uncertainty block, layouts, inventory, fleets that may
cost nothing, step --set, the procurement report); each
runs in-process with a 30 s CPU-time limit and a 4 GB address-space limit, and is classified as ok, error
(clean), wrong-place (an error naming neither the file nor the key), traceback (or an internal
error, pddplan's word for its own bug), slow or silent (exit 0 on nonsense). Prints the counts per class and surface, and the first examples of each
failure kind. Exit status 1 when any traceback, slow run or silent success was seen.
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing
import resource
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fuzz"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # time_limits

import fuzz_harness as fh  # noqa: E402

FAILURES = ("traceback", "slow", "silent", "wrong-place")


def _worker(args: tuple[int, int, tuple[str, ...], int]) -> list[tuple[str, str, str, str]]:
    n, seed, surfaces, mem_gb = args
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    resource.setrlimit(resource.RLIMIT_AS, (mem_gb << 30, mem_gb << 30))
    warnings.simplefilter("ignore")
    fh.plan_doc()
    out: list[tuple[str, str, str, str]] = []

    @hseed(seed)
    @settings(
        max_examples=n,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(fh.cases(surfaces))
    def run(case: fh.Case) -> None:
        o = fh.run_case(case)
        detail = o.detail or (o.stderr.strip().splitlines() or [""])[-1]
        out.append((case.surface, o.kind, case.describe(), f"{detail} ({o.elapsed_s:.1f} s)"))

    run()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=5000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--surface", action="append", choices=sorted(fh.SURFACES))
    ap.add_argument("--examples", type=int, default=3, help="examples printed per failure kind")
    ap.add_argument("--mem-gb", type=int, default=4)
    a = ap.parse_args()
    surfaces = tuple(a.surface or fh.SURFACES)
    jobs = max(1, a.jobs)
    per = [a.cases // jobs + (i < a.cases % jobs) for i in range(jobs)]
    t0 = time.perf_counter()
    work = [(n, a.seed * 1000 + i, surfaces, a.mem_gb) for i, n in enumerate(per) if n]
    if jobs == 1:
        results = [_worker(w) for w in work]
    else:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            results = pool.map(_worker, work)
    rows = [r for res in results for r in res]
    elapsed = time.perf_counter() - t0

    by_class = collections.Counter(kind for _, kind, _, _ in rows)
    by_surface: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for surface, kind, _, _ in rows:
        by_surface[surface][kind] += 1
    print(f"{len(rows)} cases in {elapsed:.0f} s ({jobs} processes, seed {a.seed})")
    print()
    print(f"{'surface':<10}" + "".join(f"{c:>12}" for c in fh.CLASSES))
    for s in sorted(by_surface):
        print(f"{s:<10}" + "".join(f"{by_surface[s][c]:>12}" for c in fh.CLASSES))
    print(f"{'total':<10}" + "".join(f"{by_class[c]:>12}" for c in fh.CLASSES))
    for kind in FAILURES:
        seen = [r for r in rows if r[1] == kind]
        if not seen:
            continue
        print(f"\n== {kind}: {len(seen)}")
        distinct: dict[str, tuple[str, str]] = {}
        for surface, _, desc, detail in seen:
            distinct.setdefault(surface + detail.rsplit(" (", 1)[0][:160], (desc, detail))
        for desc, detail in list(distinct.values())[: a.examples]:
            print(f"- {detail}\n  {desc[:600]}")
        if len(distinct) > a.examples:
            print(f"  ({len(distinct)} distinct messages)")
    bad = sum(by_class[k] for k in ("traceback", "slow", "silent"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
