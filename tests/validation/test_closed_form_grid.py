"""The closed forms' TTFT against the simulator on plans of the closed-form grid (issue 20).

Source: ``pddplan simulate``'s discrete-event simulation of the same fleet (FCFS prefill pool,
processor-shared WAN line, RLD relay, MD continuous batching; the same step and transfer
physics), 100,000 requests, seed 0. Tolerance: TTFT p50 and p90 within 10% of the simulated
ones and p99 within 20%, or named, with the gap's direction, by one of the plan's regime
warnings (:func:`pddplan.sim.compare.gap_named`). ``benchmarks/bench_closed_form_grid.py``
applies 10% to every percentile over the whole grid at 3 seeds (36 points); at one seed a p99
moves too much for that: on the default plan seed 0 gives -14.1% where the mean of seeds 0-2 is
-7.0% (95% half-width over the seeds 7%).
"""

from __future__ import annotations

import pytest

from pddplan.io.loader import Registry, bundled_profiles_dir, load_scenario
from pddplan.sim import SimConfig, simulate
from pddplan.sim.compare import TTFT_PERCENTILES, closed_forms_at, gap_named, warning_tags
from pddplan.sim.figures import SimFigures
from pddplan.solver import solve_scenario

#: (plan, scenario file, patch, factor of the sized rate)
POINTS = [
    ("default", None, {}, 1.0),
    ("10g 0.6 req/s", None, {"link": "wan-10g-cross-city", "rate_rps": 0.6}, 1.1),
    ("pdd-paper-b30 3 req/s", "examples/pdd-paper-b30.yaml", {"rate_rps": 3.0}, 1.0),
    ("chat 100g 20 req/s", None, {"workload": "chat", "rate_rps": 20.0}, 1.0),
    (
        "chat 10g 3 req/s",
        None,
        {"workload": "chat", "link": "wan-10g-cross-city", "rate_rps": 3.0},
        1.1,
    ),
    ("agent-beta", None, {"workload": "agent-64k-beta"}, 1.0),
    ("long-context", "examples/long-context.yaml", {}, 1.0),
]
REQUESTS = 100_000
#: Tolerance per percentile [%].
TOLERANCE_PCT = {50: 10.0, 90: 10.0, 99: 20.0}


@pytest.mark.parametrize(
    ("label", "path", "patch", "factor"), POINTS, ids=[f"{p[0]} x{p[3]}" for p in POINTS]
)
def test_ttft_within_10pct_of_the_simulation_or_warned(label, path, patch, factor) -> None:
    reg = Registry(dirs=[bundled_profiles_dir()])
    out = solve_scenario(load_scenario(path, reg, patch or None), baselines=False)
    splan, _plan, closed, warnings = closed_forms_at(out.problem, out.plan, factor)
    cfg = SimConfig(requests=REQUESTS, seed=0, rate_rps=splan.rate_rps)
    sim = SimFigures.from_engine(simulate(out.problem, splan, cfg).figures)
    tags = warning_tags(warnings)
    missed = []
    for p in TTFT_PERCENTILES:
        c, s = closed.get(f"ttft_p{p}_s"), sim.get(f"ttft_p{p}_s")
        gap = 100.0 * (s - c) / c
        if abs(gap) > TOLERANCE_PCT[p] and not gap_named(gap, p, tags):
            missed.append(f"p{p} closed {c:.3g} s, simulated {s:.3g} s ({gap:+.1f}%)")
    assert not missed, f"{label} x{factor}: {missed}; warnings {warnings}"


def test_warning_tags_read_percentiles_and_direction() -> None:
    tags = warning_tags(
        [
            "line utilization 0.6 is above 0.35: TTFT p50/p90/p99 may be 10-30% off either way",
            "every RLD slot ...: TTFT p90/p99 may be 20% or more higher than predicted",
            "RLD decodes a step ...",
        ]
    )
    assert [t.tag for t in tags] == ["line", "rld-slot", "rld-step"]
    assert tags[1].percentiles == frozenset({90, 99}) and tags[1].direction == "higher"
    assert not tags[2].ttft
    assert gap_named(+15.0, 99, tags[1:2]) and not gap_named(-15.0, 99, tags[1:2])
    assert not gap_named(+15.0, 50, tags[1:2])
    assert gap_named(-25.0, 50, tags[:1])
