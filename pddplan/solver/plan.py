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


def role_costs(roles: dict[str, tuple[Instance, int] | None], pricing: Any) -> dict[str, float]:
    """Each role's cost [USD/h]; with an inventory (:class:`~pddplan.solver.problem.Pricing`)
    the owned chips go to the roles in order (P, RLD, MD), so the roles add up to the plan."""
    left = dict(pricing.owned) if pricing is not None else {}
    out: dict[str, float] = {}
    for role, v in roles.items():
        if v is None:
            out[role] = 0.0
            continue
        inst, n = v
        if pricing is None:
            out[role] = inst.price_usd_per_hour * n
            continue
        name, chips = inst.chip.name, n * inst.tensor_parallel
        own = min(chips, left.get(name, 0))
        left[name] = left.get(name, 0) - own
        out[role] = (
            own * pricing.owned_usd_per_chip_hour.get(name, 0.0)
            + (chips - own) * pricing.extra_usd_per_chip_hour[name]
        )
    return out


@dataclass(frozen=True)
class ChipCost:
    """One chip kind of a plan, split by how it is paid for."""

    chip: str
    chips: int
    owned: int  # owned chips the plan uses
    owned_idle: int  # owned chips it leaves idle
    rented: int
    bought: int  # new purchases
    cost_usd_per_hour: float
    owned_usd_per_hour: float
    rented_usd_per_hour: float
    bought_usd_per_hour: float
    new_capex_usd: float  # capex of the new purchases


def cost_split(plan: Plan) -> list[ChipCost]:
    """The plan's chips split into owned, rented and newly bought, with their costs (owned
    chips first, as the search prices them). Owned kinds the plan does not use are listed idle."""
    pricing = getattr(plan.problem, "pricing", None)
    chips = plan.chips_of()
    rental: dict[str, float] = {}
    for v in plan.roles.values():
        if v is not None:
            rental[v[0].chip.name] = v[0].chip.price.rental_usd_per_hour
    owned_all = dict(pricing.owned) if pricing is not None else {}
    out: list[ChipCost] = []
    for name in [*chips, *(k for k in owned_all if k not in chips)]:
        n = chips.get(name, 0)
        own = min(n, owned_all.get(name, 0))
        extra = n - own
        if pricing is None:
            out.append(
                ChipCost(name, n, 0, 0, n, 0, n * rental[name], 0.0, n * rental[name], 0.0, 0.0)
            )
            continue
        own_cost = own * pricing.owned_usd_per_chip_hour.get(name, 0.0)
        extra_cost = extra * pricing.extra_usd_per_chip_hour.get(name, rental.get(name, 0.0))
        buy = pricing.additional == "buy"
        capex = pricing.capex_usd.get(name) or 0.0
        out.append(
            ChipCost(
                chip=name,
                chips=n,
                owned=own,
                owned_idle=owned_all.get(name, 0) - own,
                rented=0 if buy else extra,
                bought=extra if buy else 0,
                cost_usd_per_hour=own_cost + extra_cost,
                owned_usd_per_hour=own_cost,
                rented_usd_per_hour=0.0 if buy else extra_cost,
                bought_usd_per_hour=extra_cost if buy else 0.0,
                new_capex_usd=extra * capex if buy else 0.0,
            )
        )
    return out
