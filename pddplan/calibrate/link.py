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
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pddplan import timing
from pddplan.deployment import LinkNumbers
from pddplan.errors import ProfileError, UsageError

if TYPE_CHECKING:
    from pddplan.spec import Link

REQUIRED = ("payload_bytes", "latency_s")
OPTIONAL = ("concurrent_transfers", "statistic", "samples", "source")
#: Row statistics: ``sample`` (one measured transfer) and ``mean`` are fitted to the model's
#: mean; ``p50``/``p90``/``p99`` to its percentile; ``max`` of ``samples`` transfers to the
#: percentile ``n / (n + 1)`` (the expected rank of the largest of ``n`` draws).
STATISTICS = ("sample", "mean", "p50", "p90", "p99", "max")
_QUANTILE = {"p50": 0.5, "p90": 0.9, "p99": 0.99}
#: Equal-probability jitter points for the model's mean of a row.
MEAN_POINTS = 201
#: A parameter is identified when its pivot is at least this share of the largest one [1]_.
IDENTIFY_TOL = 1e-3
#: ... and when a 100% change moves the log latencies by at least this (root mean square).
SENSITIVITY_MIN = 1e-3
#: Relative step of the finite-difference sensitivities.
STEP = 1e-4
#: Starting points of the fit: the profile's values times each factor (the lowest cost wins).
START_FACTORS = (1.0, 0.5, 2.0, 0.25, 4.0)


@dataclass(frozen=True)
class LinkParameter:
    """A link key the fit may move: its profile key, unit, bounds and scale."""

    name: str  # profile key
    unit: str
    lower: float
    upper: float
    log: bool


