"""The event handlers: what each event does to a :class:`~pddplan.sim.state.SimState`.

One function per event code, ``on_<event>(s, t_s, a, b)`` with the event's time ``t_s`` [s] and
arguments ``a``, ``b`` (see :mod:`pddplan.sim.events`); :data:`HANDLERS` lists them by code
for the engine's loop. The helpers below them move a request between pools: slot grants and
releases, the RLD relay and the hand-over rounds (One-Shot, Catch-Up).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from pddplan import timing
from pddplan.sim import events as ev
from pddplan.sim import policies
from pddplan.sim.state import (
    MD_POOL,
    RLD_FINISHED,
    RLD_LEFT,
    RLD_NONE,
    RLD_ON,
    RLD_WAITING,
    SimState,
)

_P_MD, _P_RELAY = policies.P_MD, policies.P_RLD_MD
_NAN = math.nan

Handler = Callable[[SimState, float, Any, Any], None]


# ------------------------------------------------------------------------------ the events
def on_arrival(s: SimState, t_s: float, a: Any, b: Any) -> None:
    """Request ``a`` arrives: it queues for prefill; the next arrival is scheduled."""
    r = a
    if s.ppool.free:
        s.t_pstart[r] = t_s
    s.ppool.arrive(t_s, r, s.prefill_s[r])
    nxt = r + 1
    if nxt < s.n:
        s.push(s.arrival_s[nxt], ev.ARRIVAL, nxt)
    if s.progress is not None and nxt % s.progress_every == 0:
        s.progress(nxt, s.n)


def on_prefill_done(s: SimState, t_s: float, a: Any, b: Any) -> None:
    """Request ``a`` leaves prefill instance ``b``: its KV heads for the WAN and/or RLD."""
    r = a
    nxt = s.ppool.done(b)
    if nxt >= 0:
        s.t_pstart[nxt] = t_s
        s.ppool.start(t_s, nxt, b, s.prefill_s[nxt])
    p = s.pid[r]
    if p == _P_MD:
        s.push(t_s + s.lead_s[r], ev.WAN_START, r)
    elif p == _P_RELAY and not s.wrong:
        s.push(t_s + s.lead_s[r], ev.WAN_START, r)
        s.push(t_s + s.rdma_s[r], ev.RDMA_DONE, r)
    else:
        s.push(t_s + s.rdma_s[r], ev.RDMA_DONE, r)


def on_decode_done(s: SimState, t_s: float, a: Any, b: Any) -> None:
    """A decode instance's next completion (pool ``a``; ``b`` = (instance, version))."""
    j, ver = b
    if a == MD_POOL:
        t_done = s.t_done
        for r in s.md.done(t_s, j, ver):
            t_done[r] = t_s
            md_release(s, t_s, j)
    else:
        rld = s.rld
        assert rld is not None
        for r in rld.done(t_s, j, ver):
            s.t_done[r] = t_s
            s.rld_tok[r] = s.output_tokens[r]
            s.rld_st[r] = RLD_FINISHED
            rld_release(s, t_s, j)


def on_wan_start(s: SimState, t_s: float, a: Any, b: Any) -> None:
    """Request ``a``'s bytes start to flow over the line."""
    s.line.add(t_s, a, s.line_bytes[a])


def on_line_done(s: SimState, t_s: float, a: Any, b: Any) -> None:
    """The line's next completion (version ``a``): finished flows propagate to MD."""
    push, tail = s.push, s.tail_s
    for r in s.line.done(t_s, a):
        push(t_s + tail[r], ev.KV_AT_MD, r)


def on_kv_at_md(s: SimState, t_s: float, a: Any, b: Any) -> None:
    """Request ``a``'s KV is at MD: it asks for an MD slot (RLD, if on, keeps relaying)."""
    r = a
    st = s.rld_st[r]
    p = s.pid[r]
    if p == _P_MD or st in (RLD_NONE, RLD_WAITING):
        if st == RLD_WAITING or (p == _P_RELAY and st == RLD_NONE):
            s.rld_st[r] = RLD_LEFT  # the KV beat the relay: go straight to MD
        md_request(s, t_s, r)
    elif st == RLD_ON:
        md_request(s, t_s, r)  # RLD keeps relaying until MD has a slot


