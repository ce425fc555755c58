"""Speed figures for `pddplan topology` (issue 24: many datacenters).

Prints the wall and CPU time of planning the bundled national topology
(examples/topologies/national.yaml), plain and with ``--resilient``, each the median of
several runs in fresh processes (so no run reuses another's sizing), on one core.

With ``--sites N`` it also plans a generated topology of N sites (:func:`generated`: sites
scattered over a 22 x 19 degree box, a third of them prefill sites with GPU-A, the rest
decode-only with GPU-B at prices between 1.8 and 2.6 $/h; lines along a minimum spanning tree
plus each site's two nearest neighbours; one source at each prefill site), plain and resilient, with
``--executor``/``--jobs`` for the pipelines' sizing (``--executor dask`` needs the dask extra).

Usage: python benchmarks/bench_topology.py [--runs N] [--sites 50 [--executor dask --jobs 4]]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
NATIONAL = ROOT / "examples" / "topologies" / "national.yaml"


#: Route length over great-circle distance of a generated line (fibre does not run straight;
#: an assumption of the generator, not a measured figure).
ROUTE_FACTOR = 1.3
#: [km] Mean radius of the Earth (IUGG).
EARTH_RADIUS_KM = 6371.0
SLA = {"ttft_p50_s": 5.0, "ttft_p90_s": 10.0, "ttft_p99_s": 20.0, "tpot_ms": 50.0}


def _km(a: dict[str, Any], b: dict[str, Any]) -> float:
    """Great-circle distance between two sites (haversine) [km]."""
    la1, lo1, la2, lo2 = map(math.radians, (a["lat_deg"], a["lon_deg"], b["lat_deg"], b["lon_deg"]))
    h = (
        math.sin((la2 - la1) / 2) ** 2
        + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2
    )
    return 2 * EARTH_RADIUS_KM * math.asin(math.sqrt(h))


def generated(n_sites: int, seed: int = 0) -> dict[str, Any]:
    """A topology of ``n_sites`` sites (see the module docstring), the same for one seed."""
    rng = random.Random(seed)
    sites: list[dict[str, Any]] = []
    for i in range(n_sites):
        site: dict[str, Any] = {
            "name": f"s{i:02d}",
            "lat_deg": round(rng.uniform(22.0, 41.0), 2),
            "lon_deg": round(rng.uniform(100.0, 122.0), 2),
        }
        if i % 3 == 0:
            both = {"chips": ["gpu-a"]}
            site["roles"] = {"P": both, "RLD": both, "MD": both}
            site["chips"] = {"gpu-a": {"rent_limit": 64}}
        else:
            site["roles"] = {"MD": {"chips": ["gpu-b"]}}
            price = round(rng.uniform(1.8, 2.6), 2)
            site["chips"] = {"gpu-b": {"rental_usd_per_hour": price, "rent_limit": 64}}
        sites.append(site)
    pairs: set[tuple[int, int]] = set()
    # a minimum spanning tree (Prim) keeps it connected; each site's second nearest adds loops
    inside, rest = {0}, set(range(1, n_sites))
    while rest:
        i, j = min(
            ((i, j) for i in inside for j in rest), key=lambda p: _km(sites[p[0]], sites[p[1]])
        )
        pairs.add((min(i, j), max(i, j)))
        inside.add(j)
        rest.remove(j)
    for i in range(n_sites):
        near = sorted((j for j in range(n_sites) if j != i), key=lambda j: _km(sites[i], sites[j]))
        for j in near[:2]:
            pairs.add((min(i, j), max(i, j)))
    lines = []
    for i, j in sorted(pairs):
        km = round(ROUTE_FACTOR * _km(sites[i], sites[j]), 1)
        link = "wan-100g-same-city" if km < 400 else "wan-100g-cross-city"
        names = [sites[i]["name"], sites[j]["name"]]
        lines.append({"sites": names, "link": link, "route_km": km, "max_count": 2})
    traffic = [
        {
            "name": f"t{s['name']}",
            "entry": s["name"],
            "rate_rps": round(rng.uniform(0.2, 1.0), 2),
            "workload": "agent-64k",
            "sla": SLA,
        }
        for s in sites
        if "P" in s["roles"]
    ]
    return {
        "kind": "scenario",
        "name": f"generated-{n_sites}",
        "description": f"{n_sites} generated sites (benchmarks/bench_topology.py)",
        "model": "qwen3-235b-a22b",
        "share_levels": 2,
        "sites": sites,
        "lines": lines,
        "traffic": traffic,
    }


def timed(argv: list[str], pin: bool = True) -> tuple[float, float]:
    """Wall and CPU seconds of ``pddplan ARGV`` in a fresh process (pinned to one core unless
    ``pin`` is False)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "pddplan", *argv]
    if pin and shutil.which("taskset"):
        cmd = ["taskset", "-c", "0", *cmd]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def report(label: str, argv: list[str], runs: int, pin: bool = True) -> None:
    got = [timed(argv, pin) for _ in range(runs)]
    wall = statistics.median(w for w, _ in got)
    cpu = statistics.median(c for _, c in got)
    print(f"{label:<64} wall {wall:7.2f} s   cpu {cpu:7.2f} s   (median of {runs})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="runs per figure (median)")
    ap.add_argument("--sites", type=int, default=0, help="also plan a generated topology")
    ap.add_argument("--executor", default="local", help="local or dask, for --sites")
    ap.add_argument("--jobs", type=int, default=1, help="processes or workers, for --sites")
    args = ap.parse_args()
    national = str(NATIONAL.relative_to(ROOT))
    report("topology national", ["topology", national, "-f", "json"], args.runs)
    report(
        "topology national --resilient",
        ["topology", national, "--resilient", "-f", "json"],
        args.runs,
    )
    if args.sites:
        doc = generated(args.sites)
        with tempfile.TemporaryDirectory() as tmp:
            f = Path(tmp) / "generated.yaml"
            f.write_text(yaml.safe_dump(doc, sort_keys=False))
            how = ["--executor", args.executor, "--jobs", str(args.jobs)]
            label = f"generated {args.sites} sites ({len(doc['lines'])} lines, "
            label += f"{len(doc['traffic'])} sources), {args.executor} x{args.jobs}"
            one = args.jobs == 1 and args.executor == "local"
            report(label, ["topology", str(f), "-f", "json", *how], args.runs, pin=one)
            report(
                label + " --resilient",
                ["topology", str(f), "--resilient", "-f", "json", *how],
                args.runs,
                pin=one,
            )


if __name__ == "__main__":
    main()
