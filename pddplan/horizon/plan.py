"""Own the base, rent the peak: owned chips chosen over a day's load and its growth.

Every slot of every month of the amortization horizon is served by the solver's plan at that
slot's rate with the owned chips (:func:`pddplan.tiers.solve` in rate mode, exactly
``pddplan solve --rate R --own CHIP=N``): its chips beyond the owned ones are rented for the
slot. The owned counts are chosen to minimize the horizon's cost:

1. every distinct slot rate is solved with nothing owned: the chips each slot needs;
2. per chip, the owned count of least cost if the slots' fleets stayed as they are (a
   newsvendor choice: owning one more chip pays where the chip is busy more than its break-even
   utilization, :func:`break_even_utilization`);
3. the count is verified: the slots are re-solved with it owned and its neighbours (the next
   needed count down and up, per chip) are tried the same way, moving while the cost falls.

Solves are shared: a plan is cached by (rate, hit-rate distribution, owned chips), and along
the sorted rates of one owned inventory a run of rates whose two ends have the same fleet takes
that fleet (the least cost almost never falls as the rate grows, so the fleet is a least-cost
plan between them; where it does, near a line's capacity (docs/solve.md, "Max-BCR and budget
modes"), a cheaper fleet least-cost only strictly inside such a run would be missed;
``tests/unit/horizon`` checks every slot of the bundled example against its own solve).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pddplan import units
from pddplan.errors import InfeasibleError, UsageError
from pddplan.horizon.billing import billed_hours, started_hours

#: A resolver of overrides (dotted path -> value) into a resolved scenario.
Resolve = Callable[[Mapping[str, Any]], Any]
Owned = tuple[tuple[str, int], ...]
WEEK_DAYS = 7.0


@dataclass(frozen=True)
class Slot:
    """One slot of one kind of day in one month."""

    month: int  # from 0
    day: str  # "day" (the typical day) or a weekday
    slot: int
    rate_rps: float
    hit: int | None  # index of the slot's hit-rate distribution (None: the workload's)
    hours: float  # [h] hours of the horizon this slot stands for


@dataclass(frozen=True)
class SlotFleet:
    """A slot's plan under one owned inventory: the solver's plan and its chips."""

    plan: Any  # pddplan.solver.Plan
    chips: dict[str, int]

    @property
    def key(self) -> tuple[Any, ...]:
        return fleet_key(self.plan)


def fleet_key(plan: Any) -> tuple[Any, ...]:
    """What makes two plans the same fleet: each role's chip, instance size and count."""
    return tuple(
        (role, v[0].chip.name, v[0].tensor_parallel, v[1]) if v is not None else (role,)
        for role, v in plan.roles.items()
    )


@dataclass(frozen=True)
class ChipEconomics:
    """What one chip costs owned and rented [USD/(chip h)]."""

    capex_usd_per_chip_hour: float  # amortized capex (0 when owned chips are sunk)
    opex_usd_per_chip_hour: float
    rental_usd_per_chip_hour: float
    idle_opex_share: float
    startup_minutes: float
    billing_minutes: float

    @property
    def fixed_usd_per_chip_hour(self) -> float:
        """An owned chip's cost every hour, busy or not."""
        return self.capex_usd_per_chip_hour + self.idle_opex_share * self.opex_usd_per_chip_hour

    @property
    def saved_usd_per_busy_hour(self) -> float:
        """What a busy owned chip saves against a rented one, an hour (its rent less the opex
        it draws above idle)."""
        return (
            self.rental_usd_per_chip_hour - (1 - self.idle_opex_share) * self.opex_usd_per_chip_hour
        )


def break_even_utilization(e: ChipEconomics) -> float:
    """The share of hours [-] above which owning a chip beats renting it (``inf``: never).

    Notes
    -----
    ``u* = (capex + s * opex) / (rent - (1 - s) * opex)``: an owned chip costs its amortized
    capex and its idle share ``s`` of the opex every hour, and saves the rent less the rest of
    the opex in the hours it is busy. Start-up and billing units are left out (they favour
    owning a little).
    """
    saved = e.saved_usd_per_busy_hour
    return e.fixed_usd_per_chip_hour / saved if saved > 0 else math.inf


@dataclass
class Evaluation:
    """One owned inventory over the horizon: each slot's fleet and the costs [USD]."""

    owned: dict[str, int]
    fleets: list[SlotFleet]  # in the order of the horizon's slots
    owned_usd: float
    rented_usd: float
    line_usd: float
    busy_share: dict[str, float]  # per owned chip: share of its hours it serves [-]
    by_month_usd: list[float] = field(default_factory=list)
    #: the P nodes' prefix cache (each slot's plan's, with ``cache:`` tiers; else 0)
    cache_usd: float = 0.0

    @property
    def total_usd(self) -> float:
        return self.owned_usd + self.rented_usd + self.line_usd + self.cache_usd