#: The fittable keys of :class:`pddplan.spec.Link`, with the ranges the profile schema allows.
LINK_PARAMETERS = (
    LinkParameter("rtt_ms", "ms", 1e-4, 1e4, True),
    LinkParameter("per_transfer_latency_ms", "ms", 0.0, 1e4, False),
    LinkParameter("max_window_bytes", "bytes", 1e3, 2.0**30, True),
    LinkParameter("loss_rate", "-", 1e-12, 0.49, True),
    LinkParameter("efficiency", "-", 0.01, 1.0, False),
    LinkParameter("jitter_cv", "-", 1e-3, 5.0, True),
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


def _num(text: str, col: str, file: str, line: int, *, positive: bool = True) -> float:
    try:
        v = float(text)
    except ValueError:
        raise ProfileError(
            f"expected a number, got {text!r}", file=file, key=col, line=line
        ) from None
    if not math.isfinite(v) or (positive and v <= 0):
        raise ProfileError(f"must be a number > 0, got {text!r}", file=file, key=col, line=line)
    hi = COLUMN_MAX.get(col)
    if hi is not None and v > hi:
        raise ProfileError(f"must be at most {hi:g}, got {text!r}", file=file, key=col, line=line)
    return v


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
    try:
        records = list(csv.reader(io.StringIO(text), strict=True))
    except csv.Error as exc:
        raise ProfileError(f"malformed CSV: {exc}", file=file) from None
    rows: list[tuple[int, list[str]]] = [
        (i + 1, r) for i, r in enumerate(records) if any(c.strip() for c in r)
    ]
    if not rows:
        raise ProfileError("empty file: expected a header and at least one row", file=file)
    hline, header = rows[0]
    header = [c.strip() for c in header]
    for c in header:
        if c not in REQUIRED + OPTIONAL:
            raise ProfileError(
                f"unknown column {c!r} (allowed: {', '.join(REQUIRED + OPTIONAL)})",
                file=file,
                key=c or "(empty)",
                line=hline,
            )
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise ProfileError(f"missing column(s) {', '.join(missing)}", file=file, line=hline)
    out: list[tuple[float, float, float, str, float, str, int]] = []
    skipped: list[str] = []
    for line, raw in rows[1:]:
        if len(raw) != len(header):
            raise ProfileError(
                f"expected {len(header)} fields, found {len(raw)}", file=file, line=line
            )
        cell = {c: raw[i].strip() for i, c in enumerate(header)}
        x = _num(cell["payload_bytes"], "payload_bytes", file, line)
        t = _num(cell["latency_s"], "latency_s", file, line)
        n = cell.get("concurrent_transfers", "") or "1"
        conc = _num(n, "concurrent_transfers", file, line)
        if conc < 1 or conc != int(conc):
            raise ProfileError(
                f"must be a whole number >= 1, got {n!r}",
                file=file,
                key="concurrent_transfers",
                line=line,
            )
        stat = (cell.get("statistic", "") or "sample").lower()
        if stat not in STATISTICS:
            raise ProfileError(
                f"unknown statistic {stat!r} (allowed: {', '.join(STATISTICS)})",
                file=file,
                key="statistic",
                line=line,
            )
        q = _QUANTILE.get(stat, math.nan)
        if cell.get("samples", ""):
            _num(cell["samples"], "samples", file, line)
        if stat == "max":
            if not cell.get("samples", ""):
                skipped.append(
                    f"{file}:{line}: a max row without 'samples' is left out (the maximum of an "
                    "unknown number of transfers has no percentile)"
                )
                continue
            k = _num(cell["samples"], "samples", file, line)
            q = k / (k + 1.0)
        out.append((x, t, conc, stat, q, cell.get("source", ""), line))
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
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ProfileError(f"cannot read file: {exc.strerror}", file=str(path)) from None
    except UnicodeDecodeError as exc:
        raise ProfileError(f"not UTF-8 text (byte at offset {exc.start})", file=str(path)) from None
    return parse_link_measurements(text, str(path))


def with_values(link: Link, values: dict[str, float]) -> Link:
    """A copy of the link spec with some keys replaced."""
    return link.model_copy(update={k: float(v) for k, v in values.items()})


def predict_s(link: Link, data: LinkMeasurements) -> np.ndarray:
    """The model's latency of every row [s]: mean, percentile or expected maximum."""
    ln = LinkNumbers.of(link)
    rho = 1.0 - 1.0 / data.concurrent
    out = np.empty(len(data))
    mean_rows = np.isnan(data.quantile)
    if mean_rows.any():
        p = (np.arange(MEAN_POINTS) + 0.5) / MEAN_POINTS
        f = np.asarray(timing.jitter_quantile(ln, p), dtype=float)
        f = f / float(np.mean(f))
        t = timing.transfer_s(
            ln, data.payload_bytes[mean_rows, None] * f[None, :], rho[mean_rows, None]
        )
        out[mean_rows] = np.mean(t, axis=1)
    q = ~mean_rows
    if q.any():
        f = np.asarray(timing.jitter_quantile(ln, data.quantile[q]), dtype=float)
        out[q] = timing.transfer_s(ln, data.payload_bytes[q] * f, rho[q])
    return out


def _to_x(p: LinkParameter, v: float) -> float:
    return math.log(max(v, p.lower if p.lower > 0 else 1e-300)) if p.log else v


def _from_x(p: LinkParameter, x: float) -> float:
    return math.exp(x) if p.log else x


@dataclass(frozen=True)
class LinkParameterFit:
    name: str
    unit: str
    profile: float
    fitted: float
    stderr: float | None
    sensitivity: float
    status: str  # fitted / held fixed / not identified: ...

    @property
    def was_fitted(self) -> bool:
        return self.status.startswith("fitted")


@dataclass(frozen=True)
class LinkFit:
    parameters: tuple[LinkParameterFit, ...]
    measured_s: np.ndarray
    profile_s: np.ndarray
    fitted_s: np.ndarray
    link: Link  # the spec with the fitted values
    success: bool
    message: str

    @property
    def not_identified(self) -> list[str]:
        return [p.name for p in self.parameters if p.status.startswith("not identified")]


def _sensitivities(link: Link, data: LinkMeasurements, names: list[str]) -> np.ndarray:
    base = np.log(predict_s(link, data))
    s = np.zeros((len(data), len(names)))
    for j, n in enumerate(names):
        p = _BY_NAME[n]
        v = float(getattr(link, n))
        scale = max(abs(v), 1.0 if p.unit == "ms" else 1e-12)
        step = STEP * scale
        if v + step > p.upper:
            step = -step
        moved = predict_s(with_values(link, {n: v + step}), data)
        s[:, j] = (np.log(moved) - base) / step * scale
    return s


def fit_link(link: Link, data: LinkMeasurements, fixed: Iterable[str] = ()) -> LinkFit:
    """Fit the identified link parameters to the rows (see the module docstring).

    Parameters
    ----------
    link : the link profile to start from; unfitted keys keep its values.
    data : the measurements.
    fixed : keys held at the profile's values.

    Notes
    -----
    ``jitter_cv`` is a candidate only when percentile or ``max`` rows exist (means do not
    depend on it at first order). Residuals ``ln t_pred - ln t_meas``; trust-region reflective
    least squares within :data:`LINK_PARAMETERS`' bounds.
    """
    from scipy.linalg import qr
    from scipy.optimize import least_squares

    fixed = set(fixed)
    bad = fixed - set(LINK_PARAMETER_NAMES)
    if bad:
        raise UsageError(
            f"--fix: {sorted(bad)[0]!r} is not a link parameter "
            f"(allowed: {', '.join(LINK_PARAMETER_NAMES)})"
        )
    reasons: dict[str, str] = {}
    cands = [n for n in LINK_PARAMETER_NAMES if n not in fixed]
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
    s = _sensitivities(link, data, cands) if cands else np.zeros((len(data), 0))
    delta = {n: float(np.sqrt(np.mean(s[:, j] ** 2))) for j, n in enumerate(cands)}
    chosen: list[str] = []
    if cands:
        _, r, piv = qr(s, pivoting=True, mode="economic")
        diag = np.abs(np.diag(r)) if r.size else np.zeros(0)
        top = float(diag[0]) if len(diag) else 0.0
        for k, j in enumerate(piv):
            n = cands[int(j)]
            if delta[n] < SENSITIVITY_MIN:
                reasons[n] = (
                    f"not identified: the rows barely depend on it (sensitivity {delta[n]:.2g})"
                )
            elif k >= len(diag) or k >= len(data):
                reasons[n] = (
                    f"not identified: {len(data)} usable row(s) identify at most {len(data)} parameter(s)"
                )
            elif float(diag[k]) < IDENTIFY_TOL * top:
                reasons[n] = (
                    "not identified: its effect on the rows is a combination of the fitted parameters'"
                )
            else:
                chosen.append(n)
    log_meas = np.log(data.latency_s)
    values = {n: float(getattr(link, n)) for n in LINK_PARAMETER_NAMES}
    res = None
    if chosen:
        ps = [_BY_NAME[n] for n in chosen]

        def resid(x: np.ndarray) -> np.ndarray:
            upd = {p.name: _from_x(p, float(v)) for p, v in zip(ps, x, strict=True)}
            return np.log(predict_s(with_values(link, upd), data)) - log_meas

        lo = np.array([_to_x(p, p.lower) for p in ps])
        hi = np.array([_to_x(p, p.upper) for p in ps])
        for factor in START_FACTORS:  # the slow-start round counts make the cost piecewise
            x0 = np.array(
                [_to_x(p, min(max(values[p.name] * factor, p.lower), p.upper)) for p in ps]
            )
            if any(values[p.name] == 0 and not p.log for p in ps) and factor != 1.0:
                x0 = np.where(x0 == 0, factor, x0)
            r1 = least_squares(
                resid, np.clip(x0, lo, hi), bounds=(lo, hi), x_scale="jac", method="trf"
            )
            if res is None or r1.cost < res.cost:
                res = r1
        assert res is not None
        for p, v in zip(ps, res.x, strict=True):
            values[p.name] = _from_x(p, float(v))
    fitted_link = with_values(link, {n: values[n] for n in chosen})
    stderr: dict[str, float] = {}
    if res is not None and len(data) > len(chosen):
        jac = np.asarray(res.jac, dtype=float)
        s2 = 2.0 * float(res.cost) / (len(data) - len(chosen))
        try:
            cov = s2 * np.linalg.inv(jac.T @ jac)
            for j, n in enumerate(chosen):
                sx = math.sqrt(max(float(cov[j, j]), 0.0))
                stderr[n] = values[n] * sx if _BY_NAME[n].log else sx
        except np.linalg.LinAlgError:
            pass
    params = []
    for n in LINK_PARAMETER_NAMES:
        p = _BY_NAME[n]
        status = (
            "held fixed"
            if n in fixed
            else ("fitted" if n in chosen else reasons.get(n, "not identified"))
        )
        params.append(
            LinkParameterFit(
                n,
                p.unit,
                float(getattr(link, n)),
                values[n],
                stderr.get(n),
                delta.get(n, 0.0),
                status,
            )
        )
    return LinkFit(
        parameters=tuple(params),
        measured_s=data.latency_s,
        profile_s=predict_s(link, data),
        fitted_s=predict_s(fitted_link, data),
        link=fitted_link,
        success=bool(res.success) if res is not None else True,
        message=str(res.message)
        if res is not None
        else "nothing to fit: no parameter is identified",
    )


def calibrated_link(fit: LinkFit, name: str, measurements_file: str) -> Link:
    """The fitted link as a complete profile named ``name`` (4 significant digits)."""
    from pddplan.spec import Link as LinkCls

    fitted = [p for p in fit.parameters if p.was_fitted]
    d = fit.link.model_dump(mode="json")
    for p in fitted:
        d[p.name] = float(f"{p.fitted:.4g}")
    err0 = float(np.median(np.abs(fit.profile_s / fit.measured_s - 1))) * 100
    err1 = float(np.median(np.abs(fit.fitted_s / fit.measured_s - 1))) * 100
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
