"""``cache``: how much prefix cache, in which tier, pays (docs/cache.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pddplan.api.command_options import CacheOptions
from pddplan.api.options import validate
from pddplan.api.scenario import Overrides, Profiles, ScenarioLike, load, with_inventory
from pddplan.errors import UsageError

if TYPE_CHECKING:
    from pddplan.executors import Progress
    from pddplan.results.cache import CacheResult


def cache(
    scenario: ScenarioLike = None,
    *,
    overrides: Overrides = None,
    profiles: Profiles = None,
    rate_rps: float | None = None,
    max_bcr: bool = False,
    own: Mapping[str, int] | None = None,
    max_chips: Mapping[str, int] | None = None,
    progress: Progress | None = None,
) -> CacheResult:
    """Each capacity option of the scenario's ``cache:`` tiers solved with the one plan builder
    (cost = chips + line + cache), and the cheapest at the rate (or the highest BCR) chosen.

    Parameters
    ----------
    scenario : a scenario with a ``cache:`` section (tiers, capacity options, hit-rate source).
    rate_rps : [req/s] the rate to serve (default: the scenario's ``rate_rps``).
    max_bcr : choose the option whose best plan has the highest BCR, at any rate.
    own, max_chips : owned chips and inventory limits, chip name -> chips, as ``solve`` takes
        them (in the scenario, so every option's plan obeys them).

    Raises
    ------
    InfeasibleError : no capacity option gives a plan that meets the SLA (each option's
        reason in the message), as ``solve`` on the same scenario.

    Examples
    --------
    >>> r = pddplan.cache("examples/cache-tiers.yaml")  # doctest: +SKIP
    """
    o = validate(CacheOptions, rate_rps=rate_rps, max_bcr=max_bcr)
    if o.rate_rps is not None and o.max_bcr:
        raise UsageError("give one of rate_rps and max_bcr")
    ls, _limits = with_inventory(load(scenario, overrides, profiles), max_chips, own)
    from pddplan.results.cache import CacheResult
    from pddplan.tiers import none_fits, option_rows, study

    st = study(ls.resolved, rate_rps=o.rate_rps, max_bcr=o.max_bcr, progress=progress)
    if st.chosen is None:  # as solve on the same scenario: no plan fits (exit 3)
        raise none_fits(st)
    return CacheResult(st, option_rows(st))
