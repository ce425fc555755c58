"""The search problem: everything a solve holds fixed, in SI numbers, built from a resolved scenario."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from pddplan import timing, units
from pddplan.deployment import (
    Instance,
    Layout,
    LinkNumbers,
    ModelNumbers,
    RequestClasses,
    layouts_for,
    model_numbers,
    request_classes,
)
from pddplan.deployment.caches import CacheNumbers, cache_numbers
from pddplan.deployment.chips import repriced
from pddplan.deployment.keys import HashedKey
from pddplan.deployment.workloads import sorted_distinct
from pddplan.errors import InfeasibleError, UsageError
from pddplan.io.memo import IdentityMemo
from pddplan.solver.plan import within_limits
from pddplan.solver.sla import TTFT_PERCENTILES
from pddplan.spec import DEFAULT_DECODE_SLOT_WAIT_PROBABILITY_CAP, Chip
from pddplan.spec.scenario import ResolvedScenario, role_chip_names
from pddplan.timing import Routing

ROLES = ("P", "RLD", "MD")
PERCENTILES = TTFT_PERCENTILES
HANDOVER_MODES = timing.HANDOVER_MODES
#: Routing thresholds tried for a continuous hit-rate distribution (between class points).
MAX_ROUTING_THRESHOLDS = 8
#: ``Problem.routing`` value (internal): every routing that relays something.
RELAY_ONLY = "relay-only"


@dataclass(frozen=True)
class Topology:
    """Which architecture is being sized."""

    name: str  # "pdd", "same-dc", "no-relay"
    cross_dc: bool  # KV goes over the WAN line to the decode pool
    relay: bool  # RLD exists
    anomalous_filter: bool


def physical_topology(t: Topology) -> tuple[bool, bool, bool]:
    """What a topology does, without its name: two of equal fields time and size alike
    (:meth:`Problem.physics_key`; the name labels plans, and chooses the same-datacenter
    baseline's options in :func:`build_problem`, which the options' keys tell apart)."""
    return (t.cross_dc, t.relay, t.anomalous_filter)


#: Each role's datacenter where decode crosses the line: P and RLD with the prefill (A), MD
#: across the line (B); in the same-datacenter baseline every role is in A.
ROLE_DATACENTER = {"P": "A", "RLD": "A", "MD": "B"}

PDD = Topology("pdd", cross_dc=True, relay=True, anomalous_filter=True)
#: PDD without the anomalous filter: anomalous requests cross the line like any other (the
#: search's variant, and PDD's problem where the scenario turns the filter off)
PDD_UNFILTERED = replace(PDD, anomalous_filter=False)
SAME_DC = Topology("same-dc", cross_dc=False, relay=False, anomalous_filter=False)
NO_RELAY = Topology("no-relay", cross_dc=True, relay=False, anomalous_filter=False)


#: [-] A plan names the line as a binding constraint once its load passes this share of the
#: line's utilization cap (the planner's choice: within 10% of the cap, a little more traffic
#: or a slower line would change the plan).
LINE_BINDING_SHARE = 0.9


@dataclass(frozen=True)
class Pricing:
    """What each chip costs per hour [USD/(chip h)] under an inventory: the owned chips first
    (amortized capex plus opex, or opex only when sunk), then rented or bought ones.

    The cost of ``n`` chips of one kind is ``owned * min(n, O) + extra * max(n - O, 0)``: not a
    sum of per-role costs when one kind serves several roles (the owned chips are shared), so the
    search prices whole option triples (:meth:`Problem.owned_discount`).
    """

    owned: dict[str, int]
    owned_usd_per_chip_hour: dict[str, float]
    extra_usd_per_chip_hour: dict[str, float]  # beyond the owned chips
    rental_usd_per_chip_hour: dict[str, float]
    capex_usd: dict[str, float | None]
    additional: str  # "rent" or "buy"
    owned_cost: str  # "amortized" or "sunk"

    def kind_cost(self, name: str, n: int) -> tuple[int, float, float]:
        """``n`` chips of kind ``name``: how many are owned ones, and the owned ones' and the
        others' cost [USD/h] (the owned chips used first). The one price of a kind's chips:
        :meth:`chips_cost_usd_per_hour` adds it up, :func:`~pddplan.solver.plan.cost_split`
        reports its parts."""
        own = min(n, self.owned.get(name, 0))
        return (
            own,
            own * self.owned_usd_per_chip_hour.get(name, 0.0),
            (n - own) * self.extra_usd_per_chip_hour[name],
        )

    def chips_cost_usd_per_hour(self, chips: dict[str, int]) -> float:
        """Cost of a fleet's chips [USD/h], owned ones used first."""
        total = 0.0
        for name, n in chips.items():
            _own, own_cost, extra_cost = self.kind_cost(name, n)
            total += own_cost
            total += extra_cost
        return total


