"""What a solve returns: sizings of each pool and the plan."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from pddplan import units
from pddplan.deployment import Instance
from pddplan.errors import UnboundedBcrError
from pddplan.timing import NO_HANDOVER, Routing, Timeline

#: Per-class mean timings for one rate and routing (chip independent).
Route = Timeline

_Record = TypeVar("_Record", "PrefillSizing", "Plan")


def changed(record: _Record, **changes: Any) -> _Record:
    """``dataclasses.replace(record, **changes)`` for a :class:`Plan` or a
    :class:`PrefillSizing`, the search's hot paths' copies, at a seventh of its cost (0.6 us
    where it takes 4 us for a plan): a new record of the same class holding the same values
    but ``changes``, without rebuilding it field by field through ``__init__``.

    Equal to ``replace`` because these records are plain frozen dataclasses: every field an
    ``__init__`` argument, no ``__post_init__``, and nothing in their ``__dict__`` but their
    fields (``tests/unit/solver/test_plan_changed.py`` holds them to it). A name that is not a
    field raises ``TypeError``, as ``replace`` does."""
    fields = type(record).__dataclass_fields__
    for name in changes:
        if name not in fields:
            raise TypeError(f"{type(record).__name__} has no field {name!r}")
    new = object.__new__(type(record))
    values = new.__dict__
    values.update(record.__dict__)
    values.update(changes)
    return new


def made(cls: type[_Record], **values: Any) -> _Record:
    """``cls(**values)`` for a :class:`Plan` or a :class:`PrefillSizing` given every field, in
    the order the class declares them, at a fraction of its cost: a frozen dataclass's
    ``__init__`` sets each field through ``object.__setattr__`` (about 3 us for a plan's
    twenty), this sets the new record's ``__dict__`` in one update, as :func:`changed` copies
    one. The same record for the reasons :func:`changed` gives; a call that leaves a field out,
    names one that is not a field or gives them in another order raises ``TypeError``
    (``tests/unit/solver/test_plan_changed.py`` holds :func:`build_plan`'s records to
    ``Plan(**fields)``'s, order of the fields included)."""
    if tuple(values) != cls.__match_args__:  # every field, in the class's order (a tuple of
        # the same interned names compares by identity: cheaper than comparing the key sets)
        fields = cls.__match_args__
        missing = [f for f in fields if f not in values]
        unknown = [k for k in values if k not in fields]
        raise TypeError(
            f"{cls.__name__} needs every field, in its order; missing: {', '.join(missing)}; "
            f"not fields: {', '.join(unknown)}"
        )
    new = object.__new__(cls)
    new.__dict__.update(values)
    return new


#: Why a fleet that costs nothing (and serves something: one of goodput 0 has a BCR of 0) has
#: no finite BCR: the JSON's ``bcr_undefined`` and the error of a command that must rank or
#: plot it (:func:`require_priced`).
FREE_FLEET_BCR = (
    "the fleet costs 0 $/h (owned chips at sunk cost without opex, and no line or a free one): "
    "its BCR is unbounded"
)
#: Why a ratio of PDD's BCR to a baseline's has no value where PDD's own fleet is free.
FREE_PDD_RATIO = "PDD's fleet costs nothing: its BCR is unbounded"


def reported_bcr(bcr_requests_per_usd: float) -> float | None:
    """A BCR as every output gives it: None (``-`` in a table, empty in CSV, null in JSON, with
    :data:`FREE_FLEET_BCR` beside it) where the fleet is free and its BCR unbounded."""
    return bcr_requests_per_usd if math.isfinite(bcr_requests_per_usd) else None


def bcr(goodput_rps: float, cost_usd_per_hour: float) -> float:
    """BCR: goodput per dollar of hardware (and line) cost [requests/USD]. A fleet that serves
    nothing within SLA (goodput 0) has a BCR of 0 whatever it costs, nothing included; one
    that serves something and costs nothing has an unbounded BCR (inf)."""
    if goodput_rps <= 0:
        return 0.0
    if cost_usd_per_hour <= 0:
        return math.inf
    return goodput_rps * units.SECONDS_PER_HOUR / cost_usd_per_hour


def require_priced(cost_usd: float, what: str, unit: str = "$/h") -> None:
    """Raise :class:`~pddplan.errors.UnboundedBcrError` where ``what`` (a fleet [USD/h], or a
    request's marginal cost on it [USD], that a command ranks or plots by BCR) costs
    nothing."""
    if not cost_usd > 0:
        raise UnboundedBcrError(
            f"{what} costs {cost_usd:g} {unit}, so its BCR (requests per dollar) is "
            "unbounded: its chips are owned at inventory.owned_cost 'sunk' with "
            "inventory.opex_usd_per_chip_hour 0; give their running cost (> 0 $/h a chip) or "
            "price them 'amortized'"
        )


@dataclass(frozen=True)
class PrefillSizing:
    instances: int
    utilization: float
    ttft_s: tuple[float, float, float]
    attainment: float
    bound_by: str
    #: whether the TTFT percentiles meet their targets, by the SLA's rule on the TTFT
    #: distribution (:meth:`pddplan.solver.sizing.Sizing.ttft_meets`)
    meets_ttft: bool
    #: False while ``ttft_s`` and ``attainment`` are not computed yet (NaN): the search's
    #: candidate plans, ranked on cost, get them only where a tie or the chosen plan needs
    #: them (:meth:`pddplan.solver.sizing.Sizing.with_figures`); every plan the search returns
    #: has them
    has_figures: bool = True


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
    #: the P nodes' prefix cache [USD/h], part of ``cost_usd_per_hour`` (0 without ``cache:``)
    cache_cost_usd_per_hour: float = 0.0

    @property
    def goodput_rps(self) -> float:
        """Goodput [requests/s]: the fleet's highest rate within every SLA target, once
        computed; before that, the sized rate when the plan meets the SLA (a lower bound)."""
        if self.fleet_goodput_rps is not None:
            return self.fleet_goodput_rps
        return self.rate_rps if self.meets_sla else 0.0

    @property
    def bcr_requests_per_usd(self) -> float:
        """BCR: goodput per dollar of hardware (and line) cost [requests/USD] (:func:`bcr`)."""
        return bcr(self.goodput_rps, self.cost_usd_per_hour)

    @property
    def has_relay(self) -> bool:
        """Whether the plan has an RLD pool."""
        return self.roles.get("RLD") is not None

    def chips_of(self) -> dict[str, int]:
        """Chips per kind of the plan's fleet."""
        return roles_chips(self.roles)


def role_owned_chips(
    roles: Mapping[str, tuple[Instance, int] | None], pricing: Any
) -> dict[str, int]:
    """The owned chips each role uses: with an inventory
    (:class:`~pddplan.solver.problem.Pricing`) the owned chips of a kind go to the roles in
    order (P, RLD, MD) up to each role's chips; without one, none."""
    left = dict(pricing.owned) if pricing is not None else {}
    out: dict[str, int] = {}
    for role, v in roles.items():
        if v is None:
            out[role] = 0
            continue
        inst, n = v
        name, chips = inst.chip.name, n * inst.tensor_parallel
        own = min(chips, left.get(name, 0))
        left[name] = left.get(name, 0) - own
        out[role] = own
    return out


def role_costs(roles: dict[str, tuple[Instance, int] | None], pricing: Any) -> dict[str, float]:
    """Each role's cost [USD/h]; with an inventory (:class:`~pddplan.solver.problem.Pricing`)
    the owned chips go to the roles in order (P, RLD, MD) (:func:`role_owned_chips`), so the
    roles add up to the plan."""
    owned = role_owned_chips(roles, pricing) if pricing is not None else {}
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
        own = owned[role]
        out[role] = (
            own * pricing.owned_usd_per_chip_hour.get(name, 0.0)
            + (chips - own) * pricing.extra_usd_per_chip_hour[name]
        )
    return out


def chips_cost_usd_per_hour(
    chips: Mapping[str, int], rental_usd_per_chip_hour: Mapping[str, float], pricing: Any
) -> float:
    """What a fleet's chips cost [USD/h]: at rental without an inventory (``pricing`` None),
    else owned chips first at their owned price, the rest rented or bought
    (:class:`~pddplan.solver.problem.Pricing`). The one price of a fleet: a plan's cost is this
    (split by role in :func:`role_costs`) plus its line."""
    if pricing is None:
        return sum(n * rental_usd_per_chip_hour[name] for name, n in chips.items())
    return float(pricing.chips_cost_usd_per_hour(dict(chips)))


def roles_chips(roles: Mapping[str, tuple[Instance, int] | None]) -> dict[str, int]:
    """Chips per kind of a fleet's roles."""
    out: dict[str, int] = {}
    for v in roles.values():
        if v is not None:
            out[v[0].chip.name] = out.get(v[0].chip.name, 0) + v[1] * v[0].tensor_parallel
    return out


def within_limits(chips: Mapping[str, int], limits: Mapping[str, int]) -> bool:
    """Whether a fleet's chips per kind are within inventory limits (chip -> at most)."""
    return all(chips.get(c, 0) <= lim for c, lim in limits.items())


def build_plan(
    pb: Any,
    *,
    rate_rps: float,
    route: Route,
    mode: str,
    prefill: tuple[Instance, PrefillSizing],
    md: tuple[Instance, DecodeSizing],
    rld: tuple[Instance, DecodeSizing] | None,
    md_stall_s: np.ndarray,
    rld_tokens: np.ndarray,
    rld_extra_s: np.ndarray,
    handover_figures: tuple[float, float] | None = None,
) -> Plan:
    """The one plan builder: a fleet (its sizings per role) on problem ``pb`` at one rate,
    routing and hand-over mode, priced by :func:`role_costs` (the inventory's owned, rented and
    bought chips), its binding constraints named and its TTFT judged as the prefill sizing
    judged it (``PrefillSizing.meets_ttft``). The cost is chips + line + the P nodes' prefix
    cache (:meth:`Problem.cache_cost_usd_per_hour`, 0 without ``cache:``). The search, the
    baselines, the robust study and every other question build their plans here.

    ``md_stall_s``, ``rld_tokens`` and ``rld_extra_s`` are MD's hand-over stall, RLD's tokens and
    RLD's time after MD holds the KV, per class, at the TPOT target (:meth:`Sizing.decode_load`);
    ``handover_figures``: :func:`handover_figures_of` these, where the caller has them from an
    earlier build on the same decode rows (a price table's next prices).
    """
    p, ps = prefill
    m, ms = md
    r_inst, rs = rld if rld is not None and rld[1].instances > 0 else (None, None)
    roles: dict[str, tuple[Instance, int] | None] = {
        "P": (p, ps.instances),
        "RLD": (r_inst, rs.instances) if r_inst is not None and rs is not None else None,
        "MD": (m, ms.instances),
    }
    role_cost = role_costs(roles, pb.pricing)
    line = pb.line_cost_usd_per_hour
    cache_cost = pb.cache_cost_usd_per_hour(ps.instances) if hasattr(pb, "cache") else 0.0
    binding = [f"P: {ps.bound_by}", f"MD: {ms.batch_bound_by}"]
    if rs is not None:
        binding.append(f"RLD: {rs.batch_bound_by}")
    if pb.topology.cross_dc and route.link_utilization > pb.line_utilization_warning:
        binding.append("line utilization")
    if handover_figures is None:
        handover_figures = handover_figures_of(pb, md_stall_s, rld_tokens)
    stall_max_s, share = handover_figures
    return made(
        Plan,
        topology=pb.topology.name,
        rate_rps=rate_rps,
        routing=route.routing,
        handover=mode if rs is not None else NO_HANDOVER,
        roles=roles,
        cost_usd_per_hour=sum(role_cost.values()) + line + cache_cost,
        role_cost_usd_per_hour=role_cost,
        link_cost_usd_per_hour=line,
        prefill=ps,
        decode={"RLD": rs, "MD": ms},
        route=route,
        md_stall_s=stall_max_s,
        rld_extra_s=rld_extra_s,
        rld_output_token_share=share,
        meets_sla=ps.meets_ttft,
        binding=binding,
        handover_inputs=(mode, m, rld_tokens, rld_extra_s, r_inst, rs),
        fleet_goodput_rps=None,
        problem=pb,
        cache_cost_usd_per_hour=cache_cost,
    )


def handover_figures_of(
    pb: Any, md_stall_s: np.ndarray, rld_tokens: np.ndarray
) -> tuple[float, float]:
    """A plan's hand-over figures at the TPOT target, as :func:`build_plan` reports them: MD's
    longest stall [s] (0 without one) and RLD's share of the output tokens [-], weighted by
    the request classes of problem ``pb``. Price-independent: a price table keeps them per
    decode combination."""
    w = pb.classes.weight
    stall = np.asarray(md_stall_s, dtype=float)
    # the ufuncs' reductions: the methods' (max, sum) less their Python dispatch
    stall_max_s = float(np.maximum.reduce(stall, axis=None)) if stall.size else 0.0
    share = float(
        np.add.reduce(w * rld_tokens, axis=None)
        / np.add.reduce(w * pb.classes.output_tokens, axis=None)
    )
    return stall_max_s, share


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
        if pricing is None:
            out.append(
                ChipCost(name, n, 0, 0, n, 0, n * rental[name], 0.0, n * rental[name], 0.0, 0.0)
            )
            continue
        own, own_cost, extra_cost = pricing.kind_cost(name, n)
        extra = n - own
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


@dataclass(frozen=True)
class EstimatedCost:
    """The part of a plan's cost that rests on prices its profiles mark as estimates."""

    estimated_usd_per_hour: float
    total_usd_per_hour: float
    #: (which price, its part of the cost [USD/h]), in the order of :func:`cost_split`, the
    #: line last
    items: tuple[tuple[str, float], ...]

    @property
    def share(self) -> float:
        """The estimated part of the cost [-] (0 for a plan that costs nothing)."""
        if self.total_usd_per_hour <= 0:
            return 0.0
        return self.estimated_usd_per_hour / self.total_usd_per_hour


def estimated_cost(plan: Plan) -> EstimatedCost:
    """How much of the plan's cost [USD/h] rests on estimated prices, and which ones.

    Each part of :func:`cost_split` counts when the profile lists its price under
    ``estimated``: rented chips by ``price.rental_usd_per_hour``, bought chips and owned
    chips at their amortized capex by ``price.capex_usd`` (owned chips counted as sunk cost
    only their opex, which no profile estimates); the line by the link profile's
    ``price_usd_per_month`` (:attr:`~pddplan.deployment.links.LinkNumbers.price_estimated`).
    """
    pricing = getattr(plan.problem, "pricing", None)
    amortized = pricing is not None and pricing.owned_cost == "amortized"
    marked: dict[str, list[str]] = {}
    for v in plan.roles.values():
        if v is not None:
            marked[v[0].chip.name] = list(v[0].chip.price.estimated)
    items: list[tuple[str, float]] = []
    for c in cost_split(plan):
        est = marked.get(c.chip, [])
        if "rental_usd_per_hour" in est and c.rented_usd_per_hour > 0:
            items.append((f"{c.chip} rental price", c.rented_usd_per_hour))
        capex = c.bought_usd_per_hour + (c.owned_usd_per_hour if amortized else 0.0)
        if "capex_usd" in est and capex > 0:
            items.append((f"{c.chip} purchase price", capex))
    wan = getattr(plan.problem, "wan", None)
    if wan is not None and wan.price_estimated and plan.link_cost_usd_per_hour > 0:
        items.append(("line price", plan.link_cost_usd_per_hour))
    return EstimatedCost(
        estimated_usd_per_hour=sum(v for _, v in items),
        total_usd_per_hour=plan.cost_usd_per_hour,
        items=tuple(items),
    )
