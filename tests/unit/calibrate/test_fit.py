"""The shared calibration framework: least squares, standard errors, selection rules, cells."""

from __future__ import annotations

import numpy as np
import pytest

from pddplan.calibrate.cells import Where, at_most, parse_number, require
from pddplan.calibrate.fit import (
    NOTHING_TO_FIT,
    Parameter,
    scaled_starts,
    solve,
    unfitted,
)
from pddplan.calibrate.identify import forward_selection, pivoted_qr_selection
from pddplan.errors import ProfileError

X = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
#: t = a * x^b: linear in (ln a, b) on log latency, so the fit is ordinary least squares.
A = Parameter("a", "s", 1e-6, 1e3, log=True)
B = Parameter("b", "-", -5.0, 5.0)


def power_law(p):
    return p["a"] * X ** p["b"]


def test_solve_is_ordinary_least_squares_on_log_latency() -> None:
    noise = np.exp(np.random.default_rng(2).normal(0.0, 0.05, len(X)))
    measured_s = 0.3 * X**0.7 * noise
    point = {"a": 1.0, "b": 0.0, "c": 9.0}  # c is not fitted and stays
    sol = solve(power_law, measured_s, point, [A, B], scaled_starts([A, B], point, (1.0, 2.0)))
    assert sol.success and sol.names == ["a", "b"] and sol.values["c"] == 9.0
    design = np.column_stack([np.ones(len(X)), np.log(X)])
    coef, rss, *_ = np.linalg.lstsq(design, np.log(measured_s), rcond=None)
    assert np.log(sol.values["a"]) == pytest.approx(coef[0], abs=1e-6)
    assert sol.values["b"] == pytest.approx(coef[1], abs=1e-6)
    # OLS standard errors; a log parameter's error is its value times its log's
    se = np.sqrt(np.diag(float(rss[0]) / (len(X) - 2) * np.linalg.inv(design.T @ design)))
    stderr = sol.stderr(len(X))
    assert stderr["a"] == pytest.approx(sol.values["a"] * se[0], rel=1e-4)
    assert stderr["b"] == pytest.approx(se[1], rel=1e-4)
    assert sol.stderr(2) == {}  # no more rows than parameters


def test_unfitted_keeps_the_point() -> None:
    sol = unfitted({"a": 2.0})
    assert sol.values == {"a": 2.0} and sol.success and sol.message == NOTHING_TO_FIT
    assert sol.stderr(10) == {}


def test_starts_move_a_zero_parameter_to_its_scale_floor_and_clip() -> None:
    z = Parameter("z", "ms", 0.0, 1.5, scale_floor=1.0)
    starts = scaled_starts([A, z], {"a": 1e3, "z": 0.0}, (1.0, 0.5, 2.0))
    assert [float(np.exp(s[0])) for s in starts] == pytest.approx([1e3, 500.0, 1e3])
    assert [float(s[1]) for s in starts] == [0.0, 0.5, 1.5]


def test_parameter_coordinates_and_bounds() -> None:
    assert A.from_x(A.to_x(0.25)) == pytest.approx(0.25)
    assert B.to_x(-1.0) == -1.0
    assert A.at_bound(1e3) and not A.at_bound(1.0)
    assert B.nearest_bound(4.0) == 5.0 and B.nearest_bound(-4.0) == -5.0


@pytest.mark.parametrize("select", ["forward", "qr"])
def test_selection_drops_a_repeated_and_a_flat_column(select: str) -> None:
    s = np.column_stack([np.log(X), 2.0 * np.log(X), np.ones(len(X)), np.zeros(len(X))])
    names = ["p", "twice_p", "level", "flat"]
    if select == "forward":
        ident = forward_selection(s, names, first=(), sensitivity_min=1e-3, collinearity_max=10)
    else:
        ident = pivoted_qr_selection(s, names, sensitivity_min=1e-3, tolerance=1e-3)
    assert "level" in ident.identified and "flat" not in ident.identified
    assert len({"p", "twice_p"} & set(ident.identified)) == 1
    assert "barely depend" in ident.reasons["flat"]


def test_cell_errors_name_file_line_and_column() -> None:
    at = Where("m.csv", 7)
    with pytest.raises(ProfileError, match=r"^m\.csv:7: tokens: expected a number, got 'x'$"):
        parse_number("x", "tokens", at)
    with pytest.raises(ProfileError, match=r"^m\.csv:7: tp: must be > 0, got '0'$"):
        require(False, "0", "tp", at, "must be > 0")
    with pytest.raises(ProfileError, match=r"^m\.csv:7: tp: must be at most 8, got '9'$"):
        at_most(9.0, "9", "tp", at, {"tp": 8.0})
    at_most(9.0, "9", "batch", at, {"tp": 8.0})  # no bound for that column
