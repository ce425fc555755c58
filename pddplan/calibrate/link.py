"""Fit a link's transfer parameters to measured transfer latencies (``pddplan calibrate --link``).

Rows are ``payload_bytes, latency_s`` with optional ``concurrent_transfers``, ``statistic``,
``samples`` and ``source`` (see :func:`parse_link_measurements`). Each row is predicted with
the closed form every other command uses (:func:`pddplan.timing.transfer_s`, with the link's
payload jitter for percentile rows), so the fit calibrates exactly the model ``solve`` and
``simulate`` use. :func:`fit_link`

1. computes the scaled sensitivities ``S[i, j] = d ln t_i / d ln theta_j`` at the profile's
   values and keeps the parameters that a column-pivoted QR of ``S`` ranks as independent
   (``|R_kk| >= IDENTIFY_TOL |R_00|``) and that move the latencies at all; the others keep
   the profile's values and are reported as not identified;
2. fits the identified ones with :func:`scipy.optimize.least_squares` on log-latency residuals;
3. gives approximate standard errors ``s^2 (J^T J)^-1`` when there are more rows than
   fitted parameters.

The least-squares machinery is :mod:`pddplan.calibrate.fit`'s and the QR selection
:func:`pddplan.calibrate.identify.pivoted_qr_selection`'s; this module holds the CSV format,
the model and its parameters.

References
----------
.. [1] Golub and Van Loan, "Matrix Computations", 4th ed., 2013, section 5.4.2: QR with column
   pivoting reveals the numerical rank and orders the columns by independence.
.. [2] Brun, Reichert and Kuensch, "Practical identifiability analysis of large environmental
   simulation models", Water Resources Research 37(4), 2001: scaled sensitivities.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pddplan import timing
from pddplan.calibrate.cells import (
    MIN_LATENCY_S,
    Where,
    at_least,
    at_most,
    cells,
    is_blank,
    parse_number,
    read_text,
    require,
    unknown_column,
)
from pddplan.calibrate.fit import (
    ErrorSummary,
    Fit,
    Parameter,
    ParameterFit,
    Values,
    sensitivities,
    significant,
    solve,
    status_of,
    unfitted,
    x_bounds,
)
from pddplan.calibrate.identify import pivoted_qr_selection
from pddplan.deployment import LinkNumbers
from pddplan.errors import OptionError, ProfileError

if TYPE_CHECKING:
    from pddplan.spec import Link

REQUIRED = ("payload_bytes", "latency_s")
OPTIONAL = ("concurrent_transfers", "statistic", "samples", "source")
#: Row statistics: ``sample`` (one measured transfer) and ``mean`` are fitted to the model's
#: mean; ``p50``/``p90``/``p99`` to its percentile; ``max`` of ``samples`` transfers to the
#: percentile ``n / (n + 1)`` (the expected rank of the largest of ``n`` draws).
STATISTICS = ("sample", "mean", "p50", "p90", "p99", "max")
_QUANTILE = {"p50": 0.5, "p90": 0.9, "p99": 0.99}
#: A parameter is identified when its pivot is at least this share of the largest one [1]_.
IDENTIFY_TOL = 1e-3
#: ... and when a 100% change moves the log latencies by at least this (root mean square).
SENSITIVITY_MIN = 1e-3
#: Relative step of the finite-difference sensitivities.
STEP = 1e-4
#: Starting points of the fit: the profile's values times each factor (the lowest cost wins).
START_FACTORS = (1.0, 0.5, 2.0, 0.25, 4.0)
#: Parameters that set the per-transfer ceiling ``streams x window / RTT`` (window) or the loss
#: ceiling: rows of one payload size cannot tell them from the round trips and the latency
#: (every term scales one time), so they need transfers of several sizes.
CEILING_PARAMETERS = ("max_window_bytes", "loss_rate")


#: The fittable keys of :class:`pddplan.spec.Link`, with the ranges the profile schema allows.
#: A time's sensitivity is scaled by at least 1 ms, any other key's by its value.
LINK_PARAMETERS = (
    Parameter("rtt_ms", "ms", 1e-4, 1e4, log=True, scale_floor=1.0),
    Parameter("per_transfer_latency_ms", "ms", 0.0, 1e4, log=False, scale_floor=1.0),
    Parameter("max_window_bytes", "bytes", 1e3, 2.0**30, log=True, scale_floor=1e-12),
    Parameter("loss_rate", "-", 1e-12, 0.49, log=True, scale_floor=1e-12),
    Parameter("efficiency", "-", 0.01, 1.0, log=False, scale_floor=1e-12),
    Parameter("jitter_cv", "-", 1e-3, 5.0, log=True, scale_floor=1e-12),
)
LINK_PARAMETER_NAMES = tuple(p.name for p in LINK_PARAMETERS)
_BY_NAME = {p.name: p for p in LINK_PARAMETERS}


@dataclass(frozen=True)
class LinkMeasurements:
    """Validated rows: payloads [bytes], latencies [s], concurrency, statistic, samples."""

    payload_bytes: np.ndarray
    latency_s: np.ndarray
    concurrent: np.ndarray
    statistic: tuple[str, ...]
    quantile: np.ndarray  # NaN for mean rows
    source: tuple[str, ...]
    line: tuple[int, ...]
    file: str
    skipped: tuple[str, ...]  # warnings for rows left out

    def __len__(self) -> int:
        return len(self.latency_s)


def is_link_csv(text: str) -> bool:
    """Whether a CSV's header names the link columns (``payload_bytes``)."""
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    return "payload_bytes" in [c.strip() for c in first.split(",")]


