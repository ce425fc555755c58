"""The event heap: ``(time, sequence, code, a, b)`` tuples on a ``heapq``.

Why an event heap of our own and not SimPy: a SimPy process is a Python generator resumed
through the environment's own heap and event objects, with callbacks and a ``Timeout`` object per
wait; a request crossing prefill, two links and two decode pools costs a dozen such objects. The
engine here pushes plain tuples and dispatches on a small integer, and the resources that change
many completion times at once (the processor-sharing line, continuous-batching decode instances)
keep one "next completion" event each, invalidated by a version number instead of cancelled.
That keeps 100,000 requests well inside the benchmark's 30 s on one core (see
``benchmarks/bench_sim.py``); SimPy is also not a dependency of pddplan.

The sequence number breaks ties between events at the same time in push order, so runs are
deterministic.
"""

from __future__ import annotations

import heapq
from typing import Any

# event codes (small ints: the engine dispatches on them)
ARRIVAL = 0  # a: request
PREFILL_DONE = 1  # a: request, b: prefill instance
WAN_START = 2  # a: request (set-up round trips are over; data starts to flow)
LINE_DONE = 3  # a: line version
KV_AT_MD = 4  # a: request (last byte propagated to MD)
RDMA_DONE = 5  # a: request (KV copied to RLD)
DECODE_DONE = 6  # a: pool id, b: (instance, version)
HANDOVER_AT_MD = 7  # a: request, b: tokens carried
EXTEND_DONE = 8  # a: pool id, b: instance
SAMPLE = 9  # a: sample index

#: ``(time [s], sequence, code, a, b)``.
Event = tuple[float, int, int, Any, Any]

CODE_NAMES = {
    ARRIVAL: "arrival",
    PREFILL_DONE: "prefill done",
    WAN_START: "WAN start",
    LINE_DONE: "line done",
    KV_AT_MD: "KV at MD",
    RDMA_DONE: "RDMA done",
    DECODE_DONE: "decode done",
    HANDOVER_AT_MD: "hand-over at MD",
    EXTEND_DONE: "extend done",
    SAMPLE: "sample",
}


class EventQueue:
    """A min-heap of events ordered by time, then by push order."""

    __slots__ = ("heap", "seq", "popped")

    def __init__(self) -> None:
        self.heap: list[Event] = []
        self.seq = 0
        self.popped = 0

    def push(self, t_s: float, code: int, a: Any = 0, b: Any = 0) -> None:
        """Schedule event ``code`` with arguments ``a``, ``b`` at time ``t_s`` [s]."""
        self.seq += 1
        heapq.heappush(self.heap, (t_s, self.seq, code, a, b))

    def pop(self) -> Event:
        self.popped += 1
        return heapq.heappop(self.heap)

    def __len__(self) -> int:
        return len(self.heap)
