"""Every speed and memory figure of the planner beside its goal, in one run.

Prints one table: each figure measured (the median of several fresh processes where a
command is timed end to end, CPU time of the child, user + system; the median of as many
in-process sweeps for the sweep rows, points per second of CPU time; the median of up to three
wall times for the two-process robust study), its goal and whether it is met, with reference
rows without a goal: a bare interpreter importing the libraries a solve imports (numpy,
pydantic, typer), which no solve can go below, and the default solve without its verdict check;
then, when NVIDIA's aiconfigurator is installed
(``aiconfigurator`` on the PATH), its ``cli default`` run beside ``pddplan solve`` as a
CPU-time ratio measured in the same run.

The commands run as an installed package runs them: with their bytecode cached. Where the
environment turns bytecode writing off (``PYTHONDONTWRITEBYTECODE``, which makes every start
compile the package from source, about 0.1 s), the children get a private cache directory
(``PYTHONPYCACHEPREFIX``) and one warm-up run each; the first line says which.

Usage: python benchmarks/bench_goals.py [--runs N] [--samples N] [--quick] [--against DIR]

``--quick`` skips the robust study (the slowest figure) and runs each command and sweep three
times. ``--against DIR`` (another checkout of pddplan, a ``git worktree`` or ``git archive`` of
the commit to compare with) adds a table of the command rows measured in both checkouts,
alternating run by run and which goes first (this machine's speed drifts by 10-50% within
minutes: only figures measured in the same minutes compare), with each figure's change.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_solve import scenario_files  # noqa: E402  (one home for the inputs)

#: A peer planner's default run (aiconfigurator's own usage example, without its generator
#: options), for the CPU-time ratio.
PEER = [
    "aiconfigurator",
    "cli",
    "default",
    "--model",
    "Qwen/Qwen3-32B-FP8",
    "--total-gpus",
    "8",
    "--system",
    "h200_sxm",
    "--ttft",
    "600",
    "--tpot",
    "50",
    "--isl",
    "4000",
    "--osl",
    "500",
]


def child_env(cache_dir: str) -> tuple[dict[str, str], str]:
    """The children's environment and a note on how their bytecode is cached."""
    env = dict(os.environ)
    if env.pop("PYTHONDONTWRITEBYTECODE", None):
        env["PYTHONPYCACHEPREFIX"] = cache_dir
        return env, f"bytecode cached in {cache_dir} (this environment turns writing it off)"
    return env, "bytecode cached as Python does by default"


def cpu_s(argv: list[str], env: dict[str, str], runs: int, ok: bool = True) -> float:
    """Median CPU time (user + system) of ``argv`` in fresh processes [s]."""
    return statistics.median(_cpu_one(argv, env, ok) for _ in range(runs))


