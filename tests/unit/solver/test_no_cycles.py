"""A solve leaves no reference cycle behind: what it built (problems, solvers, plans, the frames
of a search that failed) goes when the last reference does, not when the cyclic collector next
runs. A cycle through an error's traceback kept every frame of a failed search alive, with its
solver and plans, and made a price sweep run the collector over them (7% of its time)."""

from __future__ import annotations

import gc
import math

import pytest

from pddplan.errors import InfeasibleError
from pddplan.io.loader import Registry, load_scenario
from pddplan.solver import modes, solve_scenario
from pddplan.solver.answer import _problems
from pddplan.solver.modes import PlanSearch


def _cyclic_garbage(run) -> list[object]:
    """The objects ``run()`` left in reference cycles (the collector's garbage, kept)."""
    gc.collect()
    was = gc.get_debug()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        run()
        gc.collect()
        found = list(gc.garbage)
    finally:
        gc.set_debug(was)
        gc.garbage.clear()
    return found


def _pddplan_objects(objs: list[object]) -> list[str]:
    out = []
    for o in objs:
        kind = type(o)
        if kind.__module__.startswith("pddplan") or isinstance(o, InfeasibleError):
            out.append(kind.__name__)
        elif kind.__name__ == "frame" and o.f_code.co_filename.find("pddplan") >= 0:  # type: ignore[attr-defined]
            out.append(f"frame {o.f_code.co_name}")  # type: ignore[attr-defined]
    return out


@pytest.mark.parametrize("name", [None, "examples/pdd-paper.yaml"])
def test_a_solve_with_baselines_leaves_no_cycle(name: str | None) -> None:
    rs = load_scenario(name, Registry.default())
    solve_scenario(rs)  # warm: what a first solve keeps for later ones is no garbage
    assert _pddplan_objects(_cyclic_garbage(lambda: solve_scenario(rs))) == []


def test_a_baseline_that_misses_ttft_leaves_no_cycle(monkeypatch: pytest.MonkeyPatch) -> None:
    """The TTFT-free sizing of a baseline whose search failed (its error's text kept, not the
    error) and a search whose first variant failed but another fitted (its first error
    dropped): both paths are taken, and neither leaves a cycle."""
    took = {"baseline": 0, "variant": 0}
    real_candidate = modes.Solver.candidate_rate

    def failing_first(self, rate, progress=None, above=math.inf):
        # a baseline's search (``baseline_at_rate`` sizes it by ``candidate_rate``)
        if self.pb.enforce_ttft and self.pb.topology.name != "pdd":
            took["baseline"] += 1
            raise InfeasibleError("no count meets TTFT p99 (test)", binding="TTFT p99")
        return real_candidate(self, rate, progress, above)

    monkeypatch.setattr(modes.Solver, "candidate_rate", failing_first)
    rs = load_scenario(None, Registry.default())
    out = solve_scenario(rs)
    assert any("SLA: no count meets TTFT p99 (test)" in " ".join(b.binding) for b in out.baselines)

    problems = _problems(rs, None)

    def first_fails(self, rate, progress=None, above=math.inf):
        if self.pb is problems[0]:
            took["variant"] += 1
            raise InfeasibleError("the first variant fits nothing (test)", binding="TTFT p99")
        return failing_first(self, rate, progress, above)  # the baselines' failure kept

    monkeypatch.setattr(modes.Solver, "candidate_rate", first_fails)
    assert len(problems) > 1  # another variant to fit

    def both() -> None:
        solve_scenario(rs)
        PlanSearch(problems).candidate_rate(2.0)

    assert _pddplan_objects(_cyclic_garbage(both)) == []
    assert took["baseline"] > 0 and took["variant"] > 0
