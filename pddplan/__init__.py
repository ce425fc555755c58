"""pddplan: analytical capacity planning for cross-datacenter PDD LLM inference.

PDD = Prefill (datacenter A) + Relay-Decode (datacenter A, RDMA to prefill) + Main-Decode
(datacenter B, reached over a WAN line).

The public API (see docs/api.md)::

    import pddplan
    r = pddplan.solve("default", overrides={"link.bandwidth_gbit_per_s": 50})
    r.to_json()["plan"]["cost_usd_per_hour"]

``load_scenario``, ``solve``, ``bathtub``, ``sweep``, ``breakeven``, ``rank_chips``,
``simulate``, ``pareto``, ``horizon``, ``hitrate``, ``calibrate``, ``calibrate_link``, ``transfer``, ``step`` and the
``profiles`` functions return typed results (:mod:`pddplan.results`) with
``rows()``, ``sections()`` and ``to_json()``; errors derive from :class:`PddplanError`.
The API loads on first use, so ``import pddplan`` (and the CLI's ``--help``) stays light.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from pddplan.errors import (
    InfeasibleError,
    NotFoundError,
    OptionError,
    OverrideError,
    PddplanError,
    ProfileError,
    UsageError,
)

if TYPE_CHECKING:
    from pddplan.api.bathtub import bathtub
    from pddplan.api.cache import cache
    from pddplan.api.calibrate import calibrate, calibrate_link
    from pddplan.api.chips import rank_chips
    from pddplan.api.hitrate import hitrate
    from pddplan.api.horizon import horizon
    from pddplan.api.pareto import pareto
    from pddplan.api.profiles import list_profiles, profile_schema, show_profile, validate_profiles
    from pddplan.api.report import plan_report
    from pddplan.api.robust import robust, robust_topology
    from pddplan.api.scenario import LoadedScenario, PddplanWarning, load_scenario
    from pddplan.api.simulate import simulate
    from pddplan.api.solve import solve
    from pddplan.api.step import step  # type: ignore[no-redef]
    from pddplan.api.topology import topology
    from pddplan.api.transfer import transfer
    from pddplan.api.whatif import breakeven, breakeven_topology, sweep

__version__ = "0.1.0"

_API = (
    "LoadedScenario",
    "PddplanWarning",
    "bathtub",
    "breakeven",
    "breakeven_topology",
    "cache",
    "calibrate",
    "calibrate_link",
    "hitrate",
    "horizon",
    "list_profiles",
    "load_scenario",
    "pareto",
    "plan_report",
    "profile_schema",
    "rank_chips",
    "robust",
    "robust_topology",
    "show_profile",
    "simulate",
    "solve",
    "step",
    "sweep",
    "topology",
    "transfer",
    "validate_profiles",
)

__all__ = [
    "LoadedScenario",
    "PddplanWarning",
    "bathtub",
    "breakeven",
    "breakeven_topology",
    "cache",
    "calibrate",
    "calibrate_link",
    "hitrate",
    "horizon",
    "list_profiles",
    "load_scenario",
    "pareto",
    "plan_report",
    "profile_schema",
    "rank_chips",
    "robust",
    "robust_topology",
    "show_profile",
    "simulate",
    "solve",
    "step",
    "sweep",
    "topology",
    "transfer",
    "validate_profiles",
    "InfeasibleError",
    "NotFoundError",
    "OptionError",
    "OverrideError",
    "PddplanError",
    "ProfileError",
    "UsageError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    if name in _API:
        from pddplan import api

        return getattr(api, name)
    raise AttributeError(f"module 'pddplan' has no attribute {name!r}")


class _Package(types.ModuleType):
    """``pddplan.bathtub`` and ``pddplan.calibrate`` are API functions, and also the names of
    submodules: importing a submodule must not replace the function on the package (the
    submodules stay importable as ``from pddplan.bathtub import ...``)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _API and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
