"""Network: KV transfer over the WAN line and over RDMA, and the token-ID hand-over payload.

Pure functions of numbers; they broadcast over numpy arrays.

References
----------
.. [1] Kleinrock, "Queueing Systems, Vol. 2", 1976: in an M/G/1 processor-sharing queue a job of
   size ``x`` has mean response time ``x / (C (1 - rho))``.
.. [2] PDD brief, section 4: dual-path KV transfer, token-ID hand-over (100 IDs ~ 1.5 KB vs
   4649 KB of incremental KV).
"""

from __future__ import annotations

import functools
from statistics import NormalDist

import numpy as np


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


def transfer_time_s(payload_bytes, goodput_bytes_per_s, rtt_s, setup_rtts, utilization=0.0):
    """Mean time to move a payload over a shared link [s].

    Parameters
    ----------
    payload_bytes : [bytes] data to send.
    goodput_bytes_per_s : [bytes/s] the link's goodput (line rate times protocol efficiency).
    rtt_s : [s] round-trip time.
    setup_rtts : [-] round trips before data flows (connection set-up, slow start).
    utilization : [-] the link's load from all flows, below 1.

    Notes
    -----
    ``t = (n_setup + 1/2) RTT + x / (C (1 - rho))``: the data term is the processor-sharing mean
    response time [1]_, the half RTT the one-way propagation of the last byte.
    """
    rho = np.asarray(utilization, dtype=float)
    slowdown = np.where(rho < 1.0, 1.0 / np.maximum(1.0 - rho, 1e-12), np.inf)
    return (setup_rtts + 0.5) * np.asarray(rtt_s, dtype=float) + np.asarray(
        payload_bytes, dtype=float
    ) / goodput_bytes_per_s * slowdown


def transfer_phases(
    payload_bytes, *, goodput_bytes_per_s, rtt_s, setup_rtts
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A transfer split into the phases a line model needs.

    Returns
    -------
    lead_s : [s] time before the payload competes for the line (connection set-up).
    line_bytes : [bytes] bytes that go through the shared line.
    rate_cap_bytes_per_s : [bytes/s] the most this one transfer can take of the line.
    tail_s : [s] time after the last byte leaves (one-way propagation).

    Notes
    -----
    ``lead = n_setup RTT``, ``tail = RTT / 2``, every byte through the line at up to ``C``.
    """
    x = np.asarray(payload_bytes, dtype=float)
    rtt = np.asarray(rtt_s, dtype=float)
    lead = np.broadcast_to(setup_rtts * rtt, x.shape).astype(float)
    cap = np.full_like(x, goodput_bytes_per_s, dtype=float)
    tail = np.broadcast_to(0.5 * rtt, x.shape).astype(float)
    return lead, x, cap, tail


def shared_line_time_s(line_bytes, rate_cap_bytes_per_s, goodput_bytes_per_s, utilization=0.0):
    """Mean time for ``line_bytes`` to cross a processor-shared line [s].

    Notes
    -----
    ``x / min(r_cap, C (1 - rho))``: the processor-sharing mean response time [1]_ with the
    transfer's own rate ceiling ``r_cap``; exact at ``r_cap = C`` and on an idle line.
    """
    rho = np.asarray(utilization, dtype=float)
    free = np.where(rho < 1.0, goodput_bytes_per_s * np.maximum(1.0 - rho, 0.0), 0.0)
    rate = np.minimum(np.asarray(rate_cap_bytes_per_s, dtype=float), free)
    x = np.asarray(line_bytes, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > 0, np.where(rate > 0, x / np.where(rate > 0, rate, 1.0), np.inf), 0.0)


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


@functools.lru_cache(maxsize=64)
def jitter_points(jitter_cv: float, points: int = 9) -> tuple[np.ndarray, np.ndarray]:
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
