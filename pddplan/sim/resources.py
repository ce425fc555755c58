"""Simulated resources: the prefill pool, the processor-sharing line and the decode pools.

Each resource keeps its own state and schedules its own completions on the shared
:class:`~pddplan.sim.events.EventQueue`; the engine decides what happens to a request next.

References
----------
.. [1] Kleinrock, "Queueing Systems, Vol. 2", 1976, section 4.4: egalitarian processor
   sharing; a virtual clock of attained service per flow makes each event ``O(log n)``.
.. [2] Yu et al., "Orca: a distributed serving system for transformer-based generative
   models", OSDI 2022 (continuous, iteration-level batching).
"""

from __future__ import annotations

import heapq
import math
from collections import deque

import numpy as np

from pddplan.deployment import Instance
from pddplan.sim.events import DECODE_DONE, EXTEND_DONE, LINE_DONE, PREFILL_DONE, EventQueue

#: Context-grid points of the decode step-time table (linear interpolation in between).
STEP_TABLE_POINTS = 257
#: Work left below which a flow or a sequence counts as done: this much time at full speed [s]
#: (far below any modelled time, far above float rounding of the clocks).
_EPS_TIME_S = 1e-9


class FcfsPool:
    """``n`` identical servers, one request each, first come first served (the prefill pool)."""

    def __init__(self, servers: int, events: EventQueue) -> None:
        self.servers = servers
        self.free = list(range(servers - 1, -1, -1))
        self.queue: deque[int] = deque()
        self.events = events
        self.busy_s = 0.0  # sum of service times started
        self.started_s: list[float] = []

    def arrive(self, t_s: float, r: int, service_s: float) -> None:
        if self.free:
            j = self.free.pop()
            self.busy_s += service_s
            self.events.push(t_s + service_s, PREFILL_DONE, r, j)
        else:
            self.queue.append(r)

    def done(self, j: int) -> int:
        """Free server ``j``; return the request to start on it next, or -1."""
        if self.queue:
            return self.queue.popleft()
        self.free.append(j)
        return -1

    def start(self, t_s: float, r: int, j: int, service_s: float) -> None:
        self.busy_s += service_s
        self.events.push(t_s + service_s, PREFILL_DONE, r, j)


class PsLine:
    """A link whose goodput is shared equally among the flows on it (processor sharing).

    A transfer takes at most ``flow_cap_bytes_per_s`` (its streams' window or loss ceiling, the
    same for every transfer on one link), so ``n`` flows each get ``min(C / n, cap)``.
    A virtual clock ``V`` counts the bytes each active flow has received: ``dV/dt = min(C / n,
    cap)``. A
    flow of ``x`` bytes that starts at ``V_0`` ends when ``V = V_0 + x``; only the smallest end
    is scheduled, and a version number voids it whenever ``n`` changes.
    """

    def __init__(
        self, goodput_bytes_per_s: float, events: EventQueue, flow_cap_bytes_per_s: float = math.inf
    ) -> None:
        self.c = goodput_bytes_per_s
        self.cap = flow_cap_bytes_per_s
        self.events = events
        self.v = 0.0
        self.last_s = 0.0
        self.n = 0
        self.heap: list[tuple[float, int]] = []
        self.version = 0
        self.busy_s = 0.0
        self.bytes_done = 0.0
        self.flow_time_s = 0.0  # integral of the number of flows (mean flows = this / time)

    def _advance(self, t_s: float) -> None:
        dt = t_s - self.last_s
        if dt > 0.0 and self.n:
            per_flow = min(self.c / self.n, self.cap)
            self.v += dt * per_flow
            self.busy_s += dt
            self.bytes_done += dt * per_flow * self.n
            self.flow_time_s += dt * self.n
        self.last_s = t_s

    def _reschedule(self, t_s: float) -> None:
        self.version += 1
        if self.n:
            dt = (self.heap[0][0] - self.v) / min(self.c / self.n, self.cap)
            self.events.push(t_s + max(dt, 0.0), LINE_DONE, self.version)

    def add(self, t_s: float, r: int, size_bytes: float) -> None:
        """Start a flow of ``size_bytes`` for request ``r`` at ``t_s``."""
        self._advance(t_s)
        heapq.heappush(self.heap, (self.v + size_bytes, r))
        self.n += 1
        self._reschedule(t_s)

    def done(self, t_s: float, version: int) -> list[int]:
        """Flows that end at ``t_s`` (none when the event is stale)."""
        if version != self.version:
            return []
        self._advance(t_s)
        out = []
        h = self.heap
        # a flow ends when what it lacks takes less than the clock can resolve at t: late in a
        # long run (t ~ 1e9 s at 1e-6 req/s) a float step of t is ~1e-7 s, and an end sooner
        # than that would be scheduled at t itself again and again, without progress
        eps_s = max(_EPS_TIME_S, 4.0 * math.ulp(t_s))
        lim = self.v + eps_s * min(self.c / self.n, self.cap) + self.v * 1e-13
        while h and h[0][0] <= lim:
            out.append(heapq.heappop(h)[1])
        self.n -= len(out)
        if not self.n:
            self.v = 0.0  # re-base the clock when idle (keeps precision on long runs)
            h.clear()
        self._reschedule(t_s)
        return out

    def snapshot(self, t_s: float) -> None:
        self._advance(t_s)


