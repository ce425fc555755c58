"""Two PATHs that set one key are refused: the short form and the full one
(``chips.NAME.price_usd_per_hour`` and ``chips.NAME.price.rental_usd_per_hour``), or a key and
a key inside it. One of them was dropped without a word, whichever came last: a sweep over one
spelling with the other set showed its swept prices in the table and solved every point at the
set one."""

from __future__ import annotations

import pytest

import pddplan
from pddplan.errors import OverrideError
from pddplan.io.overrides import canonical_path, check_distinct_keys


def test_the_short_form_is_the_full_one() -> None:
    assert (
        canonical_path("chips.gpu-b.price_usd_per_hour") == "chips.gpu-b.price.rental_usd_per_hour"
    )
    assert canonical_path("rate_rps") == "rate_rps"
    with pytest.raises(OverrideError, match="set the same key"):
        check_distinct_keys(
            ["chips.gpu-b.price_usd_per_hour", "chips.gpu-b.price.rental_usd_per_hour"]
        )
    with pytest.raises(OverrideError, match="set the same key"):
        check_distinct_keys(["chips.gpu-b.price", "chips.gpu-b.price.capex_usd"])
    # a profile swap and a key of the profile it brings in: both apply
    check_distinct_keys(
        ["workload", "workload.hit_rate.shift", "link", "link.bandwidth_gbit_per_s"]
    )
    check_distinct_keys(["chips.gpu-a.price_usd_per_hour", "chips.gpu-b.price.rental_usd_per_hour"])


def test_solve_and_sweep_refuse_two_spellings_of_one_price() -> None:
    both = {"chips.gpu-b.price_usd_per_hour": 1.0, "chips.gpu-b.price.rental_usd_per_hour": 3.0}
    with pytest.raises(OverrideError, match="set the same key"):
        pddplan.solve(overrides=both, verdict_check=False)
    with pytest.raises(OverrideError, match="set the same key"):
        pddplan.sweep(
            axes={"chips.gpu-b.price_usd_per_hour": [1.0, 2.0]},
            overrides={"chips.gpu-b.price.rental_usd_per_hour": 3.0},
        )
