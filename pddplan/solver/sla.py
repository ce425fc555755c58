"""The SLA check: the one comparison of a figure against its target or a load against a count.

Every figure the planner compares with a target (a TTFT percentile with its target, the decode
slots a rate needs with the instances a fleet has, a slot-wait probability with its cap) goes
through these functions, so that the search, the fleet check, the robust study and the simulator
comparison agree to the last bit on whether a plan meets its SLA.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from pddplan import units

#: [-] Relative slack of every comparison against a target: sums of per-class terms differ in
#: their last bits by the order of summation, and a plan sized to meet a target exactly must not
#: miss it by rounding.
SLA_RELATIVE_SLACK = 1e-9
#: [instances] Absolute slack of a load compared with a count (a load of exactly ``n``
#: instances, give or take rounding, fits ``n``).
COUNT_ABSOLUTE_SLACK = units.COUNT_ROUNDING

#: [-] The TTFT percentiles an SLA sets targets on, in the order of every TTFT triple (a plan's
#: ``prefill.ttft_s``, a problem's ``ttft_targets_s``).
TTFT_PERCENTILES = (0.5, 0.9, 0.99)
#: Their names (``p50``, ``p90``, ``p99``), the SLA's keys (``sla.ttft_p50_s``, ...) and what a
#: line of text calls them (``TTFT p50``, ...), in the same order.
PERCENTILE_NAMES = tuple(f"p{round(100 * p)}" for p in TTFT_PERCENTILES)
TTFT_TARGET_KEYS = tuple(f"ttft_{n}_s" for n in PERCENTILE_NAMES)
TTFT_LABELS = tuple(f"TTFT {n}" for n in PERCENTILE_NAMES)


def within(value: float, target: float) -> bool:
    """Whether ``value`` is at most ``target``, within the relative slack."""
    return value <= slack_cap(target)


def slack_cap(target: float) -> float:
    """``target`` with the relative slack of :func:`within`: the largest value within it."""
    return target * (1 + SLA_RELATIVE_SLACK)


def meets_targets(values: Iterable[float], targets: Iterable[float]) -> bool:
    """Whether every value (TTFT p50, p90, p99 [s]) is within its target."""
    return all(within(v, t) for v, t in zip(values, targets, strict=True))


def missed_targets(values: Iterable[float], targets: Iterable[float]) -> list[int]:
    """The indices of the values (TTFT p50, p90, p99 [s]) not within their targets
    (:func:`within`): the percentiles :func:`meets_targets` fails on."""
    return [i for i, (v, t) in enumerate(zip(values, targets, strict=True)) if not within(v, t)]


def slack_targets(targets: Iterable[float]) -> list[float]:
    """Each target with the relative slack of :func:`within`: the time at which a TTFT
    distribution's CDF is read by :func:`reaches_percentiles` [s]."""
    return [slack_cap(t) for t in targets]


def reaches_percentiles(cdf_at_targets: Iterable[float], percentiles: Iterable[float]) -> bool:
    """Whether a TTFT distribution meets its percentile targets, read on its CDF: the
    ``p``-percentile is within its target exactly when the CDF at the target (with the slack,
    :func:`slack_targets`) reaches ``p``.

    This is :func:`meets_targets` on the exact percentiles, without computing them: the
    computed percentiles are brackets' upper ends within ``QUANTILE_RTOL``
    (:mod:`pddplan.models.queueing`), so the two differ only where a percentile lies within
    that relative distance below its target (the CDF's reading is the exact one)."""
    return all(f >= p for f, p in zip(cdf_at_targets, percentiles, strict=True))


def covers(need: float, count: float) -> bool:
    """Whether ``count`` instances cover a load of ``need`` instances."""
    return need <= count * (1 + SLA_RELATIVE_SLACK) + COUNT_ABSOLUTE_SLACK


def least_count(need: float) -> float:
    """The least whole count ``n >= 0`` that :func:`covers` ``need`` (inf for an infinite
    need)."""
    if not math.isfinite(need):
        return math.inf
    n = max(0, math.ceil((need - COUNT_ABSOLUTE_SLACK) / (1 + SLA_RELATIVE_SLACK)))
    while not covers(need, n):
        n += 1
    while n > 0 and covers(need, n - 1):
        n -= 1
    return float(n)