class StepTable:
    """Decode step time [s] of an instance over batch 1..``max_batch`` and a context grid.

    Built with one vectorized call of :meth:`~pddplan.deployment.Instance.decode_step_s` and
    interpolated linearly in context (the step time is piecewise linear in context at a fixed
    batch: a roofline of two linear terms).
    """

    def __init__(self, inst: Instance, max_batch: int, max_context_tokens: float) -> None:
        self.max_batch = max(int(max_batch), 1)
        self.dx = max(float(max_context_tokens), 1.0) / (STEP_TABLE_POINTS - 1)
        ctx = np.arange(STEP_TABLE_POINTS) * self.dx
        b = np.arange(1, self.max_batch + 1, dtype=float)
        tab = np.asarray(inst.decode_step_s(b[:, None], ctx[None, :]), dtype=float)
        self.rows: list[list[float]] = [[0.0] * STEP_TABLE_POINTS] + [list(r) for r in tab]
        self.last = STEP_TABLE_POINTS - 1

    def step_s(self, batch: int, context_tokens: float) -> float:
        row = self.rows[min(batch, self.max_batch)]
        x = context_tokens / self.dx
        i = int(x)
        if i >= self.last:
            i = self.last - 1
        f = x - i
        return row[i] + (row[i + 1] - row[i]) * f


