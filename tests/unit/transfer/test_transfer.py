"""Unit tests of pddplan.transfer: sizes, means and percentiles of one payload."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pddplan import timing
from pddplan.deployment import LinkNumbers
from pddplan.errors import UsageError
from pddplan.transfer import parse_size_bytes, transfer_times

LINK = LinkNumbers(
    name="test-line",
    bandwidth_gbit_per_s=80.0,
    goodput_bytes_per_s=1e10,
    rtt_s=0.02,
    setup_rtts=1.0,
    jitter_cv=0.0,
    price_usd_per_hour=0.0,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4649KB", 4_649_000.0),
        ("4649 kb", 4_649_000.0),
        ("3GB", 3e9),
        ("1.5e9", 1.5e9),
        ("64MiB", 64 * 2**20),
        ("10B", 10.0),
        ("2TB", 2e12),
    ],
)
def test_parse_size(text: str, expected: float) -> None:
    assert parse_size_bytes(text) == expected


@pytest.mark.parametrize("text", ["", "KB", "1 parsec", "-5MB"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(UsageError):
        parse_size_bytes(text)


@pytest.mark.parametrize("text", ["0", "1e999GB", "0.5"])
def test_a_size_out_of_range_is_the_models_one_message(text: str) -> None:
    # 0 and 1e999GB read "the size must be positive" (inf is not below 0), 0.5 "a finite
    # number in [1, 1e+15]": one range, one message
    import pddplan

    with pytest.raises(UsageError, match=r"payload_bytes must be a finite number in \[1, 1e\+15\]"):
        pddplan.transfer("wan-10g-cross-city", payload_bytes=parse_size_bytes(text))


def test_no_jitter_every_statistic_is_the_closed_form() -> None:
    # 4,649,000 B: 8 rounds + 956,600 B at 209,715,200 B/s + 10 ms = 0.1745614 s
    res = transfer_times(LINK, [4_649_000.0])
    p = res.points[0]
    expected = 0.16 + 956_600.0 / 209_715_200.0 + 0.01
    for v in (p.mean_s, p.p50_s, p.p90_s, p.p99_s):
        assert v == pytest.approx(expected)
    assert p.bound == "window" and p.slow_start_rounds == 8
    assert float(timing.transfer_s(LINK, 4_649_000.0)) == pytest.approx(expected)


def test_jitter_orders_the_percentiles_and_keeps_the_mean_near_the_closed_form() -> None:
    link = dataclasses.replace(LINK, jitter_cv=0.5)
    res = transfer_times(link, [1e9, 3e9])
    for p in res.points:
        assert p.p50_s < p.p90_s < p.p99_s
        # past slow start the time is affine in the payload: mean(t(xJ)) = t(x)
        assert p.mean_s == pytest.approx(float(timing.transfer_s(link, p.payload_bytes)), rel=1e-6)


def test_loss_and_line_bounds() -> None:
    lossy = dataclasses.replace(LINK, loss_rate=1e-5)
    assert transfer_times(lossy, [1e9]).points[0].bound == "loss"
    wide = dataclasses.replace(LINK, streams_per_transfer=64)
    p = transfer_times(wide, [1e9]).points[0]
    assert p.bound == "line" and p.rate_bytes_per_s == 1e10
    shared = transfer_times(LINK, [1e9], concurrent=100).points[0]
    assert shared.bound == "shared line" and shared.rate_bytes_per_s == pytest.approx(1e8)


def test_rows_and_json_share_the_numbers() -> None:
    res = transfer_times(LINK, [1e6, 1e9])
    rows = res.rows()
    doc = res.to_json()
    assert [r["mean_s"] for r in rows] == [t["mean_s"] for t in doc["transfers"]]
    assert "mean_s" not in doc  # several sizes: no single top-level answer
    assert np.all(np.diff([r["mean_s"] for r in rows]) > 0)
    with pytest.raises(UsageError):
        transfer_times(LINK, [1e6], concurrent=0)
    with pytest.raises(UsageError):
        transfer_times(LINK, [-1.0])


def test_percentiles_ordered_where_the_time_dips_with_the_payload() -> None:
    # 64 transfers sharing the paper line: around 20 MB a larger payload spends less of itself
    # in slow start, so t(x q(p)) was not monotone in p (p99 0.280 s below p90 0.292 s)
    import pddplan

    r = pddplan.transfer("pdd-paper-line", payload_bytes=[22739657.523579273, 1.4e6], concurrent=64)
    for p in r.points:
        assert 0 <= p.p50_s <= p.p90_s <= p.p99_s
