"""What a day of elastic instances is billed: runs of instances over the slots of a day.

A count per slot (chips of one kind rented, or owned chips powered up) is cut into layers: the
``k``-th chip runs in the slots whose count is at least ``k``. Each maximal run of slots of a
layer is one run of one chip: it is started ``startup_minutes`` before its first slot (the ramp
is served: a chip serves from the start of the slot that needs it) and billed for the run and its
start-up in whole ``billing_minutes``. The day repeats (slot 0 follows the last slot), so a layer
that runs all day is billed the whole day, without a start-up.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def runs(counts: Sequence[int]) -> list[int]:
    """The lengths [slots] of the runs of every layer of a repeating day's counts; a layer that
    runs all day is one run of ``len(counts)`` slots.

    Examples
    --------
    >>> runs([0, 2, 2, 1])
    [3, 2]
    >>> runs([1, 1])
    [2]
    """
    n = len(counts)
    out: list[int] = []
    for k in range(1, max(counts, default=0) + 1):
        on = [c >= k for c in counts]
        if all(on):
            out.append(n)
            continue
        start = on.index(False)  # walk the cycle from an off slot: runs do not wrap
        length = 0
        for i in range(1, n + 1):
            if on[(start + i) % n]:
                length += 1
            elif length:
                out.append(length)
                length = 0
        if length:
            out.append(length)
    return out


def billed_hours(
    counts: Sequence[int], slot_minutes: float, startup_minutes: float, billing_minutes: float
) -> float:
    """Chip-hours billed in one day [h] for ``counts`` chips per slot.

    Notes
    -----
    A run of ``L`` slots is billed ``ceil((L * slot + startup) / unit) * unit``; a layer on all
    day is billed the day (``len(counts) * slot``).
    """
    n = len(counts)
    total_min = 0.0
    for length in runs(counts):
        if length == n:
            total_min += n * slot_minutes
            continue
        minutes = length * slot_minutes + startup_minutes
        total_min += math.ceil(minutes / billing_minutes - 1e-9) * billing_minutes
    return total_min / 60.0


def started_hours(counts: Sequence[int], slot_minutes: float, startup_minutes: float) -> float:
    """Chip-hours [h] that ``counts`` chips per slot run in a day with their start-ups (no
    billing unit: what a powered-down owned chip draws when it wakes)."""
    n = len(counts)
    total_min = 0.0
    for length in runs(counts):
        total_min += length * slot_minutes + (0.0 if length == n else startup_minutes)
    return total_min / 60.0
