"""The least-squares framework shared by chip and link calibration.

A *model* is a predictor that maps parameter values (by name) to the latency of every
measurement row [s], and a set of :class:`Parameter` with their physical ranges. This module
fits such a model: scaled sensitivities for the identifiability checks, bounded
:func:`scipy.optimize.least_squares` on log-latency residuals from several starting points,
approximate standard errors from the Jacobian at the optimum, relative-error summaries, and the
outcome of each parameter (:class:`ParameterFit`). What a model predicts, which parameters it
has, and which rules decide that the rows identify them are the model's own
(:mod:`pddplan.calibrate.chips`, :mod:`pddplan.calibrate.link`; selection rules in
:mod:`pddplan.calibrate.identify`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from scipy.optimize import OptimizeResult

#: Parameter values by name [mixed units: each parameter's own].
Values = Mapping[str, float]
#: Maps parameter values to the predicted latency of every row [s].
Predictor = Callable[[Values], np.ndarray]

#: Message of a fit in which no parameter was identified (nothing was fitted).
NOTHING_TO_FIT = "nothing to fit: no parameter is identified"


@dataclass(frozen=True)
class Parameter:
    """One parameter a fit may move, with its range.

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

    def to_x(self, value: float) -> float:
        """The fit's coordinate of ``value`` (its log for a ``log`` parameter)."""
        if not self.log:
            return value
        return math.log(max(value, self.lower if self.lower > 0 else 1e-300))

    def from_x(self, x: float) -> float:
        """The value at the fit's coordinate ``x``."""
        return math.exp(x) if self.log else x

    def scale(self, value: float) -> float:
        """The parameter's scale at ``value`` (at least ``scale_floor``), its unit."""
        return max(abs(value), self.scale_floor)

    def clip(self, value: float) -> float:
        """``value`` moved into ``[lower, upper]``."""
        return min(max(value, self.lower), self.upper)

    def at_bound(self, value: float) -> bool:
        """Whether ``value`` sits on either bound (within a millionth of the range's scale)."""
        tol = 1e-6 * max(1.0, abs(self.upper))
        return min(abs(value - self.lower), abs(value - self.upper)) <= tol

    def nearest_bound(self, value: float) -> float:
        """The bound closer to ``value``."""
        return self.lower if abs(value - self.lower) <= abs(value - self.upper) else self.upper


def x_bounds(params: Sequence[Parameter]) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of the fit's coordinates."""
    return np.array([p.to_x(p.lower) for p in params]), np.array([p.to_x(p.upper) for p in params])


def sensitivities(
    predict: Predictor, point: Values, params: Sequence[Parameter], step: float
) -> np.ndarray:
    """Scaled sensitivity matrix ``S[i, j] = d ln t_i / d theta_j * scale_j`` [-].

    ``scale_j`` is the parameter's value (at least its ``scale_floor``), so ``S[:, j]`` is the
    relative change of each latency per relative change of the parameter. Forward differences
    with a relative step of ``step``, stepping backward where the forward step would leave the
    parameter's range.
    """
    base = np.log(predict(point))
    out = np.zeros((len(base), len(params)))
    for j, p in enumerate(params):
        value = point[p.name]
        scale = p.scale(value)
        h = step * scale
        if value + h > p.upper:
            h = -h
        moved = dict(point)
        moved[p.name] = value + h
        out[:, j] = (np.log(predict(moved)) - base) / h * scale
    return out


def importance(s: np.ndarray, names: Sequence[str]) -> dict[str, float]:
    """``delta_msqr = sqrt(mean_i S_ij^2)`` of each column of ``S`` [-]: the root mean square
    change of the log latencies per 100% change of the parameter."""
    return {n: float(np.sqrt(np.mean(s[:, j] ** 2))) for j, n in enumerate(names)}


