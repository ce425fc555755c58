"""The result of ``horizon``: the owned chips of least cost over a day's load and its growth,
each slot's fleet, and the savings against owning for the peak and renting everything."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pddplan import units
from pddplan.results.base import Report, Result, Row, Section
from pddplan.results.tables import TABLES as _TABLES

if TYPE_CHECKING:
    from pddplan.horizon import ChipEconomics, Choice, Evaluation, Horizon, Slot, SlotFleet

TABLES = _TABLES["horizon"]
#: The strategies compared, in the order of the ``strategies`` table.
STRATEGIES = ("chosen", "own-for-peak", "rent-everything")


def chips_text(chips: dict[str, int]) -> str:
    """``24 h100-sxm, 32 h20`` (``none`` when empty)."""
    parts = [f"{n} {c}" for c, n in sorted(chips.items()) if n > 0]
    return ", ".join(parts) or "none"


def fleet_text(plan: Any) -> str:
    """The plan's fleet by role, ``P 16 h100-sxm, RLD 8 h100-sxm, MD 56 h20``."""
    parts = []
    for role, v in plan.roles.items():
        if v is not None:
            inst, n = v
            parts.append(f"{role} {n * inst.tensor_parallel} {inst.chip.name}")
    return ", ".join(parts)


def saving(chosen: float, other: float) -> float | None:
    """The chosen inventory's saving against another strategy's cost [-]."""
    return None if other <= 0 else 1.0 - chosen / other


