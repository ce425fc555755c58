"""Own the base, rent the peak: the owned chips of least cost over a day's load and its growth
(:mod:`~pddplan.horizon.plan`), with elastic rented pools billed by
:mod:`~pddplan.horizon.billing`. Every slot's fleet is the solver's plan at its rate."""

from pddplan.horizon.plan import (
    ChipEconomics,
    Choice,
    Evaluation,
    Horizon,
    Slot,
    SlotFleet,
    break_even_utilization,
    choose,
    economics,
    evaluate,
    fleet_key,
    horizon_slots,
    newsvendor,
    slot_label,
)

__all__ = [
    "ChipEconomics",
    "Choice",
    "Evaluation",
    "Horizon",
    "Slot",
    "SlotFleet",
    "break_even_utilization",
    "choose",
    "economics",
    "evaluate",
    "fleet_key",
    "horizon_slots",
    "newsvendor",
    "slot_label",
]