def _cpu_one(
    argv: list[str], env: dict[str, str], ok: bool = True, cwd: str | None = None
) -> float:
    """CPU time (user + system) of one fresh process of ``argv`` [s]."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=ok, capture_output=True, env=env, cwd=cwd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def paired_cpu_s(
    argv: list[str], envs: tuple[dict[str, str], dict[str, str]], runs: int, ok: bool, cwd: str
) -> tuple[float, float]:
    """Median CPU times of ``argv`` under each of two environments (two checkouts), run by
    run, the first of each pair alternating [s]; ``cwd`` is a directory that holds no
    checkout (``python -m`` looks in the working directory before ``PYTHONPATH``)."""
    out: tuple[list[float], list[float]] = ([], [])
    for i in range(runs):
        for k in (0, 1) if i % 2 == 0 else (1, 0):
            out[k].append(_cpu_one(argv, envs[k], ok, cwd))
    return statistics.median(out[0]), statistics.median(out[1])


def first_run_cpu_s(argv: list[str], env: dict[str, str], runs: int, root: Path) -> float:
    """:func:`cpu_s` of a first run: each in an empty cache directory of its own
    (``PDDPLAN_CACHE_DIR``: no parsed profile, no physics table kept from an earlier run)."""
    out = []
    for i in range(runs):
        first = dict(env, PDDPLAN_CACHE_DIR=str(root / f"empty-{i}"))
        out.append(cpu_s(argv, first, 1))
    return statistics.median(out)


def wall_s(argv: list[str], env: dict[str, str], runs: int = 1) -> float:
    """Median wall time of ``runs`` runs of ``argv`` [s] (for the multi-process robust study,
    whose processes' CPU time is spread over two cores)."""
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env=env)
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def peak_rss_mb(args: list[str], env: dict[str, str]) -> float:
    """Peak resident memory of one ``python -m pddplan ARGS`` process [MB]: its own
    ``ru_maxrss``, as the operating system counts it when it ends (``os.wait4``)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pddplan", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait
    return usage.ru_maxrss / 1024 if proc.returncode == 0 else float("nan")


def fresh_values(values: list[float], run: int) -> list[float]:
    """``values`` moved by ``run`` parts in 10^9: points no earlier sweep of this process
    solved, so that no memo keyed on a swept value (the search's, the queues' wait tables, the
    TTFT percentiles' at a rate) answers from an earlier run, as none does for a user's
    sweep."""
    return [v * (1.0 + 1e-9 * run) for v in values]


def sweep_points_per_s(path: str, values: list[float], baselines: bool, runs: int) -> float:
    """Points per second of CPU time of an in-process sweep on one core, the median of
    ``runs`` sweeps (imports and caches warmed by a three-point sweep of other values first;
    CPU time, as the commands' rows, so that other load on the machine moves it less). Each
    run sweeps its own :func:`fresh_values`: the runs after the first once met the first one's
    wait tables and percentiles, rate by rate, which made a rate sweep 13-17% faster than
    any user's."""
    from pddplan.solver.cache import DEFAULT_CACHE
    from pddplan.whatif import Axis, run_sweep

    run_sweep(None, [], [Axis(path, [v * 1.37 for v in values[:3]])], baselines=baselines)
    out = []
    for run in range(1, runs + 1):
        DEFAULT_CACHE.clear()  # nothing kept from an earlier sweep
        points = fresh_values(values, run)
        t0 = time.process_time()
        run_sweep(None, [], [Axis(path, points)], jobs=1, baselines=baselines)
        out.append(len(values) / (time.process_time() - t0))
    return statistics.median(out)


def main() -> None:
    from pddplan.cli import BLAS_THREAD_VARIABLES

    for name in BLAS_THREAD_VARIABLES:  # the in-process sweeps run as a command would
        os.environ.setdefault(name, "1")
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--samples", type=int, default=1000, help="robust study samples")
    ap.add_argument("--points", type=int, default=200, help="points of each sweep")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument(
        "--against",
        type=Path,
        metavar="DIR",
        help="another checkout of pddplan: the command rows measured in both, alternating",
    )
    a = ap.parse_args()
    if a.against is not None and not (a.against / "pddplan" / "__init__.py").is_file():
        ap.error(f"--against {a.against}: no pddplan package there (allowed: a checkout's root)")
    runs = 3 if a.quick else a.runs
    rows: list[tuple[str, float, str, float, str]] = []  # label, value, unit, goal, sense

    def add(label: str, value: float, unit: str, goal: float, sense: str = "<") -> None:
        rows.append((label, value, unit, goal, sense))

    with tempfile.TemporaryDirectory() as d:
        env, note = child_env(str(Path(d) / "pyc"))
        print(note)
        pdd = [sys.executable, "-m", "pddplan"]
        files = scenario_files(Path(d))
        bad, lay, full = files["typo"], files["layouts"], files["full"]
        cases = [
            ("pddplan --help", ["--help"], 0.15, True),
            ("a validation error (solve typo.yaml)", ["solve", str(bad)], 0.2, False),
            ("an unknown key (solve unknown.yaml)", ["solve", str(files["unknown"])], 0.2, False),
            ("a value out of range (solve value.yaml)", ["solve", str(files["value"])], 0.2, False),
            ("pddplan profiles list", ["profiles", "list"], 0.3, True),
            ("pddplan solve (default scenario)", ["solve", "-f", "json"], 0.25, True),
            ("solve --max-bcr (default scenario)", ["solve", "--max-bcr", "-f", "json"], 1.0, True),
            # budget mode walks the same staircase as max-BCR, so it has max-BCR's goal
            (
                "solve --budget 176 (default scenario)",
                ["solve", "--budget", "176", "-f", "json"],
                1.0,
                True,
            ),
            ("solve, full catalog x3, every layout", ["solve", str(lay), "-f", "json"], 1.0, True),
            ("pddplan bathtub", ["bathtub", "-f", "json"], 2.0, True),
            ("pddplan report", ["report"], 3.0, True),
        ]
        for _, args, _, ok in cases:  # warm the bytecode cache and the profile cache
            subprocess.run([*pdd, *args], check=ok, capture_output=True, env=env)
        for label, args, goal, ok in cases:
            add(label, cpu_s([*pdd, *args], env, runs, ok), "s CPU", goal)
        if a.against is not None:
            paired = _paired_rows(pdd, cases, env, a.against.resolve(), runs, d)
        # the same commands on a machine that has run none before (nothing kept on disk)
        for label, args in (
            ("pddplan solve, first run", ["solve", "-f", "json"]),
            ("full catalog x3, every layout, first run", ["solve", str(lay), "-f", "json"]),
        ):
            add(label, first_run_cpu_s([*pdd, *args], env, runs, Path(d)), "s CPU", math.nan, "")
        # what no command can go below: the interpreter and the libraries a solve imports (not
        # rich, whose layout the table format no longer needs, nor PyYAML, as the parse cache
        # keeps the bundled documents parsed)
        floor = [sys.executable, "-c", "import numpy, pydantic, typer"]
        add(
            "floor: python + numpy, pydantic, typer",
            cpu_s(floor, env, runs),
            "s CPU",
            math.nan,
            "",
        )
        # the default solve without its verdict check: how much of the solve row that check is
        add(
            "solve --no-verdict-check (default scenario)",
            cpu_s([*pdd, "solve", "--no-verdict-check", "-f", "json"], env, runs, True),
            "s CPU",
            math.nan,
            "",
        )
        add("peak RSS of pddplan solve", peak_rss_mb(["solve"], env), "MB", 100.0)
        add(
            "peak RSS, full catalog x3",
            peak_rss_mb(["solve", str(full), "-f", "json"], env),
            "MB",
            100.0,
        )
        if not a.quick:
            robust = [*pdd, "robust", "pdd-paper", "--samples", str(a.samples), "--jobs", "2"]
            add(
                f"robust pdd-paper --samples {a.samples}, 2 jobs",
                wall_s([*robust, "-f", "json"], env, min(runs, 3)),
                "s wall",
                5.0,
            )
        n = a.points
        rates = [round(1.0 + 2.0 * i / max(n - 1, 1), 6) for i in range(n)]
        prices = [round(2.0 + 2.0 * i / max(n - 1, 1), 6) for i in range(n)]
        add(
            "rate sweep, one core",
            sweep_points_per_s("rate_rps", rates, True, runs),
            "points/s",
            1000.0,
            ">",
        )
        # the issue's own example of a rate sweep is without the baselines
        add(
            "rate sweep without baselines",
            sweep_points_per_s("rate_rps", rates, False, runs),
            "points/s",
            1000.0,
            ">",
        )
        add(
            "price sweep, one core",
            sweep_points_per_s("chips.gpu-b.price_usd_per_hour", prices, True, runs),
            "points/s",
            2000.0,
            ">",
        )
        add(
            "price sweep without baselines",
            sweep_points_per_s("chips.gpu-b.price_usd_per_hour", prices, False, runs),
            "points/s",
            2000.0,
            ">",
        )
        width = max(len(r[0]) for r in rows)
        print(f"{'figure':{width}}  {'measured':>10}  {'unit':9}  {'goal':>10}  met")
        for label, value, unit, goal, sense in rows:
            if not sense:  # a reference figure, no goal
                print(f"{label:{width}}  {value:10.3f}  {unit:9}  {'-':>10}  -")
                continue
            met = value < goal if sense == "<" else value >= goal
            print(
                f"{label:{width}}  {value:10.3f}  {unit:9}  {sense} {goal:<8g}  "
                f"{'yes' if met else 'no'}"
            )
        if a.against is not None:
            print(f"\npaired, alternating run by run: this checkout and {a.against}")
            print(f"{'figure':{width}}  {'this':>10}  {'against':>10}  {'unit':9}  change")
            for label, mine, theirs in paired:
                change = f"{(mine / theirs - 1) * 100:+.0f}%" if theirs > 0 else "-"
                print(f"{label:{width}}  {mine:10.3f}  {theirs:10.3f}  {'s CPU':9}  {change}")
        peer = shutil.which(PEER[0])
        if peer is None:
            print("peer: aiconfigurator is not installed (pip install aiconfigurator): no ratio")
        else:
            theirs = cpu_s(PEER, env, 1)
            ours = cpu_s([*pdd, "solve", "-f", "json"], env, runs)
            print(
                f"peer: aiconfigurator cli default {theirs:.2f} s CPU, pddplan solve "
                f"{ours:.2f} s CPU: {theirs / ours:.1f}x"
            )


def _paired_rows(
    pdd: list[str],
    cases: list[tuple[str, list[str], float, bool]],
    env: dict[str, str],
    against: Path,
    runs: int,
    d: str,
) -> list[tuple[str, float, float]]:
    """Each command row's CPU time in this checkout and in ``against``, measured alternately
    (:func:`paired_cpu_s`), each checkout warmed first (its bytecode, its cache entries)."""
    this = Path(__file__).resolve().parent.parent
    envs = (dict(env, PYTHONPATH=str(this)), dict(env, PYTHONPATH=str(against)))
    for e in envs:
        for _, args, _, ok in cases:
            subprocess.run([*pdd, *args], check=ok, capture_output=True, env=e, cwd=d)
    return [
        (label, *paired_cpu_s([*pdd, *args], envs, runs, ok, d)) for label, args, _, ok in cases
    ]


if __name__ == "__main__":
    main()
