"""Instructions each command executes: a measure of work that does not drift with the machine.

This machine's CPU times drift by 10-50% from one minute to the next (docs/speed.md), so a change
of a few percent cannot be told from noise by timing, however often the runs alternate. The
number of instructions a process executes does not drift: run twice, a command gives the same
count to about 0.1%. This script counts them with valgrind's cachegrind (``--cache-sim=no``:
instruction counts only, about 30-50 times slower than a plain run) for a set of commands
(the default solve with and without its verdict check, ``--help``, a 21-point rate sweep,
``bathtub``, ``report``, and a 100-sample robust study on one process), and, with ``--against
DIR``, the same commands in another checkout, with the change of each.

Instructions are not time: memory stalls, which an instruction count does not see, take part of
every run (the garbage collector's walks, say), so the timed figures of ``bench_goals.py`` stay
the goals' measure. A count tells whether a change does less work, and how much.

Each command runs in a fresh process from an empty working directory, with one BLAS thread, a
private parse cache and a private bytecode cache, both filled by one plain run of the same
command first (as ``bench_goals.py``'s rows run).

Usage: python benchmarks/bench_instructions.py [--against DIR] [--only NAME ...]

Needs ``valgrind`` on the PATH (Debian's ``valgrind`` package); without it, says so and exits
with status 2.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: (name, pddplan arguments): the commands counted.
COMMANDS: list[tuple[str, list[str]]] = [
    ("help", ["--help"]),
    ("solve", ["solve"]),
    ("solve --no-verdict-check", ["solve", "--no-verdict-check"]),
    ("solve --max-bcr", ["solve", "--max-bcr", "-f", "json"]),
    ("solve --budget 176", ["solve", "--budget", "176", "-f", "json"]),
    ("rate sweep, 21 points", ["sweep", "--set", "rate_rps=0.5:2.5:0.1", "-f", "csv"]),
    ("bathtub", ["bathtub", "-f", "json"]),
    ("report", ["report", "-f", "json"]),
    (
        "robust, 100 samples, 1 process",
        ["robust", "pdd-paper", "--samples", "100", "--seed", "0", "--jobs", "1", "-f", "json"],
    ),
]

_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def count(checkout: Path, args: list[str], env: dict[str, str], cwd: Path) -> int:
    """Instructions of ``python -m pddplan ARGS`` run from ``checkout``."""
    cmd = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        "-m",
        "pddplan",
        *args,
    ]
    r = subprocess.run(
        cmd, env=dict(env, PYTHONPATH=str(checkout)), cwd=cwd, capture_output=True, text=True
    )
    m = _REFS.search(r.stderr)
    if r.returncode != 0 or m is None:
        tail = r.stderr.strip().splitlines()[-1:] or ["no output"]
        raise SystemExit(f"bench_instructions: pddplan {' '.join(args)} failed: {tail[0]}")
    return int(m.group(1).replace(",", ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--against", type=Path, help="another checkout of pddplan (its root)")
    ap.add_argument(
        "--only",
        nargs="+",
        metavar="NAME",
        help="count only these commands (a name as printed, or its first word)",
    )
    a = ap.parse_args()
    if shutil.which("valgrind") is None:
        print("bench_instructions: valgrind is not on the PATH (apt install valgrind)")
        raise SystemExit(2)
    if a.against is not None and not (a.against / "pddplan" / "__init__.py").is_file():
        ap.error(f"--against {a.against}: no pddplan package there (allowed: a checkout's root)")
    checkouts = [ROOT] + ([a.against.resolve()] if a.against is not None else [])
    rows = [c for c in COMMANDS if not a.only or c[0] in a.only or c[0].split()[0] in a.only]
    with tempfile.TemporaryDirectory() as tmp:
        base = dict(os.environ, OPENBLAS_NUM_THREADS="1")
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        cwd = Path(tmp) / "work"
        cwd.mkdir()
        envs = [
            dict(
                base,
                PDDPLAN_CACHE_DIR=str(Path(tmp) / f"cache{i}"),
                PYTHONPYCACHEPREFIX=str(Path(tmp) / f"pycache{i}"),
            )
            for i in range(len(checkouts))
        ]
        width = max(len(n) for n, _ in rows)
        head = f"{'command':{width}}  {'instructions':>14}"
        if a.against is not None:
            head += f"  {'against':>14}  change"
        print(f"instructions executed (valgrind cachegrind), this checkout: {ROOT}")
        print(head)
        for name, args in rows:
            n = []
            for co, env in zip(checkouts, envs, strict=True):
                # one plain run first: the parse cache and the bytecode filled, as
                # bench_goals.py's rows have them
                subprocess.run(
                    [sys.executable, "-m", "pddplan", *args],
                    env=dict(env, PYTHONPATH=str(co)),
                    cwd=cwd,
                    capture_output=True,
                )
                n.append(count(co, args, env, cwd))
            line = f"{name:{width}}  {n[0] / 1e9:12.3f} G"
            if len(n) > 1:
                line += f"  {n[1] / 1e9:12.3f} G  {n[0] / n[1] - 1:+.1%}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
