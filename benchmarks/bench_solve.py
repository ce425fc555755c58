"""Speed figures for `pddplan solve` (issue: solve).

Prints, each the median of several runs in fresh processes (wall and CPU time, peak RSS):
`pddplan --help`, a validation error, `profiles list`, `pddplan solve` on the default scenario
end to end (with and without its verdict check), and searches over every chip assignment of the
full shipped catalog (all chips, three roles, 4/8/16 chips per instance), with every layout.

Usage: python benchmarks/bench_solve.py [--runs N]
"""

from __future__ import annotations

import argparse
import resource
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


#: A complete scenario with one value out of its range (``rate_rps`` below 0): the schemas load
#: to reject it.
VALUE_ERROR = """kind: scenario
name: value-error
model: qwen3-235b-a22b
workload: agent-64k
link: wan-100g-cross-city
rdma: rdma-400g
roles:
  P: {chips: [gpu-a], chips_per_instance: [8]}
  RLD: {chips: [gpu-a], chips_per_instance: [8]}
  MD: {chips: [gpu-b], chips_per_instance: [8]}
sla: {ttft_p50_s: 5.0, ttft_p90_s: 10.0, ttft_p99_s: 20.0, tpot_ms: 50.0}
rate_rps: -1
"""


def scenario_files(d: Path) -> dict[str, Path]:
    """The benchmark's input files written into ``d``: ``typo`` (a YAML syntax error),
    ``unknown`` (a key the schema does not know), ``value`` (a value out of its range), ``full`` (the full catalog), ``layouts`` (it
    with every layout) and ``paper-layouts``."""
    texts = {
        "typo": "kind: scenario\nrate_rps: [\n",
        "unknown": "kind: scenario\nname: x\nmodel: qwen3-235b-a22b\nbogus_key: 1\n",
        "value": VALUE_ERROR,
        "full": FULL_CATALOG,
        "layouts": LAYOUTS,
        "paper-layouts": PAPER_LAYOUTS,
    }
    out = {}
    for name, text in texts.items():
        out[name] = d / f"{name}.yaml"
        out[name].write_text(text)
    return out


def run_s(args: list[str], runs: int, ok: bool = True) -> tuple[float, float, float]:
    """Median wall time, CPU time (user + system, the child's) and the largest peak RSS [MB]
    of ``pddplan ARGS`` in fresh processes (``ok``: it must exit 0)."""
    walls, cpus, rss = [], [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pddplan", *args], check=ok, capture_output=True)
        walls.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
        rss.append(after.ru_maxrss / 1024)  # the largest child so far, in KB on Linux
    return statistics.median(walls), statistics.median(cpus), max(rss)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        files = scenario_files(Path(d))
        full, bad, lay, pl = files["full"], files["typo"], files["layouts"], files["paper-layouts"]
        few = max(1, a.runs // 2)
        cases = [
            ("pddplan --help", ["--help"], a.runs, True, "< 0.15 s"),
            ("a validation error (solve typo.yaml)", ["solve", str(bad)], a.runs, False, "< 0.2 s"),
            ("pddplan profiles list", ["profiles", "list"], a.runs, True, "< 0.3 s"),
            ("pddplan solve (default scenario)", ["solve", "-f", "json"], a.runs, True, "< 0.25 s"),
            (
                "solve --no-verdict-check",
                ["solve", "--no-verdict-check", "-f", "json"],
                a.runs,
                True,
                "",
            ),
            (
                "pddplan solve (full catalog x3)",
                ["solve", str(full), "-f", "json"],
                few,
                True,
                "< 1 s",
            ),
            (
                "solve, paper, 8/16 chips, layouts",
                ["solve", str(pl), "-f", "json"],
                a.runs,
                True,
                "< 1 s",
            ),
            (
                "solve, full catalog x3, layouts",
                ["solve", str(lay), "-f", "json"],
                few,
                True,
                "< 1 s",
            ),
        ]
        for label, args, runs, ok, goal in cases:
            wall, cpu, rss = run_s(args, runs, ok)
            rows.append((label, wall, cpu, rss, goal))
    print(f"{'what':40} {'wall [s]':>9} {'CPU [s]':>8} {'peak RSS [MB]':>14}   goal (CPU)")
    for label, wall, cpu, rss, goal in rows:
        print(f"{label:40} {wall:9.3f} {cpu:8.3f} {rss:14.0f}   {goal}")
    print("peak RSS goal for solve: < 100 MB (the RSS column is the largest process so far)")


if __name__ == "__main__":
    main()