#: Largest value accepted per column (a petabyte, a day, a million transfers, a billion samples).
COLUMN_MAX = {
    "payload_bytes": 1e15,
    "latency_s": 86_400.0,
    "concurrent_transfers": 1e6,
    "samples": 1e9,
}


def _num(text: str, col: str, at: Where) -> float:
    """A numeric cell, > 0 and within :data:`COLUMN_MAX`."""
    v = parse_number(text, col, at)
    require(math.isfinite(v) and v > 0, text, col, at, "must be a number > 0")
    at_most(v, text, col, at, COLUMN_MAX)
    at_least(v, text, col, at, {"latency_s": MIN_LATENCY_S})
    return v


_Row = tuple[float, float, float, str, float, str, int]


def _parse_row(cell: Mapping[str, str], at: Where, skipped: list[str]) -> _Row | None:
    """Validate one data row (cells by column name, stripped); None for a row left out (its
    warning goes to ``skipped``)."""
    x = _num(cell["payload_bytes"], "payload_bytes", at)
    t = _num(cell["latency_s"], "latency_s", at)
    n = cell.get("concurrent_transfers", "") or "1"
    conc = _num(n, "concurrent_transfers", at)
    require(
        conc >= 1 and conc == int(conc),
        n,
        "concurrent_transfers",
        at,
        "must be a whole number >= 1",
    )
    stat = (cell.get("statistic", "") or "sample").lower()
    if stat not in STATISTICS:
        raise at.error(
            f"unknown statistic {stat!r} (allowed: {', '.join(STATISTICS)})", "statistic"
        )
    q = _QUANTILE.get(stat, math.nan)
    if cell.get("samples", ""):
        _num(cell["samples"], "samples", at)
    if stat == "max":
        if not cell.get("samples", ""):
            skipped.append(
                f"a max row without 'samples' is left out ({at.file}:{at.line}; the maximum of "
                "an unknown number of transfers has no percentile)"
            )
            return None
        k = _num(cell["samples"], "samples", at)
        q = k / (k + 1.0)
    assert at.line is not None
    return (x, t, conc, stat, q, cell.get("source", ""), at.line)


def _records(text: str, file: str) -> list[tuple[int, list[str]]]:
    """The records that are not blank, each with its number (1-based, blank ones counted);
    malformed CSV becomes a ProfileError."""
    try:
        recs = list(csv.reader(io.StringIO(text), strict=True))
    except csv.Error as exc:
        raise ProfileError(f"malformed CSV: {exc}", file=file) from None
    return [(i + 1, r) for i, r in enumerate(recs) if not is_blank(r)]