def bought_usd_per_chip_hour(inventory: Any, capex_usd: float) -> float:
    """What an owned or bought chip costs [USD/(chip h)] under ``inventory``
    (``scenario.inventory``): its capex amortized over the inventory's years, plus its opex. The
    one price of a purchased chip: :func:`build_pricing` and ``chips rank``
    (:func:`additional_usd_per_chip_hour`) call it."""
    return (
        units.amortized_usd_per_hour(capex_usd, inventory.amortization_years)
        + inventory.opex_usd_per_chip_hour
    )


def additional_usd_per_chip_hour(rs: ResolvedScenario, chip: Chip) -> float | None:
    """What one more chip of ``chip`` costs the scenario ``rs`` [USD/(chip h)], beyond the chips
    it owns: its rental (``inventory.additional: rent``, the default) or its purchase
    (:func:`bought_usd_per_chip_hour`), None where it is bought and has no ``price.capex_usd``.
    The price :func:`build_pricing` gives a scenario's chips beyond the owned ones."""
    inv = rs.scenario.inventory
    if inv.additional == "rent":
        return float(chip.price.rental_usd_per_hour)
    if chip.price.capex_usd is None:
        return None
    return bought_usd_per_chip_hour(inv, chip.price.capex_usd)


def rental_usd_per_chip_hour(rs: ResolvedScenario) -> dict[str, float]:
    """Each chip the scenario loaded, at its rental [USD/(chip h)]: a fleet's price without an
    inventory (:func:`~pddplan.solver.plan.chips_cost_usd_per_hour`), for every chip, also one
    of which no instance fits."""
    return {n: c.price.rental_usd_per_hour for n, c in rs.chips.items()}


def build_pricing(rs: ResolvedScenario) -> Pricing | None:
    """The inventory's pricing, or None when every chip is simply rented (no inventory)."""
    inv = rs.scenario.inventory
    owned = {k: v for k, v in inv.owned.items() if v > 0}
    if not owned and inv.additional == "rent":
        return None
    rental = rental_usd_per_chip_hour(rs)
    capex = {n: c.price.capex_usd for n, c in rs.chips.items()}

    def no_capex(name: str, why: str, fix: str) -> UsageError:
        return UsageError(
            f"inventory: {why} {name} has no price.capex_usd to amortize; give one "
            f"(--set chips.{name}.price.capex_usd=USD) or {fix}"
        )

    def owned_rate(name: str) -> float:
        if inv.owned_cost == "sunk":
            return float(inv.opex_usd_per_chip_hour)
        cx = capex.get(name)
        if cx is None:
            raise no_capex(
                name, "owned", "count owned chips as sunk (--set inventory.owned_cost=sunk)"
            )
        return bought_usd_per_chip_hour(inv, cx)

    def extra_rate(name: str) -> float:
        rate = additional_usd_per_chip_hour(rs, rs.chips[name])
        if rate is None:
            raise no_capex(name, "bought", "rent them (--set inventory.additional=rent)")
        return rate

    own_rate = {n: owned_rate(n) for n in owned}
    extra = {n: extra_rate(n) for n in rs.chips}
    return Pricing(owned, own_rate, extra, rental, capex, inv.additional, inv.owned_cost)


