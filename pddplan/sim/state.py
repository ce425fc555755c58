"""The state of one simulation run: queues, pools, settings and per-request records.

:mod:`pddplan.sim.engine` builds a :class:`SimState`, the handlers of
:mod:`pddplan.sim.handlers` change it, one event at a time, and the engine reads the records
back into a :class:`~pddplan.sim.engine.SimResult`. Per-request values are plain lists (fast
scalar access in the event loop), indexed by request number.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from pddplan.deployment import LinkNumbers
from pddplan.executors import Progress
from pddplan.sim.events import EventQueue
from pddplan.sim.resources import DecodePool, FcfsPool, PsLine

MD_POOL, RLD_POOL = 0, 1
# RLD status of a request
RLD_NONE, RLD_WAITING, RLD_ON, RLD_LEFT, RLD_FINISHED = 0, 1, 2, 3, 4


def _nans(n: int) -> list[float]:
    return [math.nan] * n


@dataclass(slots=True, eq=False)
class SimState:
    """Everything the event handlers read and change.

    Attributes
    ----------
    q : the event queue; ``push`` is its bound ``push`` (one lookup in the handlers).
    ppool, line, md, rld : the prefill pool, the WAN line, the MD pool and the RLD pool (or
        ``None`` when the plan has none).
    rld_slots : [-] RLD batch slots in all (1 without RLD: the occupancy's denominator).
    mode : the hand-over mode ("one-shot", "catch-up" or "adaptive").
    catch_up_ok : whether Catch-Up converges on this MD (else every hand-over is One-Shot).
    thr_tokens : [tokens] Catch-Up batch.
    max_rounds : [-] most Catch-Up rounds per request.
    wrong : the excluded ``p-rld`` policy (relayed requests finish on RLD).
    wan : the WAN's link numbers (hand-over transfer times).
    arrival_s, prefill_s, pid, line_bytes, lead_s, tail_s, rdma_s, output_tokens,
    input_tokens : per request: arrival time, prefill time, pipeline code, bytes on the line,
        time before the bytes flow, time after they left the line, RDMA copy time, output and
        input lengths.
    progress : called as ``progress(arrived, total)`` every ``progress_every`` arrivals.
    rows : occupancy samples, one tuple per ``SAMPLE`` event.
    The remaining lists are per-request records (see the handlers).
    """

    q: EventQueue
    ppool: FcfsPool
    line: PsLine
    md: DecodePool
    rld: DecodePool | None
    rld_slots: int
    mode: str
    catch_up_ok: bool
    thr_tokens: int
    max_rounds: int
    wrong: bool
    wan: LinkNumbers
    arrival_s: list[float]
    prefill_s: list[float]
    pid: list[int]
    line_bytes: list[float]
    lead_s: list[float]
    tail_s: list[float]
    rdma_s: list[float]
    output_tokens: list[float]
    input_tokens: list[float]
    progress: Progress | None = None
    progress_every: int = 1000
    push: Callable[..., None] = field(init=False)
    n: int = field(init=False)
    ho_cache: dict[int, float] = field(init=False)
    rows: list[tuple[float, ...]] = field(init=False)
    t_first: list[float] = field(init=False)
    t_done: list[float] = field(init=False)
    t_pstart: list[float] = field(init=False)
    rld_st: list[int] = field(init=False)
    rld_tok: list[float] = field(init=False)
    md_inst: list[int] = field(init=False)
    md_req_t: list[float] = field(init=False)
    md_wait: list[float] = field(init=False)
    rld_req_t: list[float] = field(init=False)
    rld_wait: list[float] = field(init=False)
    handed: list[float] = field(init=False)
    rounds: list[int] = field(init=False)
    final: list[bool] = field(init=False)
    t_stop: list[float] = field(init=False)
    stall: list[float] = field(init=False)

    def __post_init__(self) -> None:
        n = len(self.arrival_s)
        self.push = self.q.push
        self.n = n
        self.ho_cache = {}
        self.rows = []
        self.t_first = _nans(n)
        self.t_done = _nans(n)
        self.t_pstart = _nans(n)
        self.rld_st = [RLD_NONE] * n
        self.rld_tok = [0.0] * n
        self.md_inst = [-1] * n
        self.md_req_t = _nans(n)
        self.md_wait = _nans(n)
        self.rld_req_t = _nans(n)
        self.rld_wait = _nans(n)
        self.handed = [0.0] * n
        self.rounds = [0] * n
        self.final = [False] * n
        self.t_stop = _nans(n)
        self.stall = _nans(n)
