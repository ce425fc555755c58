"""Fit a chip's efficiency derates to measured prefill latencies and decode step times.

The measurements are rows of ``phase, tokens, batch, context, tp, latency_ms, source`` (see
:func:`parse_measurements`). A *predictor* maps a set of derates to the latency of every row;
:func:`instance_predictor` builds it from :class:`pddplan.deployment.Instance`, so the fit
calibrates exactly the step-time model that ``solve`` uses. :func:`fit_derates` then

1. decides which derates the rows can identify (scaled sensitivity and collinearity index
   [1]_); the others keep their defaults and are reported as not identified,
2. fits the identified ones with :func:`scipy.optimize.least_squares` on log-latency residuals
   (relative errors), bounded to physical ranges, from a few deterministic starting points,
3. reports the error of the default and of the fitted derates per row and as median / max.

Nothing here prints or touches YAML; the CLI (``pddplan calibrate``) renders and writes.

References
----------
.. [1] Brun, Reichert and Kuensch, "Practical identifiability analysis of large environmental
   simulation models", Water Resources Research 37(4), 2001: parameter importance
   ``delta_msqr`` and the collinearity index ``gamma_K``.
"""

from __future__ import annotations

import csv
import difflib
import io
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pddplan import units
from pddplan.errors import ProfileError

if TYPE_CHECKING:
    from pddplan.deployment import ModelNumbers
    from pddplan.spec import Chip

# ---------------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class Parameter:
    """One derate the fit may move, with its physical range.

    ``log`` parameters are fitted in log space (they span orders of magnitude);
    ``scale_floor`` is the smallest value used as the parameter's scale in the sensitivity
    analysis (it matters only for a parameter whose value can be 0).
    """

    name: str
    unit: str
    lower: float
    upper: float
    log: bool = False
    scale_floor: float = 0.0


#: The derates of :class:`pddplan.spec.ChipDerates`, with bounds. Efficiencies are fractions in
#: (0, 1] (the lower bound 1e-3 keeps them strictly positive); the half-saturation point is a
#: positive token count (0.1 to 1e6 tokens covers every GEMM tile shape); the step overhead is a
#: non-negative time (up to 1 s per step, far above any engine's).
PARAMETERS: tuple[Parameter, ...] = (
    Parameter("compute_efficiency", "-", 1e-3, 1.0),
    Parameter("compute_half_saturation_tokens", "tokens", 0.1, 1e6, log=True),
    Parameter("memory_bandwidth_efficiency", "-", 1e-3, 1.0),
    Parameter("scaleup_efficiency", "-", 1e-3, 1.0),
    Parameter("step_overhead_ms", "ms", 0.0, 1000.0, scale_floor=1.0),
)
PARAMETER_NAMES = tuple(p.name for p in PARAMETERS)
_BY_NAME = {p.name: p for p in PARAMETERS}

#: A parameter whose 100% change moves the log-latencies by less than this (root mean square)
#: is not identified: the rows barely depend on it. 1e-3 is 0.1% of latency, ten times below a
#: good measurement's noise.
SENSITIVITY_MIN = 1e-3
#: Largest collinearity index ``gamma_K`` of the fitted set. Brun et al. [1]_ take 10-15 as the
#: critical range; at gamma = 10 the effect of one parameter can be 90% compensated by the
#: others, so a 1% measurement noise already allows a 10% error in the parameter.
COLLINEARITY_MAX = 10.0
#: Relative step of the finite differences used for the sensitivities.
SENSITIVITY_STEP = 1e-4

Derates = Mapping[str, float]
Predictor = Callable[[Derates], np.ndarray]

# -------------------------------------------------------------------------------- measurements

PHASES = ("prefill", "decode")
COLUMNS = ("phase", "tokens", "batch", "context", "tp", "latency_ms", "source")