@dataclass
class Horizon:
    """The question: the load's slots and how to solve one."""

    resolve: Resolve
    overrides: Mapping[str, Any]
    slots: list[Slot]
    slot_minutes: int
    hit_rates: list[Any]  # the distinct per-slot hit-rate distributions (spec HitRateDist)
    months: int
    solves: int = 0
    _cache: dict[tuple[float, int | None, Owned], SlotFleet] = field(default_factory=dict)
    _resolved: dict[tuple[int | None, Owned], Any] = field(default_factory=dict)

    # ---------------------------------------------------------------- solving
    def scenario_for(self, hit: int | None, owned: Owned) -> Any:
        """The resolved scenario with ``owned`` chips (and a slot's hit rates)."""
        key = (hit, owned)
        if key not in self._resolved:
            ov = dict(self.overrides)
            ov["inventory.owned"] = dict(owned)
            rs = self.resolve(ov)
            if hit is not None:  # the workload with the slot's hit rates, validated
                wl = rs.workload.model_copy(update={"hit_rate": self.hit_rates[hit]})
                rs = replace(rs, workload=wl)
            self._resolved[key] = rs
        return self._resolved[key]

    def solve(self, rate_rps: float, hit: int | None, owned: Owned) -> SlotFleet:
        """The solver's plan at one rate with ``owned`` chips (cached)."""
        key = (rate_rps, hit, owned)
        if key not in self._cache:
            from pddplan import tiers

            rs = self.scenario_for(hit, owned)
            self.solves += 1
            out = tiers.solve(rs, rate_rps=rate_rps, baselines=False)
            self._cache[key] = SlotFleet(out.plan, out.plan.chips_of())
        return self._cache[key]

    def fleets(self, owned: Mapping[str, int]) -> dict[tuple[float, int | None], SlotFleet]:
        """Every distinct slot's plan with ``owned`` chips, sharing runs of equal fleets."""
        own = owned_key(owned)
        groups: dict[int | None, list[float]] = {}
        for s in self.slots:
            groups.setdefault(s.hit, []).append(s.rate_rps)
        out: dict[tuple[float, int | None], SlotFleet] = {}
        for hit, rates in groups.items():
            rs = sorted(set(rates))
            got = self._bracket(rs, hit, own)
            out.update({(r, hit): f for r, f in zip(rs, got, strict=True)})
        return out

    def _bracket(self, rates: list[float], hit: int | None, own: Owned) -> list[SlotFleet]:
        out: list[SlotFleet | None] = [None] * len(rates)

        def at(i: int) -> SlotFleet:
            f = out[i]
            if f is None:
                try:
                    f = self.solve(rates[i], hit, own)
                except InfeasibleError as exc:
                    raise self._first_failure(rates, i, hit, own, exc) from None
                out[i] = f
            return f

        stack = [(0, len(rates) - 1)]
        while stack:
            lo, hi = stack.pop()
            a, b = at(lo), at(hi)
            if hi - lo <= 1:
                continue
            if a.key == b.key:
                for i in range(lo + 1, hi):
                    out[i] = a
                continue
            mid = (lo + hi) // 2
            stack.extend([(lo, mid), (mid, hi)])
        return [f for f in out if f is not None]

    def _first_failure(
        self, rates: list[float], failed: int, hit: int | None, own: Owned, exc: InfeasibleError
    ) -> InfeasibleError:
        """The error of a horizon whose slot at ``rates[failed]`` (sorted rates of one hit-rate
        distribution) has no plan: it names the first slot in time that has none. A fleet that
        meets the targets at a rate meets them below it, so the lowest rate without a plan is
        bisected among the rates below; the first slot at or above it is the first to fail."""
        lo, hi = -1, failed  # rates[lo] has a plan (or lo = -1), rates[hi] has none
        first: InfeasibleError = exc
        while hi - lo > 1:
            mid = (lo + hi) // 2
            try:
                self.solve(rates[mid], hit, own)
                lo = mid
            except InfeasibleError as e:
                hi, first = mid, e
        bar = rates[hi]
        over = [s for s in self.slots if s.hit == hit and s.rate_rps >= bar]
        s = min(over, key=lambda s: (s.month, s.slot))
        peak = max(over, key=lambda s: s.rate_rps)
        if s.rate_rps != bar:  # that slot's own error (its rate is above the lowest failing)
            try:
                self.solve(s.rate_rps, hit, own)
            except InfeasibleError as e:
                first = e
        more = (
            f"; so do {len(over) - 1} other slots at or above {bar:.4g} req/s, up to "
            f"{peak.rate_rps:.4g} req/s in month {peak.month + 1}"
            if len(over) > 1
            else ""
        )
        return InfeasibleError(
            f"load: month {s.month + 1}, {s.day} slot {slot_label(s.slot, self.slot_minutes)} "
            f"({s.rate_rps:.4g} req/s), the first slot without a plan: {first}{more}",
            binding=first.binding,
            relaxation=first.relaxation,
        )