def scaled_starts(
    params: Sequence[Parameter], point: Values, factors: Iterable[float]
) -> list[np.ndarray]:
    """Starting points: every parameter at its value in ``point`` times each factor.

    Moving every parameter together helps a fit leave a branch of a ``max()`` where one term
    hides the other. A parameter at 0 moves to its ``scale_floor`` times the factor; every
    start is clipped to the bounds.
    """
    lo, hi = x_bounds(params)
    out = []
    for factor in factors:
        x = []
        for p in params:
            v = point[p.name]
            moved = v * factor if (v > 0 or factor == 1.0) else p.scale_floor * factor
            x.append(p.to_x(p.clip(moved)))
        out.append(np.clip(np.array(x), lo, hi))
    return out


@dataclass(frozen=True)
class Solution:
    """The best of the least-squares runs from several starts.

    Attributes
    ----------
    values : every parameter of ``point``, the fitted ones replaced [their units].
    params : the fitted parameters, in the order of the fit's coordinates.
    result : scipy's result of the best run; None when nothing was fitted.
    evaluations : [-] residual evaluations of all runs together.
    """

    values: dict[str, float]
    params: tuple[Parameter, ...]
    result: OptimizeResult | None
    evaluations: int

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.params]

    @property
    def success(self) -> bool:
        return bool(self.result.success) if self.result is not None else True

    @property
    def message(self) -> str:
        return str(self.result.message) if self.result is not None else NOTHING_TO_FIT

    def stderr(self, n_rows: int) -> dict[str, float]:
        """Approximate standard errors of the fitted parameters, in their own units.

        ``cov = s^2 (J^T J)^-1`` with ``s^2 = sum r^2 / (n - p)``, the Jacobian in the fit's
        coordinates (a log parameter's error is its value times the error of its log): an
        approximation that ignores the model's own error. Empty when nothing was fitted, when
        there are no more rows than parameters, or when ``J^T J`` is singular.
        """
        res = self.result
        if res is None or n_rows <= len(self.params):
            return {}
        jac = np.asarray(res.jac, dtype=float)
        s2 = 2.0 * float(res.cost) / (n_rows - len(self.params))
        try:
            cov = s2 * np.linalg.inv(jac.T @ jac)
        except np.linalg.LinAlgError:
            return {}
        out = {}
        for j, p in enumerate(self.params):
            sx = math.sqrt(max(float(cov[j, j]), 0.0))
            out[p.name] = self.values[p.name] * sx if p.log else sx
        return out


def unfitted(point: Values) -> Solution:
    """The solution of a fit with no identified parameter: ``point`` itself."""
    return Solution(dict(point), (), None, 0)


def solve(
    predict: Predictor,
    measured_s: np.ndarray,
    point: Values,
    params: Sequence[Parameter],
    starts: Iterable[np.ndarray],
    *,
    min_improvement: float = 0.0,
) -> Solution:
    """Fit ``params`` to the measured latencies by least squares on log latency.

    Parameters
    ----------
    predict : the model.
    measured_s : [s] the measured latency of each row, > 0.
    point : [their units] every parameter's value; those not in ``params`` stay there.
    params : the parameters to fit.
    starts : starting points in the fit's coordinates (see :meth:`Parameter.to_x`).
    min_improvement : a later start replaces the best so far only when it lowers the cost by
        more than this.

    Notes
    -----
    Residuals ``r_i = ln t_pred,i - ln t_meas,i`` (relative errors, so a 20 ms step and a 2 s
    one weigh alike); :func:`scipy.optimize.least_squares`, trust-region reflective within the
    parameters' bounds, ``x_scale="jac"``, from each start; the lowest cost wins.
    """
    from scipy.optimize import least_squares

    from pddplan.io import physics_disk

    physics_disk.transient()  # every step of the fit is a chip no other run asks for
    log_meas = np.log(measured_s)

    def at(x: np.ndarray) -> dict[str, float]:
        d = dict(point)
        d.update({p.name: p.from_x(float(v)) for p, v in zip(params, x, strict=True)})
        return d

    def residuals(x: np.ndarray) -> np.ndarray:
        return np.log(predict(at(x))) - log_meas

    lo, hi = x_bounds(params)
    best = None
    evaluations = 0
    for x0 in starts:
        res = least_squares(residuals, x0, bounds=(lo, hi), x_scale="jac", method="trf")
        evaluations += int(res.nfev)
        if best is None or res.cost < best.cost - min_improvement:
            best = res
    assert best is not None
    return Solution(at(best.x), tuple(params), best, evaluations)