@dataclass(frozen=True)
class Measurements:
    """Validated measurement rows as arrays of equal length.

    Attributes
    ----------
    is_prefill : bool, True for a prefill row (latency of the whole prefill), False for a
        decode row (time of one decode step).
    tokens : [tokens] uncached tokens of a prefill; 1 for decode rows.
    batch : [-] sequences in a decode step; 1 for prefill rows.
    context_tokens : [tokens] cached prefix of a prefill, or context length of a decode step.
    tensor_parallel : [-] chips of the instance.
    latency_s : [s] the measured latency.
    source : where each row comes from.
    line : the row's line in the file (1-based).
    file : the file name, for messages.
    """

    is_prefill: np.ndarray
    tokens: np.ndarray
    batch: np.ndarray
    context_tokens: np.ndarray
    tensor_parallel: np.ndarray
    latency_s: np.ndarray
    source: tuple[str, ...]
    line: tuple[int, ...]
    file: str

    def __len__(self) -> int:
        return len(self.latency_s)

    @property
    def phase(self) -> list[str]:
        return ["prefill" if p else "decode" for p in self.is_prefill]


def _number(text: str, column: str, file: str, line: int, *, whole: bool, minimum: float) -> float:
    """Parse one numeric cell (``> 0`` when ``minimum`` is 0 and not ``whole``, else
    ``>= minimum``); a ProfileError names the file, line and column."""
    kind = "a whole number" if whole else "a number"
    try:
        value = float(text)
    except ValueError:
        raise ProfileError(
            f"expected {kind}, got {text!r}", file=file, key=column, line=line
        ) from None
    if not math.isfinite(value) or (whole and value != int(value)):
        raise ProfileError(f"expected {kind}, got {text!r}", file=file, key=column, line=line)
    positive = not whole and minimum == 0.0
    if value < minimum or (positive and value <= 0.0):
        bound = "> 0" if positive else f">= {minimum:g}"
        raise ProfileError(f"must be {bound}, got {text!r}", file=file, key=column, line=line)
    return value


