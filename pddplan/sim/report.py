"""The ``simulate`` report moved to :mod:`pddplan.results.simulate`; these names stay here."""

from pddplan.results.simulate import (
    SATURATED_LOAD,
    pipeline_rows,
    pool_rows,
    simulate_report,
    sparkline,
    stability_verdict,
)

__all__ = [
    "SATURATED_LOAD",
    "pipeline_rows",
    "pool_rows",
    "simulate_report",
    "sparkline",
    "stability_verdict",
]
