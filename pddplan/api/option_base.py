"""The options' base model and the fields two commands share (:mod:`pddplan.api.options`: the
models and their checks). Each range is a Field constraint, written once here.

As in the specs' modules, annotations are evaluated as the classes are made (no ``from __future__
import annotations``: see :mod:`pddplan.spec`).
"""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from pddplan.spec import Rate

# ------------------------------------------------------------------------- shared fields

#: [req/s] a request rate (the scenario's own ``rate_rps`` range).
RateRps = Rate
#: local processes or Dask workers (a thousand: far above any one machine's cores)
Workers = Annotated[int, Field(ge=1, le=1024)]
#: a count of requests or samples (the work caps in :mod:`pddplan.limits` bound it)
Count = Annotated[int, Field(ge=1)]
#: a random seed (numpy's generators take non-negative seeds of any size)
Seed = Annotated[int, Field(ge=0)]
#: [USD/h] a budget to plan within (``solve``, ``topology``)
BudgetUsdPerHour = Annotated[float, Field(ge=0.0, le=1e9)]
#: [-] a fraction in [0, 1]
Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
#: [tokens] a positive token count
PositiveTokens = Annotated[int, Field(ge=1)]


class Options(BaseModel):
    """Strict (no bool for a number, no float for a whole number), finite, frozen."""

    model_config = ConfigDict(
        strict=True, allow_inf_nan=False, extra="forbid", frozen=True, defer_build=True
    )