def parse_measurements(text: str, file: str) -> Measurements:
    """Parse and validate a measurements CSV.

    Parameters
    ----------
    text : the CSV text; the first line is the header.
    file : the file name used in error messages.

    Notes
    -----
    Columns (all required, any order, nothing else):

    - ``phase``: ``prefill`` (``latency_ms`` is the whole prefill of ``tokens`` uncached tokens
      over a cached prefix of ``context`` tokens) or ``decode`` (``latency_ms`` is one decode
      step of ``batch`` sequences at context ``context``).
    - ``tokens``: prefill: uncached tokens (>= 1); decode: empty or 1.
    - ``batch``: decode: sequences in the step (>= 1); prefill: empty or 1.
    - ``context``: tokens already in the cache (>= 0; empty means 0).
    - ``tp``: chips of the instance (tensor-parallel degree, >= 1).
    - ``latency_ms``: the measured time [ms], > 0.
    - ``source``: where the number comes from (at least 3 characters).

    Blank lines are skipped. Every error names the file, the line and the column.
    """
    reader = csv.reader(io.StringIO(text))
    header: list[str] | None = None
    header_line = 0
    for row in reader:
        if any(c.strip() for c in row):
            header = [c.strip() for c in row]
            header_line = reader.line_num
            break
    if header is None:
        raise ProfileError(
            "empty file: expected a header line and at least one measurement", file=file
        )
    seen: set[str] = set()
    for col in header:
        if col in seen:
            raise ProfileError(f"duplicate column {col!r}", file=file, key=col, line=header_line)
        seen.add(col)
        if col not in COLUMNS:
            guess = difflib.get_close_matches(col, COLUMNS, n=1)
            hint = f"; did you mean {guess[0]!r}?" if guess else ""
            raise ProfileError(
                f"unknown column {col!r}{hint} (allowed: {', '.join(COLUMNS)})",
                file=file,
                key=col or "(empty)",
                line=header_line,
            )
    missing = [c for c in COLUMNS if c not in seen]
    if missing:
        raise ProfileError(
            f"missing column(s) {', '.join(missing)} (required: {', '.join(COLUMNS)})",
            file=file,
            line=header_line,
        )
    idx = {c: header.index(c) for c in COLUMNS}

    rows: list[tuple[bool, float, float, float, float, float, str, int]] = []
    for raw in reader:
        line = reader.line_num
        if not any(c.strip() for c in raw):
            continue
        if len(raw) != len(header):
            raise ProfileError(
                f"expected {len(header)} fields, found {len(raw)}", file=file, line=line
            )
        cell = {c: raw[i].strip() for c, i in idx.items()}
        phase = cell["phase"].lower()
        if phase not in PHASES:
            raise ProfileError(
                f"unknown phase {cell['phase']!r} (allowed: {', '.join(PHASES)})",
                file=file,
                key="phase",
                line=line,
            )
        prefill = phase == "prefill"

        def num(col: str, *, whole: bool, minimum: float, default: float | None = None) -> float:
            if cell[col] == "" and default is not None:
                return default
            if cell[col] == "":
                raise ProfileError("value is missing", file=file, key=col, line=line)
            return _number(cell[col], col, file, line, whole=whole, minimum=minimum)

        if prefill:
            tokens = num("tokens", whole=True, minimum=1)
            batch = num("batch", whole=True, minimum=1, default=1.0)
            if batch != 1:
                raise ProfileError(
                    "a prefill row is one sequence: batch must be 1 or empty "
                    f"(got {cell['batch']!r})",
                    file=file,
                    key="batch",
                    line=line,
                )
        else:
            batch = num("batch", whole=True, minimum=1)
            tokens = num("tokens", whole=True, minimum=1, default=1.0)
            if tokens != 1:
                raise ProfileError(
                    "a decode step makes one token per sequence: tokens must be 1 or empty "
                    f"(got {cell['tokens']!r})",
                    file=file,
                    key="tokens",
                    line=line,
                )
        context = num("context", whole=True, minimum=0, default=0.0)
        tp = num("tp", whole=True, minimum=1)
        latency_ms = num("latency_ms", whole=False, minimum=0.0)
        source = cell["source"]
        if len(source) < 3:
            raise ProfileError(
                "every measurement needs a source (at least 3 characters)",
                file=file,
                key="source",
                line=line,
            )
        rows.append((prefill, tokens, batch, context, tp, units.ms_to_s(latency_ms), source, line))
    if not rows:
        raise ProfileError(
            "no measurements: the file has a header but no rows", file=file, line=header_line
        )
    cols = list(zip(*rows, strict=True))
    return Measurements(
        is_prefill=np.array(cols[0], dtype=bool),
        tokens=np.array(cols[1], dtype=float),
        batch=np.array(cols[2], dtype=float),
        context_tokens=np.array(cols[3], dtype=float),
        tensor_parallel=np.array(cols[4], dtype=int),
        latency_s=np.array(cols[5], dtype=float),
        source=tuple(str(s) for s in cols[6]),
        line=tuple(int(n) for n in cols[7]),
        file=file,
    )


def read_measurements(path: Path) -> Measurements:
    """Read and validate a measurements CSV file (see :func:`parse_measurements`)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ProfileError(f"cannot read file: {exc.strerror}", file=str(path)) from None
    except UnicodeDecodeError:
        raise ProfileError("not a UTF-8 text file", file=str(path)) from None
    return parse_measurements(text, str(path))


# ---------------------------------------------------------------------------------- predictor


def with_derates(chip: Chip, derates: Derates) -> Chip:
    """A copy of ``chip`` whose derates are replaced by ``derates`` (others unchanged)."""
    return chip.model_copy(update={"derates": chip.derates.model_copy(update=dict(derates))})


def default_derates(chip: Chip) -> dict[str, float]:
    """The chip's own derates, by parameter name."""
    return {name: float(getattr(chip.derates, name)) for name in PARAMETER_NAMES}