@dataclass(frozen=True)
class HorizonResult(Result):
    """The horizon's answer (:func:`pddplan.horizon.choose`).

    Attributes
    ----------
    scenario : the scenario's name.
    horizon : the question (its slots, cached solves).
    economics : per chip, owned and rented prices.
    choice : the chosen inventory and the strategies compared with it.
    given : whether the owned counts were given (``--own``) rather than chosen.
    """

    scenario: str
    horizon: Horizon
    economics: dict[str, ChipEconomics]
    choice: Choice
    given: bool = False

    @property
    def owned(self) -> dict[str, int]:
        """The owned chips, chip -> chips."""
        return dict(self.choice.best.owned)

    def strategy(self, name: str) -> Evaluation:
        c = self.choice
        return {"chosen": c.best, "own-for-peak": c.own_peak, "rent-everything": c.rent_all}[name]

    def slot_fleets(self) -> list[tuple[Slot, SlotFleet]]:
        """Every slot of the horizon with its fleet under the chosen inventory."""
        return list(zip(self.horizon.slots, self.choice.best.fleets, strict=True))

    def peak_chips(self) -> dict[str, int]:
        """Per chip, the most any slot needs with nothing owned."""
        out: dict[str, int] = {}
        for f in self.choice.rent_all.fleets:
            for c, n in f.chips.items():
                out[c] = max(out.get(c, 0), n)
        return out

    # ------------------------------------------------------------------ rows
    def owned_rows(self) -> list[Row]:
        from pddplan.horizon import break_even_utilization

        best = self.choice.best
        peak = self.peak_chips()
        rows = []
        for c in sorted(self.economics):
            e = self.economics[c]
            u = break_even_utilization(e)
            rows.append(
                {
                    "chip": c,
                    "owned_chips": best.owned.get(c, 0),
                    "peak_chips": peak.get(c, 0),
                    "break_even_utilization": u if u != float("inf") else None,
                    "busy_share": best.busy_share.get(c),
                    "capex_usd_per_chip_hour": e.capex_usd_per_chip_hour,
                    "opex_usd_per_chip_hour": e.opex_usd_per_chip_hour,
                    "rental_usd_per_chip_hour": e.rental_usd_per_chip_hour,
                }
            )
        return rows

    def strategy_rows(self) -> list[Row]:
        chosen = self.choice.best.total_usd
        days = units.HOURS_PER_MONTH / 24.0
        rows = []
        for name in STRATEGIES:
            e = self.strategy(name)
            rows.append(
                {
                    "strategy": name,
                    "owned": chips_text(e.owned),
                    "horizon_cost_usd": e.total_usd,
                    "first_month_day_usd": e.by_month_usd[0] / days,
                    "last_month_day_usd": e.by_month_usd[-1] / days,
                    "owned_usd": e.owned_usd,
                    "rented_usd": e.rented_usd,
                    "line_usd": e.line_usd,
                    "cache_usd": e.cache_usd,
                    "saving_of_chosen": None if name == "chosen" else saving(chosen, e.total_usd),
                }
            )
        return rows

    def fleet_rows(self, months: tuple[int, ...] | None = None) -> list[Row]:
        """One row per slot, of the first and the last month (``months``: those months)."""
        from pddplan.horizon import slot_label

        h = self.horizon
        want = months if months is not None else tuple(sorted({0, h.months - 1}))
        owned = self.choice.best.owned
        rows = []
        for s, f in self.slot_fleets():
            if s.month not in want:
                continue
            rented = {c: max(n - owned.get(c, 0), 0) for c, n in f.chips.items()}
            rows.append(
                {
                    "month": s.month + 1,
                    "day": s.day,
                    "start": slot_label(s.slot, h.slot_minutes),
                    "rate_rps": s.rate_rps,
                    "fleet": fleet_text(f.plan),
                    "rented": chips_text(rented),
                    "plan_cost_usd_per_hour": f.plan.cost_usd_per_hour,
                }
            )
        return rows

    def growth_rows(self) -> list[Row]:
        best = self.choice.best
        days = units.HOURS_PER_MONTH / 24.0
        rows = []
        for m in range(self.horizon.months):
            here = [(s, f) for s, f in self.slot_fleets() if s.month == m]
            rates = [s.rate_rps for s, _ in here]
            peak: dict[str, int] = {}
            for _, f in here:
                for c, n in f.chips.items():
                    peak[c] = max(peak.get(c, 0), n)
            rows.append(
                {
                    "month": m + 1,
                    "peak_rate_rps": max(rates),
                    "trough_rate_rps": min(rates),
                    "peak_chips": chips_text(peak),
                    "cost_usd": best.by_month_usd[m],
                    "cost_per_day_usd": best.by_month_usd[m] / days,
                }
            )
        return rows

    def answer(self) -> list[str]:
        rows = {r["strategy"]: r for r in self.strategy_rows()}
        peak, rent = rows["own-for-peak"], rows["rent-everything"]
        verb = "Owning" if self.given else "Own"
        what = chips_text(self.owned)
        return [
            f"{verb} {what} over {self.horizon.months} months, renting the rest slot by slot: "
            f"{rows['chosen']['horizon_cost_usd']:,.0f} $ over the horizon, "
            f"{_than(peak['saving_of_chosen'])} owning for the peak "
            f"({chips_text(self.strategy('own-for-peak').owned)}: "
            f"{peak['horizon_cost_usd']:,.0f} $) and {_than(rent['saving_of_chosen'])} "
            f"renting everything ({rent['horizon_cost_usd']:,.0f} $)."
        ]

    def report(self) -> Report:
        h = self.horizon
        owned = self.owned_rows()
        strategies = self.strategy_rows()
        fleet = self.fleet_rows()
        growth = self.growth_rows()
        sections = [
            Section("owned", owned, key="owned"),
            # the table has the cache's column where a scenario's cache: tiers cost something
            # (the JSON always has it)
            Section(
                "strategies",
                strategies
                if any(r["cache_usd"] for r in strategies)
                else [{k: v for k, v in r.items() if k != "cache_usd"} for r in strategies],
                key="strategies",
            ),
            Section("fleet per slot (first and last month)", fleet, key="fleet"),
            Section("growth", growth, key="growth"),
        ]
        slots = [
            {
                "month": s.month + 1,
                "day": s.day,
                "slot": s.slot,
                "rate_rps": s.rate_rps,
                "hours": s.hours,
                "chips": dict(f.chips),
                "roles": {
                    role: (
                        None
                        if v is None
                        else {
                            "chip": v[0].chip.name,
                            "chips_per_instance": v[0].tensor_parallel,
                            "instances": v[1],
                        }
                    )
                    for role, v in f.plan.roles.items()
                },
                "plan_cost_usd_per_hour": f.plan.cost_usd_per_hour,
            }
            for s, f in self.slot_fleets()
        ]
        payload: dict[str, Any] = {
            "command": "horizon",
            "scenario": self.scenario,
            "owned_given": self.given,
            "owned": self.owned,
            "newsvendor_owned": self.choice.newsvendor,
            "slot_minutes": h.slot_minutes,
            "horizon_months": h.months,
            "solves": h.solves,
            "owned_table": owned,
            "strategies": strategies,
            "growth": growth,
            "slots": slots,
            "tried": [
                {"owned": e.owned, "horizon_cost_usd": e.total_usd} for e in self.choice.tried
            ],
        }
        notes = [
            "each slot's fleet is `pddplan solve --rate R --own ...` at the slot's rate with the "
            "owned chips; the chips beyond them are rented for the slot, started ahead by their "
            "start-up time and billed in whole billing units; each kind of day repeats",
            f"{h.solves} solves",
        ]
        return Report(
            f"pddplan horizon: scenario {self.scenario}, {h.months} months, "
            f"{len({(s.day, s.slot) for s in h.slots})} slots of {h.slot_minutes} min",
            sections,
            payload=payload,
            notes=notes,
            answer=self.answer(),
        )


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _than(saving: float | None) -> str:
    """A saving against another strategy in words: "28.0% less than", or "28.0% more than"
    where the chosen (a given inventory) costs more; "-" where there is none."""
    if saving is None:
        return "-"
    word = "more" if saving < 0 else "less"
    return f"{_pct(abs(saving))} {word} than"