@dataclass(frozen=True)
class ErrorSummary:
    """Absolute relative errors of predictions against measurements [%]."""

    median_abs_pct: float
    max_abs_pct: float

    @classmethod
    def of(cls, predicted: np.ndarray, measured: np.ndarray) -> ErrorSummary:
        e = np.abs(np.asarray(predicted) / np.asarray(measured) - 1.0) * 100.0
        return cls(float(np.median(e)), float(np.max(e)))


@dataclass(frozen=True)
class ParameterFit:
    """The outcome for one parameter.

    Attributes
    ----------
    name, unit : the parameter and its unit.
    default : [unit] the value the fit started from (the profile's).
    fitted : [unit] the fitted value; equals ``default`` when not fitted.
    status : ``fitted``, ``fitted (at bound)``, ``held fixed`` or ``not identified: ...``.
    sensitivity : [-] its importance ``delta_msqr`` where it was checked (None, or 0 for a
        link, when it was no candidate).
    stderr : [unit] approximate 1-sigma uncertainty of the fitted value (None when unknown).
    in_profile : False for a nuisance parameter, which no profile holds.
    """

    name: str
    unit: str
    default: float
    fitted: float
    status: str
    sensitivity: float | None
    stderr: float | None
    in_profile: bool = True

    @property
    def was_fitted(self) -> bool:
        return self.status.startswith("fitted")


@dataclass(frozen=True)
class Fit:
    """What every calibration returns: each parameter's outcome, the measured and the fitted
    latencies of the rows, and how the optimizer ended.

    Attributes
    ----------
    parameters : the outcome of every parameter, fitted or not.
    measured_s : [s] the measured latency of each row.
    fitted_s : [s] the model's latency of each row at the fitted values.
    success : whether the optimizer converged (True when nothing was fitted).
    message : the optimizer's message, or :data:`NOTHING_TO_FIT`.
    """

    parameters: tuple[ParameterFit, ...]
    measured_s: np.ndarray
    fitted_s: np.ndarray
    success: bool
    message: str

    @property
    def fitted_names(self) -> list[str]:
        return [p.name for p in self.parameters if p.was_fitted]

    def parameter(self, name: str) -> ParameterFit:
        return next(p for p in self.parameters if p.name == name)


def significant(value: float, digits: int = 4) -> float:
    """``value`` rounded to ``digits`` significant digits, as a calibrated profile holds it."""
    return float(f"{value:.{digits}g}")


def status_of(
    name: str,
    fixed: Collection[str],
    fitted: Collection[str],
    reasons: Mapping[str, str],
    at_bound: bool = False,
) -> str:
    """``held fixed``, ``fitted`` (``fitted (at bound)`` where ``at_bound``: the fit stopped
    at an end of the parameter's range), or the reason it is not identified. The one status of
    a chip's and a link's calibration."""
    if name in fixed:
        return "held fixed"
    if name in fitted:
        return "fitted (at bound)" if at_bound else "fitted"
    return reasons.get(name, "not identified")


AT_BOUND = "fitted (at bound)"


def fit_warnings(fit: Fit) -> list[str]:
    """What a calibration's reader must be told before trusting its values: an optimizer that
    did not converge, and each parameter the fit drove to an end of its range (the rows push
    it past what a profile may hold: a bad row, or a term the model lacks). The one list of a
    chip's and a link's calibration."""
    out = []
    if not fit.success:
        out.append(f"the fit did not converge: {fit.message}")
    for p in fit.parameters:
        if p.status == AT_BOUND:
            out.append(
                f"{p.name} was fitted at an end of its range ({p.fitted:.4g} {p.unit}): the rows "
                "push it past what a profile may hold; check them before using the value"
            )
    return out