def parse_link_measurements(text: str, file: str) -> LinkMeasurements:
    """Parse and validate a link measurements CSV.

    Columns: ``payload_bytes`` (> 0, bytes), ``latency_s`` (> 0, seconds: from the first byte
    handed to the transport to the last byte at the receiver), and optionally
    ``concurrent_transfers`` (>= 1, the transfers sharing the line while this one ran;
    default 1), ``statistic`` (one of :data:`STATISTICS`; default ``sample``), ``samples``
    (transfers summarised by a ``max`` row; a ``max`` row without it is left out with a
    warning, since the maximum of an unknown number of draws has no percentile) and
    ``source``. Every error names the file, the line and the column.
    """
    rows = _records(text, file)
    if not rows:
        raise ProfileError("empty file: expected a header and at least one row", file=file)
    header = [c.strip() for c in rows[0][1]]
    header_at = Where(file, rows[0][0])
    for c in header:
        unknown_column(c, REQUIRED + OPTIONAL, header_at, suggest=False)
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise header_at.error(f"missing column(s) {', '.join(missing)}")
    out: list[_Row] = []
    skipped: list[str] = []
    for line, raw in rows[1:]:
        at = Where(file, line)
        row = _parse_row(cells(raw, header, at), at, skipped)
        if row is not None:
            out.append(row)
    if not out:
        raise ProfileError(
            "no usable measurements" + (f": {skipped[0]}" if skipped else ""), file=file
        )
    cols = list(zip(*out, strict=True))
    return LinkMeasurements(
        payload_bytes=np.array(cols[0], dtype=float),
        latency_s=np.array(cols[1], dtype=float),
        concurrent=np.array(cols[2], dtype=float),
        statistic=tuple(str(s) for s in cols[3]),
        quantile=np.array(cols[4], dtype=float),
        source=tuple(str(s) for s in cols[5]),
        line=tuple(int(v) for v in cols[6]),
        file=file,
        skipped=tuple(skipped),
    )


def read_link_measurements(path: Path) -> LinkMeasurements:
    """Read and validate a link measurements CSV file."""
    text = read_text(path, undecodable="not UTF-8 text (byte at offset {offset})")
    return parse_link_measurements(text, str(path))


def with_values(link: Link, values: Values) -> Link:
    """A copy of the link spec with some keys replaced."""
    return link.model_copy(update={k: float(v) for k, v in values.items()})


def predict_s(link: Link, data: LinkMeasurements) -> np.ndarray:
    """The model's latency of every row [s]: mean, percentile or expected maximum."""
    ln = LinkNumbers.of(link)
    rho = 1.0 - 1.0 / data.concurrent
    out = np.empty(len(data))
    mean_rows = np.isnan(data.quantile)
    if mean_rows.any():
        f = timing.jitter_mean_factors(ln)
        t = timing.transfer_s(
            ln, data.payload_bytes[mean_rows, None] * f[None, :], rho[mean_rows, None]
        )
        out[mean_rows] = np.mean(t, axis=1)
    q = ~mean_rows
    if q.any():
        f = np.asarray(timing.jitter_quantile(ln, data.quantile[q]), dtype=float)
        out[q] = timing.transfer_s(ln, data.payload_bytes[q] * f, rho[q])
    return out


@dataclass(frozen=True)
class LinkParameterFit(ParameterFit):
    """The outcome for one link parameter; ``default`` is the link profile's value."""

    @property
    def profile(self) -> float:
        """[unit] the link profile's value, the one the fit started from."""
        return self.default


@dataclass(frozen=True)
class LinkFit(Fit):
    """Fitted link parameters: the :class:`Fit` (its parameters are :class:`LinkParameterFit`),
    the rows' latencies at the profile's values and the fitted link.

    Attributes
    ----------
    profile_s : [s] each row's prediction at the link profile's values.
    link : the link spec with the fitted values.
    """

    profile_s: np.ndarray
    link: Link

    @property
    def not_identified(self) -> list[str]:
        return [p.name for p in self.parameters if p.status.startswith("not identified")]

    @property
    def transfer_window_bytes(self) -> float:
        """[bytes] the fitted link's window of one transfer: ``streams x max_window_bytes``
        (the streams are held: only this product sets the per-transfer ceiling)."""
        return float(self.link.streams_per_transfer * self.link.max_window_bytes)

    @property
    def rate_cap_bytes_per_s(self) -> float:
        """[bytes/s] the fitted link's per-transfer ceiling ``min(streams x r_stream, C)``."""
        return LinkNumbers.of(self.link).rate_cap_bytes_per_s


