"""The result of ``cache``: each capacity option's plan, and the one chosen."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pddplan.results.base import Report, Result, Row, Section

if TYPE_CHECKING:
    from pddplan.tiers import CacheStudy


@dataclass(frozen=True)
class CacheResult(Result):
    """The cache study (:class:`pddplan.tiers.CacheStudy`) and one row per capacity option.

    Attributes
    ----------
    study : the options, their plans and the index of the one chosen.
    options : flat rows, one per capacity option (capacities per tier [GB per P node]).
    """

    study: CacheStudy
    options: list[Row]

    @property
    def chosen(self) -> Row | None:
        """The chosen option's row (None when no option meets the SLA)."""
        i = self.study.chosen
        return None if i is None else self.options[i]

    def report(self) -> Report:
        st = self.study
        what = {"rate": "least cost", "budget": "most goodput"}.get(st.mode, "highest BCR")
        at = f" at {st.rate_rps:g} req/s" if st.rate_rps is not None else ""
        if st.budget_usd_per_hour is not None:
            at = f" within {st.budget_usd_per_hour:g} $/h"
        title = f"cache capacity per P node, {what}{at}: {st.scenario_name}"
        answer: list[str] = []
        c = self.chosen
        if c is None:
            answer.append("no capacity option gives a plan that meets the SLA")
        else:
            caps = ", ".join(f"{c[f'{t}_gb_per_node']:g} GB {t}" for t in st.tiers)
            answer.append(
                f"chosen: {caps} per P node (mean hit rate {c['mean_hit_rate']:.3f}); "
                f"{c['cost_usd_per_hour']:.4g} $/h of which cache {c['cache_usd_per_hour']:.4g} "
                f"$/h, {c['chips']} chips, TTFT p50 {c['ttft_p50_s']:.3g} s, BCR "
                f"{c['bcr_requests_per_usd']:.4g} req/$"
            )
        payload: dict[str, Any] = {
            "command": "cache",
            "scenario": st.scenario_name,
            "mode": st.mode,
            "rate_rps": st.rate_rps,
            "tiers": list(st.tiers),
            "chosen": c,
            "options": self.options,
        }
        return Report(title, [Section("options", self.options)], payload, answer=answer)