@dataclass
class Problem:
    """Everything the search holds fixed, in numbers."""

    model: ModelNumbers
    classes: RequestClasses
    options: dict[str, list[Instance]]
    wan: LinkNumbers
    rdma: LinkNumbers
    topology: Topology
    ttft_targets_s: tuple[float, float, float]
    tpot_s: float
    chunk_size_tokens: int
    prefill_utilization_cap: float
    link_utilization_cap: float
    handover_modes: tuple[str, ...]
    catch_up_threshold_tokens: int
    routing: str
    max_chips: dict[str, int] = field(default_factory=dict)
    enforce_ttft: bool = True
    pricing: Pricing | None = None
    #: [-] a decode pool is sized so that a request finds every slot taken (Erlang C over its
    #: slots) with at most this probability (``serving.decode_slot_wait_probability_cap``)
    decode_slot_wait_probability_cap: float = DEFAULT_DECODE_SLOT_WAIT_PROBABILITY_CAP
    #: the P nodes' prefix-cache tiers at one capacity (``cache:``; None: hits are free in HBM)
    cache: CacheNumbers | None = None
    #: why a role has no option where no instance size of it has a layout of the model at all
    #: (:func:`check_options` says so instead of blaming memory)
    no_layout: dict[str, str] = field(default_factory=dict)

    # --- costing (prices only; the sizing never sees them)
    def cache_cost_usd_per_hour(self, p_instances: int) -> float:
        """The prefix cache of ``p_instances`` P nodes [USD/h] (0 without cache tiers)."""
        return 0.0 if self.cache is None else p_instances * self.cache.usd_per_hour_per_node

    @property
    def line_cost_usd_per_hour(self) -> float:
        """The WAN line's price when the topology uses it [USD/h] (0 in one datacenter)."""
        return self.wan.price_usd_per_hour if self.topology.cross_dc else 0.0

    @property
    def lowest_utilization_cap(self) -> float:
        """The lowest of the utilization caps a fleet is sized within [-]: prefill's, and the
        line's where the topology crosses it. A fleet sized within them (up to
        :func:`~pddplan.solver.fleet.sizing_limit_rps`) meets no target past that limit over
        this share, where its prefill pool or its line runs at 100%
        (:func:`~pddplan.solver.fleet.overload_rps`)."""
        caps = [self.prefill_utilization_cap]
        if self.topology.cross_dc:
            caps.append(self.link_utilization_cap)
        return min(caps)

    @property
    def line_utilization_warning(self) -> float:
        """The line load above which a plan names the line as binding [-]:
        :data:`LINE_BINDING_SHARE` of the utilization cap."""
        return LINE_BINDING_SHARE * self.link_utilization_cap

    def fits_inventory(self, chips: dict[str, int]) -> bool:
        """Whether a fleet's chips per kind are within ``max_chips``."""
        return within_limits(chips, self.max_chips)

    def unit_usd_per_hour(self, inst: Instance) -> float:
        """Price of one instance beyond the owned chips [USD/h]."""
        if self.pricing is None:
            return inst.price_usd_per_hour
        return self.pricing.extra_usd_per_chip_hour[inst.chip.name] * inst.tensor_parallel

    def unit_lb_usd_per_hour(self, inst: Instance) -> float:
        """The least one instance can cost, owned chips included [USD/h]."""
        unit = self.unit_usd_per_hour(inst)
        pr = self.pricing
        if pr is not None and pr.owned.get(inst.chip.name):
            unit = min(unit, pr.owned_usd_per_chip_hour[inst.chip.name] * inst.tensor_parallel)
        return unit

    def owned_discount(
        self, a_chips: list[dict[str, int]], b_chips: list[dict[str, int]]
    ) -> np.ndarray | float:
        """What the owned chips save on every pair of partial fleets ``a[i] + b[j]`` against
        pricing every chip at :meth:`unit_usd_per_hour` [USD/h]: exact, shared kinds included."""
        pr = self.pricing
        if pr is None or not pr.owned:
            return 0.0
        out = np.zeros((len(a_chips), len(b_chips)))
        for name, own in pr.owned.items():
            save = pr.extra_usd_per_chip_hour[name] - pr.owned_usd_per_chip_hour[name]
            a = np.array([c.get(name, 0) for c in a_chips], dtype=float)
            b = np.array([c.get(name, 0) for c in b_chips], dtype=float)
            if save == 0 or not (a.any() or b.any()):
                continue
            out += save * np.minimum(a[:, None] + b[None, :], own)
        return out

    # --- chip-independent per-class arrays
    @cached_property
    def paths(self) -> timing.Paths:
        return timing.Paths(
            kv_bytes_per_token=self.model.kv_bytes_per_token,
            wan=self.wan,
            rdma=self.rdma,
            cross_dc=self.topology.cross_dc,
            tpot_s=self.tpot_s,
            catch_up_threshold_tokens=self.catch_up_threshold_tokens,
        )

    @cached_property
    def wan_bytes(self) -> np.ndarray:
        c = self.classes
        return timing.decode_side_bytes(self.paths, c.input_tokens, c.hit_rate, self.on_decode_side)

    @cached_property
    def mean_wan_bytes(self) -> float:
        """KV bytes a request sends to the decode pool, on average over the classes [bytes]:
        the line's load per request (its utilization at a rate, the rate it saturates at)."""
        return float(np.add.reduce(self.classes.weight * self.wan_bytes))

    @cached_property
    def on_decode_side(self) -> np.ndarray:
        """Classes whose decode runs on MD (or D): all but the filtered anomalous ones."""
        return timing.on_decode_side(self.classes.anomalous, self.topology)

    @cached_property
    def routings(self) -> list[Routing]:
        """Routings tried: relay nothing, relay below each interior hit-rate edge, relay all."""
        return list(self._routings_tried[0])

    @cached_property
    def routings_key(self) -> HashedKey:
        """:attr:`routings` as one hashed key part (a price table's key names the routings
        tried; a tuple's hash would call each routing's ``__hash__`` at every build)."""
        return self._routings_tried[1]

    @cached_property
    def _routings_tried(self) -> tuple[tuple[Routing, ...], HashedKey]:
        """:attr:`routings` and :attr:`routings_key`, each kept once per request classes."""
        if not (self.topology.relay and self.topology.cross_dc) or self.routing == "no-relay":
            return _RELAY_NONE_TRIED
        if self.routing == "all-relay":
            return _RELAY_ALL_TRIED
        out = _ROUTINGS.get(self.classes, (), lambda: _relay_routings_tried(self.classes))
        return out[1] if self.routing == RELAY_ONLY else out[0]

    def physics_key(self) -> tuple[Any, ...]:
        """Everything the search's timings depend on, prices and inventory excluded.

        The routing choice (``routing``: which routings are tried) is not part of it: every
        memoized value is keyed on the one :class:`Routing` it was computed for. Nor is the
        topology's name, only what it does (:func:`physical_topology`): the baseline that keeps
        RLD for anomalous requests only is PDD's problem under the routing that relays nothing,
        and shares every timing and sizing the PDD search computed there.
        """
        return (
            self.classes.key,
            _unpriced(self.wan),
            _unpriced(self.rdma),
            physical_topology(self.topology),
            self.ttft_targets_s,
            self.tpot_s,
            self.chunk_size_tokens,
            self.prefill_utilization_cap,
            self.link_utilization_cap,
            self.decode_slot_wait_probability_cap,
            self.handover_modes,
            self.catch_up_threshold_tokens,
            self.enforce_ttft,
            self.model,
            self.cache,
        )


