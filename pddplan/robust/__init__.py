"""Plans under uncertainty: sampled inputs, the point plan's SLA probability, the robust plan,
and which estimate moves BCR and SLA attainment most (``pddplan robust``, docs/robust.md).

- :mod:`~pddplan.robust.inputs`: which inputs are sampled, their distributions, the draws;
- :mod:`~pddplan.robust.evaluate`: fixed fleets on sampled scenarios (check_fleet);
- :mod:`~pddplan.robust.search`: the cheapest fleet meeting the SLA with probability >= P;
- :mod:`~pddplan.robust.run`: the whole run on an executor, and the sensitivity ranking.
"""

from pddplan.robust.run import RobustPlan, RobustRun, run_robust

__all__ = ["RobustPlan", "RobustRun", "run_robust"]
