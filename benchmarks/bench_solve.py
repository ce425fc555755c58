"""Speed figures for `pddplan solve` (issue: solve).

Prints: `pddplan --help` wall time, `pddplan solve` on the default scenario end to end, and a
search over every chip assignment of the full shipped catalog (all chips, three roles, 4/8/16
chips per instance). Each is the median of several runs in fresh processes.

Usage: python benchmarks/bench_solve.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FULL_CATALOG = """\
kind: scenario
name: full-catalog
model: qwen3-235b-a22b
workload: agent-64k
link: wan-100g-cross-city
rdma: rdma-400g
roles:
  P: {chips: ["*"], chips_per_instance: [4, 8, 16]}
  RLD: {chips: ["*"], chips_per_instance: [4, 8, 16]}
  MD: {chips: ["*"], chips_per_instance: [4, 8, 16]}
baseline: {chip: gpu-a, chips_per_instance: 8}
sla: {ttft_p50_s: 5, ttft_p90_s: 10, ttft_p99_s: 20, tpot_ms: 50}
rate_rps: 2.35
"""


# the same catalog with every parallel layout in the search (TP, EP with DP attention, EP with
# two-batch overlap for the MoE model)
LAYOUTS = FULL_CATALOG.replace(
    "chips_per_instance: [4, 8, 16]}", "chips_per_instance: [4, 8, 16], layouts: [tp, ep, ep-tbo]}"
).replace(
    "baseline: {chip: gpu-a, chips_per_instance: 8}",
    "baseline: {chip: gpu-a, chips_per_instance: 8, layouts: [tp, ep, ep-tbo]}",
)
PAPER_LAYOUTS = """\
kind: scenario
name: paper-layouts
model: qwen3-235b-a22b
workload: agent-64k
link: pdd-paper-line
rdma: rdma-400g
roles:
  P: {chips: [gpu-a], chips_per_instance: [8, 16], layouts: [tp, ep, ep-tbo]}
  RLD: {chips: [gpu-a], chips_per_instance: [8, 16], layouts: [tp, ep, ep-tbo]}
  MD: {chips: [gpu-b], chips_per_instance: [8, 16], layouts: [tp, ep, ep-tbo]}
baseline: {chip: gpu-a, chips_per_instance: 8, layouts: [tp, ep, ep-tbo]}
sla: {ttft_p50_s: 5, ttft_p90_s: 10, ttft_p99_s: 20, tpot_ms: 50}
rate_rps: 2.35
"""


def wall_s(args: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pddplan", *args], check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        full = Path(d) / "full-catalog.yaml"
        full.write_text(FULL_CATALOG)
        help_s = wall_s(["--help"], a.runs)
        solve_s = wall_s(["solve", "--format", "json"], a.runs)
        full_s = wall_s(["solve", str(full), "--format", "json"], max(1, a.runs // 2))
        lay = Path(d) / "layouts.yaml"
        lay.write_text(LAYOUTS)
        lay_s = wall_s(["solve", str(lay), "--format", "json"], max(1, a.runs // 2))
        pl = Path(d) / "paper-layouts.yaml"
        pl.write_text(PAPER_LAYOUTS)
        pl_s = wall_s(["solve", str(pl), "--format", "json"], a.runs)
    print(f"pddplan --help                      {help_s:6.3f} s   (goal < 0.3 s)")
    print(f"pddplan solve (default scenario)    {solve_s:6.3f} s   (goal < 1 s)")
    print(f"pddplan solve (full catalog x3)     {full_s:6.3f} s   (goal < 5 s)")
    print(f"solve, paper, 8/16 chips, layouts   {pl_s:6.3f} s   (goal < 1 s)")
    print(f"solve, full catalog x3, layouts     {lay_s:6.3f} s   (goal < 5 s)")


if __name__ == "__main__":
    main()