def one_size_reason(data: LinkMeasurements) -> str | None:
    """Why the ceiling parameters are not identified when every row has one payload size
    (None when the rows have several sizes)."""
    sizes = np.unique(data.payload_bytes)
    if len(sizes) > 1:
        return None
    return (
        f"not identified: every row has one payload size ({sizes[0]:,.0f} B), which cannot "
        "tell the per-transfer ceiling (streams x window / RTT) from the round trips and the "
        "latency; measure transfers of several sizes (10 KB to a few GB)"
    )


def _candidates(
    link: Link, data: LinkMeasurements, fixed: set[str], only: set[str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """The parameters the fit may move, and why the others cannot be identified by design
    (``only``: the parameters asked for; the others are held)."""
    reasons: dict[str, str] = {}
    cands = [n for n in LINK_PARAMETER_NAMES if n not in fixed and (only is None or n in only)]
    one_size = one_size_reason(data)
    if one_size is not None and link.type == "wan":
        for n in CEILING_PARAMETERS:
            if n in cands:
                cands.remove(n)
                reasons[n] = one_size
    if link.type == "rdma":
        for n in ("max_window_bytes", "loss_rate"):
            if n in cands:
                cands.remove(n)
                reasons[n] = "not identified: an RDMA link has no TCP window or loss ceiling"
    elif link.loss_rate == 0 and "loss_rate" in cands:
        cands.remove("loss_rate")
        reasons["loss_rate"] = (
            "not identified: the profile's loss rate is 0 (no loss ceiling to scale)"
        )
    if np.all(np.isnan(data.quantile)) and "jitter_cv" in cands:
        cands.remove("jitter_cv")
        reasons["jitter_cv"] = "not identified: only mean rows (needs percentile or max rows)"
    if link.jitter_cv == 0 and "jitter_cv" in cands:
        cands.remove("jitter_cv")
        reasons["jitter_cv"] = "not identified: the profile's jitter_cv is 0"
    return cands, reasons


def _starts(params: list[Parameter], point: Values) -> list[np.ndarray]:
    """Starting points: the profile's values times each of :data:`START_FACTORS`, clipped
    to the bounds (the slow-start round counts make the cost piecewise).

    When a linear parameter is at 0, every coordinate that is exactly 0 at a factor other
    than 1 starts at the factor instead: that parameter's, and a log parameter's whose value
    times the factor is 1.
    """
    lo, hi = x_bounds(params)
    some_zero = any(point[p.name] == 0 and not p.log for p in params)
    out = []
    for factor in START_FACTORS:
        x0 = np.array([p.to_x(p.clip(point[p.name] * factor)) for p in params])
        if some_zero and factor != 1.0:
            x0 = np.where(x0 == 0, factor, x0)
        out.append(np.clip(x0, lo, hi))
    return out


def _names(keys: Iterable[str], option: str) -> set[str]:
    """``keys`` checked to be link parameters (an :class:`OptionError` naming ``option``)."""
    keys = set(keys)
    bad = keys - set(LINK_PARAMETER_NAMES)
    if bad:
        raise OptionError(
            option,
            f": {sorted(bad)[0]!r} is not a link parameter "
            f"(allowed: {', '.join(LINK_PARAMETER_NAMES)})",
        )
    return keys


def fit_link(
    link: Link,
    data: LinkMeasurements,
    fixed: Iterable[str] = (),
    fit: Iterable[str] | None = None,
) -> LinkFit:
    """Fit the identified link parameters to the rows (see the module docstring).

    Parameters
    ----------
    link : the link profile to start from; unfitted keys keep its values.
    data : the measurements.
    fixed : keys held at the profile's values.
    fit : when given, only these keys are fitted (the others are held), and each must be
        identified by the rows: one that is not raises a :class:`ProfileError` naming the
        measurements file, the key and why (e.g. ``max_window_bytes`` from rows of one
        payload size).

    Notes
    -----
    ``jitter_cv`` is a candidate only when percentile or ``max`` rows exist (means do not
    depend on it at first order). Residuals ``ln t_pred - ln t_meas``; trust-region reflective
    least squares within :data:`LINK_PARAMETERS`' bounds.
    """
    fixed = _names(fixed, "fix")
    only = None if fit is None else _names(fit, "fit")
    if only is not None and only & fixed:
        raise OptionError(
            "fit", f": {sorted(only & fixed)[0]!r} is both fitted and held fixed (fix)"
        )
    cands, reasons = _candidates(link, data, fixed, only)
    held = fixed if only is None else fixed | (set(LINK_PARAMETER_NAMES) - only)

    def predict(values: Values) -> np.ndarray:
        return predict_s(with_values(link, values), data)

    point = {n: float(getattr(link, n)) for n in LINK_PARAMETER_NAMES}
    params = [_BY_NAME[n] for n in cands]
    s = sensitivities(predict, point, params, STEP) if cands else np.zeros((len(data), 0))
    ident = pivoted_qr_selection(s, cands, sensitivity_min=SENSITIVITY_MIN, tolerance=IDENTIFY_TOL)
    reasons.update(ident.reasons)
    chosen = list(ident.identified)
    for n in sorted(only or (), key=LINK_PARAMETER_NAMES.index):
        if n not in chosen:
            why = reasons.get(n, "not identified").removeprefix("not identified: ")
            raise ProfileError(
                f"cannot be identified from these rows: {why}", file=data.file, key=n
            )
    sol = unfitted(point)
    if chosen:
        ps = [_BY_NAME[n] for n in chosen]
        sol = solve(predict, data.latency_s, point, ps, _starts(ps, point))
    fitted_link = with_values(link, {n: sol.values[n] for n in chosen})
    stderr = sol.stderr(len(data))
    return LinkFit(
        parameters=tuple(
            LinkParameterFit(
                name=n,
                unit=_BY_NAME[n].unit,
                default=point[n],
                fitted=sol.values[n],
                status=status_of(n, held, chosen, reasons, _BY_NAME[n].at_bound(sol.values[n])),
                sensitivity=ident.sensitivity.get(n, 0.0),
                stderr=stderr.get(n),
            )
            for n in LINK_PARAMETER_NAMES
        ),
        measured_s=data.latency_s,
        profile_s=predict_s(link, data),
        fitted_s=predict_s(fitted_link, data),
        link=fitted_link,
        success=sol.success,
        message=sol.message,
    )


def calibrated_link(fit: LinkFit, name: str, measurements_file: str) -> Link:
    """The fitted link as a complete profile named ``name`` (4 significant digits)."""
    from pddplan.spec import Link as LinkCls

    fitted = [p for p in fit.parameters if p.was_fitted]
    d = fit.link.model_dump(mode="json")
    for p in fitted:
        d[p.name] = significant(p.fitted)
    err0 = ErrorSummary.of(fit.profile_s, fit.measured_s).median_abs_pct
    err1 = ErrorSummary.of(fit.fitted_s, fit.measured_s).median_abs_pct
    kept = "; ".join(f"{p.name} ({p.status})" for p in fit.parameters if not p.was_fitted)
    d["name"] = name
    d["notes"] = (
        f"Calibrated copy of {fit.link.name} (pddplan calibrate --link). {d.get('notes', '')}".strip()
    )
    d["source"] = (
        f"pddplan calibrate: scipy least_squares on log latency of {len(fit.measured_s)} rows of "
        f"{measurements_file}, starting from link profile {fit.link.name}. Fitted: "
        f"{', '.join(p.name for p in fitted) or 'none'}. Kept: {kept or 'none'}. Median absolute "
        f"error {err0:.1f}% before, {err1:.1f}% after. Source of {fit.link.name}: {d['source']}"
    )
    d["estimated"] = [k for k in d.get("estimated", []) if k not in {p.name for p in fitted}]
    return LinkCls.model_validate(d)


__all__ = [
    "LINK_PARAMETER_NAMES",
    "LinkFit",
    "LinkMeasurements",
    "calibrated_link",
    "fit_link",
    "is_link_csv",
    "parse_link_measurements",
    "predict_s",
    "read_link_measurements",
]