def owned_key(owned: Mapping[str, int]) -> Owned:
    return tuple(sorted((c, int(n)) for c, n in owned.items() if n > 0))


def slot_label(slot: int, slot_minutes: int) -> str:
    """``"07:30"``: when a slot starts."""
    m = slot * slot_minutes
    return f"{m // 60:02d}:{m % 60:02d}"


# -------------------------------------------------------------------- costs


def evaluate(h: Horizon, owned: Mapping[str, int], econ: Mapping[str, ChipEconomics]) -> Evaluation:
    """The horizon's cost with ``owned`` chips: amortized capex and opex of the owned chips
    (their opex idle and busy), rent of the chips beyond them (start-ups and billing units
    counted) and the line."""
    by = h.fleets(owned)
    fleets = [by[(s.rate_rps, s.hit)] for s in h.slots]
    hours_total = sum(s.hours for s in h.slots)
    slot_h = h.slot_minutes / 60.0
    owned_usd = sum(n * econ_of(econ, c).fixed_usd_per_chip_hour for c, n in owned.items())
    owned_usd *= hours_total
    rented = line = cache = 0.0
    busy_h = {c: 0.0 for c in owned}
    by_month = [0.0] * h.months
    by_month_fixed = owned_usd / h.months
    # the slots of one day of one month, in order: billed as a repeating day
    days: dict[tuple[int, str], list[int]] = {}
    for i, s in enumerate(h.slots):
        days.setdefault((s.month, s.day), []).append(i)
    for (month, _day), idx in days.items():
        n_days = h.slots[idx[0]].hours / slot_h  # days this kind of day stands for
        kinds = {c for i in idx for c in fleets[i].chips} | set(owned)
        day_usd = 0.0  # rent
        day_opex = 0.0  # the owned chips' opex while busy (their idle share is in owned_usd)
        for c in sorted(kinds):  # one order of the sum whatever the string hashes are
            e = econ_of(econ, c)
            need = [fleets[i].chips.get(c, 0) for i in idx]
            o = owned.get(c, 0)
            rent = [max(n - o, 0) for n in need]
            busy = [min(n, o) for n in need]
            day_usd += e.rental_usd_per_chip_hour * billed_hours(
                rent, h.slot_minutes, e.startup_minutes, e.billing_minutes
            )
            if o:
                awake = started_hours(busy, h.slot_minutes, e.startup_minutes)
                day_opex += (1 - e.idle_opex_share) * e.opex_usd_per_chip_hour * awake
                busy_h[c] += sum(busy) * slot_h * n_days
        line_day = sum(fleets[i].plan.link_cost_usd_per_hour for i in idx) * slot_h
        cache_day = sum(fleets[i].plan.cache_cost_usd_per_hour for i in idx) * slot_h
        rented += day_usd * n_days
        owned_usd += day_opex * n_days
        line += line_day * n_days
        cache += cache_day * n_days
        by_month[month] += (day_usd + day_opex + line_day + cache_day) * n_days
    by_month = [v + by_month_fixed for v in by_month]
    share = {c: min(1.0, busy_h[c] / (n * hours_total)) for c, n in owned.items() if n > 0}
    return Evaluation(dict(owned), fleets, owned_usd, rented, line, share, by_month, cache)


def econ_of(econ: Mapping[str, ChipEconomics], chip: str) -> ChipEconomics:
    if chip not in econ:
        raise UsageError(f"load: no price for chip {chip}")  # pragma: no cover - built for all
    return econ[chip]


# -------------------------------------------------------------------- the search


def newsvendor(
    h: Horizon,
    needs: Sequence[dict[str, int]],
    econ: Mapping[str, ChipEconomics],
) -> dict[str, int]:
    """Per chip, the owned count of least cost if every slot kept the fleet ``needs`` gives it
    (one dict of chips per slot of ``h.slots``): the count among the needed ones (and 0) where
    the hours the next chip would be busy fall below its break-even utilization."""
    out: dict[str, int] = {}
    for c in sorted({k for n in needs for k in n}):
        e = econ[c]
        best, best_cost = 0, math.inf
        for o in breakpoints(needs, c):
            cost = e.fixed_usd_per_chip_hour * o * sum(s.hours for s in h.slots)
            cost += e.saved_usd_per_busy_hour * sum(
                s.hours * max(n.get(c, 0) - o, 0) for s, n in zip(h.slots, needs, strict=True)
            )
            if cost < best_cost - 1e-9:
                best, best_cost = o, cost
        out[c] = best
    return out


