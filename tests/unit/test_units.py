"""Unit tests of pddplan.units: decimal prefixes, bits vs bytes, hours per month."""

from __future__ import annotations

import numpy as np
import pytest

from pddplan import units


def test_decimal_prefixes() -> None:
    assert (units.KILO, units.MEGA, units.GIGA, units.TERA) == (1e3, 1e6, 1e9, 1e12)


def test_tflops_and_capacity_conversions() -> None:
    # H100 dense BF16 989 TFLOPS = 9.89e14 FLOP/s; 80 GB = 8e10 bytes; 3.35 TB/s = 3.35e12 B/s
    assert units.tflops_to_flops_per_s(989.0) == pytest.approx(9.89e14, rel=1e-15)
    assert units.gb_to_bytes(80.0) == 8e10
    assert units.tb_per_s_to_bytes_per_s(3.35) == pytest.approx(3.35e12, rel=1e-15)
    # NVLink 900 GB/s (bytes, bidirectional) = 9e11 B/s
    assert units.gb_per_s_to_bytes_per_s(900.0) == 9e11


def test_gbit_is_one_eighth_of_gbyte() -> None:
    # 100 Gbit/s line = 100e9 / 8 = 12.5e9 bytes/s, not 100e9
    assert units.gbit_per_s_to_bytes_per_s(100.0) == 12.5e9
    assert units.gbit_per_s_to_bytes_per_s(100.0) == units.gb_per_s_to_bytes_per_s(100.0) / 8
    # and back: 12.5e9 B/s = 100 Gbit/s
    assert units.bytes_per_s_to_gbit_per_s(12.5e9) == 100.0


@pytest.mark.parametrize("gbit", [0.0, 1.0, 10.0, 25.0, 40.0, 100.0, 400.0])
def test_gbit_round_trip(gbit: float) -> None:
    assert units.bytes_per_s_to_gbit_per_s(units.gbit_per_s_to_bytes_per_s(gbit)) == pytest.approx(
        gbit
    )


def test_time_and_money() -> None:
    assert units.ms_to_s(20.0) == pytest.approx(0.02)
    assert units.SECONDS_PER_HOUR == 3600.0
    # 8760 h / 12 = 730 h per month; a 20,000 $/month line costs 20000/730 = 27.397 $/h
    assert units.HOURS_PER_MONTH == 8760.0 / 12
    assert units.usd_per_month_to_usd_per_hour(20_000.0) == pytest.approx(27.39726, rel=1e-6)


def test_one_amortization_for_chips_and_cache_capacity() -> None:
    # 8,760 h a year (the price sheets' months): 30,000 $ over 3 years is 30000 / 26280 $/h,
    # for an owned chip (build_pricing) and for a cache tier's capacity bought outright alike
    from pddplan.spec.caches import CachePrice

    assert units.amortized_usd_per_hour(30_000.0, 3.0) == pytest.approx(30_000.0 / 26_280.0)
    price = CachePrice(capex_usd_per_gb=30_000.0, amortization_years=3.0, source="test")
    assert price.usd_per_gb_hour_amortized == units.amortized_usd_per_hour(30_000.0, 3.0)


def test_dtype_bytes() -> None:
    assert units.DTYPE_BYTES == {
        "fp32": 4.0,
        "bf16": 2.0,
        "fp16": 2.0,
        "fp8": 1.0,
        "int8": 1.0,
        "fp4": 0.5,
        "int4": 0.5,
    }


def test_conversions_broadcast_over_arrays() -> None:
    gbit = np.array([10.0, 25.0, 100.0])
    out = units.gbit_per_s_to_bytes_per_s(gbit)
    np.testing.assert_array_equal(out, [units.gbit_per_s_to_bytes_per_s(g) for g in gbit])
    np.testing.assert_array_equal(units.ms_to_s(np.array([1.5, 20.0])), [1.5e-3, 20e-3])
