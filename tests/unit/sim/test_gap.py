"""The gap between a closed form and its simulation (:func:`pddplan.sim.compare.gap_pct`)."""

from __future__ import annotations

import math

from pddplan.sim.compare import gap_pct


def test_a_closed_form_that_rounds_to_zero_has_no_gap_to_a_simulated_zero() -> None:
    """The default plan's MD slot wait is an Erlang C residue of 6.1e-15 s, and the simulation
    measures 0: they agree (it read -100%, flagged beyond 10%). A real gap stays relative."""
    assert gap_pct(6.142529499409311e-15, 0.0) == 0.0
    assert gap_pct(4.6e-4, 5.2e-5) == 100.0 * (5.2e-5 - 4.6e-4) / 4.6e-4
    assert gap_pct(1.0, 1.1) == 100.0 * (1.1 - 1.0) / 1.0
    assert math.isnan(gap_pct(0.0, 0.0)) and math.isnan(gap_pct(math.inf, 1.0))
