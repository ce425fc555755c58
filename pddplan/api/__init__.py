"""The public Python API: each command of the CLI as a function that returns a typed result.

Every function takes a scenario by bundled name or file path (``None``: the bundled default),
or a :class:`LoadedScenario` from :func:`load_scenario`, plus keyword-only options named as in
the library (``rate_rps``, ``budget_usd_per_hour``, ``max_chips``...). ``overrides`` maps dotted
paths to values (see :mod:`pddplan.io.overrides`) and is validated exactly as the same values in a
scenario file: a bad key or value raises :class:`~pddplan.errors.OverrideError` naming the key
and the allowed range. A bad option raises :class:`~pddplan.errors.OptionError` naming it and
what it allows (the ranges and defaults are the models of :mod:`pddplan.api.options`). Errors
are subclasses of :class:`~pddplan.errors.PddplanError`; nothing is printed.

One module per command (or group): :mod:`~pddplan.api.solve`, :mod:`~pddplan.api.bathtub`,
:mod:`~pddplan.api.whatif`, :mod:`~pddplan.api.robust`, :mod:`~pddplan.api.simulate`,
:mod:`~pddplan.api.hitrate`, :mod:`~pddplan.api.calibrate`, :mod:`~pddplan.api.transfer`,
:mod:`~pddplan.api.chips`, :mod:`~pddplan.api.report`, :mod:`~pddplan.api.pareto`,
:mod:`~pddplan.api.horizon`; the scenario resolution they share is
:mod:`~pddplan.api.scenario`. The names below are exported from here (their ``__module__`` is
``pddplan.api``).

Example::

    >>> import pddplan
    >>> r = pddplan.solve("default")
    >>> r.to_json()["plan"]["cost_usd_per_hour"] > 0
    True
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

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
    from pddplan.api.solve import solve, solve_result
    from pddplan.api.step import step  # type: ignore[no-redef]
    from pddplan.api.topology import topology
    from pddplan.api.transfer import transfer
    from pddplan.api.whatif import breakeven, breakeven_topology, sweep

#: Each exported name -> the submodule that defines it (loaded on first use, so that a command
#: imports only the modules it calls).
_SOURCES = {
    "bathtub": "bathtub",
    "cache": "cache",
    "calibrate": "calibrate",
    "calibrate_link": "calibrate",
    "rank_chips": "chips",
    "hitrate": "hitrate",
    "horizon": "horizon",
    "pareto": "pareto",
    "list_profiles": "profiles",
    "profile_schema": "profiles",
    "show_profile": "profiles",
    "validate_profiles": "profiles",
    "plan_report": "report",
    "robust": "robust",
    "robust_topology": "robust",
    "LoadedScenario": "scenario",
    "PddplanWarning": "scenario",
    "load_scenario": "scenario",
    "simulate": "simulate",
    "solve": "solve",
    "solve_result": "solve",
    "step": "step",
    "topology": "topology",
    "transfer": "transfer",
    "breakeven": "whatif",
    "breakeven_topology": "whatif",
    "sweep": "whatif",
}

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
    "pareto",
    "plan_report",
    "load_scenario",
    "profile_schema",
    "rank_chips",
    "robust",
    "robust_topology",
    "show_profile",
    "simulate",
    "solve",
    "solve_result",
    "step",
    "sweep",
    "topology",
    "transfer",
    "validate_profiles",
]


def __getattr__(name: str) -> Any:
    """An exported name, loaded from its submodule on first use (its ``__module__`` is
    ``pddplan.api``)."""
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{source}"), name)
    value.__module__ = __name__
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """``pddplan.api.solve`` is the function and also the name of its submodule: loading a
    submodule must not replace the function (the submodules stay importable as
    ``from pddplan.api.solve import ...``)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in __all__ and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