def _relay_routings(classes: RequestClasses) -> tuple[Routing, ...]:
    """:attr:`Problem.routings` of a relaying cross-datacenter problem on ``classes``: relay
    nothing, relay below each interior hit-rate edge (the workload's own bins' edges, or the
    midpoints between its distinct hit rates, at most :data:`MAX_ROUTING_THRESHOLDS`), relay
    all."""
    h = sorted_distinct(classes.hit_rate[~classes.anomalous])
    edges = classes.routing_edges
    if edges is not None:
        # route by the workload's own hit-rate bins: their interior edges
        mids = edges[(edges > h.min()) & (edges <= h.max())]
    else:
        mids = (h[:-1] + h[1:]) / 2
        if len(mids) > MAX_ROUTING_THRESHOLDS:
            mids = np.quantile(mids, np.linspace(0, 1, MAX_ROUTING_THRESHOLDS))
    return (
        Routing.none(),
        *(Routing.below(x) for x in sorted({float(x) for x in mids})),
        Routing.all(),
    )


def _tried(routings: tuple[Routing, ...]) -> tuple[tuple[Routing, ...], HashedKey]:
    return routings, HashedKey.of(routings)


def _relay_routings_tried(classes: RequestClasses) -> tuple[tuple, tuple]:
    """:func:`_relay_routings` of ``classes`` (all, then all but relaying nothing), each with
    its key (:attr:`Problem.routings_key`)."""
    out = _relay_routings(classes)
    return _tried(out), _tried(out[1:])


