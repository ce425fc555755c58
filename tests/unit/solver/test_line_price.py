"""The WAN line's price follows its bandwidth through the link profile's price model.

``Problem.line_cost_usd_per_hour`` is the one home of the line's price; it reads the link's
numbers, priced by :meth:`pddplan.spec.Link.lease_usd_per_month` at the (overridden) bandwidth.
The bundled WAN profiles price each leased size at its own tier, so a bandwidth override must
give exactly the sibling profile's price (``wan-25g-cross-city`` for 25 Gbit/s).
"""

from __future__ import annotations

import pytest

import pddplan
from pddplan import units
from pddplan.deployment import LinkNumbers
from pddplan.errors import ProfileError
from pddplan.io.loader import Registry
from pddplan.solver.problem import NO_RELAY, SAME_DC, build_problem
from pddplan.spec import Link

REG = Registry.default()
BASE = REG.load("link", "wan-40g-cross-city")


def line_usd_per_hour(overrides: dict[str, object]) -> float:
    rs = pddplan.load_scenario("default", overrides={"link": BASE.name, **overrides}).resolved
    return build_problem(rs).line_cost_usd_per_hour


@pytest.mark.parametrize("size", [10, 25, 40, 100])
@pytest.mark.parametrize("reach", ["same-city", "cross-city", "cross-country"])
def test_a_bandwidth_override_pays_the_sibling_profiles_price(size: int, reach: str) -> None:
    # the tiers of every wan-*-REACH profile are the four sizes' own prices: overriding the
    # 40G line's bandwidth to SIZE prices it as the SIZE profile is priced
    line = REG.load("link", f"wan-40g-{reach}").model_copy(update={"bandwidth_gbit_per_s": size})
    sibling = REG.load("link", f"wan-{size}g-{reach}")
    assert line.price_usd_per_month == sibling.price_usd_per_month
    assert sibling.price_usd_per_month > 0


def test_the_line_cost_moves_with_a_bandwidth_override() -> None:
    at = {bw: line_usd_per_hour({"link.bandwidth_gbit_per_s": bw}) for bw in (10, 25, 40, 100)}
    assert at[40] == pytest.approx(13_000 / units.HOURS_PER_MONTH)  # 17.81 $/h, as before
    assert at[25] == pytest.approx(10_000 / units.HOURS_PER_MONTH)
    assert at[100] == pytest.approx(20_000 / units.HOURS_PER_MONTH)
    assert at[10] < at[25] < at[40] < at[100]


def test_between_tiers_a_line_pays_the_next_size_up_and_below_the_smallest_the_smallest() -> None:
    assert line_usd_per_hour({"link.bandwidth_gbit_per_s": 30}) == pytest.approx(
        line_usd_per_hour({"link.bandwidth_gbit_per_s": 40})
    )
    assert line_usd_per_hour({"link.bandwidth_gbit_per_s": 2}) == pytest.approx(
        line_usd_per_hour({"link.bandwidth_gbit_per_s": 10})
    )


def test_a_given_price_usd_per_month_is_flat_whatever_the_bandwidth() -> None:
    flat = {"link.price_usd_per_month": 9_000.0}
    for bw in (10, 100, 400):  # 400: above the largest tier, priced by the quote
        assert line_usd_per_hour({**flat, "link.bandwidth_gbit_per_s": bw}) == pytest.approx(
            9_000.0 / units.HOURS_PER_MONTH
        )
    assert REG.load("link", "rdma-400g").price_basis == "a flat price"


def test_a_price_per_gbit_scales_linearly() -> None:
    data = BASE.model_dump(mode="json")
    data["price"] = {"usd_per_month_per_gbit_per_s": 300.0, "source": "a quote per Gbit/s"}
    link = Link.model_validate(data)
    assert link.price_usd_per_month == pytest.approx(300.0 * 40)
    assert link.price_basis == "its price per Gbit/s"
    half = LinkNumbers.of(link, bandwidth_scale=0.5)
    assert half.price_usd_per_hour == pytest.approx(300.0 * 20 / units.HOURS_PER_MONTH)


