"""Plans under uncertainty: sampled inputs, the point plan's SLA probability, the robust plan,
and which estimate moves BCR and SLA attainment most (``pddplan robust``, docs/robust.md).

- :mod:`~pddplan.robust.inputs`: which inputs are sampled, their distributions, the draws;
- :mod:`~pddplan.robust.evaluate`: fixed fleets on sampled scenarios (check_fleet);
- :mod:`~pddplan.robust.search`: the cheapest fleet meeting the SLA with probability >= P;
- :mod:`~pddplan.robust.run`: the whole run on an executor, and the sensitivity ranking.

The run's names load on first use: ``solve``'s verdict check
(:mod:`~pddplan.robust.verdict`) needs the inputs and fleet evaluation, not the run and its
executors.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pddplan.robust.run import RobustPlan, RobustRun, run_robust

__all__ = ["RobustPlan", "RobustRun", "run_robust"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("pddplan.robust.run"), name)
    raise AttributeError(f"module 'pddplan.robust' has no attribute {name!r}")
