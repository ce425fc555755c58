"""The robust study's sampling and rank correlation without scipy.stats or scipy.special: the
same numbers as the scipy functions they replaced (scipy is a dependency, so they are at hand
here)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ndtri
from scipy.stats import qmc, rankdata

from pddplan.robust.inputs import latin_hypercube, normal_quantile
from pddplan.robust.run import _spearman, average_ranks


@pytest.mark.parametrize("seed", [0, 1, 7, 123_456_789, 2**40])
@pytest.mark.parametrize(("samples", "dims"), [(2, 1), (10, 3), (1000, 27), (7, 5)])
def test_latin_hypercube_is_scipys(seed: int, samples: int, dims: int) -> None:
    ours = latin_hypercube(samples, dims, seed)
    theirs = qmc.LatinHypercube(d=dims, seed=seed).random(samples)
    assert np.array_equal(ours, theirs)


def test_latin_hypercube_is_stratified() -> None:
    u = latin_hypercube(500, 4, 3)
    assert u.shape == (500, 4)
    assert np.all((u > 0) & (u < 1))
    for j in range(4):  # one draw in each of the 500 strata of every column
        assert sorted(np.floor(u[:, j] * 500).astype(int)) == list(range(500))


def test_latin_hypercube_seeded() -> None:
    assert np.array_equal(latin_hypercube(50, 3, 11), latin_hypercube(50, 3, 11))
    assert not np.array_equal(latin_hypercube(50, 3, 11), latin_hypercube(50, 3, 12))


@pytest.mark.parametrize(
    "a",
    [
        np.random.default_rng(3).random(1000),
        np.random.default_rng(4).integers(0, 5, 1000).astype(float),
        np.array([1.0, 1.0, 1.0]),
        np.array([np.inf, 1.0, np.inf, -np.inf, 0.0]),
        np.array([2.0]),
    ],
)
def test_average_ranks_are_rankdatas(a: np.ndarray) -> None:
    assert np.array_equal(average_ranks(a), rankdata(a))


def test_spearman() -> None:
    x = np.arange(10.0)
    assert _spearman(x, x**3) == pytest.approx(1.0)
    assert _spearman(x, -x) == pytest.approx(-1.0)
    assert _spearman(x, np.ones(10)) == 0.0  # a constant: undefined
    y = x.copy()
    y[3] = np.nan
    assert _spearman(x, y) == 0.0  # a NaN: undefined, as scipy's propagated NaN gave


def test_normal_quantile_is_ndtri_to_the_bit() -> None:
    """Every branch of Cephes' ndtri (the centre, the tails below exp(-2) and below exp(-32),
    their mirror images near 1), its edges and what lies outside [0, 1]."""
    rng = np.random.default_rng(2026)
    u = np.concatenate(
        [
            rng.uniform(size=200_000),
            10.0 ** -rng.uniform(0.0, 307.0, size=50_000),
            1.0 - 10.0 ** -rng.uniform(0.5, 16.0, size=50_000),
            [0.0, 1.0, 0.5, 0.13533528323661269, 1.0 - 0.13533528323661269, 1.2664165549e-14],
            [5e-324, 1e-320, np.nextafter(1.0, 0.0), np.nextafter(0.5, 0.0), 0.001, 0.999],
        ]
    )
    assert np.array_equal(normal_quantile(u), ndtri(u))
    assert np.all(np.isnan(normal_quantile(np.array([-0.1, 1.1, np.nan]))))
    assert normal_quantile(np.array([[0.5, 0.975]])).shape == (1, 2)
