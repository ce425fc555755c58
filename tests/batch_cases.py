"""The problems and the bit comparison that the routing-batch tests share
(``tests/unit/solver/test_routing_batch.py``, ``test_decode_sizings_batch.py``): the bundled
scenarios, and the default one with several options of every role."""

from __future__ import annotations

import random

import numpy as np

from pddplan.io.loader import Registry, load_scenario
from pddplan.solver import build_problem
from pddplan.timing import Routing

#: The default scenario with several MD and RLD options (of several batches each).
MANY = "many options"
#: More (MD row, RLD option) pairs than units_for_wait_array searches element by element: the
#: decode sizings' batch leaves their RLD counts to each route's own call.
MORE = "more options"
ROLES = {
    MANY: {
        "P": {"chips": ["gpu-a", "gpu-b"], "chips_per_instance": [4, 8]},
        "RLD": {"chips": ["gpu-a", "gpu-b"], "chips_per_instance": [8]},
        "MD": {"chips": ["gpu-a", "gpu-b"], "chips_per_instance": [4, 8]},
    },
    MORE: {
        "P": {"chips": ["gpu-a"], "chips_per_instance": [8]},
        "RLD": {"chips": ["gpu-a", "gpu-b"], "chips_per_instance": [4, 8]},
        "MD": {"chips": ["gpu-a", "gpu-b"], "chips_per_instance": [2, 4, 8]},
    },
}
#: The bundled scenarios (the default first) and :data:`MANY`.
SCENARIOS = [
    None,
    MANY,
    "examples/pdd-paper.yaml",
    "examples/long-context.yaml",
    "examples/cache-tiers.yaml",
    "examples/agent-diurnal.yaml",
    "examples/pdd-paper-b30.yaml",
]


def problem(path: str | None):
    """The problem of a bundled scenario (``None``: the default) or of :data:`MANY` /
    :data:`MORE`."""
    if path in ROLES:
        return build_problem(load_scenario(None, Registry.default(), {"roles": ROLES[path]}))
    return build_problem(load_scenario(path, Registry.default()))


def same_bits(a, b) -> bool:
    """Equal arrays to the bit (dtype, shape and bytes: -0.0 is not 0.0, NaN is NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def random_routings(pb, rng: random.Random) -> list[Routing]:
    """The problem's routings, with a few thresholds of its own in random order."""
    h = sorted(set(np.asarray(pb.classes.hit_rate, dtype=float).tolist()))
    extra = [Routing.below(rng.choice(h) + rng.choice([0.0, 1e-9, 0.05])) for _ in range(3)]
    out = list(dict.fromkeys([*pb.routings, *extra, Routing.none(), Routing.all()]))
    rng.shuffle(out)
    return out
