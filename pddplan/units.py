"""The only home of unit constants and conversions.

Inside pddplan every quantity is SI: seconds, bytes, bytes per second, FLOP per second.
Profiles may use the units people think in (TFLOPS, GB, TB/s, Gbit/s); the loader converts
them once, with the helpers below. Decimal prefixes throughout (1 GB = 1e9 bytes), as in
datasheets; a bandwidth always says whether it counts bits or bytes.
"""

from __future__ import annotations

import math
import re

KILO = 1e3
MEGA = 1e6
GIGA = 1e9
TERA = 1e12

BITS_PER_BYTE = 8.0

SECONDS_PER_MS = 1e-3
SECONDS_PER_HOUR = 3600.0
HOURS_PER_MONTH = 730.0  # 8760 h / 12, the convention of cloud price sheets

DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "fp4": 0.5,
    "int4": 0.5,
}


def tflops_to_flops_per_s(tflops: float) -> float:
    return tflops * TERA


def gb_to_bytes(gb: float) -> float:
    return gb * GIGA


def tb_per_s_to_bytes_per_s(tb_per_s: float) -> float:
    return tb_per_s * TERA


def gb_per_s_to_bytes_per_s(gb_per_s: float) -> float:
    return gb_per_s * GIGA


def gbit_per_s_to_bytes_per_s(gbit_per_s: float) -> float:
    """Gbit/s (network line rate) to bytes/s: divide by 8 bits per byte."""
    return gbit_per_s * GIGA / BITS_PER_BYTE


def bytes_per_s_to_gbit_per_s(bytes_per_s: float) -> float:
    return bytes_per_s * BITS_PER_BYTE / GIGA


def ms_to_s(ms: float) -> float:
    return ms * SECONDS_PER_MS


def usd_per_month_to_usd_per_hour(usd_per_month: float) -> float:
    return usd_per_month / HOURS_PER_MONTH


def amortized_usd_per_hour(capex_usd: float, amortization_years: float) -> float:
    """[USD/h] A purchase spread evenly over its amortization period, in the hours of the
    price sheets' months (:data:`HOURS_PER_MONTH`, 8,760 h a year): the one rule for an owned
    chip (:func:`pddplan.solver.problem.build_pricing`) and a cache tier's capacity bought
    outright (:attr:`pddplan.spec.caches.CachePrice.usd_per_gb_hour_amortized`)."""
    return capex_usd / (amortization_years * HOURS_PER_MONTH * 12)


#: [-] What a quotient that should be a whole count may exceed it by through rounding.
COUNT_ROUNDING = 1e-9


def whole_count(x: float) -> int:
    """``ceil(x)``, forgiving the rounding of a quotient that should be whole: 3.0000000001
    instances are 3, not 4."""
    return math.ceil(x - COUNT_ROUNDING)


#: Most characters a whole number written as text may have (a 64-bit count has at most 20).
MAX_NUMBER_CHARS = 24


def parse_whole_number(text: str, *, least: int = 0, most: int | None = None) -> int:
    """A whole number written in ASCII digits (``_`` between digits allowed, no sign but ``+``).

    The one parser of counts typed as text (``CHIP=N``, environment variables): ``str.isdigit``
    and ``int`` also take digits such as ``²`` or ``٣``, and numbers of thousands of digits.

    Raises
    ------
    ValueError
        With a message saying what is allowed, for anything else or a value outside
        ``[least, most]``.
    """
    s = text.strip().removeprefix("+").replace("_", "")
    if s.isascii() and s.isdigit() and len(s) > MAX_NUMBER_CHARS:
        raise ValueError(f"a number of {len(s):,} digits is too large (at most {MAX_NUMBER_CHARS})")
    if not s or not (s.isascii() and s.isdigit()):
        shown = text if len(text) <= 30 else text[:27] + "..."
        raise ValueError(f"{shown!r} is not a whole number (ASCII digits 0-9)")
    n = int(s)
    if n < least or (most is not None and n > most):
        top = f"{most:,}" if most is not None else "any"
        raise ValueError(f"{n:,} is outside the allowed range {least:,} to {top}")
    return n


#: Multipliers of the suffixes a count typed as text may have: k, M, G, T are powers of 1000,
#: Ki, Mi, Gi, Ti powers of 1024 (keys lower-case; the suffix is read case-insensitively).
COUNT_SUFFIXES = {
    "": 1,
    "k": 10**3,
    "m": 10**6,
    "g": 10**9,
    "t": 10**12,
    "ki": 2**10,
    "mi": 2**20,
    "gi": 2**30,
    "ti": 2**40,
}
_SCALED = re.compile(r"^\s*([0-9][0-9_]*(?:\.[0-9]+)?(?:e[0-9]+)?)\s*((?:[kmgt]i?)?)\s*$", re.I)


def parse_scaled_count(text: str) -> float:
    """A count written with an optional suffix: ``2000``, ``64k``, ``1.5M``, ``1e6``, ``64Ki``
    (:data:`COUNT_SUFFIXES`); ``_`` between digits allowed. The one reader of such counts (token
    counts of the command line, prefix-cache capacities).

    Raises
    ------
    ValueError
        For text that is not such a count (the caller words the message).
    """
    m = _SCALED.match(text)
    if not m or len(text) > 64:
        raise ValueError(f"{text.strip()!r} is not a count (e.g. 2000, 64k, 2M)")
    return float(m.group(1).replace("_", "")) * COUNT_SUFFIXES[m.group(2).lower()]