def instance_predictor(
    chip: Chip, model: ModelNumbers, data: Measurements, chunk_size_tokens: int
) -> Predictor:
    """A function mapping derates to the predicted latency [s] of every row of ``data``.

    Prefill rows use :meth:`Instance.prefill_s` (chunked at ``chunk_size_tokens``), decode rows
    :meth:`Instance.decode_step_s`, each on an instance of ``tp`` chips of ``chip`` with the
    given derates.
    """
    from pddplan.deployment import Instance

    groups = []
    for tp in np.unique(data.tensor_parallel):
        on_tp = data.tensor_parallel == tp
        groups.append((int(tp), on_tp & data.is_prefill, on_tp & ~data.is_prefill))

    def predict(derates: Derates) -> np.ndarray:
        c = with_derates(chip, derates)
        out = np.empty(len(data))
        for tp, pre, dec in groups:
            inst = Instance(c, model, tp)
            if pre.any():
                out[pre] = inst.prefill_s(
                    data.tokens[pre], data.context_tokens[pre], chunk_size_tokens
                )
            if dec.any():
                out[dec] = inst.decode_step_s(data.batch[dec], data.context_tokens[dec])
        return out

    return predict


# ---------------------------------------------------------------------------- identifiability


@dataclass(frozen=True)
class Identification:
    """Which parameters the rows identify, and why the others are not."""

    identified: tuple[str, ...]
    reasons: dict[str, str]  # parameter -> why it is not identified
    sensitivity: dict[str, float]  # delta_msqr of each free parameter [-]
    collinearity: float  # gamma_K of the identified set [-] (1 for a single parameter)


def _scale(name: str, value: float) -> float:
    return max(abs(value), _BY_NAME[name].scale_floor)


def sensitivities(predict: Predictor, point: Derates, names: Sequence[str]) -> np.ndarray:
    """Scaled sensitivity matrix ``S[i, j] = d log t_i / d theta_j * scale_j`` [-].

    Forward differences with a relative step of :data:`SENSITIVITY_STEP`, stepping backward
    where the forward step would leave the parameter's range.
    """
    base = np.log(predict(point))
    out = np.zeros((len(base), len(names)))
    for j, name in enumerate(names):
        p = _BY_NAME[name]
        scale = _scale(name, point[name])
        step = SENSITIVITY_STEP * scale
        if point[name] + step > p.upper:
            step = -step
        moved = dict(point)
        moved[name] = point[name] + step
        out[:, j] = (np.log(predict(moved)) - base) / step * scale
    return out


def collinearity_index(s: np.ndarray) -> float:
    """``gamma_K = 1 / sqrt(min eig(S_n^T S_n))`` of column-normalized ``S`` [1]_ [-]."""
    if s.shape[1] == 0:
        return 1.0
    norms = np.linalg.norm(s, axis=0)
    sn = s / np.where(norms > 0, norms, 1.0)
    lam = float(np.linalg.eigvalsh(sn.T @ sn)[0])
    return math.inf if lam <= 1e-300 else 1.0 / math.sqrt(lam)


def identify(
    predict: Predictor,
    point: Derates,
    free: Sequence[str],
    *,
    sensitivity_min: float = SENSITIVITY_MIN,
    collinearity_max: float = COLLINEARITY_MAX,
) -> Identification:
    """Decide which of ``free`` the rows identify at ``point``.

    Notes
    -----
    A parameter is dropped when its importance ``delta_msqr = sqrt(mean_i S_ij^2)`` is below
    ``sensitivity_min``. While the collinearity index of the remaining set exceeds
    ``collinearity_max``, the parameter whose removal lowers the index most is dropped (ties:
    the less important one); it is reported as collinear with the parameters left. At most
    ``n_rows`` parameters are kept.
    """
    s = sensitivities(predict, point, free)
    delta = {n: float(np.sqrt(np.mean(s[:, j] ** 2))) for j, n in enumerate(free)}
    col = {n: j for j, n in enumerate(free)}
    reasons: dict[str, str] = {}
    keep = []
    for n in free:
        if delta[n] < sensitivity_min:
            reasons[n] = (
                f"not identified: the rows barely depend on it (sensitivity {delta[n]:.2g})"
            )
        else:
            keep.append(n)

    def gamma(names: Iterable[str]) -> float:
        return collinearity_index(s[:, [col[n] for n in names]])

    g = gamma(keep)
    while len(keep) > 1 and (g > collinearity_max or len(keep) > s.shape[0]):
        trial = sorted(keep, key=lambda n: (gamma([m for m in keep if m != n]), delta[n]))
        drop = trial[0]
        keep = [m for m in keep if m != drop]
        g_before, g = g, gamma(keep)
        reasons[drop] = (
            f"not identified: collinear with {', '.join(keep)} "
            f"(collinearity index {g_before:.3g} > {collinearity_max:g})"
        )
    return Identification(tuple(keep), reasons, delta, g if keep else 1.0)


