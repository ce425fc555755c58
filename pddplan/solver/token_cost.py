"""A plan's cost per million tokens, the figure token-priced services quote, beside BCR.

``cost per million input tokens = cost [$/h] / (goodput [req/s] x mean input tokens per request
x 3600 s/h) x 10^6``, and the same with the mean output tokens: the formula of
kubernetes-sigs/inference-perf issue #139 ("Display $/1M tokens as a benchmark value", after
NVIDIA's TCO-calculator blog post), on the plan's goodput so that it is on the same basis as its
BCR (``cost per million input tokens = 10^6 / (BCR x mean input tokens)``). Each figure carries
the whole fleet's cost (the two are not to be added): what one kind of token would have to be
priced at for the fleet to break even on it alone. Input tokens count every prompt token, cached
or not.
"""

from __future__ import annotations

import numpy as np

from pddplan import units
from pddplan.solver.plan import Plan

TOKENS_PER_MTOK = 1e6
#: The result keys of :func:`cost_usd_per_mtok`'s two figures, in its order.
MTOK_KEYS = ("input_cost_usd_per_mtok", "output_cost_usd_per_mtok")


def mean_tokens(plan: Plan) -> tuple[float, float]:
    """Mean input and output tokens per request of the workload the plan was sized on [tokens]."""
    c = plan.problem.classes
    w = np.asarray(c.weight, dtype=float)
    return (
        float(np.sum(w * c.input_tokens) / np.sum(w)),
        float(np.sum(w * c.output_tokens) / np.sum(w)),
    )


def cost_usd_per_mtok(plan: Plan) -> tuple[float | None, float | None]:
    """``(input, output)``: the plan's cost per million input and per million output tokens at
    its goodput [$/Mtok]; None where the plan serves nothing within the SLA (goodput 0) or has no
    problem to read the workload from."""
    if plan.problem is None or plan.goodput_rps <= 0:
        return None, None
    per_token = plan.cost_usd_per_hour / (plan.goodput_rps * units.SECONDS_PER_HOUR)
    mean_in, mean_out = mean_tokens(plan)
    return tuple(  # type: ignore[return-value]
        per_token / n * TOKENS_PER_MTOK if n > 0 else None for n in (mean_in, mean_out)
    )