def breakpoints(needs: Sequence[dict[str, int]], chip: str) -> list[int]:
    """0 and every count of ``chip`` a slot needs, ascending: where the cost of owning bends."""
    return sorted({0} | {n.get(chip, 0) for n in needs})


@dataclass
class Choice:
    """The search's answer: the chosen inventory and the ones it is compared with."""

    best: Evaluation
    rent_all: Evaluation
    own_peak: Evaluation
    newsvendor: dict[str, int]
    tried: list[Evaluation]


def choose(
    h: Horizon, econ: Mapping[str, ChipEconomics], given: Mapping[str, int] | None = None
) -> Choice:
    """The owned counts of least horizon cost (module docstring, steps 1-3); with ``given``,
    that inventory, compared with the same strategies (nothing is searched)."""
    rent_all = evaluate(h, {}, econ)
    needs = [f.chips for f in rent_all.fleets]
    points = {c: breakpoints(needs, c) for c in sorted({k for n in needs for k in n})}
    peak = {c: p[-1] for c, p in points.items()}
    start = newsvendor(h, needs, econ)
    tried: dict[Owned, Evaluation] = {(): rent_all}

    def ev(owned: Mapping[str, int]) -> Evaluation:
        k = owned_key(owned)
        if k not in tried:
            tried[k] = evaluate(h, {c: n for c, n in owned.items() if n > 0}, econ)
        return tried[k]

    if given is not None:
        best = ev(given)
        return Choice(best, rent_all, ev(peak), start, list(tried.values()))
    best = ev(start)
    while True:
        moves = []
        for c, pts in points.items():
            i = pts.index(best.owned.get(c, 0)) if best.owned.get(c, 0) in pts else None
            if i is None:
                continue
            for j in (i - 1, i + 1):
                if 0 <= j < len(pts):
                    moves.append({**best.owned, c: pts[j]})
        cand = min((ev(m) for m in moves), key=lambda e: e.total_usd, default=best)
        if cand.total_usd < best.total_usd - 1e-6:
            best = cand
            continue
        break
    own_peak = ev(peak)
    return Choice(best, rent_all, own_peak, start, list(tried.values()))


def economics(
    rs: Any, resolve: Resolve, overrides: Mapping[str, Any], chips: Sequence[str]
) -> dict[str, ChipEconomics]:
    """Each chip's owned and rented prices, from the inventory's one pricing rule
    (:func:`pddplan.solver.problem.build_pricing`): the amortized capex is the owned price with
    no opex."""
    from pddplan.solver.problem import build_pricing

    scen = rs.scenario
    inv = scen.inventory
    if inv.additional != "rent":
        raise UsageError(
            "load: the horizon rents the chips beyond the owned ones; set inventory.additional "
            f"to rent (it is {inv.additional})"
        )
    probe = dict(overrides)
    probe.update({f"inventory.owned.{c}": 1 for c in chips})
    probe["inventory.opex_usd_per_chip_hour"] = 0.0
    pricing = build_pricing(resolve(probe))
    if pricing is None:  # pragma: no cover - every chip is owned in the probe
        raise UsageError("load: no inventory pricing")
    load = scen.load
    out = {}
    for c in chips:
        el = load.elastic.get(c)
        out[c] = ChipEconomics(
            capex_usd_per_chip_hour=pricing.owned_usd_per_chip_hour[c],
            opex_usd_per_chip_hour=inv.opex_usd_per_chip_hour,
            rental_usd_per_chip_hour=pricing.rental_usd_per_chip_hour[c],
            idle_opex_share=load.owned.idle_share,
            startup_minutes=el.startup_minutes if el else 0.0,
            billing_minutes=el.billing_minutes if el else 1.0,
        )
    return out


def horizon_slots(scen: Any) -> tuple[list[Slot], list[Any]]:
    """The horizon's slots (month, kind of day, slot) with the hours each stands for, and the
    distinct per-slot hit-rate distributions."""
    load = scen.load
    months = load.months(scen.horizon_months)
    days_per_month = units.HOURS_PER_MONTH / 24.0
    slot_h = load.slot_minutes / 60.0
    hit_vals: list[Any] = []
    hit_of: list[int | None] = [None] * load.slots
    if load.hit_rate is not None:
        for i, d in enumerate(load.hit_rate):
            if d not in hit_vals:
                hit_vals.append(d)
            hit_of[i] = hit_vals.index(d)
    out = []
    for m, g in enumerate(months):
        for day, rates in load.days():
            n_days = days_per_month * load.day_weight(day) / WEEK_DAYS
            for i, r in enumerate(rates):
                out.append(Slot(m, day, i, r * g, hit_of[i], n_days * slot_h))
    return out, hit_vals
