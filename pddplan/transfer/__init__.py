"""One payload on one link: mean and percentiles of its transfer time (``pddplan transfer``).

The times come from :func:`pddplan.timing.transfer_s`, the closed form the solver, the bathtub
and the simulator use: lead (set-up, per-transfer latency, slow-start rounds), the line bytes
at ``min(r_cap, C / N)`` with ``N`` transfers sharing the line, and the tail. The link's jitter
is a mean-one lognormal factor on the payload (:func:`pddplan.timing.jitter_quantile`); the
time grows with the payload, so the ``p``-quantile of the time is the time of the payload's
``p``-quantile, and the mean is taken over the equal-probability payloads of
:func:`pddplan.timing.jitter_mean_factors`.

Nothing here prints; :mod:`pddplan.cli.transfer_cmd` renders.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from pddplan import timing
from pddplan.deployment import LinkNumbers
from pddplan.errors import OptionError, UsageError
from pddplan.models import network

#: Decimal size units (1 KB = 1000 B, as in the brief's "4649 KB") and binary ones spelled
#: with an ``i`` (1 KiB = 1024 B).
SIZE_UNITS_BYTES = {
    "B": 1.0,
    "KB": 1e3,
    "MB": 1e6,
    "GB": 1e9,
    "TB": 1e12,
    "KIB": 2.0**10,
    "MIB": 2.0**20,
    "GIB": 2.0**30,
    "TIB": 2.0**40,
}
#: Payloads of the table printed without ``--bytes`` [bytes]: 1 MB to 10 GB, three a decade.
DEFAULT_SIZES_BYTES = (1e6, 3e6, 1e7, 3e7, 1e8, 3e8, 1e9, 3e9, 1e10)
#: Percentiles reported [-].
PERCENTILES = (0.5, 0.9, 0.99)

_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


def parse_size_bytes(text: str) -> float:
    """A size such as ``4649KB``, ``3 GB``, ``1.5e9`` or ``64MiB`` in bytes [bytes].

    Decimal units B, KB, MB, GB, TB (powers of 1000); binary KiB, MiB, GiB, TiB (powers of
    1024); a bare number is bytes. Case is ignored. Raises :class:`OptionError`
    (``payload_bytes``) otherwise.
    """
    m = _SIZE.match(text)
    unit = m.group(2).upper() if m else ""
    if m is None or unit not in ({""} | set(SIZE_UNITS_BYTES)):
        raise OptionError(
            "payload_bytes",
            f": {text!r} is not a size (a number with B, KB, MB, GB, TB (decimal) or "
            "KiB, MiB, GiB, TiB (binary), e.g. 4649KB)",
        )
    # its range (0, 1e400 = inf, 0.5) is the options model's, one message for every size
    return float(m.group(1)) * SIZE_UNITS_BYTES.get(unit, 1.0)


@dataclass(frozen=True)
class TransferPoint:
    """One payload's transfer on the link (all times in seconds).

    ``bound`` names what limits the rate of the line phase: ``line`` (the transfer can take
    the whole line), ``window`` (streams x max window / RTT), ``loss`` (streams x the Mathis
    ceiling) or ``shared line`` (``C / N`` with ``N`` concurrent transfers is lower still).
    """

    payload_bytes: float
    mean_s: float
    p50_s: float
    p90_s: float
    p99_s: float
    lead_s: float  # at the mean payload: set-up, per-transfer latency, slow-start rounds
    slow_start_rounds: float
    line_bytes: float  # at the mean payload
    line_s: float  # at the mean payload
    tail_s: float
    rate_bytes_per_s: float  # the rate of the line phase: min(r_cap, C / N)
    rate_cap_bytes_per_s: float
    bound: str
    line_only_s: float  # payload / C: the time if the transfer had the whole line at once


@dataclass(frozen=True)
class TransferResult:
    """Transfer times of payloads on one link with ``concurrent`` transfers sharing it."""

    link: str
    concurrent_transfers: int
    link_numbers: dict[str, Any]
    points: list[TransferPoint]
    notes: list[str] = field(default_factory=list)

    def rows(self) -> list[dict[str, Any]]:
        """Flat rows for tables and CSV (unit-suffixed keys)."""
        return [asdict(p) for p in self.points]

    def to_json(self) -> dict[str, Any]:
        """The JSON document (without ``schema_version``, which the renderer adds)."""
        doc: dict[str, Any] = {
            "link": self.link,
            "concurrent_transfers": self.concurrent_transfers,
        }
        if len(self.points) == 1:
            doc.update(asdict(self.points[0]))
        doc["transfers"] = self.rows()
        doc["link_parameters"] = self.link_numbers
        return doc


def _bound(link: LinkNumbers, concurrent: int) -> tuple[str, float]:
    c = link.goodput_bytes_per_s
    cap = link.rate_cap_bytes_per_s
    share = c / concurrent
    if share < cap:
        return "shared line", share
    if cap >= c:
        return "line", c
    window = float(network.window_bytes_per_s(link.max_window_bytes, link.rtt_s))
    loss = float(network.mathis_bytes_per_s(link.mss_bytes, link.rtt_s, link.loss_rate))
    return ("window" if window <= loss else "loss"), cap


def link_parameters(link: LinkNumbers) -> dict[str, Any]:
    """The link's numbers that set a transfer's time, SI and unit-suffixed."""
    out: dict[str, Any] = {
        "goodput_bytes_per_s": link.goodput_bytes_per_s,
        "rtt_s": link.rtt_s,
        "rate_cap_bytes_per_s": link.rate_cap_bytes_per_s,
        "handshake_rtts": link.handshake_rtts,
        "per_transfer_latency_s": link.per_transfer_latency_s,
        "jitter_cv": link.jitter_cv,
        "tcp": link.tcp,
    }
    if link.tcp:
        out.update(
            initial_window_bytes=link.initial_window_bytes,
            max_window_bytes=link.max_window_bytes,
            mss_bytes=link.mss_bytes,
            loss_rate=link.loss_rate,
            streams_per_transfer=link.streams_per_transfer,
            connection_reuse=link.connection_reuse,
            slow_start_after_idle=link.slow_start_after_idle,
        )
    return out


def _percentiles_s(at_quantiles: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The percentiles of each payload's time [s]: ``t(x q_J(p))`` where the time grows with
    the payload over the jitter's range (then the time's quantile is the time at the payload's
    quantile), else the quantiles of the time itself over the ``M`` equal-probability points.

    ``at_quantiles`` is ``t(x q_J(p))`` (payloads x percentiles), ``grid`` the time at the
    ``M`` points of the jitter factor in increasing order (payloads x M). With several
    transfers sharing the line the time can dip where a larger payload spends less of itself
    in slow start; the time at a higher payload quantile is then not a higher time quantile.
    """
    out = np.array(at_quantiles, dtype=float)
    dips = np.any(np.diff(grid, axis=1) < 0, axis=1)
    if np.any(dips):
        m = grid.shape[1]
        idx = np.minimum(np.ceil(np.array(PERCENTILES) * m).astype(int) - 1, m - 1)
        out[dips] = np.sort(grid[dips], axis=1)[:, idx]
    return out


