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
engine      the simulation itself: wiring, metrics, time series.
compare     closed-form predictions for the same fleet, the comparison table, regime warning.
report      result rows for the renderers.
"""

from __future__ import annotations

from pddplan.sim.engine import SimConfig, SimResult, simulate
from pddplan.sim.plan import SimPlan

__all__ = ["SimConfig", "SimPlan", "SimResult", "simulate"]
