"""Transfers alone on a simulated line: the simulator's transfer path without the fleet.

:func:`simulate_transfers` runs payloads through the same phases as
:func:`pddplan.sim.engine.simulate` (lead from :func:`pddplan.timing.transfer_phases`, the
processor-shared :class:`~pddplan.sim.resources.PsLine` with the link's per-transfer rate cap,
then the tail), so the closed form :func:`pddplan.timing.transfer_s` can be checked against
it, and so can its slow start, per-flow ceilings and sharing.
"""

from __future__ import annotations

import numpy as np

from pddplan import timing
from pddplan.deployment import LinkNumbers
from pddplan.sim import events as ev
from pddplan.sim.resources import PsLine


def simulate_transfers(
    link: LinkNumbers, payload_bytes, start_s=0.0, utilization: float = 0.0
) -> np.ndarray:
    """Finish time of each transfer started at ``start_s`` on an otherwise idle line [s].

    Parameters
    ----------
    link : the link.
    payload_bytes : [bytes] one payload per transfer.
    start_s : [s] when each transfer starts (scalar or one per transfer).
    utilization : [-] the load each transfer's slow start sees from the others (it ends at the
        bandwidth-delay product of the rate left, as :func:`pddplan.timing.transfer_phases`
        and the fleet's simulation take it: ``1 - 1/N`` for ``N`` transfers started together).

    Returns
    -------
    numpy.ndarray
        [s] absolute time at which each transfer's last byte arrives.
    """
    x = np.atleast_1d(np.asarray(payload_bytes, dtype=float))
    n = len(x)
    t0 = np.broadcast_to(np.asarray(start_s, dtype=float), (n,))
    lead, line_bytes, cap, tail = (
        np.asarray(a, dtype=float) * np.ones(n)
        for a in timing.transfer_phases(link, x, utilization)
    )
    q = ev.EventQueue()
    line = PsLine(link.goodput_bytes_per_s, q, float(np.max(cap)) if n else float("inf"))
    done = np.full(n, np.nan)
    for r in range(n):
        q.push(float(t0[r] + lead[r]), ev.WAN_START, r)
    while len(q):
        e = q.pop()
        t, code, a = e[0], e[2], e[3]
        if code == ev.WAN_START:
            line.add(t, a, float(line_bytes[a]))
        elif code == ev.LINE_DONE:
            for r in line.done(t, a):
                q.push(t + float(tail[r]), ev.KV_AT_MD, r)
        elif code == ev.KV_AT_MD:
            done[a] = t
    return done
