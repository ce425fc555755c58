"""Network: KV transfer over the WAN line and over RDMA, and the token-ID hand-over payload.

Pure functions of numbers; they broadcast over numpy arrays.

A transfer is split into phases that the closed forms and the simulator share
(:func:`transfer_phases`): a *lead* (connection set-up on a cold connection, a fixed
per-transfer latency, and the window-limited round trips of TCP slow start), the *line bytes*
(the rest of the payload, which competes for the line at up to the transfer's own rate
ceiling: processor sharing with a per-flow cap) and a *tail* (one-way propagation of the last
byte). docs/links.md derives every term.

References
----------
.. [1] Kleinrock, "Queueing Systems, Vol. 2", 1976: in an M/G/1 processor-sharing queue a job of
   size ``x`` has mean response time ``x / (C (1 - rho))``.
.. [2] PDD brief, section 4: dual-path KV transfer, token-ID hand-over (100 IDs ~ 1.5 KB vs
   4649 KB of incremental KV).
.. [3] Mathis, Semke, Mahdavi and Ott, "The macroscopic behavior of the TCP congestion
   avoidance algorithm", ACM SIGCOMM CCR 27(3), 1997, eq. (3): ``BW = MSS / RTT * C / sqrt(p)``,
   ``C = sqrt(3/2)``.
.. [4] RFC 7323, "TCP Extensions for High Performance", 2014, section 1.1: a stream moves at
   most one window per round trip; window scaling allows windows up to 2^30 bytes.
.. [5] RFC 5681, "TCP Congestion Control", 2009, section 3.1: slow start grows the congestion
   window by up to one segment per ACK, doubling it each round trip. RFC 6928, "Increasing
   TCP's Initial Window", 2013: the initial window is 10 segments (IW10, Linux's default).
.. [6] Cardwell, Savage and Anderson, "Modeling TCP latency", IEEE INFOCOM 2000, section 2:
   a transfer's latency as connection set-up, slow-start rounds and the steady-state rest.
.. [7] RFC 9293, "Transmission Control Protocol", 2022, section 3.5: the three-way handshake
   takes one round trip before the first data byte.
.. [8] RFC 2861, "TCP Congestion Window Validation", 2000, and Linux
   ``net.ipv4.tcp_slow_start_after_idle`` (Documentation/networking/ip-sysctl.rst, default 1):
   a connection idle for longer than its retransmission timeout restarts from the initial
   window, so a pooled connection between bursts slow-starts again unless that is turned off.
.. [9] Allcock et al., "The Globus striped GridFTP framework and server", SC 2005: striping a
   transfer over parallel TCP streams multiplies the per-stream ceiling.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

import numpy as np

#: Mathis et al.'s constant ``C = sqrt(3/2)`` for periodic loss without delayed ACKs [3]_.
MATHIS_CONSTANT = float(np.sqrt(1.5))
#: Slack in the round counts' ``ceil(log2(.))`` so that exact powers of two are not pushed into
#: the next round by floating-point rounding [-].
ROUND_TOLERANCE = 1e-9


def uncached_kv_bytes(input_tokens, hit_rate, kv_bytes_per_token):
    """KV bytes that must cross to the decode side: only the uncached part [bytes].

    Notes
    -----
    The decode side keeps its own prefix cache (decode-side radix cache), so a hit need not be
    resent: ``bytes = L (1 - h) k``.
    """
    return (
        np.asarray(input_tokens, dtype=float)
        * (1.0 - np.asarray(hit_rate, dtype=float))
        * kv_bytes_per_token
    )


def link_goodput_bytes_per_s(bandwidth_bytes_per_s, efficiency):
    """Bytes per second a link delivers after protocol overhead [bytes/s]."""
    return np.asarray(bandwidth_bytes_per_s, dtype=float) * efficiency


def mathis_bytes_per_s(mss_bytes, rtt_s, loss_rate):
    """Loss-limited throughput of one TCP stream (Mathis et al. 1997) [bytes/s].

    Parameters
    ----------
    mss_bytes : [bytes] maximum segment size (payload bytes per segment).
    rtt_s : [s] round-trip time, > 0.
    loss_rate : [-] probability that a segment is lost, >= 0 (0: no loss ceiling, ``inf``).

    Notes
    -----
    ``r = MSS / RTT * C / sqrt(p)`` with ``C = sqrt(3/2)`` (periodic loss, delayed ACKs off) [3]_.
    The model is Reno's congestion avoidance; CUBIC (Linux's default) is at least as fast at a
    large bandwidth-delay product, so this is a lower bound there.
    """
    p = np.asarray(loss_rate, dtype=float)
    rtt = np.asarray(rtt_s, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r = np.asarray(mss_bytes, dtype=float) / rtt * MATHIS_CONSTANT / np.sqrt(p)
    return np.where((p > 0) & (rtt > 0), r, np.inf)


def window_bytes_per_s(max_window_bytes, rtt_s):
    """Window-limited throughput of one stream: ``W_max / RTT`` [bytes/s] (``inf`` at RTT 0)."""
    rtt = np.asarray(rtt_s, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r = np.asarray(max_window_bytes, dtype=float) / rtt
    return np.where(rtt > 0, r, np.inf)


def stream_ceiling_bytes_per_s(rtt_s, max_window_bytes, mss_bytes, loss_rate):
    """Steady-state throughput ceiling of one TCP stream [bytes/s].

    Notes
    -----
    ``r_stream = min(W_max / RTT, MSS / RTT * sqrt(3/2) / sqrt(p))``: a stream never has more
    than its window in flight per round trip [4]_, and loss caps its average window [3]_.
    """
    return np.minimum(
        window_bytes_per_s(max_window_bytes, rtt_s), mathis_bytes_per_s(mss_bytes, rtt_s, loss_rate)
    )


def transfer_rate_cap_bytes_per_s(
    goodput_bytes_per_s, rtt_s, max_window_bytes, mss_bytes, loss_rate, streams
):
    """The most one transfer can take of an idle line [bytes/s].

    Notes
    -----
    ``r_cap = min(n_streams * r_stream, C)``: a transfer striped over ``n_streams`` TCP
    connections (as parallel-stream tools such as GridFTP do [5]_) gets each stream's
    ceiling, up to the line's goodput ``C``.
    """
    per_stream = stream_ceiling_bytes_per_s(rtt_s, max_window_bytes, mss_bytes, loss_rate)
    with np.errstate(over="ignore"):  # streams x a near-unbounded ceiling: inf, then C
        return np.minimum(np.asarray(streams, dtype=float) * per_stream, goodput_bytes_per_s)


def rate_left_bytes_per_s(rate_cap_bytes_per_s, goodput_bytes_per_s, utilization=0.0):
    """[bytes/s] The rate a transfer can get on a line whose other transfers take
    ``utilization`` of its goodput: ``min(r_cap, C (1 - rho))`` (0 on a full line), where its
    slow start ends (:func:`transfer_phases`)."""
    rho = np.asarray(utilization, dtype=float)
    left = np.asarray(goodput_bytes_per_s, dtype=float) * np.clip(1.0 - rho, 0.0, 1.0)
    return np.minimum(np.asarray(rate_cap_bytes_per_s, dtype=float), left)


def slow_start_rounds(payload_bytes, initial_window_bytes, rate_cap_bytes_per_s, rtt_s):
    """Window-limited round trips a transfer waits in slow start, and the bytes sent in them.

    Parameters
    ----------
    payload_bytes : [bytes] the transfer's payload (all streams together).
    initial_window_bytes : [bytes] the initial window of all streams together,
        ``n_streams * IW * MSS``; ``inf`` for a transfer that starts at its ceiling.
    rate_cap_bytes_per_s : [bytes/s] the transfer's rate ceiling ``r_cap``.
    rtt_s : [s] round-trip time.

    Returns
    -------
    rounds : [-] whole round trips spent before the rest of the payload flows at ``r_cap``.
    bytes : [bytes] payload sent in those rounds.

    Notes
    -----
    Slow start doubles the window every round trip from ``W_0`` [1]_ [2]_: round ``k`` sends
    ``W_0 2^k`` bytes and lasts one RTT while its window is below the bandwidth-delay product
    ``r_cap RTT``. That holds for ``K = max(0, ceil(log2(r_cap RTT / W_0)))`` rounds. A payload
    that ends in slow start ends in round ``m = ceil(log2(x / W_0 + 1)) - 1`` (0-based), so the
    transfer waits ``n = min(m, K)`` full rounds, having sent ``W_0 (2^n - 1)`` bytes, and the
    rest (the last partial window, or everything after slow start) flows at ``r_cap`` [6]_.
    """
    x = np.asarray(payload_bytes, dtype=float)
    w0 = np.asarray(initial_window_bytes, dtype=float)
    bdp = np.asarray(rate_cap_bytes_per_s, dtype=float) * np.asarray(rtt_s, dtype=float)
    finite = np.isfinite(w0) & (w0 > 0) & (bdp > 0)
    w = np.where(finite, w0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        k_max = np.ceil(np.log2(np.where(finite, bdp, 1.0) / w) - ROUND_TOLERANCE)
        m = np.ceil(np.log2(np.maximum(x, 0.0) / w + 1.0) - ROUND_TOLERANCE) - 1.0
    rounds = np.where(finite, np.maximum(np.minimum(m, k_max), 0.0), 0.0)  # np.clip(., 0, None)
    sent = np.where(finite, w * (np.exp2(rounds) - 1.0), 0.0)
    return rounds, sent


def transfer_phases(
    payload_bytes,
    *,
    goodput_bytes_per_s,
    rtt_s,
    handshake_rtts=0.0,
    latency_s=0.0,
    initial_window_bytes=np.inf,
    max_window_bytes=np.inf,
    mss_bytes=1448.0,
    loss_rate=0.0,
    streams=1,
    utilization=0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A transfer split into the phases a line model needs.

    Parameters
    ----------
    payload_bytes : [bytes] data to send.
    goodput_bytes_per_s : [bytes/s] the line's goodput ``C`` (line rate times protocol
        efficiency).
    rtt_s : [s] round-trip time.
    handshake_rtts : [-] round trips of connection set-up paid by this transfer (0 on a warm,
        pooled connection; 1 for TCP's three-way handshake [7]_).
    latency_s : [s] fixed per-transfer latency (posting and completing the transfer).
    initial_window_bytes : [bytes] initial window of all streams together; ``inf`` when the
        transfer does not slow-start (RDMA, or a warm connection that keeps its window).
    max_window_bytes : [bytes] largest window of one stream (socket buffer ceiling).
    mss_bytes : [bytes] maximum segment size.
    loss_rate : [-] segment loss probability.
    streams : [-] TCP streams the transfer is striped over.
    utilization : [-] share ``rho`` of the line's goodput the other transfers take: slow start
        ends at the bandwidth-delay product of what is left to this one.

    Returns
    -------
    lead_s : [s] time before the rest of the payload competes for the line: set-up, latency
        and the window-limited slow-start rounds.
    line_bytes : [bytes] bytes that go through the shared line at up to the rate cap.
    rate_cap_bytes_per_s : [bytes/s] the most this one transfer can take of the line.
    tail_s : [s] time after the last byte leaves (one-way propagation).

    Notes
    -----
    With ``r_cap`` from :func:`transfer_rate_cap_bytes_per_s` and ``(n, B_ss)`` from
    :func:`slow_start_rounds` [6]_::

        lead = n_hs RTT + t_fixed + n RTT
        line_bytes = x - B_ss
        tail = RTT / 2

    Slow-start rounds are window-limited: their bytes leave in bursts far shorter than the
    round trip, so they are kept off the shared line. The window grows until it fills the
    bandwidth-delay product of the rate the transfer can get, ``min(r_cap, C (1 - rho))`` (on
    a loaded line the queue builds and slow start ends there, not at ``r_cap RTT``); the rest
    shares the line. Without that, a transfer among ``N`` on the line sent its first
    ``r_cap RTT`` bytes off it: 1,000 transfers of 29 MB on a 10 Gbit/s line took 8.1 s, below
    the 24.7 s the line needs to carry them. On an idle line the time is
    ``lead + line_bytes / r_cap + tail``.
    """
    x = np.asarray(payload_bytes, dtype=float)
    rtt = np.asarray(rtt_s, dtype=float)
    cap = transfer_rate_cap_bytes_per_s(
        goodput_bytes_per_s, rtt, max_window_bytes, mss_bytes, loss_rate, streams
    )
    gets = rate_left_bytes_per_s(cap, goodput_bytes_per_s, utilization)
    rounds, sent = slow_start_rounds(x, initial_window_bytes, gets, rtt)
    lead = (np.asarray(handshake_rtts, dtype=float) + rounds) * rtt + latency_s
    shape = np.broadcast(x, lead, cap).shape
    return (
        _filled(lead, shape),
        _filled(np.maximum(x - sent, 0.0), shape),
        _filled(cap, shape),
        _filled(0.5 * rtt, shape),
    )


