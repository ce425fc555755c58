"""What a simulation run takes and gives: :class:`SimConfig` and :class:`SimResult`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pddplan import defaults
from pddplan.sim.plan import SimPlan

#: Default share of the first requests left out of the statistics (the empty-system transient).
WARMUP_FRACTION = defaults.WARMUP_FRACTION


@dataclass(frozen=True)
class SimConfig:
    """How to run a simulation.

    Attributes
    ----------
    requests : [-] requests to simulate.
    seed : random seed; one seed gives one run.
    rate_rps : [requests/s] arrival rate; ``None`` takes the plan's.
    policy : "allowed" (P-MD and P-RLD-MD, anomalous on RLD) or "p-rld" (relayed requests
        finish on RLD: the excluded pipeline).
    handover : "plan", "one-shot", "catch-up" or "adaptive".
    sample : "classes" (the problem's discretized classes, as the closed forms see them),
        "workload" (the workload's continuous distributions), or "trace" (a label only: the
        requests are passed to :func:`~pddplan.sim.engine.simulate`).
    warmup_fraction : [-] share of the first requests left out of the statistics.
    """

    requests: int = 20_000
    seed: int = 0
    rate_rps: float | None = None
    policy: str = "allowed"
    handover: str = "plan"
    sample: str = "classes"
    warmup_fraction: float = WARMUP_FRACTION


@dataclass
class SimResult:
    """Per-request outcomes, pool figures and the occupancy time series of one run."""

    config: SimConfig
    plan: SimPlan
    rate_rps: float
    handover: str
    pipeline: np.ndarray  # per request: 0 P-MD, 1 P-RLD-MD (or P-RLD under p-rld), 2 anomalous
    arrival_s: np.ndarray
    ttft_s: np.ndarray
    tpot_s: np.ndarray
    done_s: np.ndarray
    rld_tokens: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    stall_s: np.ndarray  # relayed: MD's first token after RLD stopped (nan otherwise)
    md_wait_s: np.ndarray  # wait for an MD slot (nan when MD was not used)
    rld_wait_s: np.ndarray  # wait for an RLD slot after the RDMA copy (nan when RLD not used)
    prefill_wait_s: np.ndarray
    measured: np.ndarray  # bool: counted in the statistics
    figures: dict[str, float]
    series: dict[str, np.ndarray]
    events: int
    wall_s: float
    notes: list[str] = field(default_factory=list)