# ------------------------------------------------------------------------------------- fitting


@dataclass(frozen=True)
class ErrorSummary:
    """Absolute relative errors of predictions against measurements [%]."""

    median_abs_pct: float
    max_abs_pct: float

    @classmethod
    def of(cls, predicted: np.ndarray, measured: np.ndarray) -> ErrorSummary:
        e = np.abs(predicted / measured - 1.0) * 100.0
        return cls(float(np.median(e)), float(np.max(e)))


@dataclass(frozen=True)
class ParameterFit:
    """The outcome for one derate."""

    name: str
    unit: str
    default: float
    fitted: float  # equals default when not fitted
    status: str  # "fitted", "fitted (at bound)", "held fixed", or "not identified: ..."
    sensitivity: float | None  # delta_msqr at the defaults [-]; None when held fixed
    stderr: float | None  # approximate 1-sigma uncertainty of the fitted value, its unit

    @property
    def was_fitted(self) -> bool:
        return self.status.startswith("fitted")


@dataclass(frozen=True)
class FitResult:
    """Fitted derates, per-row predictions and error summaries."""

    parameters: tuple[ParameterFit, ...]
    measured_s: np.ndarray
    default_s: np.ndarray
    fitted_s: np.ndarray
    default_errors: ErrorSummary
    fitted_errors: ErrorSummary
    collinearity: float
    success: bool
    message: str
    evaluations: int
    derates: dict[str, float] = field(default_factory=dict)  # all five, fitted or default

    @property
    def fitted_names(self) -> list[str]:
        return [p.name for p in self.parameters if p.was_fitted]

    @property
    def not_identified(self) -> list[ParameterFit]:
        return [p for p in self.parameters if p.status.startswith("not identified")]


def _to_x(name: str, value: float) -> float:
    return math.log(value) if _BY_NAME[name].log else value


def _from_x(name: str, x: float) -> float:
    return math.exp(x) if _BY_NAME[name].log else x