def _filled(values, shape: tuple[int, ...]) -> np.ndarray:
    """A new float array of ``shape`` holding ``values`` broadcast to it (what
    ``np.broadcast_to(values, shape).astype(float)`` gives, without its Python-level cost)."""
    out = np.empty(shape)
    out[...] = values
    return out


def transfer_time_s(payload_bytes, goodput_bytes_per_s, utilization=0.0, **params):
    """Mean time to move a payload over a processor-shared line [s].

    ``params`` are the keyword arguments of :func:`transfer_phases` other than the goodput.

    Notes
    -----
    ``t = lead + line_bytes / min(r_cap, C (1 - rho)) + tail`` (:func:`transfer_phases`,
    :func:`shared_line_time_s`).
    """
    phases = transfer_phases(
        payload_bytes, goodput_bytes_per_s=goodput_bytes_per_s, utilization=utilization, **params
    )
    return phases_time_s(phases, goodput_bytes_per_s, utilization)


def phases_time_s(phases, goodput_bytes_per_s, utilization=0.0):
    """Mean time of a transfer from its :func:`transfer_phases` ``(lead_s, line_bytes,
    rate_cap_bytes_per_s, tail_s)`` on a line of ``goodput_bytes_per_s`` carrying
    ``utilization`` of it besides the transfer [s]: ``lead + line_bytes / min(r_cap, C (1 -
    rho)) + tail`` (:func:`shared_line_time_s`). The one home of that sum: :func:`transfer_time_s`
    and the timeline's :func:`pddplan.timing.transfer_s` (phases memoized) both call it."""
    lead, line_bytes, cap, tail = phases
    return lead + shared_line_time_s(line_bytes, cap, goodput_bytes_per_s, utilization) + tail