def transfer_times(
    link: LinkNumbers, payload_bytes: list[float] | tuple[float, ...], concurrent: int = 1
) -> TransferResult:
    """Mean, p50, p90 and p99 time of each payload on ``link`` [s].

    Parameters
    ----------
    link : the link.
    payload_bytes : [bytes] payloads, each > 0.
    concurrent : [-] transfers sharing the line at once (this one included), >= 1.

    Notes
    -----
    ``N`` transfers on a processor-shared line each get ``min(r_cap, C / N)``;
    :func:`pddplan.models.network.shared_line_time_s` gives that with ``rho = 1 - 1/N``.
    Percentiles: ``t_p = t(x q_J(p))`` with ``q_J`` the jitter factor's quantile; mean:
    ``E[t] = mean_i t(x q_J((i + 1/2) / M))`` over ``M`` =
    :data:`pddplan.timing.JITTER_MEAN_POINTS` points.
    """
    if concurrent < 1:
        raise UsageError(f"concurrent transfers must be at least 1, not {concurrent}")
    x = np.asarray(payload_bytes, dtype=float)
    if x.ndim != 1 or len(x) == 0 or np.any(~(x > 0)) or np.any(~np.isfinite(x)):
        raise UsageError("payload sizes must be positive, finite numbers of bytes")
    rho = 1.0 - 1.0 / concurrent
    f = timing.jitter_mean_factors(link)  # the discretized factor, its mean exactly 1
    grid = np.asarray(timing.transfer_s(link, x[:, None] * f[None, :], rho), dtype=float)
    mean = np.mean(grid, axis=1)
    q = np.asarray(timing.jitter_quantile(link, np.array(PERCENTILES)), dtype=float)
    pct = _percentiles_s(timing.transfer_s(link, x[:, None] * q[None, :], rho), grid)
    lead, line_bytes, cap, tail = (
        np.asarray(a, dtype=float) for a in timing.transfer_phases(link, x, rho)
    )
    bound, rate = _bound(link, concurrent)
    # the rounds the lead holds: slow start up to the rate this transfer gets on the line
    rounds, _ = network.slow_start_rounds(
        x,
        link.initial_window_bytes if link.tcp else np.inf,
        network.rate_left_bytes_per_s(cap, link.goodput_bytes_per_s, rho),
        link.rtt_s,
    )
    c = link.goodput_bytes_per_s
    points = [
        TransferPoint(
            payload_bytes=float(x[i]),
            mean_s=float(mean[i]),
            p50_s=float(pct[i, 0]),
            p90_s=float(pct[i, 1]),
            p99_s=float(pct[i, 2]),
            lead_s=float(lead[i]),
            slow_start_rounds=float(rounds[i]),
            line_bytes=float(line_bytes[i]),
            line_s=float(network.shared_line_time_s(line_bytes[i], cap[i], c, rho)),
            tail_s=float(tail[i]),
            rate_bytes_per_s=rate,
            rate_cap_bytes_per_s=float(cap[i]),
            bound=bound,
            line_only_s=float(x[i] / c),
        )
        for i in range(len(x))
    ]
    notes = [
        f"{link.name}: goodput {c / 1e9:.4g} GB/s, RTT {link.rtt_s * 1e3:.4g} ms; one transfer "
        f"takes at most {link.rate_cap_bytes_per_s / 1e9:.4g} GB/s"
        + (
            f" ({link.streams_per_transfer} stream(s) of {link.max_window_bytes:,.0f} B window, "
            f"loss rate {link.loss_rate:g})"
            if link.tcp
            else ""
        )
        + f"; {concurrent} transfer(s) share the line.",
        "Sizes are decimal (1 KB = 1000 B). Lead, line and tail are at the mean payload; "
        f"percentiles and the mean include the link's payload jitter (CV {link.jitter_cv:g}).",
    ]
    return TransferResult(link.name, concurrent, link_parameters(link), points, notes)
