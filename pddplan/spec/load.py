"""The scenario's optional ``load:`` section: a day's rate per time slot, a growth path over the
amortization horizon and the elasticity of the pools (``pddplan horizon``, docs/horizon.md).

Only the shape and the ranges are checked here; the checks that need the rest of the scenario
(a growth path longer than the horizon, elastic settings for chips the scenario does not use)
are made by :class:`~pddplan.spec.scenario_spec.Scenario`.
"""

from typing import Annotated, Literal

from pydantic import Field, model_validator
from typing_extensions import Self

from pddplan.spec.base import Fraction, Rate, Source, Strict
from pddplan.spec.workloads import HitRateDist

MINUTES_PER_DAY = 24 * 60
#: The days of a week, as a ``weekday_rate_rps`` key names them.
Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
WEEKDAYS: tuple[Weekday, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
#: One day's rates, one per slot [req/s]: at least one slot, at most one a minute.
DayRates = Annotated[list[Rate], Field(min_length=1, max_length=MINUTES_PER_DAY)]
#: [-] A month's rate relative to the first month's.
Multiplier = Annotated[float, Field(gt=0, le=1e6)]


class Growth(Strict):
    """How the day's rates grow month by month: a monthly rate (compounded: month ``m``, from
    0, carries ``(1 + monthly_rate) ** m``, for ``months`` months, then holds) or one
    multiplier per month (the last one holds for the months after it)."""

    monthly_rate: Annotated[float, Field(ge=-0.5, le=10)] | None = Field(
        default=None, description="growth per month, compounded (0.04: 4%/month)"
    )
    months: Annotated[int, Field(ge=1, le=1200)] | None = Field(
        default=None,
        description="months monthly_rate compounds for, then the rate holds (default: the "
        "whole amortization horizon)",
    )
    monthly_multiplier: list[Multiplier] | None = Field(
        default=None,
        min_length=1,
        max_length=1200,
        description="the rate of each month relative to the day's rates, from the first month",
    )

    @model_validator(mode="after")
    def _one(self) -> Self:
        if (self.monthly_rate is None) == (self.monthly_multiplier is None):
            raise ValueError("give exactly one of monthly_rate, monthly_multiplier")
        if self.months is not None and self.monthly_rate is None:
            raise ValueError("months applies to monthly_rate (monthly_multiplier lists its months)")
        return self

    @property
    def path_months(self) -> int | None:
        """How many months the growth path spans (None: the whole horizon)."""
        if self.monthly_multiplier is not None:
            return len(self.monthly_multiplier)
        return self.months


class Elastic(Strict):
    """How a chip's rented instances start and are billed."""

    startup_minutes: Annotated[float, Field(ge=0, le=MINUTES_PER_DAY)] = Field(
        default=0.0,
        description="minutes from asking for an instance to its serving: it is started (and "
        "billed) that long before the slot that needs it; at most one slot",
    )
    billing_minutes: Annotated[float, Field(gt=0, le=MINUTES_PER_DAY)] = Field(
        default=1.0,
        description="minimum billing unit of a rented instance: each run of it is billed in "
        "whole units",
    )


class OwnedPower(Strict):
    """What owned chips cost while idle."""

    when_idle: Literal["on", "power-down"] = Field(
        default="on",
        description="on: owned chips draw their whole opex always; power-down: idle ones "
        "draw idle_opex_share of it",
    )
    idle_opex_share: Fraction = Field(
        default=1.0, description="share of inventory.opex_usd_per_chip_hour an idle chip costs"
    )

    @property
    def idle_share(self) -> float:
        """The share of the opex an idle owned chip costs [-]."""
        return 1.0 if self.when_idle == "on" else self.idle_opex_share


class LoadProfile(Strict):
    """The load over a day and its growth; the day is cut into ``len(day_rate_rps)`` equal
    slots that must cover it (``slot_minutes`` each)."""

    slot_minutes: Annotated[int, Field(ge=1, le=MINUTES_PER_DAY)] = Field(
        default=60, description="length of one slot; the slots cover the day"
    )
    day_rate_rps: DayRates = Field(description="the rate of each slot of a typical day")
    weekday_rate_rps: dict[Weekday, DayRates] = Field(
        default_factory=dict,
        description="the rates of a day of the week that differs from the typical day",
    )
    hit_rate: list[HitRateDist] | None = Field(
        default=None,
        max_length=MINUTES_PER_DAY,
        description="the hit-rate distribution of each slot (default: the workload's)",
    )
    growth: Growth = Field(
        default_factory=lambda: Growth(monthly_rate=0.0),
        description="month-by-month growth over the amortization horizon",
    )
    elastic: dict[str, Elastic] = Field(
        default_factory=dict, description="chip profile name -> start-up and billing"
    )
    owned: OwnedPower = Field(default_factory=OwnedPower)
    source: Source | None = Field(default=None, description="where the curve comes from")

    @property
    def slots(self) -> int:
        return len(self.day_rate_rps)

    @model_validator(mode="after")
    def _cover_the_day(self) -> Self:
        n = self.slots
        if n * self.slot_minutes != MINUTES_PER_DAY:
            raise ValueError(
                f"{n} slots of {self.slot_minutes} min cover {n * self.slot_minutes} min, not "
                f"the day's {MINUTES_PER_DAY}: give {MINUTES_PER_DAY // self.slot_minutes} "
                "rates or another slot_minutes"
                if MINUTES_PER_DAY % self.slot_minutes == 0
                else f"slot_minutes {self.slot_minutes} does not divide the day's "
                f"{MINUTES_PER_DAY} min"
            )
        for day, rates in self.weekday_rate_rps.items():
            if len(rates) != n:
                raise ValueError(
                    f"weekday_rate_rps.{day} has {len(rates)} rates, day_rate_rps has {n}"
                )
        if self.hit_rate is not None and len(self.hit_rate) != n:
            raise ValueError(f"hit_rate has {len(self.hit_rate)} slots, day_rate_rps has {n}")
        for chip, e in self.elastic.items():
            if e.startup_minutes > self.slot_minutes:
                raise ValueError(
                    f"elastic.{chip}.startup_minutes {e.startup_minutes:g} is longer than a "
                    f"slot ({self.slot_minutes} min): an instance would be started more than a "
                    "slot ahead"
                )
        return self

    def months(self, horizon_months: int) -> list[float]:
        """The rate multiplier of each month of the horizon [-]."""
        g = self.growth
        if g.monthly_multiplier is not None:
            m = list(g.monthly_multiplier)
            return m + [m[-1]] * (horizon_months - len(m))
        rate = g.monthly_rate or 0.0
        grow = horizon_months if g.months is None else g.months
        return [(1.0 + rate) ** min(k, grow) for k in range(horizon_months)]

    def days(self) -> list[tuple[str, list[float]]]:
        """The kinds of day and their rates, typical day first: ``("day", rates)`` for the
        weekdays not listed, then each listed weekday."""
        plain = [d for d in WEEKDAYS if d not in self.weekday_rate_rps]
        out: list[tuple[str, list[float]]] = []
        if plain:
            out.append(("day", list(self.day_rate_rps)))
        out.extend(
            (d, list(self.weekday_rate_rps[d])) for d in WEEKDAYS if d in self.weekday_rate_rps
        )
        return out

    def day_weight(self, day: str) -> float:
        """How many days of a week a kind of day stands for [days]."""
        if day == "day":
            return float(sum(1 for d in WEEKDAYS if d not in self.weekday_rate_rps))
        return 1.0