#: :func:`_relay_routings_tried` by classes object (a sweep's, a robust study's and a verdict
#: check's problems share the classes of a workload they do not change,
#: :func:`~pddplan.deployment.workloads.request_classes`).
_ROUTINGS = IdentityMemo()
_RELAY_NONE_TRIED = _tried((Routing.none(),))
_RELAY_ALL_TRIED = _tried((Routing.all(),))


@lru_cache(maxsize=256)
def _unpriced(link: LinkNumbers) -> LinkNumbers:
    """A link's numbers less what only its price depends on (for :meth:`Problem.physics_key`;
    memoized: every solver of a sweep's points builds the key)."""
    return replace(
        link,
        price_usd_per_hour=0.0,
        price_basis="",
        price_estimated=False,
        bandwidth_overridden=False,
    )


def bandwidth_overridden(rs: ResolvedScenario) -> bool:
    """Whether the scenario (or a ``--set``) overrides the WAN line profile's bandwidth."""
    return "bandwidth_gbit_per_s" in rs.scenario.overrides.get("links", {}).get(rs.link.name, {})


def layout_options(
    chip,
    model: ModelNumbers,
    chips: int,
    memory_utilization: float,
    kinds,
    keep: frozenset[InstanceKey] | None = None,
) -> list[Instance]:
    """Instances of ``chips`` chips in every layout of ``kinds`` that the model allows (only
    those in ``keep`` when given).

    Memoized on the chip and model objects (a sweep's points share the profiles they do not
    change, and so the instances, whose derived numbers are kept on them)."""
    args = (id(model), int(chips), float(memory_utilization), tuple(kinds), keep)
    kept = _LAYOUT_OPTIONS.get(
        chip, args, lambda: (model, _chip_instances(chip, model, args, memory_utilization))
    )
    if kept[0] is not model:  # another model object at the same address: not this one's
        return _instances(chip, model, chips, memory_utilization, kinds, keep)
    return list(kept[1])


def _chip_instances(chip, model: ModelNumbers, args: tuple, mem: float) -> list[Instance]:
    """:func:`layout_options` of a chip object met for the first time: the instances of the
    last variant of that chip met with the same ``args`` repriced where the two differ in
    price alone (:func:`~pddplan.deployment.chips.repriced`: a price sweep's points keep
    every derived number of the chip's instances), else built."""
    _, chips, _, kinds, keep = args
    twin = _LAST_VARIANT.get((chip.name, args))
    out = repriced(twin[2], chip) if twin is not None and twin[1] is model else None
    if out is None:
        out = _instances(chip, model, chips, mem, kinds, keep)
    if len(_LAST_VARIANT) >= _LAYOUT_OPTIONS.size:
        _LAST_VARIANT.clear()
    _LAST_VARIANT[(chip.name, args)] = (chip, model, out)
    return out


#: :func:`layout_options`' instances by chip and model object.
_LAYOUT_OPTIONS = IdentityMemo(size=512)
#: The instances of the last variant of each chip (by name) and :func:`layout_options` args,
#: with the chip and model objects they were built on (held, so that the model's ``id`` in
#: the args stays its own).
_LAST_VARIANT: dict[tuple[str, tuple], tuple[Chip, ModelNumbers, list[Instance]]] = {}


