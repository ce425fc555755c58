"""What a solve returns: sizings of each pool and the plan."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pddplan import units
from pddplan.deployment import Instance
from pddplan.timing import Routing, Timeline

#: Per-class mean timings for one rate and routing (chip independent).
Route = Timeline


@dataclass(frozen=True)
class PrefillSizing:
    instances: int
    utilization: float
    ttft_s: tuple[float, float, float]
    attainment: float
    bound_by: str


@dataclass(frozen=True)
class DecodeSizing:
    instances: int
    batch_per_instance: int
    batch_bound_by: str  # "TPOT" or "memory"
    concurrency: float
    context_tokens: float


@dataclass(frozen=True)
class Plan:
    topology: str
    rate_rps: float
    routing: Routing
    handover: str
    roles: dict[str, tuple[Instance, int] | None]
    cost_usd_per_hour: float
    role_cost_usd_per_hour: dict[str, float]
    link_cost_usd_per_hour: float
    prefill: PrefillSizing
    decode: dict[str, DecodeSizing | None]
    route: Route
    md_stall_s: float
    rld_extra_s: np.ndarray
    rld_output_token_share: float
    meets_sla: bool
    binding: list[str]
    # what the reported hand-over figures need, filled in once the plan is chosen
    handover_inputs: tuple[Any, ...] | None = field(default=None, repr=False, compare=False)
    #: the highest rate at which this fleet meets every SLA target (:mod:`solver.fleet`);
    #: None until computed (the search ranks plans at their sized rate)
    fleet_goodput_rps: float | None = None
    #: the problem the plan was sized on (anomalous filter on or off, topology)
    problem: Any = field(default=None, repr=False, compare=False)

    @property
    def goodput_rps(self) -> float:
        """Goodput [requests/s]: the fleet's highest rate within every SLA target, once
        computed; before that, the sized rate when the plan meets the SLA (a lower bound)."""
        if self.fleet_goodput_rps is not None:
            return self.fleet_goodput_rps
        return self.rate_rps if self.meets_sla else 0.0

    @property
    def bcr_requests_per_usd(self) -> float:
        """BCR: goodput per dollar of hardware (and line) cost [requests/USD]."""
        if self.cost_usd_per_hour <= 0:
            return math.inf
        return self.goodput_rps * units.SECONDS_PER_HOUR / self.cost_usd_per_hour

    @property
    def has_relay(self) -> bool:
        """Whether the plan has an RLD pool."""
        return self.roles.get("RLD") is not None

    def chips_of(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for role in self.roles.values():
            if role is not None:
                inst, n = role
                out[inst.chip.name] = out.get(inst.chip.name, 0) + n * inst.tensor_parallel
        return out