def on_rdma_done(s: SimState, t_s: float, a: Any, b: Any) -> None:
    """Request ``a``'s KV is at RLD: it joins an RLD batch or waits for a slot."""
    r = a
    if s.rld_st[r] != RLD_NONE:
        return
    rld = s.rld
    assert rld is not None
    s.rld_req_t[r] = t_s
    j = rld.request_slot(r)
    if j >= 0:
        rld_join(s, t_s, r, j)
    else:
        s.rld_st[r] = RLD_WAITING


def on_handover_at_md(s: SimState, t_s: float, a: Any, b: Any) -> None:
    """``b`` token IDs of request ``a`` reached MD: extend them (or start decoding)."""
    r = a
    j = s.md_inst[r]
    k = float(b)
    if not s.final[r] and s.rld_st[r] == RLD_FINISHED:
        md_release(s, t_s, j)
    elif k > 0:
        s.md.extend(t_s, j, r, k, s.input_tokens[r] + s.handed[r])
    else:
        md_after_handover(s, t_s, r, j)


def on_extend_done(s: SimState, t_s: float, a: Any, b: Any) -> None:
    """MD instance ``b`` finished an extend pass: the next round, or decode on MD."""
    j = b
    r, k = s.md.extend_done(t_s, j)
    s.handed[r] += k
    if s.final[r]:
        md_after_handover(s, t_s, r, j)
    elif s.rld_st[r] == RLD_FINISHED:
        md_release(s, t_s, j)
    else:
        handover_step(s, t_s, r)


def on_sample(s: SimState, t_s: float, a: Any, b: Any) -> None:
    """One point of the occupancy time series."""
    md, line, rld, rld_st = s.md, s.line, s.rld, s.rld_st
    md.snapshot(t_s)
    line.snapshot(t_s)
    if rld is not None:
        rld.snapshot(t_s)
    s.rows.append(
        (
            t_s,
            float(len(s.ppool.queue)),
            float(line.n),
            float(line.busy_s),
            float(line.bytes_done),
            float(md.occupancy() + len(md.waitq)),
            float(md.tokens),
            float(md.busy_s),
            float(rld.occupancy() + sum(1 for x in rld.waitq if rld_st[x] == RLD_WAITING))
            if rld
            else 0.0,
            float(rld.tokens) if rld else 0.0,
            float(rld.busy_s) if rld else 0.0,
        )
    )


def _by_code() -> tuple[Handler, ...]:
    table: dict[int, Handler] = {
        ev.ARRIVAL: on_arrival,
        ev.PREFILL_DONE: on_prefill_done,
        ev.WAN_START: on_wan_start,
        ev.LINE_DONE: on_line_done,
        ev.KV_AT_MD: on_kv_at_md,
        ev.RDMA_DONE: on_rdma_done,
        ev.DECODE_DONE: on_decode_done,
        ev.HANDOVER_AT_MD: on_handover_at_md,
        ev.EXTEND_DONE: on_extend_done,
        ev.SAMPLE: on_sample,
    }
    assert sorted(table) == list(range(len(table))), "event codes must be 0, 1, ..."
    return tuple(table[code] for code in range(len(table)))


#: The handlers by event code (``HANDLERS[code](state, t_s, a, b)``).
HANDLERS = _by_code()


# --------------------------------------------------------------------------- slots and moves
def md_release(s: SimState, t_s: float, j: int) -> None:
    """Free a slot of MD instance ``j``; grant it to the next live waiter."""
    md = s.md
    md.used[j] -= 1
    wq = md.waitq
    while wq:
        r2 = wq.popleft()
        if s.rld_st[r2] == RLD_FINISHED:
            continue
        md.used[j] += 1
        md_granted(s, t_s, r2, j)
        return


def rld_release(s: SimState, t_s: float, j: int) -> None:
    """Free a slot of RLD instance ``j``; give it to the next request still waiting."""
    rld = s.rld
    assert rld is not None
    rld.used[j] -= 1
    wq = rld.waitq
    while wq:
        r2 = wq.popleft()
        if s.rld_st[r2] != RLD_WAITING:
            continue
        rld.used[j] += 1
        rld_join(s, t_s, r2, j)
        return