def _x_bounds(names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    lo = [_to_x(n, _BY_NAME[n].lower) for n in names]
    hi = [_to_x(n, _BY_NAME[n].upper) for n in names]
    return np.array(lo), np.array(hi)


def _starts(names: Sequence[str], defaults: Derates) -> list[np.ndarray]:
    """Deterministic starting points: the defaults, then the defaults moved down and up.

    Moving the efficiencies and the overhead together helps the fit leave a branch of the
    roofline's ``max()`` where one term hides the other.
    """
    lo, hi = _x_bounds(names)
    out = []
    for factor in (1.0, 0.5, 2.0):
        x = []
        for n in names:
            v = defaults[n] * factor if defaults[n] > 0 else _BY_NAME[n].scale_floor * factor
            x.append(_to_x(n, min(max(v, _BY_NAME[n].lower), _BY_NAME[n].upper)))
        out.append(np.clip(np.array(x), lo, hi))
    return out


def fit_derates(
    measured_s: np.ndarray,
    predict: Predictor,
    defaults: Derates,
    *,
    fixed: Iterable[str] = (),
    sensitivity_min: float = SENSITIVITY_MIN,
    collinearity_max: float = COLLINEARITY_MAX,
) -> FitResult:
    """Fit the identified derates to measured latencies by least squares on log latency.

    Parameters
    ----------
    measured_s : [s] measured latency of each row, > 0.
    predict : maps derates (all of :data:`PARAMETER_NAMES`) to predicted latencies [s].
    defaults : [mixed units] the starting derates, also kept for parameters not fitted.
    fixed : names held at their defaults whatever the data say.
    sensitivity_min, collinearity_max : identifiability thresholds (see :func:`identify`).

    Returns
    -------
    FitResult

    Notes
    -----
    Residuals ``r_i = ln t_pred,i - ln t_meas,i`` (relative errors, so a 2 ms decode step and a
    2 s prefill weigh alike); :func:`scipy.optimize.least_squares` (trust-region reflective)
    with the bounds of :data:`PARAMETERS`, the half-saturation point in log space. Identified
    parameters are chosen at the defaults and checked again at the fit; a parameter that stops
    being identified there is returned to its default and the rest refitted once. Standard
    errors come from the Jacobian at the optimum, ``cov = s^2 (J^T J)^-1`` with
    ``s^2 = sum r^2 / (n - p)``: an approximation that ignores the model's own error.
    """
    from scipy.optimize import least_squares

    measured_s = np.asarray(measured_s, dtype=float)
    if measured_s.ndim != 1 or len(measured_s) == 0 or np.any(~(measured_s > 0)):
        raise ValueError("measured_s must be a non-empty 1-d array of positive latencies")
    fixed = set(fixed)
    unknown = fixed - set(PARAMETER_NAMES)
    if unknown:
        raise ValueError(
            f"unknown derate(s) {sorted(unknown)}; allowed: {', '.join(PARAMETER_NAMES)}"
        )
    point = {n: float(defaults[n]) for n in PARAMETER_NAMES}
    log_meas = np.log(measured_s)
    evaluations = 0

    def run(names: Sequence[str]) -> tuple[dict[str, float], object]:
        nonlocal evaluations

        def residuals(x: np.ndarray) -> np.ndarray:
            d = dict(point)
            d.update({n: _from_x(n, float(v)) for n, v in zip(names, x, strict=True)})
            return np.log(predict(d)) - log_meas

        lo, hi = _x_bounds(names)
        best = None
        for x0 in _starts(names, point):
            res = least_squares(residuals, x0, bounds=(lo, hi), x_scale="jac", method="trf")
            evaluations += int(res.nfev)
            if best is None or res.cost < best.cost - 1e-15:
                best = res
        assert best is not None
        out = dict(point)
        out.update({n: _from_x(n, float(v)) for n, v in zip(names, best.x, strict=True)})
        return out, best

    free = [n for n in PARAMETER_NAMES if n not in fixed]
    ident = identify(
        predict, point, free, sensitivity_min=sensitivity_min, collinearity_max=collinearity_max
    )
    names = list(ident.identified)
    reasons = dict(ident.reasons)
    fitted = dict(point)
    res = None
    gamma = ident.collinearity
    if names:
        fitted, res = run(names)
        again = identify(
            predict,
            fitted,
            names,
            sensitivity_min=sensitivity_min,
            collinearity_max=collinearity_max,
        )
        if set(again.identified) != set(names):
            for n, why in again.reasons.items():
                reasons[n] = why + " at the fitted point"
            names = list(again.identified)
            gamma = again.collinearity
            fitted, res = run(names) if names else (dict(point), None)

    default_s = predict(point)
    fitted_s = predict(fitted)
    stderr = _stderr(res, names, fitted, len(measured_s))
    params = []
    for p in PARAMETERS:
        n = p.name
        if n in fixed:
            status = "held fixed"
        elif n in names:
            at_bound = min(abs(fitted[n] - p.lower), abs(fitted[n] - p.upper)) <= 1e-6 * max(
                1.0, abs(p.upper)
            )
            status = "fitted (at bound)" if at_bound else "fitted"
        else:
            status = reasons.get(n, "not identified")
        params.append(
            ParameterFit(
                name=n,
                unit=p.unit,
                default=point[n],
                fitted=fitted[n] if n in names else point[n],
                status=status,
                sensitivity=ident.sensitivity.get(n),
                stderr=stderr.get(n),
            )
        )
    success = bool(res.success) if res is not None else True
    message = str(res.message) if res is not None else "nothing to fit: no parameter is identified"
    return FitResult(
        parameters=tuple(params),
        measured_s=measured_s,
        default_s=default_s,
        fitted_s=fitted_s,
        default_errors=ErrorSummary.of(default_s, measured_s),
        fitted_errors=ErrorSummary.of(fitted_s, measured_s),
        collinearity=gamma if names else 1.0,
        success=success,
        message=message,
        evaluations=evaluations,
        derates={n: (fitted[n] if n in names else point[n]) for n in PARAMETER_NAMES},
    )


def _stderr(res: object, names: Sequence[str], fitted: Derates, n_rows: int) -> dict[str, float]:
    """Approximate standard errors of the fitted parameters, in their own units."""
    if res is None or n_rows <= len(names):
        return {}
    jac = np.asarray(getattr(res, "jac"), dtype=float)
    s2 = 2.0 * float(getattr(res, "cost")) / (n_rows - len(names))
    try:
        cov = s2 * np.linalg.inv(jac.T @ jac)
    except np.linalg.LinAlgError:
        return {}
    out = {}
    for j, n in enumerate(names):
        sx = math.sqrt(max(float(cov[j, j]), 0.0))
        out[n] = fitted[n] * sx if _BY_NAME[n].log else sx
    return out


# ------------------------------------------------------------------------------ chip profile


def _round(value: float, digits: int = 4) -> float:
    return float(f"{value:.{digits}g}")


def calibrated_chip(
    chip: Chip,
    fit: FitResult,
    name: str,
    measurements_file: str,
    model_name: str,
    chunk_size_tokens: int,
) -> Chip:
    """A complete chip profile: ``chip`` with the fitted derates (4 significant digits).

    The derates' ``source`` names the measurements file, the fit and its errors; fitted keys
    leave the ``estimated`` list, keys kept at their defaults keep their status.
    """
    from pddplan.spec import Chip as ChipCls

    fitted = fit.fitted_names
    kept = [p for p in fit.parameters if not p.was_fitted]
    kept_text = "; ".join(f"{p.name} ({p.status})" for p in kept) or "none"
    source = (
        f"pddplan calibrate: scipy least_squares fit on log latency of {len(fit.measured_s)} rows "
        f"of {measurements_file} (model {model_name}, prefill chunk {chunk_size_tokens} tokens), "
        f"starting from the derates of chip profile {chip.name}. Fitted: {', '.join(fitted) or 'none'}. "
        f"Kept from {chip.name}: {kept_text}. Error vs the measurements, median / max absolute: "
        f"default derates {fit.default_errors.median_abs_pct:.1f}% / {fit.default_errors.max_abs_pct:.1f}%, "
        f"fitted {fit.fitted_errors.median_abs_pct:.1f}% / {fit.fitted_errors.max_abs_pct:.1f}%. "
        f"Values rounded to 4 significant digits. Original derates source: {chip.derates.source}"
    )
    data = chip.model_dump(mode="json")
    data["name"] = name
    data["display_name"] = f"{chip.display_name} (calibrated: {name})"
    data["notes"] = (
        f"Calibrated copy of {chip.name} written by pddplan calibrate from {measurements_file}. "
        + (chip.notes or "")
    ).strip()
    derates = data["derates"]
    for p in fit.parameters:
        derates[p.name] = _round(fit.derates[p.name]) if p.was_fitted else p.default
    derates["source"] = source
    derates["estimated"] = [k for k in chip.derates.estimated if k not in fitted]
    return ChipCls.model_validate(data)
