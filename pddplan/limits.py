"""Work caps: the most work one call may ask for, so that no input can run for hours.

Each cap has a default and an environment variable that raises (or lowers) it; the error names
both. docs/limits.md lists them with the schema's value ranges.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pddplan.errors import UsageError


@dataclass(frozen=True)
class Cap:
    env: str
    default: int
    what: str

    def value(self) -> int:
        text = os.environ.get(self.env, "").strip()
        if not text:
            return self.default
        try:
            n = int(float(text))
        except ValueError:
            raise UsageError(f"{self.env}={text!r} is not a whole number") from None
        if n < 1:
            raise UsageError(f"{self.env}={text!r} must be at least 1")
        return n

    def check(self, n: int | float, what: str | None = None) -> None:
        """Raise :class:`CapError` when ``n`` is above the cap."""
        cap = self.value()
        if n > cap:
            raise CapError(
                f"{what or self.what}: {n:,.0f} is above the cap of {cap:,} "
                f"(set the environment variable {self.env} to raise it)"
            )


class CapError(UsageError):
    """A call asks for more work than a cap allows (exit 2)."""


#: Points of a sweep grid (the product of the axes' value counts).
GRID_POINTS = Cap("PDDPLAN_MAX_GRID_POINTS", 100_000, "sweep grid points")
#: Requests one simulation runs.
SIM_REQUESTS = Cap("PDDPLAN_MAX_SIM_REQUESTS", 10_000_000, "simulated requests")
#: Requests one trace may hold (hitrate, simulate --trace).
TRACE_REQUESTS = Cap("PDDPLAN_MAX_TRACE_REQUESTS", 100_000_000, "trace requests")