def rld_join(s: SimState, t_s: float, r: int, j: int) -> None:
    """Request ``r`` starts decoding on RLD instance ``j`` (its slot is taken)."""
    rld = s.rld
    assert rld is not None
    s.rld_st[r] = RLD_ON
    s.rld_wait[r] = t_s - s.rld_req_t[r]
    first = rld.join(t_s, j, r, s.input_tokens[r], s.output_tokens[r])
    if s.t_first[r] != s.t_first[r]:  # nan
        s.t_first[r] = first


def md_request(s: SimState, t_s: float, r: int) -> None:
    """Request ``r`` asks for an MD slot: granted now, or it waits in line."""
    s.md_req_t[r] = t_s
    j = s.md.request_slot(r)
    if j >= 0:
        md_granted(s, t_s, r, j)


def md_granted(s: SimState, t_s: float, r: int, j: int) -> None:
    """Request ``r`` holds a slot of MD instance ``j``: decode, or hand over from RLD."""
    s.md_inst[r] = j
    s.md_wait[r] = t_s - s.md_req_t[r]
    st = s.rld_st[r]
    if st == RLD_FINISHED:
        md_release(s, t_s, j)
    elif st == RLD_ON:
        handover_step(s, t_s, r)
    else:
        first = s.md.join(t_s, j, r, s.input_tokens[r], s.output_tokens[r])
        if s.t_first[r] != s.t_first[r]:
            s.t_first[r] = first


def handover_s(s: SimState, tokens: float) -> float:
    """Time to ship ``tokens`` token IDs from RLD to MD [s] (cached by whole tokens)."""
    key = int(tokens)
    v = s.ho_cache.get(key)
    if v is None:
        v = float(timing.handover_transfer_s(s.wan, key))
        s.ho_cache[key] = v
    return v


def handover_step(s: SimState, t_s: float, r: int) -> None:
    """Start the next hand-over round of ``r`` (RLD on, MD slot held)."""
    rld = s.rld
    assert rld is not None
    backlog = math.floor(rld.tokens_of(t_s, r) + 1e-9) - s.handed[r]
    occ = rld.occupancy() / s.rld_slots
    if (
        s.catch_up_ok
        and s.rounds[r] < s.max_rounds
        and policies.catch_up_now(s.mode, backlog, s.thr_tokens, occ)
    ):
        s.rounds[r] += 1
        s.push(t_s + handover_s(s, s.thr_tokens), ev.HANDOVER_AT_MD, r, float(s.thr_tokens))
    else:
        final_handover(s, t_s, r)


def final_handover(s: SimState, t_s: float, r: int) -> None:
    """RLD stops relaying ``r`` and ships the tokens MD does not have yet."""
    rld = s.rld
    assert rld is not None
    j_r, k = rld.leave(t_s, r)
    rld_release(s, t_s, j_r)
    kf = min(float(math.floor(k + 1e-9)), s.output_tokens[r])
    s.rld_tok[r] = kf
    s.rld_st[r] = RLD_LEFT
    s.t_stop[r] = t_s
    s.final[r] = True
    if kf < 1.0:
        s.t_first[r] = _NAN  # RLD left before its first token: MD gives it
    rest = max(kf - s.handed[r], 0.0)
    s.push(t_s + handover_s(s, rest), ev.HANDOVER_AT_MD, r, rest)


def md_after_handover(s: SimState, t_s: float, r: int, j: int) -> None:
    """The hand-over of ``r`` is complete on MD instance ``j``: decode the rest there."""
    togo = s.output_tokens[r] - s.rld_tok[r]
    if togo <= 0:
        s.t_done[r] = t_s
        md_release(s, t_s, j)
        return
    first = s.md.join(t_s, j, r, s.input_tokens[r] + s.rld_tok[r], togo)
    if s.t_first[r] != s.t_first[r]:
        s.t_first[r] = first
    s.stall[r] = first - s.t_stop[r]
