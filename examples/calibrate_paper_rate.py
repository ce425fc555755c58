"""Find the rate at which the same-datacenter baseline of a scenario needs a given chip count.

Usage: python examples/calibrate_paper_rate.py [SCENARIO] [CHIPS]
(defaults: examples/pdd-paper.yaml, 88 — the brief's baseline of 88 GPU-A).

Prints the highest rate [req/s] whose baseline plan uses at most CHIPS chips; that rate goes
into the scenario's ``rate_rps``. Only the baseline is involved: nothing on the PDD side is tuned.
The rate is printed rounded DOWN at the printed precision (the bisection's rate rounded to
nearest could land past the threshold), and the printed rate is solved again as a check.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from pddplan.io.loader import Registry, load_scenario
from pddplan.solver import SAME_DC, baseline_at_rate

#: The paper's scenario, beside this script (found wherever the script is run from).
PAPER_SCENARIO = str(Path(__file__).resolve().parent / "pdd-paper.yaml")


def baseline_chips(scenario: str, rate: float) -> int:
    rs = load_scenario(scenario, Registry.default())
    plan = baseline_at_rate(rs, SAME_DC, rate)
    return sum(plan.chips_of().values())


def calibrate(scenario: str, chips: int) -> float:
    lo, hi = 0.01, 0.01
    while baseline_chips(scenario, hi) <= chips:
        lo, hi = hi, hi * 2
    for _ in range(40):
        mid = (lo + hi) / 2
        if baseline_chips(scenario, mid) <= chips:
            lo = mid
        else:
            hi = mid
    return lo


DIGITS = 4


def printable(rate: float, digits: int = DIGITS) -> float:
    """``rate`` rounded down to ``digits`` decimals (never past the threshold)."""
    scale = 10**digits
    return math.floor(rate * scale) / scale


if __name__ == "__main__":
    scen = sys.argv[1] if len(sys.argv) > 1 else PAPER_SCENARIO
    target = int(sys.argv[2]) if len(sys.argv) > 2 else 88
    rate = printable(calibrate(scen, target))
    chips = baseline_chips(scen, rate)
    if chips > target:
        sys.exit(f"{rate:.{DIGITS}f} req/s needs {chips} chips, above the target {target}")
    print(f"{rate:.{DIGITS}f} req/s: baseline uses {chips} chips (target {target})")
