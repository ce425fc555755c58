"""Discrete-event simulation of a PDD deployment (``pddplan simulate``).

The simulator replays a plan request by request with the same physics as the closed forms
(:class:`~pddplan.deployment.Instance` step and prefill times, :mod:`pddplan.models.network`
transfer sizes and jitter), so that any gap between simulated and closed-form figures comes from
queueing and batching dynamics alone.

Modules
-------
requests    sample (or replay) requests: arrival times, hit rates, lengths, pipelines.
events      the event heap (``heapq``) and event codes.
resources   the prefill pool (FCFS), the processor-sharing WAN line, decode pools.
policies    hand-over modes and the allowed / P-RLD routing policies.
plan        what the simulator needs from a plan, from a :class:`~pddplan.solver.Plan` or JSON.
state       the run's state: queues, pools, settings and per-request records.
handlers    one handler per event code, and the moves between pools they share.
engine      the simulation itself: wiring, and the event loop that dispatches to the handlers.
result      the run's settings (:class:`SimConfig`) and outcomes (:class:`SimResult`).
metrics     the run's figures and occupancy time series.
figures     typed figures (:class:`~pddplan.sim.figures.SimFigures`).
compare     closed-form predictions for the same fleet, the comparison table, regime warning.
transfers   transfers alone over the shared line (``pddplan transfer``'s simulation).

The result rows for the renderers are in :mod:`pddplan.results.simulate`: the simulator imports
nothing above the computation layers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pddplan.sim.engine import SimConfig, SimResult, simulate
    from pddplan.sim.plan import SimPlan

__all__ = ["SimConfig", "SimPlan", "SimResult", "simulate"]

#: Where each public name lives: imported on first use, so that ``pddplan solve``, which reads
#: the regime warnings of :mod:`pddplan.sim.compare`, does not load the event loop.
_HOMES = {
    "SimConfig": "pddplan.sim.engine",
    "SimResult": "pddplan.sim.engine",
    "simulate": "pddplan.sim.engine",
    "SimPlan": "pddplan.sim.plan",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'pddplan.sim' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
