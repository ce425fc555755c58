"""``horizon``'s answer says "more than" where a given inventory costs more than another
strategy (it read "-28.0% less than owning for the peak")."""

from __future__ import annotations

from pddplan.results.horizon import _than


def test_saving_in_words() -> None:
    assert _than(0.118) == "11.8% less than"
    assert _than(-0.28) == "28.0% more than"
    assert _than(0.0) == "0.0% less than"
    assert _than(None) == "-"