def _instances(chip, model: ModelNumbers, chips: int, mem: float, kinds, keep) -> list[Instance]:
    """:func:`layout_options`, computed (``mem``: the memory utilization)."""
    out: list[Instance] = []
    if keep is not None and not any(k[0] == chip.name and k[1] == chips for k in keep):
        return out
    for lay in layouts_for(chip, model, chips):
        kind = "tp" if lay.expert_parallel == 1 else ("ep-tbo" if lay.overlap else "ep")
        if kind in kinds and (keep is None or (chip.name, chips, lay.label) in keep):
            out.append(Instance(chip, model, chips, mem, layout=lay))
    return out


#: An instance kind as a plan names it: (chip, chips per instance, layout label).
InstanceKey = tuple[str, int, str]


def instance_key(inst: Instance) -> InstanceKey:
    """``inst``'s :data:`InstanceKey`."""
    return (inst.chip.name, inst.tensor_parallel, inst.lay.label)


def build_problem(
    rs: ResolvedScenario,
    topology: Topology = PDD,
    wan_bandwidth_scale: float = 1.0,
    only: dict[str, frozenset[InstanceKey]] | None = None,
) -> Problem:
    """The sizing problem of ``rs`` on ``topology``.

    ``only``: when given, each role's options are restricted to these instance kinds (a role
    it does not name keeps none), for a caller that re-evaluates a known fleet on a changed
    scenario and need not build and check every layout of the catalog. Nothing else changes.
    """
    scen = rs.scenario
    sv = scen.serving
    shared_parts = _SHARED_PARTS.get(
        rs, float(wan_bandwidth_scale), lambda: _shared_parts(rs, wan_bandwidth_scale)
    )
    model = shared_parts["model"]
    options: dict[str, list[Instance]] = {}
    mem = sv.decode_memory_utilization
    if topology.name == "same-dc":
        assert scen.baseline is not None
        b = scen.baseline
        keep = (only.get("P", frozenset()) | only.get("MD", frozenset())) if only else None
        insts = [
            o
            for o in layout_options(
                rs.chips[b.chip], model, b.chips_per_instance, mem, b.layouts, keep
            )
            if o.fits
        ]
        options = {"P": insts, "RLD": [], "MD": insts}
    elif only is None:
        # every problem of one scenario has the same options (a solve builds PDD's, its
        # variant without the anomalous filter and each baseline's from one ``rs``)
        shared = _ROLE_OPTIONS.get(rs, None, lambda: _role_options(rs, model, mem, None))
        options = {role: list(opts) for role, opts in shared.items()}
    else:
        options = _role_options(rs, model, mem, only)
    # why a role :func:`check_options` reads has no option at all: only a problem of every
    # option is checked (one restricted to a known fleet's kinds, ``only``, is not)
    checked = ("P", "MD", "RLD") if topology.relay else ("P", "MD")
    no_layout = {
        role: why
        for role in checked
        if only is None
        and not options[role]
        and (why := _no_layout(rs, model, role, topology)) is not None
    }
    topo = topology
    if topology.name == "pdd" and not sv.anomalous_filter:
        topo = PDD_UNFILTERED if topology == PDD else replace(topology, anomalous_filter=False)
    return Problem(
        **shared_parts,
        options=options,
        topology=topo,
        max_chips=dict(scen.limits.max_chips),
        pricing=build_pricing(rs),
        no_layout=no_layout,
    )


def _no_layout(
    rs: ResolvedScenario, model: ModelNumbers, role: str, topology: Topology
) -> str | None:
    """Why ``role`` has no instance where none of its chips and sizes has a layout of the model
    (every size's problems, :meth:`~pddplan.deployment.Layout.problems`); None where some has
    one (its instances then hold no copy of the weights: a memory fault)."""
    scen = rs.scenario
    if topology.name == "same-dc":
        if scen.baseline is None:
            return None
        pairs = [(scen.baseline.chip, scen.baseline.chips_per_instance, scen.baseline.layouts)]
    else:
        choice = getattr(scen.roles, role)
        pairs = [
            (name, n, choice.layouts)
            for name in role_chip_names(rs, role)
            for n in choice.chips_per_instance
        ]
    mem = scen.serving.decode_memory_utilization
    why: dict[int, str] = {}
    for name, n, kinds in pairs:
        if layout_options(rs.chips[name], model, n, mem, kinds):
            return None
        why.setdefault(n, "; ".join(Layout(n).problems(model)) or "no layout of the kinds asked")
    return "; ".join(f"{n} chips: {w}" for n, w in why.items())


