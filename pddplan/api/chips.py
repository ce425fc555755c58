"""``rank_chips``: every chip of the catalog priced for prefill and for decode."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pddplan.api.command_options import RankChipsOptions
from pddplan.api.options import validate
from pddplan.api.scenario import (
    LoadedScenario,
    Overrides,
    Profiles,
    ScenarioLike,
    load,
    registry,
)

if TYPE_CHECKING:
    from pddplan.results import ChipsRankResult

_D = RankChipsOptions()


def rank_chips(
    scenario: ScenarioLike = None,
    *,
    model: str | None = _D.model,
    workload: str | None = _D.workload,
    reference: str = _D.reference,
    overrides: Overrides = None,
    profiles: Profiles = None,
) -> ChipsRankResult:
    """Every chip of the catalog priced for prefill and for decode (``pddplan chips rank``).

    Parameters
    ----------
    model, workload : profile names (default: the scenario's).
    reference : the balanced flagship chip whose cost the advantages divide.
    """
    from pddplan.results.whatif import ChipsRankResult
    from pddplan.whatif import rank_chips as _rank

    validate(RankChipsOptions, model=model, workload=workload, reference=reference)
    if isinstance(scenario, LoadedScenario):
        reg = scenario.registry
    else:
        reg = registry(profiles)
    swaps: dict[str, Any] = {}
    if model:
        reg.path("model", model)
        swaps["model"] = model
    if workload:
        reg.path("workload", workload)
        swaps["workload"] = workload
    reg.path("chip", reference)
    if isinstance(scenario, LoadedScenario):
        ls = load(scenario, {**swaps, **(overrides or {})}, profiles)
    else:
        from pddplan.io.overrides import ScenarioSource

        src = ScenarioSource.open(None if scenario is None else str(scenario), reg)
        ov = {**swaps, **(overrides or {})}
        ls = LoadedScenario(src, ov, src.resolve(ov))
    rs = ls.resolved
    rows = _rank(rs, ls.registry, reference)
    inv = rs.scenario.inventory
    notes = []
    if inv.additional == "buy":
        unpriced = [r["chip"] for r in rows if r["price_usd_per_hour"] is None]
        notes.append(
            f"prices are bought chips' (inventory.additional: buy): capex amortized over "
            f"{inv.amortization_years:g} years plus {inv.opex_usd_per_chip_hour:g} USD/(chip h) "
            "of opex"
            + (
                f"; unpriced, with no price.capex_usd: {', '.join(sorted(unpriced))} (give it in the "
                "scenario's overrides.chips.NAME.price.capex_usd)"
                if unpriced
                else ""
            )
        )
    return ChipsRankResult(
        rows, rs.model.name, rs.workload.name, reference, rs.scenario.sla.tpot_ms, notes
    )
