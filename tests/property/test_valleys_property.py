"""Property tests of pddplan.models.valleys.

Curves are integer-valued and scale factors powers of two, so that shifting and scaling are
exact in floating point and a depth that equals the tolerance stays equal.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pddplan.models.valleys import (
    find_valleys,
    share_in_intervals,
    singular_hit_rates,
    tail_chunk_tokens,
)

curves = st.lists(st.integers(min_value=-1000, max_value=1000), min_size=0, max_size=40)
positive_curves = st.lists(st.integers(min_value=1, max_value=1000), min_size=0, max_size=40)
tolerances = st.sampled_from([0.0, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5])
abs_tolerances = st.integers(min_value=0, max_value=200).map(float)
shifts = st.integers(min_value=-10_000, max_value=10_000).map(float)
scales = st.integers(min_value=-20, max_value=20).map(lambda e: 2.0**e)


def _grid(n: int) -> np.ndarray:
    """Strictly increasing, non-uniform abscissae."""
    return np.cumsum(np.arange(1.0, n + 1.0))


def _intervals(valleys: list) -> list[tuple[float, float]]:
    return [(v.start_x, v.end_x) for v in valleys]


@given(curves, shifts, abs_tolerances)
def test_shift_does_not_move_valleys_absolute(y: list[int], shift: float, tol: float) -> None:
    x = _grid(len(y))
    y_arr = np.asarray(y, dtype=float)
    base = find_valleys(x, y_arr, tolerance=tol, relative=False)
    moved = find_valleys(x, y_arr + shift, tolerance=tol, relative=False)
    assert _intervals(moved) == _intervals(base)
    assert [v.depth for v in moved] == [v.depth for v in base]


@given(curves, scales, tolerances)
def test_scale_does_not_move_valleys_relative(y: list[int], scale: float, tol: float) -> None:
    x = _grid(len(y))
    y_arr = np.asarray(y, dtype=float)
    base = find_valleys(x, y_arr, tolerance=tol)
    scaled = find_valleys(x, y_arr * scale, tolerance=tol)
    assert _intervals(scaled) == _intervals(base)
    assert [v.depth_fraction for v in scaled] == [v.depth_fraction for v in base]


@given(positive_curves, shifts, scales)
def test_basins_do_not_depend_on_shift_or_scale(y: list[int], shift: float, scale: float) -> None:
    # with zero tolerance every basin is reported, under any affine map with positive slope
    x = _grid(len(y))
    y_arr = np.asarray(y, dtype=float)
    base = _intervals(find_valleys(x, y_arr, tolerance=0.0))
    assert _intervals(find_valleys(x, y_arr * scale + shift, tolerance=0.0)) == base


@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=0, max_size=40),
    st.booleans(),
)
def test_monotone_sequences_have_no_valley(y: list[float], decreasing: bool) -> None:
    y_sorted = sorted(y, reverse=decreasing)
    assert find_valleys(_grid(len(y)), y_sorted, tolerance=0.0) == []


@given(curves, tolerances, st.booleans())
def test_valleys_are_deeper_than_tolerance_below_both_peaks(
    y: list[int], tol: float, relative: bool
) -> None:
    x = _grid(len(y))
    y_arr = np.asarray(y, dtype=float)
    tolerance = tol if relative else tol * 100.0
    valleys = find_valleys(x, y_arr, tolerance=tolerance, relative=relative)
    y_at = dict(zip(x.tolist(), y_arr.tolist(), strict=True))
    previous_end = -np.inf
    for v in valleys:
        left_peak_y = y_at[v.left_peak_x]
        right_peak_y = y_at[v.right_peak_x]
        level = min(left_peak_y, right_peak_y)
        tol_abs = tolerance * abs(level) if relative else tolerance
        assert left_peak_y - v.deepest_y >= tol_abs
        assert right_peak_y - v.deepest_y >= tol_abs
        assert v.depth == level - v.deepest_y > tol_abs
        assert v.depth > 0
        assert y_at[v.deepest_x] == v.deepest_y
        for peak_x in (v.left_peak_x, v.right_peak_x):  # peaks are local maxima
            i = int(np.flatnonzero(x == peak_x)[0])
            assert np.all(y_arr[max(i - 1, 0) : i + 2] <= y_arr[i])
        assert previous_end < v.left_peak_x < v.start_x <= v.deepest_x <= v.end_x
        assert v.end_x < v.right_peak_x
        previous_end = v.end_x
        # every sample inside lies strictly below the level
        inside = (x >= v.start_x) & (x <= v.end_x)
        assert np.all(y_arr[inside] < level)
        assert v.deepest_y == y_arr[inside].min()


@given(curves, tolerances)
def test_larger_tolerance_reports_a_subset(y: list[int], tol: float) -> None:
    x = _grid(len(y))
    loose = _intervals(find_valleys(x, y, tolerance=tol))
    strict = _intervals(find_valleys(x, y, tolerance=2 * tol + 0.01))
    assert set(strict) <= set(loose)


@given(
    st.lists(
        st.one_of(st.integers(-1000, 1000).map(float), st.just(float("nan"))),
        min_size=0,
        max_size=40,
    ),
    tolerances,
)
def test_nan_samples_are_the_same_as_absent_samples(y: list[float], tol: float) -> None:
    x = _grid(len(y))
    y_arr = np.asarray(y, dtype=float)
    keep = ~np.isnan(y_arr)
    assert find_valleys(x, y_arr, tolerance=tol) == find_valleys(
        x[keep], y_arr[keep], tolerance=tol
    )


@given(curves, st.lists(st.floats(0.0, 10.0), min_size=1, max_size=20))
def test_share_is_a_fraction(y: list[int], w: list[float]) -> None:
    x = _grid(len(y))
    valleys = find_valleys(x, y, tolerance=0.0)
    weights = np.asarray(w) + 1e-3
    sample_x = np.linspace(0.0, float(x[-1]) if len(x) else 1.0, len(w))
    share = share_in_intervals(valleys, sample_x, weights)
    assert 0.0 <= share <= 1.0 + 1e-12
    if not valleys:
        assert share == 0.0


@given(
    st.lists(st.integers(min_value=0, max_value=10**9), min_size=1, max_size=30),
    st.integers(min_value=1, max_value=65536),
)
def test_tail_chunk_tokens_scalar_and_array_agree(uncached: list[int], chunk: int) -> None:
    array_tail = tail_chunk_tokens(np.asarray(uncached), chunk)
    scalar_tail = [tail_chunk_tokens(u, chunk) for u in uncached]
    np.testing.assert_array_equal(array_tail, scalar_tail)
    for u, t in zip(uncached, scalar_tail, strict=True):
        assert 0 <= t < chunk
        assert (u - t) % chunk == 0


@settings(deadline=None)
@given(
    st.integers(min_value=1, max_value=2**17),
    st.sampled_from([256, 512, 1000, 2048, 4096, 8192]),
    st.sampled_from([0.01, 0.05, 0.1, 0.25, 1.0]),
    st.sampled_from([1, 16, 64, 128, 1024]),
)
def test_singular_points_are_consistent(
    input_tokens: int, chunk: int, fraction: float, block: int
) -> None:
    points = singular_hit_rates(input_tokens, chunk, max_tail_fraction=fraction, block_tokens=block)
    hit_rates = [p.hit_rate for p in points]
    assert hit_rates == sorted(hit_rates)
    assert len({p.chunks_full for p in points}) == len(points)
    for p in points:
        assert 0.0 <= p.hit_rate < 1.0
        cached = round(p.hit_rate * input_tokens)
        assert cached % block == 0
        uncached = input_tokens - cached
        assert uncached // chunk == p.chunks_full >= 1
        assert tail_chunk_tokens(uncached, chunk) == p.tail_tokens
        assert 0 < p.tail_tokens < fraction * chunk
        assert p.tail_tokens <= block
        assert p.interval_lo <= p.hit_rate < p.interval_hi
        assert p.interval_lo < p.hit_rate or p.interval_lo == 0.0
    if block == 1 and fraction * chunk > 1:
        # one point per boundary k * C < L, at uncached = k * C + 1
        assert len(points) == (input_tokens - 1) // chunk