def shared_line_time_s(line_bytes, rate_cap_bytes_per_s, goodput_bytes_per_s, utilization=0.0):
    """Mean time for ``line_bytes`` to cross a processor-shared line [s].

    Notes
    -----
    ``x / min(r_cap, C (1 - rho))``: the processor-sharing mean response time [1]_ with the
    transfer's own rate ceiling ``r_cap``; exact at ``r_cap = C`` and on an idle line.
    """
    if isinstance(utilization, float | int) and isinstance(goodput_bytes_per_s, float | int):
        rho = float(utilization)  # a search's one load: the same operations on floats
        free = goodput_bytes_per_s * max(1.0 - rho, 0.0) if rho < 1.0 else 0.0
    else:
        rho = np.asarray(utilization, dtype=float)
        free = np.where(rho < 1.0, goodput_bytes_per_s * np.maximum(1.0 - rho, 0.0), 0.0)
    rate = np.minimum(np.asarray(rate_cap_bytes_per_s, dtype=float), free)
    x = np.asarray(line_bytes, dtype=float)
    if rate.size and 0.0 < rate.min() and rate.max() < math.inf:
        # every rate positive and finite (a search's loads): the division alone, the same
        # quotients without the masked form's setup (a fifth of a fleet check's line time)
        out = np.asarray(x / rate)
    else:
        out = np.full(np.broadcast(x, rate).shape, np.inf)  # no rate: never ends
        with np.errstate(divide="ignore", invalid="ignore"):  # inf bytes at an inf rate: NaN
            np.divide(x, rate, out=out, where=rate > 0)
    np.copyto(out, 0.0, where=~(x > 0))  # nothing to send: no time
    return out


