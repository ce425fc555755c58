"""The numpy incomplete gamma (pddplan.models.gammafn) against scipy.special, the reference it
replaces on the solve path (scipy.special's import cost a third of a second a start).

Tolerance: 1e-11 relative where Q > 1e-280 (the model's Erlang and gamma-wait uses need about
1e-9: the golden outputs compare at 1e-6), 1e-14 relative for the inverse at q = 1e-13 (the
gamma table's end).
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import special

from pddplan.models import gammafn


@pytest.mark.parametrize(
    ("a_lo", "a_hi", "x_hi"),
    [(0.3, 6.0, 60.0), (1.0, 2000.0, 3000.0), (0.5, 1.5, 1e-3), (5.0, 50.0, 5.0)],
)
def test_gammaincc_matches_scipy_on_arrays(a_lo: float, a_hi: float, x_hi: float) -> None:
    rng = np.random.default_rng(7)
    a = rng.uniform(a_lo, a_hi, 5000)
    x = rng.uniform(0.0, x_hi, 5000)
    ref = special.gammaincc(a, x)
    got = gammafn.gammaincc(a, x)
    m = ref > 1e-280
    assert np.all(np.abs(got[m] - ref[m]) <= 1e-11 * ref[m])
    assert np.all(got[~m] < 1e-270)


def test_erlang_arguments_match_scipy_as_scalars() -> None:
    # P(N <= c) = Q(c + 1, a) at the loads the pools run at
    for c in range(1, 600, 7):
        for rho in (0.1, 0.5, 0.85, 0.99, 0.9999):
            a = c * rho
            ref = float(special.gammaincc(c + 1, a))
            got = gammafn.gammaincc(c + 1, a)
            assert isinstance(got, float)
            assert abs(got - ref) <= 1e-11 * ref, (c, rho)


def test_edges() -> None:
    assert gammafn.gammaincc(2.0, 0.0) == 1.0
    assert gammafn.gammaincc(2.0, math.inf) == 0.0
    assert math.isnan(gammafn.gammaincc(-1.0, 1.0))
    out = gammafn.gammaincc(np.array([1.0, 2.0]), np.array([0.0, math.inf]))
    assert out.tolist() == [1.0, 0.0]
    assert gammafn.gammaincc(1.0, 3.0) == pytest.approx(math.exp(-3.0), rel=1e-15)
    assert gammafn.gammaln(5.0) == pytest.approx(math.log(24.0), rel=1e-15)
    assert np.allclose(gammafn.gammaln(np.array([1.0, 5.0])), [0.0, math.log(24.0)])


@pytest.mark.parametrize("shape", [0.5, 0.9, 1.3, 2.7, 5.0, 40.0])
def test_inverse_matches_scipy(shape: float) -> None:
    ref = float(special.gammainccinv(shape, 1e-13))
    assert gammafn.gammainccinv(shape, 1e-13) == pytest.approx(ref, rel=1e-14)
    with pytest.raises(ValueError):
        gammafn.gammainccinv(shape, 0.0)


def test_a_solve_does_not_import_scipy() -> None:
    code = "import sys, pddplan; pddplan.solve('default'); print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
