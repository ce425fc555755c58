"""``bathtub``: the return on a request against its prefix hit rate."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pddplan.api.command_options import BathtubOptions
from pddplan.api.options import validate
from pddplan.api.scenario import (
    Overrides,
    PathLike,
    Profiles,
    ScenarioLike,
    load,
    with_inventory,
)

if TYPE_CHECKING:
    from pddplan.executors import Progress
    from pddplan.results import BathtubResult

_D = BathtubOptions()


def bathtub(
    scenario: ScenarioLike = None,
    *,
    overrides: Overrides = None,
    profiles: Profiles = None,
    step: float = _D.step,
    tolerance: float = _D.tolerance,
    reprovision: bool = _D.reprovision,
    capacity_curve: PathLike | Mapping[str, Any] | None = None,
    own: Mapping[str, int] | None = None,
    max_chips: Mapping[str, int] | None = None,
    progress: Progress | None = None,
) -> BathtubResult:
    """The return on a request against its prefix hit rate: valleys, singular points, advice.

    Parameters
    ----------
    step : [-] hit-rate grid step (0.001 to 0.1).
    tolerance : [-] least valley depth, as a fraction of its rims (0 to 1).
    reprovision : also solve the best plan per hit rate.
    capacity_curve : a capacity curve CSV (``pddplan hitrate --curve-out``), or a mapping with
        arrays ``capacity_tokens`` and ``mean_hit_rate``.
    own, max_chips : owned chips and inventory limits, chip name -> chips, checked as ``solve``
        checks them (:func:`~pddplan.api.scenario.chip_limits`) and put into the scenario.
    """
    o = validate(BathtubOptions, step=step, tolerance=tolerance, reprovision=reprovision)
    ls, _limits = with_inventory(load(scenario, overrides, profiles), max_chips, own)
    from pddplan.bathtub import analyze, curve_rows
    from pddplan.io.capacity_curve import capacity_curve as read_curve
    from pddplan.results.bathtub import BathtubResult

    res = analyze(
        ls.resolved,
        step=o.step,
        tolerance=o.tolerance,
        reprovision=o.reprovision,
        capacity_curve=read_curve(capacity_curve),
        progress=progress,
    )
    pb = res.outcome.problem
    keep = pb.on_decode_side
    return BathtubResult(res, curve_rows(res), pb.classes.hit_rate[keep], pb.classes.weight[keep])