def link_utilization(rate_per_s, mean_payload_bytes, goodput_bytes_per_s):
    """Offered load of a link [-]: ``lambda E[x] / C``."""
    return np.asarray(rate_per_s, dtype=float) * mean_payload_bytes / goodput_bytes_per_s


def jitter_quantile(probability, jitter_cv):
    """Quantile of a mean-one lognormal jitter factor with coefficient of variation ``cv`` [-].

    Notes
    -----
    ``sigma^2 = ln(1 + cv^2)``, ``mu = -sigma^2 / 2``; ``q(p) = exp(mu + sigma Phi^-1(p))``.
    """
    sigma2 = np.log1p(np.asarray(jitter_cv, dtype=float) ** 2)
    sigma = np.sqrt(sigma2)
    z = normal_ppf(np.asarray(probability, dtype=float))
    return np.exp(-sigma2 / 2.0 + sigma * z)


_STD_NORMAL = NormalDist()  # standard normal, for quantiles without importing scipy
normal_ppf = np.vectorize(_STD_NORMAL.inv_cdf, otypes=[float])
normal_cdf = np.vectorize(_STD_NORMAL.cdf, otypes=[float])


#: Equal-probability points a payload's jitter factor is discretized into [-].
JITTER_POINTS = 9


@functools.lru_cache(maxsize=64)
def jitter_points(jitter_cv: float, points: int = JITTER_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Equal-probability discretization of the jitter factor: (factors, weights).

    The arrays are cached and shared: callers must not modify them.
    """
    if jitter_cv <= 0:
        return np.ones(1), np.ones(1)
    p = (np.arange(points) + 0.5) / points
    return jitter_quantile(p, jitter_cv), np.full(points, 1.0 / points)


def handover_payload_bytes(tokens, bytes_per_token_id, header_bytes=0.0):
    """Bytes of a token-ID hand-over from RLD to MD [bytes]: ``header + k * b_id``."""
    return header_bytes + np.asarray(tokens, dtype=float) * bytes_per_token_id