def _shared_parts(rs: ResolvedScenario, wan_bandwidth_scale: float) -> dict[str, Any]:
    """What every problem :func:`build_problem` builds of ``rs`` holds, whatever its topology
    and options: the model's and the links' numbers, the request classes, the SLA and the
    serving knobs (its keyword arguments of :class:`Problem`)."""
    scen = rs.scenario
    sv = scen.serving
    model = model_numbers(rs.model)
    return {
        "model": model,
        "classes": request_classes(
            rs.workload,
            sv.hit_rate_points_per_bin,
            sv.length_points,
            anomalous_filter=sv.anomalous_filter,
        ),
        "wan": LinkNumbers.of(rs.link, wan_bandwidth_scale, bandwidth_overridden(rs)),
        "rdma": LinkNumbers.of(rs.rdma),
        "ttft_targets_s": (scen.sla.ttft_p50_s, scen.sla.ttft_p90_s, scen.sla.ttft_p99_s),
        "tpot_s": units.ms_to_s(scen.sla.tpot_ms),
        "chunk_size_tokens": sv.chunk_size_tokens,
        "prefill_utilization_cap": sv.prefill_utilization_cap,
        "link_utilization_cap": sv.link_utilization_cap,
        "decode_slot_wait_probability_cap": sv.decode_slot_wait_probability_cap,
        "handover_modes": HANDOVER_MODES if sv.handover == "auto" else (sv.handover,),
        "catch_up_threshold_tokens": sv.catch_up_threshold_tokens,
        "routing": sv.routing,
        "cache": cache_numbers(rs, model),
    }


#: :func:`_shared_parts` by resolved scenario object and WAN bandwidth scale (a solve builds a
#: problem of one ``rs`` for PDD, its variant without the anomalous filter and each baseline;
#: ``rs`` is frozen, and the memo holds it, so that no other object meets its ``id``).
_SHARED_PARTS = IdentityMemo(size=16)


def _role_options(
    rs: ResolvedScenario,
    model: ModelNumbers,
    mem: float,
    only: dict[str, frozenset[InstanceKey]] | None,
) -> dict[str, list[Instance]]:
    """Each role's instances that hold the model (:func:`build_problem`'s, on two
    datacenters)."""
    options: dict[str, list[Instance]] = {}
    for role in ROLES:
        choice = getattr(rs.scenario.roles, role)
        keep = only.get(role, frozenset()) if only is not None else None
        opts = [
            o
            for name in role_chip_names(rs, role)
            if keep is None or any(k[0] == name for k in keep)
            for n in choice.chips_per_instance
            for o in layout_options(rs.chips[name], model, n, mem, choice.layouts, keep)
        ]
        options[role] = [o for o in opts if o.fits]
    return options


#: :func:`_role_options` of a resolved scenario, by its identity (its problems share them).
_ROLE_OPTIONS = IdentityMemo(size=16)


def check_options(pb: Problem) -> None:
    for role in ("P", "MD", "RLD"):
        why = pb.no_layout.get(role)
        if why is not None:
            raise InfeasibleError(
                f"no {role} instance size has a layout of {pb.model.name}: {why}; give sizes "
                "that divide its attention heads (roles.ROLE.chips_per_instance)",
                binding="layout",
            )
    for role in ("P", "MD"):
        if not pb.options[role]:
            raise InfeasibleError(
                f"no {role} option holds the model's weights in memory; use more chips per instance",
                binding="memory",
            )
    if pb.topology.relay and not pb.options["RLD"]:
        raise InfeasibleError(
            "no RLD option holds the model's weights in memory; use more chips per instance",
            binding="memory",
        )
