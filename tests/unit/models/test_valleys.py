"""Unit tests of pddplan.models.valleys, against hand-computed values."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from pddplan.models.valleys import (
    SingularPoint,
    Valley,
    find_valleys,
    share_in_intervals,
    singular_hit_rates,
    tail_chunk_tokens,
)

# ----------------------------------------------------------------------------- find_valleys


def test_flat_curve_has_no_valley() -> None:
    assert find_valleys(np.arange(6.0), np.full(6, 5.0)) == []
    assert find_valleys(np.arange(6.0), np.full(6, 5.0), tolerance=0.0) == []


@pytest.mark.parametrize(
    "y",
    [
        [1.0, 2.0, 3.0, 4.0, 5.0],
        [5.0, 4.0, 3.0, 2.0, 1.0],
        [1.0, 2.0, 2.0, 2.0, 7.0],  # non-decreasing with a plateau
        [7.0, 3.0, 3.0, 1.0, 1.0],  # non-increasing with plateaus
    ],
)
def test_monotone_curves_have_no_valley(y: list[float]) -> None:
    assert find_valleys(np.arange(len(y), dtype=float), y, tolerance=0.0) == []


def test_v_shape_is_one_valley() -> None:
    # level = min(10, 10) = 10 everywhere; depth = [0, 2, 4, 2, 0]
    (v,) = find_valleys([0.0, 1.0, 2.0, 3.0, 4.0], [10.0, 8.0, 6.0, 8.0, 10.0])
    assert v == Valley(
        start_x=1.0,
        end_x=3.0,
        deepest_x=2.0,
        deepest_y=6.0,
        depth=4.0,
        depth_fraction=0.4,
        left_peak_x=0.0,
        right_peak_x=4.0,
    )


def test_asymmetric_v_uses_the_lower_peak() -> None:
    # right max = 8 < left max = 10, so level = 8; depth = [0, 1, 4, 2, 0]
    (v,) = find_valleys([0.0, 0.5, 1.0, 2.0, 4.0], [10.0, 7.0, 4.0, 6.0, 8.0])
    assert (v.start_x, v.end_x) == (0.5, 2.0)
    assert (v.deepest_x, v.deepest_y) == (1.0, 4.0)
    assert v.depth == 4.0
    assert v.depth_fraction == pytest.approx(0.5)
    assert (v.left_peak_x, v.right_peak_x) == (0.0, 4.0)


def test_w_shape_is_two_valleys() -> None:
    # the middle sample reaches the level, so depth = [0, 4, 0, 5, 0]: two basins
    x = [0.0, 0.5, 1.0, 2.0, 4.0]
    v1, v2 = find_valleys(x, [10.0, 6.0, 10.0, 5.0, 10.0])
    assert (v1.start_x, v1.end_x, v1.deepest_x, v1.depth) == (0.5, 0.5, 0.5, 4.0)
    assert (v1.left_peak_x, v1.right_peak_x) == (0.0, 1.0)
    assert v1.depth_fraction == pytest.approx(0.4)
    assert (v2.start_x, v2.end_x, v2.deepest_x, v2.depth) == (2.0, 2.0, 2.0, 5.0)
    assert (v2.left_peak_x, v2.right_peak_x) == (1.0, 4.0)
    assert v2.depth_fraction == pytest.approx(0.5)


def test_w_shape_with_unequal_peaks_is_two_valleys() -> None:
    # L = [3, 3, 4, 4, 4], R = [4, 4, 4, 3, 3], level = [3, 3, 4, 3, 3], depth = [0, 2, 0, 2, 0]
    v1, v2 = find_valleys(np.arange(5.0), [3.0, 1.0, 4.0, 1.0, 3.0], tolerance=0.0)
    assert (v1.deepest_x, v1.depth, v1.left_peak_x, v1.right_peak_x) == (1.0, 2.0, 0.0, 2.0)
    assert (v2.deepest_x, v2.depth, v2.left_peak_x, v2.right_peak_x) == (3.0, 2.0, 2.0, 4.0)
    assert v1.depth_fraction == pytest.approx(2.0 / 3.0)


def test_peaks_are_the_adjacent_summits_not_the_global_maxima() -> None:
    # L = 20 everywhere, R = [20, 15, 15, 10, 10]: level = [20, 15, 15, 10, 10],
    # depth = [0, 3, 0, 1, 0]. The second valley's left peak is the summit at x=2 (15),
    # not the global left maximum at x=0 (20).
    v1, v2 = find_valleys(np.arange(5.0), [20.0, 12.0, 15.0, 9.0, 10.0], tolerance=0.0)
    assert (v1.deepest_x, v1.depth, v1.left_peak_x, v1.right_peak_x) == (1.0, 3.0, 0.0, 2.0)
    assert (v2.deepest_x, v2.depth, v2.left_peak_x, v2.right_peak_x) == (3.0, 1.0, 2.0, 4.0)
    assert v2.depth_fraction == pytest.approx(0.1)


def test_peaks_climb_over_plateaus() -> None:
    # level = min(6, 8) = 6 at x=1, depth 4; the right rim x=2 (7) climbs over the plateau at 7
    # to the summit plateau at 8, whose sample nearest the valley is x=4
    (v,) = find_valleys(np.arange(7.0), [6.0, 2.0, 7.0, 7.0, 8.0, 8.0, 3.0])
    assert (v.start_x, v.end_x, v.deepest_x, v.depth) == (1.0, 1.0, 1.0, 4.0)
    assert (v.left_peak_x, v.right_peak_x) == (0.0, 4.0)
    assert v.depth_fraction == pytest.approx(2.0 / 3.0)
    # the mirror image
    (w,) = find_valleys(np.arange(7.0), [3.0, 8.0, 8.0, 7.0, 7.0, 2.0, 6.0])
    assert (w.start_x, w.end_x, w.deepest_x, w.depth) == (5.0, 5.0, 5.0, 4.0)
    assert (w.left_peak_x, w.right_peak_x) == (2.0, 6.0)


def test_flooded_middle_bump_does_not_split() -> None:
    # the bump at 8 stays below the level 10: depth = [0, 4, 2, 5, 0], one basin
    (v,) = find_valleys(np.arange(5.0), [10.0, 6.0, 8.0, 5.0, 10.0])
    assert (v.start_x, v.end_x, v.deepest_x, v.deepest_y, v.depth) == (1.0, 3.0, 3.0, 5.0, 5.0)
    assert (v.left_peak_x, v.right_peak_x) == (0.0, 4.0)


def test_bathtub_with_shoulder_ripple_keeps_only_the_main_valley() -> None:
    x = np.arange(11.0)
    y = [10.0, 10.0, 9.9, 10.0, 10.0, 5.0, 5.05, 5.0, 5.0, 10.0, 10.0]
    # ripple at x=2: depth 0.1 <= 0.02 * 10; bottom ripple at x=6 is flooded (depth 4.95)
    (v,) = find_valleys(x, y)
    assert (v.start_x, v.end_x) == (5.0, 8.0)
    assert (v.deepest_x, v.deepest_y, v.depth, v.depth_fraction) == (5.0, 5.0, 5.0, 0.5)
    # nearest of the equal maxima on each side
    assert (v.left_peak_x, v.right_peak_x) == (4.0, 9.0)
    # an absolute tolerance below the ripple keeps it too
    ripple, main = find_valleys(x, y, tolerance=0.05, relative=False)
    assert (ripple.start_x, ripple.end_x, ripple.deepest_x) == (2.0, 2.0, 2.0)
    assert ripple.depth == pytest.approx(0.1)
    assert (ripple.left_peak_x, ripple.right_peak_x) == (1.0, 3.0)
    assert main == v


def test_noise_below_tolerance_is_no_valley() -> None:
    x = np.arange(8.0)
    y = 10.0 + np.array([0.0, -0.05, 0.03, -0.1, 0.05, -0.02, 0.04, 0.0])
    assert find_valleys(x, y) == []  # tol = 0.02 * ~10 = ~0.2 > every depth
    assert find_valleys(x, y, tolerance=0.15, relative=False) == []
    assert len(find_valleys(x, y, tolerance=0.0)) > 0


def test_depth_equal_to_tolerance_is_not_a_valley() -> None:
    y = [4.0, 3.0, 4.0]  # depth 1
    assert find_valleys([0.0, 1.0, 2.0], y, tolerance=1.0, relative=False) == []
    assert find_valleys([0.0, 1.0, 2.0], y, tolerance=0.25) == []  # 0.25 * 4 = 1
    assert len(find_valleys([0.0, 1.0, 2.0], y, tolerance=0.24)) == 1


def test_relative_versus_absolute_tolerance() -> None:
    x, y = [0.0, 1.0, 2.0], [100.0, 99.0, 100.0]  # depth 1, level 100
    assert find_valleys(x, y) == []  # tol = 2
    (v,) = find_valleys(x, y, tolerance=0.5, relative=False)
    assert v.depth == 1.0
    assert v.depth_fraction == pytest.approx(0.01)


def test_negative_curve_relative_tolerance_uses_magnitude() -> None:
    (v,) = find_valleys([0.0, 1.0, 2.0], [-1.0, -2.0, -1.0])
    assert v.depth == 1.0
    assert v.depth_fraction == 1.0


def test_zero_level_gives_infinite_fraction() -> None:
    (v,) = find_valleys([0.0, 1.0, 2.0], [0.0, -3.0, 0.0])
    assert v.depth == 3.0
    assert math.isinf(v.depth_fraction)


def test_nan_samples_are_ignored() -> None:
    x = np.arange(6.0)
    # without the NaN: y = [10, 8, 6, 8, 10] at x = [0, 1, 3, 4, 5]
    (v,) = find_valleys(x, [10.0, 8.0, np.nan, 6.0, 8.0, 10.0])
    assert (v.start_x, v.end_x, v.deepest_x, v.depth) == (1.0, 4.0, 3.0, 4.0)
    assert (v.left_peak_x, v.right_peak_x) == (0.0, 5.0)


def test_nan_at_the_bottom_moves_the_deepest_point() -> None:
    (v,) = find_valleys(np.arange(5.0), [10.0, 8.0, np.nan, 8.0, 10.0])
    assert (v.start_x, v.end_x, v.deepest_x, v.deepest_y, v.depth) == (1.0, 3.0, 1.0, 8.0, 2.0)


def test_nan_at_the_edges() -> None:
    (v,) = find_valleys(np.arange(5.0), [np.nan, 10.0, 6.0, 10.0, np.nan])
    assert (v.start_x, v.end_x, v.left_peak_x, v.right_peak_x) == (2.0, 2.0, 1.0, 3.0)


def test_nan_leaving_fewer_than_three_samples() -> None:
    assert find_valleys(np.arange(4.0), [10.0, np.nan, np.nan, 10.0], tolerance=0.0) == []
    assert find_valleys(np.arange(3.0), [np.nan] * 3) == []


@pytest.mark.parametrize("n", [0, 1, 2])
def test_fewer_than_three_samples(n: int) -> None:
    assert find_valleys(np.arange(float(n)), np.arange(float(n)), tolerance=0.0) == []


def test_accepts_lists_and_returns_python_floats() -> None:
    (v,) = find_valleys([0, 1, 2], [3, 1, 3])
    for field in dataclasses.fields(v):
        assert type(getattr(v, field.name)) is float


def test_valley_is_frozen() -> None:
    (v,) = find_valleys([0, 1, 2], [3, 1, 3])
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.depth = 0.0  # type: ignore[misc]


@pytest.mark.parametrize(
    "x",
    [
        [0.0, 2.0, 1.0, 3.0],  # decreasing step
        [0.0, 1.0, 1.0, 3.0],  # repeated x
        [0.0, np.nan, 2.0, 3.0],  # NaN x
        [0.0, 1.0, 2.0, np.inf],
    ],
)
def test_x_must_be_finite_and_strictly_increasing(x: list[float]) -> None:
    with pytest.raises(ValueError, match="strictly increasing"):
        find_valleys(x, [1.0, 0.0, 1.0, 2.0])


def test_invalid_inputs() -> None:
    with pytest.raises(ValueError, match="equal length"):
        find_valleys([0.0, 1.0, 2.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="equal length"):
        find_valleys(np.zeros((2, 2)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="tolerance"):
        find_valleys([0.0, 1.0, 2.0], [1.0, 0.0, 1.0], tolerance=-0.1)
    with pytest.raises(ValueError, match="tolerance"):
        find_valleys([0.0, 1.0, 2.0], [1.0, 0.0, 1.0], tolerance=math.nan)
    with pytest.raises(ValueError, match="infinite"):
        find_valleys([0.0, 1.0, 2.0], [1.0, -np.inf, 1.0])


# ----------------------------------------------------------------------------- share_in_intervals


def test_share_in_one_interval_is_closed() -> None:
    valleys = find_valleys([0.0, 1.0, 2.0, 3.0, 4.0], [10.0, 8.0, 6.0, 8.0, 10.0])  # [1, 3]
    share = share_in_intervals(valleys, [0.0, 1.0, 2.0, 3.0, 4.0], [1.0, 1.0, 1.0, 1.0, 1.0])
    assert share == pytest.approx(3.0 / 5.0)


def test_share_in_two_intervals_with_unnormalised_weights() -> None:
    valleys = find_valleys([0.0, 0.5, 1.0, 2.0, 4.0], [10.0, 6.0, 10.0, 5.0, 10.0])
    # intervals [0.5, 0.5] and [2, 2]; inside weight 2 + 3 of 10
    share = share_in_intervals(valleys, [0.5, 0.75, 2.0, 3.0], [2.0, 1.0, 3.0, 4.0])
    assert share == pytest.approx(0.5)


def test_share_counts_a_sample_in_overlapping_intervals_once() -> None:
    v = Valley(1.0, 3.0, 2.0, 0.0, 1.0, 1.0, 0.0, 4.0)
    w = Valley(2.0, 4.0, 3.0, 0.0, 1.0, 1.0, 1.0, 5.0)
    assert share_in_intervals([v, w], [2.5, 5.0], [1.0, 1.0]) == pytest.approx(0.5)


def test_share_without_valleys_is_zero() -> None:
    assert share_in_intervals([], [0.1, 0.2], [0.5, 0.5]) == 0.0


def test_share_invalid_inputs() -> None:
    v = Valley(1.0, 3.0, 2.0, 0.0, 1.0, 1.0, 0.0, 4.0)
    with pytest.raises(ValueError, match="equal length"):
        share_in_intervals([v], [1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match=">= 0"):
        share_in_intervals([v], [1.0, 2.0], [1.0, -1.0])
    with pytest.raises(ValueError, match="sum to 0"):
        share_in_intervals([v], [1.0, 2.0], [0.0, 0.0])
    with pytest.raises(ValueError, match="finite"):
        share_in_intervals([v], [1.0, np.nan], [1.0, 1.0])


# ----------------------------------------------------------------------------- tail_chunk_tokens


@pytest.mark.parametrize(
    ("uncached_tokens", "chunk_size_tokens", "expected_tokens"),
    [
        (20000, 8192, 3616),  # 20000 - 2 * 8192
        (16384, 8192, 0),
        (8193, 8192, 1),
        (8191, 8192, 8191),
        (0, 8192, 0),
        (20000.0, 8192, 3616.0),
    ],
)
def test_tail_chunk_tokens_scalars(
    uncached_tokens: float, chunk_size_tokens: int, expected_tokens: float
) -> None:
    tail = tail_chunk_tokens(uncached_tokens, chunk_size_tokens)
    assert tail == expected_tokens
    assert not isinstance(tail, np.ndarray)


def test_tail_chunk_tokens_scalar_int_in_int_out() -> None:
    assert type(tail_chunk_tokens(20000, 8192)) is int


def test_tail_chunk_tokens_broadcasts() -> None:
    tail = tail_chunk_tokens(np.array([20000, 16384, 8193, 0]), 8192)
    np.testing.assert_array_equal(tail, [3616, 0, 1, 0])
    grid = tail_chunk_tokens(np.array([[20000], [16384]]), np.array([8192, 4096, 2048]))
    assert grid.shape == (2, 3)
    np.testing.assert_array_equal(grid, [[3616, 3616, 1568], [0, 0, 0]])


def test_tail_chunk_tokens_invalid_inputs() -> None:
    with pytest.raises(ValueError, match="uncached_tokens"):
        tail_chunk_tokens(-1, 8192)
    with pytest.raises(ValueError, match="chunk_size_tokens"):
        tail_chunk_tokens(100, 0)
    with pytest.raises(ValueError, match="finite"):
        tail_chunk_tokens(np.nan, 8192)
    with pytest.raises(TypeError):
        tail_chunk_tokens("100", 8192)


# ----------------------------------------------------------------------------- singular_hit_rates


def test_singular_hit_rates_65536_over_8192() -> None:
    points = singular_hit_rates(65536, 8192)
    # boundaries k = 1..7 (8 * 8192 = 65536 is not < 65536); U = k * 8192 + 1,
    # h = (65536 - U) / 65536 = 1 - k/8 - 1/65536; interval (1 - (k + 0.1)/8, 1 - k/8)
    assert [p.chunks_full for p in points] == [7, 6, 5, 4, 3, 2, 1]
    assert [p.tail_tokens for p in points] == [1] * 7
    expected_hit_rates = [8191 / 65536 + (7 - k) / 8 for k in (7, 6, 5, 4, 3, 2, 1)]
    assert [p.hit_rate for p in points] == pytest.approx(expected_hit_rates, abs=1e-15)
    first, last = points[0], points[-1]
    assert first == SingularPoint(
        hit_rate=8191 / 65536,  # U = 57345
        chunks_full=7,
        tail_tokens=1,
        interval_lo=pytest.approx(0.1125),
        interval_hi=0.125,
    )
    assert last.hit_rate == 57343 / 65536  # U = 8193, h = 0.8749847...
    assert last.hit_rate == pytest.approx(0.8749847412109375)
    assert (last.interval_lo, last.interval_hi) == (pytest.approx(0.8625), 0.875)
    for p in points:
        uncached = round(65536 * (1 - p.hit_rate))
        assert uncached == p.chunks_full * 8192 + 1
        assert tail_chunk_tokens(uncached, 8192) == 1
        assert p.interval_lo < p.hit_rate < p.interval_hi


def test_singular_hit_rates_with_blocks() -> None:
    points = singular_hit_rates(65536, 8192, block_tokens=16)
    assert len(points) == 7
    assert all(p.tail_tokens == 16 for p in points)
    # k = 1: cached = 16 * floor(57343 / 16) = 57328, U = 8208
    k1 = points[-1]
    assert k1.chunks_full == 1
    assert k1.hit_rate == 57328 / 65536
    assert (k1.interval_lo, k1.interval_hi) == (pytest.approx(0.8625), 0.875)


def test_singular_hit_rates_blocks_coarser_than_tail_budget() -> None:
    # every achievable tail is 1024 tokens >= 0.1 * 8192 = 819.2: nothing is singular
    assert singular_hit_rates(65536, 8192, block_tokens=1024) == []
    # a larger budget admits them
    assert len(singular_hit_rates(65536, 8192, block_tokens=1024, max_tail_fraction=0.2)) == 7


def test_singular_hit_rates_clip_interval_at_zero() -> None:
    # L = 8500, C = 8192: one boundary, U = 8193, h = 307 / 8500;
    # interval (1 - (8192 + 819.2) / 8500, 1 - 8192 / 8500) = (-0.0602, 0.03624) -> clipped
    (p,) = singular_hit_rates(8500, 8192)
    assert (p.chunks_full, p.tail_tokens) == (1, 1)
    assert p.hit_rate == pytest.approx(307 / 8500)
    assert p.interval_lo == 0.0
    assert p.interval_hi == pytest.approx(308 / 8500)


def test_singular_hit_rate_zero_when_boundary_is_at_the_full_prompt() -> None:
    (p,) = singular_hit_rates(8193, 8192)
    assert (p.hit_rate, p.chunks_full, p.tail_tokens, p.interval_lo) == (0.0, 1, 1, 0.0)


@pytest.mark.parametrize("input_tokens", [1, 4096, 8192])
def test_singular_hit_rates_prompt_within_one_chunk(input_tokens: int) -> None:
    assert singular_hit_rates(input_tokens, 8192) == []


def test_singular_hit_rates_accept_whole_floats() -> None:
    assert singular_hit_rates(65536.0, 8192.0) == singular_hit_rates(65536, 8192)  # type: ignore[arg-type]


def test_singular_hit_rates_invalid_inputs() -> None:
    with pytest.raises(ValueError, match="input_tokens"):
        singular_hit_rates(0, 8192)
    with pytest.raises(ValueError, match="chunk_size_tokens"):
        singular_hit_rates(65536, 8192.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="block_tokens"):
        singular_hit_rates(65536, 8192, block_tokens=0)
    with pytest.raises(ValueError, match="max_tail_fraction"):
        singular_hit_rates(65536, 8192, max_tail_fraction=0.0)
    with pytest.raises(ValueError, match="max_tail_fraction"):
        singular_hit_rates(65536, 8192, max_tail_fraction=1.5)
    with pytest.raises(TypeError):
        singular_hit_rates(True, 8192)
    with pytest.raises(TypeError):
        singular_hit_rates("65536", 8192)  # type: ignore[arg-type]