class DecodePool:
    """``n`` decode instances with continuous batching, up to ``cap`` sequences each.

    Within an instance every sequence advances one token per step; the step time is
    :class:`StepTable` at the current batch and mean context, recomputed whenever the batch
    changes. A virtual token clock ``U`` (tokens emitted per sequence) makes a join, a leave and
    a completion ``O(log b)``: a sequence that joins at ``U_0`` with ``k`` tokens to go ends at
    ``U = U_0 + k``. An extend pass (MD rebuilding handed-over tokens) pauses the instance for
    :meth:`~pddplan.deployment.Instance.extend_s`, as the closed forms count it as instance time.

    Slots (``used``) count sequences that hold a place in the batch, extending or waiting for
    their hand-over included; ``waitq`` holds requests waiting for a slot, in order.
    """

    def __init__(
        self,
        pool_id: int,
        inst: Instance,
        instances: int,
        cap: int,
        max_context_tokens: float,
        events: EventQueue,
    ) -> None:
        self.pool_id = pool_id
        self.inst = inst
        self.n = instances
        self.cap = cap
        self.events = events
        self.table = StepTable(inst, cap, max_context_tokens)
        self.u = [0.0] * instances
        self.last = [0.0] * instances
        self.m = [0] * instances
        self.base = [0.0] * instances
        self.s = [0.0] * instances
        self.ver = [0] * instances
        self.paused = [False] * instances
        self.pause_end = [0.0] * instances
        self.heaps: list[list[tuple[float, int, int]]] = [[] for _ in range(instances)]
        self.used = [0] * instances
        self.extq: list[deque[tuple[int, float, float]]] = [deque() for _ in range(instances)]
        self.ext_cur: list[tuple[int, float]] = [(-1, 0.0)] * instances
        self.where: dict[int, tuple[int, float, float, int]] = {}
        self.waitq: deque[int] = deque()
        self.nseq = 0
        self._extend_cache: dict[tuple[int, int], float] = {}
        # integrals for the report
        self.tokens = 0.0
        self.busy_s = 0.0
        self.member_s = 0.0

    # ---- clock
    def _advance(self, j: int, t_s: float) -> None:
        dt = t_s - self.last[j]
        if dt > 0.0:
            m = self.m[j]
            if m:
                self.member_s += m * dt
                if not self.paused[j]:
                    du = dt / self.s[j]
                    self.u[j] += du
                    self.tokens += m * du
            if m or self.paused[j]:
                self.busy_s += dt
            self.last[j] = t_s

    def _refresh(self, j: int, t_s: float) -> None:
        m = self.m[j]
        self.ver[j] += 1
        if not m:
            return
        self.s[j] = self.table.step_s(m, self.base[j] / m + self.u[j])
        if self.paused[j]:
            return
        h = self.heaps[j]
        where = self.where
        while h:
            info = where.get(h[0][2])
            if info is not None and info[3] == h[0][1]:
                break
            heapq.heappop(h)
        if h:
            dt = (h[0][0] - self.u[j]) * self.s[j]
            self.events.push(t_s + max(dt, 0.0), DECODE_DONE, self.pool_id, (j, self.ver[j]))

    def snapshot(self, t_s: float) -> None:
        for j in range(self.n):
            self._advance(j, t_s)

    # ---- slots
    def pick(self) -> int:
        """The instance with the most free slots (lowest index on ties), or -1 when full."""
        best, best_used = -1, self.cap
        for j, u in enumerate(self.used):
            if u < best_used:
                best, best_used = j, u
        return best

    def request_slot(self, r: int) -> int:
        """Take a slot for ``r`` on :meth:`pick`'s instance and return it; when every slot is
        taken, queue ``r`` in ``waitq`` and return -1."""
        j = self.pick()
        if j >= 0:
            self.used[j] += 1
        else:
            self.waitq.append(r)
        return j

    def occupancy(self) -> int:
        return sum(self.used)

    # ---- sequences
    def join(self, t_s: float, j: int, r: int, context_tokens: float, tokens: float) -> float:
        """Sequence ``r`` joins instance ``j`` with ``tokens`` to go; returns its first token
        time [s] (one step after joining, or after the extend pass in progress)."""
        self._advance(j, t_s)
        self.nseq += 1
        u0 = self.u[j]
        b = context_tokens - u0
        self.where[r] = (j, u0, b, self.nseq)
        heapq.heappush(self.heaps[j], (u0 + tokens, self.nseq, r))
        self.m[j] += 1
        self.base[j] += b
        self._refresh(j, t_s)
        return (self.pause_end[j] if self.paused[j] else t_s) + self.s[j]

    def tokens_of(self, t_s: float, r: int) -> float:
        """Tokens sequence ``r`` has emitted on its instance so far [tokens]."""
        j, u0, _, _ = self.where[r]
        self._advance(j, t_s)
        return self.u[j] - u0

    def leave(self, t_s: float, r: int) -> tuple[int, float]:
        """Take sequence ``r`` out of its batch; returns (instance, tokens it emitted)."""
        j, u0, b, _ = self.where.pop(r)
        self._advance(j, t_s)
        self.m[j] -= 1
        self.base[j] = self.base[j] - b if self.m[j] else 0.0
        done = self.u[j] - u0
        self._refresh(j, t_s)
        return j, done

    def done(self, t_s: float, j: int, version: int) -> list[int]:
        """Sequences of instance ``j`` that finish at ``t_s`` (none when the event is stale)."""
        if version != self.ver[j]:
            return []
        self._advance(j, t_s)
        out = []
        h = self.heaps[j]
        where = self.where
        # as PsLine.done: what the clock cannot resolve at t counts as done
        lim = self.u[j] * (1.0 + 1e-13) + max(_EPS_TIME_S, 4.0 * math.ulp(t_s)) / self.s[j]
        while h:
            uf, seq, r = h[0]
            info = where.get(r)
            if info is None or info[3] != seq:
                heapq.heappop(h)
                continue
            if uf > lim:
                break
            heapq.heappop(h)
            del where[r]
            self.m[j] -= 1
            self.base[j] -= info[2]
            out.append(r)
        if not self.m[j]:
            self.base[j] = 0.0
        self._refresh(j, t_s)
        return out

    # ---- extend passes
    def extend_s(self, tokens: float, context_tokens: float) -> float:
        key = (int(tokens), int(context_tokens))
        e = self._extend_cache.get(key)
        if e is None:
            e = float(self.inst.extend_s(float(key[0]), float(key[1])))
            self._extend_cache[key] = e
        return e

    def extend(self, t_s: float, j: int, r: int, tokens: float, context_tokens: float) -> None:
        """Queue an extend pass of ``tokens`` for ``r`` on instance ``j`` (pauses the batch)."""
        self.extq[j].append((r, tokens, context_tokens))
        if not self.paused[j]:
            self._start_extend(t_s, j)

    def _start_extend(self, t_s: float, j: int) -> None:
        r, k, ctx = self.extq[j].popleft()
        self._advance(j, t_s)
        self.paused[j] = True
        e = self.extend_s(k, ctx)
        self.pause_end[j] = t_s + e
        self.ext_cur[j] = (r, k)
        self.ver[j] += 1  # void the pending completion: the batch stands still
        self.events.push(t_s + e, EXTEND_DONE, self.pool_id, j)

    def extend_done(self, t_s: float, j: int) -> tuple[int, float]:
        """End the running extend pass of instance ``j``; returns (request, tokens)."""
        self._advance(j, t_s)
        cur = self.ext_cur[j]
        if self.extq[j]:
            self._start_extend(t_s, j)
        else:
            self.paused[j] = False
            self._refresh(j, t_s)
        return cur
