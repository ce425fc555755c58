"""Speed figures for `pddplan topology` (issue 24: many datacenters).

Prints the wall and CPU time of planning the bundled national topology
(examples/topologies/national.yaml), plain and with ``--resilient``, each the median of
several runs in fresh processes (so no run reuses another's sizing), on one core.

Usage: python benchmarks/bench_topology.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NATIONAL = ROOT / "examples" / "topologies" / "national.yaml"


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of ``pddplan ARGV`` in a fresh process pinned to one core."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "pddplan", *argv]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", "0", *cmd]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def report(label: str, argv: list[str], runs: int) -> None:
    got = [timed(argv) for _ in range(runs)]
    wall = statistics.median(w for w, _ in got)
    cpu = statistics.median(c for _, c in got)
    print(f"{label:<40} wall {wall:7.2f} s   cpu {cpu:7.2f} s   (median of {runs})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="runs per figure (median)")
    args = ap.parse_args()
    national = str(NATIONAL.relative_to(ROOT))
    report("topology national", ["topology", national, "-f", "json"], args.runs)
    report(
        "topology national --resilient",
        ["topology", national, "--resilient", "-f", "json"],
        args.runs,
    )


if __name__ == "__main__":
    main()
