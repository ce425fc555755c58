"""Which parameters the rows identify, from the scaled sensitivity matrix.

Two selection rules, each on ``S`` of :func:`pddplan.calibrate.fit.sensitivities`: the chip fit
takes parameters in decreasing importance while the set's collinearity index stays small
(:func:`forward_selection`, [1]_); the link fit keeps the columns a pivoted QR ranks as
independent (:func:`pivoted_qr_selection`, [2]_). Both drop a parameter the rows barely depend
on, and keep at most as many parameters as rows.

References
----------
.. [1] Brun, Reichert and Kuensch, "Practical identifiability analysis of large environmental
   simulation models", Water Resources Research 37(4), 2001: parameter importance
   ``delta_msqr`` and the collinearity index ``gamma_K``.
.. [2] Golub and Van Loan, "Matrix Computations", 4th ed., 2013, section 5.4.2: QR with column
   pivoting reveals the numerical rank and orders the columns by independence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pddplan.calibrate.fit import importance


@dataclass(frozen=True)
class Identification:
    """Which parameters the rows identify, and why the others are not."""

    identified: tuple[str, ...]
    reasons: dict[str, str]  # parameter -> why it is not identified
    sensitivity: dict[str, float]  # delta_msqr of each candidate parameter [-]
    collinearity: float  # gamma_K of the identified set [-] (1 for one parameter or none)


def collinearity_index(s: np.ndarray) -> float:
    """``gamma_K = 1 / sqrt(min eig(S_n^T S_n))`` of column-normalized ``S`` [1]_ [-]."""
    if s.shape[1] == 0:
        return 1.0
    norms = np.linalg.norm(s, axis=0)
    sn = s / np.where(norms > 0, norms, 1.0)
    lam = float(np.linalg.eigvalsh(sn.T @ sn)[0])
    return math.inf if lam <= 1e-300 else 1.0 / math.sqrt(lam)


def insensitive(delta: float) -> str:
    """The reason given for a parameter the rows barely depend on."""
    return f"not identified: the rows barely depend on it (sensitivity {delta:.2g})"


def forward_selection(
    s: np.ndarray,
    names: Sequence[str],
    *,
    first: Sequence[str],
    sensitivity_min: float,
    collinearity_max: float,
) -> Identification:
    """Forward selection by importance under a collinearity limit [1]_.

    Parameters
    ----------
    s : [-] scaled sensitivities, one column per name.
    names : the candidate parameters.
    first : candidates taken before the others, in this order.
    sensitivity_min, collinearity_max : a candidate is dropped when its importance is below
        ``sensitivity_min``, or when adding it lifts the set's collinearity index above
        ``collinearity_max`` (it is then reported as collinear with the set).
    """
    delta = importance(s, names)
    col = {n: j for j, n in enumerate(names)}
    reasons: dict[str, str] = {}

    def gamma(chosen: Sequence[str]) -> float:
        return collinearity_index(s[:, [col[n] for n in chosen]])

    order = [n for n in first if n in col]
    order += sorted((n for n in names if n not in order), key=lambda m: -delta[m])
    chosen: list[str] = []
    for n in order:
        if delta[n] < sensitivity_min:
            reasons[n] = insensitive(delta[n])
        elif len(chosen) >= s.shape[0]:
            reasons[n] = "not identified: no more rows than parameters"
        elif (g := gamma([*chosen, n])) > collinearity_max:
            reasons[n] = (
                f"not identified: collinear with {', '.join(chosen)} "
                f"(collinearity index {g:.3g} > {collinearity_max:g})"
            )
        else:
            chosen.append(n)
    keep = tuple(n for n in names if n in chosen)
    return Identification(keep, reasons, delta, gamma(keep) if keep else 1.0)


def pivoted_qr_selection(
    s: np.ndarray, names: Sequence[str], *, sensitivity_min: float, tolerance: float
) -> Identification:
    """The columns a column-pivoted QR of ``S`` ranks as independent [2]_.

    Parameters
    ----------
    s : [-] scaled sensitivities, one column per name.
    names : the candidate parameters.
    sensitivity_min : a candidate whose importance is below this is dropped.
    tolerance : a candidate is dropped when its pivot ``|R_kk|`` is below this share of the
        largest one (its effect is a combination of the others').

    Notes
    -----
    ``identified`` is in pivot order (most independent first).
    """
    from scipy.linalg import qr

    delta = importance(s, names)
    reasons: dict[str, str] = {}
    chosen: list[str] = []
    n_rows = s.shape[0]
    if names:
        _, r, piv = qr(s, pivoting=True, mode="economic")
        diag = np.abs(np.diag(r)) if r.size else np.zeros(0)
        top = float(diag[0]) if len(diag) else 0.0
        for k, j in enumerate(piv):
            n = names[int(j)]
            if delta[n] < sensitivity_min:
                reasons[n] = insensitive(delta[n])
            elif k >= len(diag) or k >= n_rows:
                reasons[n] = (
                    f"not identified: {n_rows} usable row(s) identify at most {n_rows} parameter(s)"
                )
            elif float(diag[k]) < tolerance * top:
                reasons[n] = (
                    "not identified: its effect on the rows is a combination of the fitted "
                    "parameters'"
                )
            else:
                chosen.append(n)
    col = {n: j for j, n in enumerate(names)}
    gamma = collinearity_index(s[:, [col[n] for n in chosen]]) if chosen else 1.0
    return Identification(tuple(chosen), reasons, delta, gamma)
