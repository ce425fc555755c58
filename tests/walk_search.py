"""The search of a scenario as the max-BCR and budget walks take it, and a wrapper that counts
the rates it is asked: what the walks' tests (tests/unit/solver/test_max_bcr_walk.py,
tests/unit/solver/test_budget_walk.py) compare a walk that passes over steps with."""

from __future__ import annotations

from pddplan.api.scenario import load
from pddplan.solver import modes
from pddplan.solver.answer import _problems, scale_bound


def search_of(scenario: str, overrides: dict) -> tuple[modes.PlanSearch, float]:
    """The PDD search of ``scenario`` with ``overrides``, and the rate ceiling its walks go
    up to (the line at its cap, or the scenario's maximum rate)."""
    rs = load(scenario, overrides, None).resolved
    search = modes.PlanSearch(_problems(rs, None))
    hi, _ = scale_bound(search.line_rate_limit(), rs.scenario.limits.max_rate_rps)
    return search, hi


class Counted:
    """A search that counts the rates it is asked (one search of every variant each)."""

    def __init__(self, search: modes.PlanSearch) -> None:
        self.search, self.rates = search, 0

    def candidate_rate(self, rate, progress=None):
        self.rates += 1
        return self.search.candidate_rate(rate, progress)

    def __getattr__(self, name):
        return getattr(self.search, name)


def record_stretches(monkeypatch, skip_class: type) -> list[tuple[float, float, float]]:
    """Record each stretch ``(rate, x, bound)`` that ``skip_class.resume_rate`` passes over,
    with the bound it had then, in the list returned (filled as the walk goes)."""
    stretches: list[tuple[float, float, float]] = []
    resume = skip_class.resume_rate

    def recording(self, rate):
        x = resume(self, rate)
        if x > rate:
            stretches.append((rate, x, self._bound()))
        return x

    monkeypatch.setattr(skip_class, "resume_rate", recording)
    return stretches
