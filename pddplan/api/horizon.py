"""``horizon``: own the base, rent the peak, over a day's load and its growth."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pddplan.api.scenario import (
    Overrides,
    Profiles,
    ScenarioLike,
    chip_counts,
    load,
    with_inventory,
)
from pddplan.errors import ProfileError, UsageError

if TYPE_CHECKING:
    from pddplan.results.horizon import HorizonResult

#: [months] How far ``inventory.amortization_years * 12`` may be from a whole number of months
#: (1/3 year written 0.3333 is 3.9996 months).
HORIZON_MONTHS_TOLERANCE = 1e-3


def horizon(
    scenario: ScenarioLike = None,
    *,
    overrides: Overrides = None,
    profiles: Profiles = None,
    own: Mapping[str, int] | None = None,
    max_chips: Mapping[str, int] | None = None,
) -> HorizonResult:
    """The owned chips of least cost over the scenario's ``load:`` (a day's rate per slot and
    its growth over the amortization horizon), with the chips beyond them rented slot by slot
    (:mod:`pddplan.horizon`).

    Every slot's fleet is what :func:`~pddplan.api.solve` returns at the slot's rate with the
    owned chips (``solve(rate_rps=R, own=owned)``). The cost over the horizon counts the owned
    chips' amortized capex and opex (idle ones at ``load.owned.idle_opex_share`` when powered
    down), the rented chips' rent with their start-up and billing unit (``load.elastic``) and
    the line; it is compared with owning for the peak and with renting everything.

    Parameters
    ----------
    own : chips owned, chip name -> chips: price this inventory over the horizon instead of
        choosing one.
    max_chips : inventory limits, chip name -> chips (every slot's plan obeys them).

    Raises
    ------
    UsageError : the scenario has no ``load:`` section, ``load.elastic`` names a chip no role
        uses, or chips beyond the owned ones are bought (``inventory.additional: buy``).
    ProfileError : ``inventory.amortization_years`` is not a whole number of months.
    InfeasibleError : no plan fits at some slot's rate (the message names the month and slot).
    """
    ls = load(scenario, overrides, profiles)
    given = chip_counts("own", own, ls, least=0) if own is not None else None
    ls, _limits = with_inventory(ls, max_chips, None)
    spec = ls.spec
    if spec.load is None:
        raise UsageError(
            f"scenario {spec.name} has no load: section; pddplan horizon needs a day's rates "
            "(load.day_rate_rps) and their growth (docs/horizon.md, examples/agent-diurnal.yaml)"
        )
    months = spec.inventory.amortization_years * 12
    if abs(months - round(months)) > HORIZON_MONTHS_TOLERANCE:
        # the horizon bills whole months at prices amortized over the years: a fraction of a
        # month would bill more or less than the capex
        whole = max(1, math.floor(months))
        raise ProfileError(
            f"the horizon plans whole months, and {spec.inventory.amortization_years:g} years "
            f"is {months:.4g} months; give a whole number of months in years "
            f"({whole / 12:.6g} for {whole}, {(whole + 1) / 12:.6g} for {whole + 1})",
            file=ls.resolved.file,
            key="inventory.amortization_years",
        )
    from pddplan.horizon import Horizon, choose, economics, horizon_slots
    from pddplan.io.loader import role_chip_names

    chips = sorted({c for role in ("P", "RLD", "MD") for c in role_chip_names(ls.resolved, role)})
    unused = [c for c in spec.load.elastic if c not in chips]
    if unused:
        raise UsageError(
            f"load.elastic: {', '.join(unused)} is no chip of the roles; they use "
            f"{', '.join(chips)}"
        )
    if given is not None:
        extra = [c for c, n in given.items() if n > 0 and c not in chips]
        if extra:
            raise UsageError(
                f"own: {', '.join(extra)} is no chip of the roles; they use {', '.join(chips)}"
            )

    def resolve(ov: Mapping[str, object]):  # type: ignore[no-untyped-def]
        return ls.source.resolve({**ls.overrides, **ov})

    slots, hits = horizon_slots(spec)
    h = Horizon(resolve, {}, slots, spec.load.slot_minutes, hits, spec.horizon_months)
    econ = economics(ls.resolved, resolve, {}, chips)
    choice = choose(h, econ, given)
    from pddplan.results.horizon import HorizonResult

    return HorizonResult(spec.name, h, econ, choice, given is not None)