def test_one_datacenter_pays_no_line_and_no_relay_pays_the_same_line() -> None:
    rs = pddplan.load_scenario(
        "default", overrides={"link": BASE.name, "link.bandwidth_gbit_per_s": 25}
    ).resolved
    assert build_problem(rs, SAME_DC).line_cost_usd_per_hour == 0.0
    assert build_problem(rs, NO_RELAY).line_cost_usd_per_hour == pytest.approx(
        10_000 / units.HOURS_PER_MONTH
    )


def test_a_priced_line_dumps_its_model_not_the_computed_price() -> None:
    # calibrate --link writes model_dump: a computed price written back would read as flat
    data = BASE.model_dump(mode="json")
    assert "price_usd_per_month" not in data
    again = Link.model_validate({**data, "bandwidth_gbit_per_s": 100.0})
    assert not again.flat_price and again.price_usd_per_month == 20_000.0


def test_the_header_names_the_override_and_its_price() -> None:
    res = pddplan.solve(
        overrides={"link": BASE.name, "link.bandwidth_gbit_per_s": 25}, baselines=False
    )
    assert res.outcome.problem.wan.label == (
        "wan-40g-cross-city at 25 Gbit/s (price from its tiers: 13.7 $/h)"
    )
    assert res.to_json()["plan"]["line_cost_usd_per_hour"] == pytest.approx(
        10_000 / units.HOURS_PER_MONTH
    )
    plain = LinkNumbers.of(BASE)
    assert plain.label == "wan-40g-cross-city (40 Gbit/s)"


def _with_price(price: dict[str, object]) -> Link:
    data = BASE.model_dump(mode="json")
    data["price"] = price
    return Link.model_validate(data)


@pytest.mark.parametrize(
    ("price", "message"),
    [
        (
            {"tiers": [{"bandwidth_gbit_per_s": 10, "usd_per_month": -1.0}], "source": "x y z"},
            "greater than or equal to 0",
        ),
        (
            {
                "tiers": [
                    {"bandwidth_gbit_per_s": 10, "usd_per_month": 5000.0},
                    {"bandwidth_gbit_per_s": 40, "usd_per_month": 4000.0},
                ],
                "source": "x y z",
            },
            "a faster tier must not cost less",
        ),
        (
            {
                "tiers": [
                    {"bandwidth_gbit_per_s": 40, "usd_per_month": 1.0},
                    {"bandwidth_gbit_per_s": 10, "usd_per_month": 2.0},
                ],
                "source": "x y z",
            },
            "strictly increasing bandwidth_gbit_per_s",
        ),
        ({"source": "x y z"}, "give either tiers or usd_per_month_per_gbit_per_s"),
    ],
)
def test_a_bad_price_model_is_refused(price: dict[str, object], message: str) -> None:
    with pytest.raises(ProfileError, match=message) as exc:
        BASE.model_copy(update={"price": price})
    assert str(exc.value).count("\n") == 0
    assert exc.value.key is not None and exc.value.key.startswith("price")


def test_a_bandwidth_above_the_largest_tier_has_no_price() -> None:
    with pytest.raises(ProfileError, match=r"above the largest price tier \(100 Gbit/s\)"):
        BASE.model_copy(update={"bandwidth_gbit_per_s": 200.0})


def test_a_line_is_priced_up_to_its_top_tier_and_breakeven_searches_no_further() -> None:
    assert BASE.priced_up_to_gbit_per_s == 100.0
    flat = BASE.model_copy(update={"price_usd_per_month": 1000.0})
    assert flat.priced_up_to_gbit_per_s == float("inf")
    # breakeven's default interval (a quarter to four times the value) stops at the top tier
    be = pddplan.breakeven(
        "default",
        param="link.bandwidth_gbit_per_s",
        overrides={"link": "wan-40g-cross-city"},
        lo=25.0,
        tolerance=0.2,
    )
    assert (be.lo, be.hi) == (25.0, 100.0)
