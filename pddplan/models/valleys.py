"""Valleys of a sampled curve, and the tail-chunk arithmetic of chunked prefill that makes them.

A throughput-versus-hit-rate curve of a chunked-prefill engine is not monotone: at some hit
rates the uncached part of a prompt ends in a tiny last chunk that runs at poor efficiency, and
the curve dips. :func:`find_valleys` locates such dips in any sampled curve;
:func:`tail_chunk_tokens` and :func:`singular_hit_rates` say where chunked prefill puts them.

Everything here is a pure function of numbers or numpy arrays.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "SingularPoint",
    "Valley",
    "find_valleys",
    "share_in_intervals",
    "singular_hit_rates",
    "tail_chunk_tokens",
]


@dataclass(frozen=True)
class Valley:
    """One valley of a sampled curve ``y(x)``.

    Attributes
    ----------
    start_x, end_x : float
        First and last sample abscissa [unit of x] inside the valley, i.e. the closed range of
        samples whose depth is positive. ``start_x == end_x`` for a one-sample valley.
    deepest_x : float
        Abscissa [unit of x] of the lowest sample of the valley (the first one on ties).
    deepest_y : float
        Value [unit of y] of the curve at ``deepest_x``.
    depth : float
        ``level - deepest_y`` [unit of y], where ``level = min(left max, right max)`` is the
        height of the lower of the two enclosing peaks. Always > 0.
    depth_fraction : float
        ``depth / |level|`` [1]; ``inf`` when ``level == 0``.
    left_peak_x, right_peak_x : float
        Abscissae [unit of x] of the adjacent peaks: the summit of the rim on each side, reached
        from the sample next to the valley by climbing outward while the curve does not
        decrease (on a flat top, the sample nearest the valley). Both lie at or above the
        level and one of them at it: ``min(y(left_peak_x), y(right_peak_x)) == level``. They
        are local, not global, maxima: the peak on the non-binding side may be lower than the
        best value further out on that side.
    """

    start_x: float
    end_x: float
    deepest_x: float
    deepest_y: float
    depth: float
    depth_fraction: float
    left_peak_x: float
    right_peak_x: float


@dataclass(frozen=True)
class SingularPoint:
    """A hit rate just past a chunk boundary, where the prefill tail chunk is tiny.

    Attributes
    ----------
    hit_rate : float
        The smallest achievable hit rate [1] that leaves ``chunks_full`` full chunks plus a
        partial tail (with ``block_tokens == 1``: uncached = ``chunks_full * chunk + 1``).
    chunks_full : int
        Number of full chunks ``k`` [chunks] before the tail.
    tail_tokens : int
        Size of the tail chunk at ``hit_rate`` [tokens]; in ``[1, block_tokens]``.
    interval_lo, interval_hi : float
        The open interval of hit rates [1] whose tail is in ``(0, max_tail_fraction * chunk)``
        tokens behind the same boundary: ``uncached`` in ``(k*C, k*C + f*C)``. Where that range
        would reach below hit rate 0, ``interval_lo`` is clipped to 0 and 0 itself belongs to
        the interval. ``interval_lo < hit_rate < interval_hi``, except that ``hit_rate`` may
        equal a clipped ``interval_lo`` of 0.
    """

    hit_rate: float
    chunks_full: int
    tail_tokens: int
    interval_lo: float
    interval_hi: float


def find_valleys(
    x: npt.ArrayLike,
    y: npt.ArrayLike,
    *,
    tolerance: float = 0.02,
    relative: bool = True,
) -> list[Valley]:
    """Find the valleys of a sampled curve: regions below the best value on both sides.

    For every sample ``i`` the depth is::

        depth_i = min(max(y[:i+1]), max(y[i:])) - y[i]          (>= 0)

    i.e. how far the curve lies below the lower of the best values to its left and to its
    right (the water level that would stand there if the curve were filled with water). A
    maximal run of consecutive samples with ``depth_i > 0`` is a *basin*. Inside a basin the
    level ``min(left max, right max)`` is constant, so an interior bump lower than both
    enclosing peaks does not split it: it is flooded, and the basin is one valley. Two valleys
    are separate only when a sample between them reaches the level (depth 0).

    A basin is reported as a valley when its deepest sample is deeper than the tolerance::

        tol = tolerance * |level|    if relative    else    tolerance

    Shallower basins (noise ripples) are dropped. The reported interval ``[start_x, end_x]`` is
    the closed range of samples of the basin, i.e. where ``depth > 0``; the adjacent peaks (the
    summits of the rims that bound it, see :class:`Valley`) are reported separately.

    Parameters
    ----------
    x : array_like, shape (n,)
        Abscissae [any unit], finite and strictly increasing.
    y : array_like, shape (n,)
        Curve values [any unit]. NaN marks a missing sample: it is ignored, as if that sample
        had never been taken, so a valley may extend across it and its ``x`` is never reported.
        Infinite values are rejected.
    tolerance : float, optional
        Minimum depth, >= 0: a fraction [1] of the level if ``relative``, else an absolute
        depth [unit of y]. A valley must be strictly deeper than the tolerance. Default 0.02.
    relative : bool, optional
        Whether ``tolerance`` is relative to ``|level|`` (default) or absolute. Relative mode is
        meant for positive curves (throughput, goodput); its result does not change when ``y``
        is scaled by a positive factor. Absolute mode does not change when a constant is added.

    Returns
    -------
    list of Valley
        Valleys in increasing ``x``; disjoint. Empty when fewer than 3 non-NaN samples remain,
        and for flat or monotone curves.

    Raises
    ------
    ValueError
        If ``x`` and ``y`` are not 1-D of equal length, ``x`` is not finite and strictly
        increasing, ``y`` has an infinite value, or ``tolerance`` is negative or not finite.
    """
    xs, ys = _checked_curve(x, y, tolerance)
    if ys.size < 3:
        return []
    left_max = np.maximum.accumulate(ys)
    right_max = np.maximum.accumulate(ys[::-1])[::-1]
    level = np.minimum(left_max, right_max)
    depth = level - ys
    wet = np.concatenate(([False], depth > 0, [False])).astype(np.int8)
    edges = np.flatnonzero(np.diff(wet))
    # The end samples always have depth 0, so every basin [s, e) has 1 <= s and e <= n - 1.
    basins = (
        _basin_valley(xs, ys, level, depth, int(s), int(e), tolerance, relative)
        for s, e in zip(edges[0::2], edges[1::2], strict=True)
    )
    return [v for v in basins if v is not None]


def _checked_curve(x, y, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
    """The samples of :func:`find_valleys`'s curve that are not NaN, after its checks."""
    x_arr = np.asarray(x, dtype=float)
    y_arr = np.asarray(y, dtype=float)
    if x_arr.ndim != 1 or y_arr.shape != x_arr.shape:
        raise ValueError(
            f"x and y must be 1-D arrays of equal length, got shapes {x_arr.shape} and "
            f"{y_arr.shape}"
        )
    if not math.isfinite(tolerance) or tolerance < 0:
        raise ValueError(f"tolerance must be finite and >= 0, got {tolerance!r}")
    if not np.all(np.isfinite(x_arr)) or np.any(np.diff(x_arr) <= 0):
        raise ValueError("x must be finite and strictly increasing")
    if np.any(np.isinf(y_arr)):
        raise ValueError("y must not contain infinite values (NaN marks a missing sample)")
    keep = ~np.isnan(y_arr)
    return x_arr[keep], y_arr[keep]


def _basin_valley(
    xs: np.ndarray,
    ys: np.ndarray,
    level: np.ndarray,
    depth: np.ndarray,
    s: int,
    e: int,
    tolerance: float,
    relative: bool,
) -> Valley | None:
    """The basin of samples ``[s, e)`` as a :class:`Valley`, or None when it is no deeper than
    the tolerance (see :func:`find_valleys`)."""
    basin_level = float(level[s])
    i_deep = int(s + np.argmin(ys[s:e]))
    basin_depth = float(depth[i_deep])
    tol = tolerance * abs(basin_level) if relative else tolerance
    if not basin_depth > tol:
        return None
    i_left_peak = _rim_summit(ys, s - 1, step=-1)
    i_right_peak = _rim_summit(ys, e, step=1)
    depth_fraction = basin_depth / abs(basin_level) if basin_level != 0 else math.inf
    return Valley(
        start_x=float(xs[s]),
        end_x=float(xs[e - 1]),
        deepest_x=float(xs[i_deep]),
        deepest_y=float(ys[i_deep]),
        depth=basin_depth,
        depth_fraction=depth_fraction,
        left_peak_x=float(xs[i_left_peak]),
        right_peak_x=float(xs[i_right_peak]),
    )


def share_in_intervals(
    valleys: Sequence[Valley],
    sample_x: npt.ArrayLike,
    weights: npt.ArrayLike,
) -> float:
    """Share of a weighted distribution that falls inside any valley interval.

    Parameters
    ----------
    valleys : sequence of Valley
        Valleys; each contributes its closed interval ``[start_x, end_x]`` [unit of x]. A sample
        inside several intervals is counted once.
    sample_x : array_like, shape (m,)
        Support points of the distribution [unit of x], e.g. hit rates; finite.
    weights : array_like, shape (m,)
        Non-negative weights [any unit], e.g. probability masses; need not sum to 1.

    Returns
    -------
    float
        ``sum(weights inside) / sum(weights)`` [1], in ``[0, 1]``; 0.0 when ``valleys`` is empty.

    Raises
    ------
    ValueError
        If the shapes differ, a value is not finite, a weight is negative, or the weights sum
        to 0.
    """
    xs = np.atleast_1d(np.asarray(sample_x, dtype=float))
    ws = np.atleast_1d(np.asarray(weights, dtype=float))
    if xs.ndim != 1 or ws.shape != xs.shape:
        raise ValueError(
            f"sample_x and weights must be 1-D of equal length, got shapes {xs.shape} and "
            f"{ws.shape}"
        )
    if not np.all(np.isfinite(xs)) or not np.all(np.isfinite(ws)):
        raise ValueError("sample_x and weights must be finite")
    if np.any(ws < 0):
        raise ValueError("weights must be >= 0")
    total = float(np.sum(ws))
    if not total > 0:
        raise ValueError("weights must not sum to 0")
    inside = np.zeros(xs.shape, dtype=bool)
    for v in valleys:
        inside |= (xs >= v.start_x) & (xs <= v.end_x)
    return float(np.sum(ws[inside])) / total


def tail_chunk_tokens(
    uncached_tokens: npt.ArrayLike,
    chunk_size_tokens: npt.ArrayLike,
) -> np.ndarray | int | float:
    """Size of the last, partial chunk of a chunked prefill; broadcasts.

    ``U`` uncached tokens are prefilled as ``floor(U / C)`` full chunks of ``C`` tokens and a
    tail chunk of ``U mod C`` tokens; the tail is 0 when ``U`` is an exact multiple of ``C``.

    Parameters
    ----------
    uncached_tokens : array_like
        Uncached prompt tokens ``U`` [tokens], >= 0. Token counts are whole; a fractional count
        (e.g. an unrounded ``L * (1 - h)``) gives a fractional tail.
    chunk_size_tokens : array_like
        Chunk size ``C`` [tokens], > 0.

    Returns
    -------
    numpy.ndarray or int or float
        ``U mod C`` [tokens], in ``[0, C)``, with the broadcast shape; a Python number when
        both inputs are scalars.

    Raises
    ------
    TypeError
        If an input is not numeric.
    ValueError
        If an input is not finite, ``U < 0`` or ``C <= 0``.

    Examples
    --------
    >>> tail_chunk_tokens(20000, 8192)
    3616
    >>> tail_chunk_tokens(16384, 8192)
    0
    """
    u = np.asarray(uncached_tokens)
    c = np.asarray(chunk_size_tokens)
    for name, arr in (("uncached_tokens", u), ("chunk_size_tokens", c)):
        if arr.dtype.kind not in "iuf":
            raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite")
    if np.any(u < 0):
        raise ValueError("uncached_tokens must be >= 0")
    if np.any(c <= 0):
        raise ValueError("chunk_size_tokens must be > 0")
    tail = np.mod(u, c)
    if tail.ndim == 0:
        return tail.item()
    return tail


def singular_hit_rates(
    input_tokens: int,
    chunk_size_tokens: int,
    *,
    max_tail_fraction: float = 0.1,
    block_tokens: int = 1,
) -> list[SingularPoint]:
    """Hit rates at which chunked prefill ends in a tiny, inefficient tail chunk.

    A prefix-cache hit rate ``h`` leaves ``U = L * (1 - h)`` of the ``L`` prompt tokens
    uncached. Chunked prefill processes them as ``floor(U / C)`` full chunks of ``C`` tokens
    and a tail chunk of ``U mod C`` tokens (see :func:`tail_chunk_tokens`). A small tail cannot
    be batched well: it pays a whole forward pass (weight reads, launch and scheduling overhead)
    for few tokens and runs at poor efficiency. So throughput dips just past every chunk
    boundary, i.e. where ``U`` barely exceeds ``k * C``; these hit rates are *singular*.

    For each ``k >= 1`` with ``k * C < L``, the singular point is the smallest achievable hit
    rate whose ``U`` exceeds ``k * C``. The cache holds whole blocks, so the cached count
    ``L - U`` is a multiple of ``block_tokens`` ``B``; the point is::

        cached = B * floor((L - k*C - 1) / B),   U = L - cached,   h = cached / L

    With ``B == 1`` that is ``U = k*C + 1``: a 1-token tail. Its interval is the open range of
    hit rates with a tail in ``(0, f * C)`` tokens behind the same boundary,
    ``h in (1 - (k*C + f*C) / L, 1 - k*C / L)``, clipped at 0. A boundary is omitted when its
    smallest achievable tail ``U - k*C`` is not below ``f * C`` (e.g. blocks coarser than the
    tail budget): no achievable hit rate there is singular.

    Parameters
    ----------
    input_tokens : int
        Prompt length ``L`` [tokens], >= 1.
    chunk_size_tokens : int
        Prefill chunk size ``C`` [tokens], >= 1.
    max_tail_fraction : float, optional
        ``f`` [1], in ``(0, 1]``: a tail shorter than ``f * C`` tokens counts as tiny.
        Default 0.1.
    block_tokens : int, optional
        Prefix-cache block size ``B`` [tokens], >= 1. Default 1 (token-granular cache).

    Returns
    -------
    list of SingularPoint
        Sorted by increasing ``hit_rate`` (so by decreasing ``chunks_full``); all hit rates in
        ``[0, 1)``. Empty when ``L <= C``.

    Raises
    ------
    TypeError
        If a token count is not a real number.
    ValueError
        If a token count is not a whole number >= 1, or ``max_tail_fraction`` is not in
        ``(0, 1]``.
    """
    n_input = _whole_positive("input_tokens", input_tokens)
    chunk = _whole_positive("chunk_size_tokens", chunk_size_tokens)
    block = _whole_positive("block_tokens", block_tokens)
    if not 0 < max_tail_fraction <= 1:
        raise ValueError(f"max_tail_fraction must be in (0, 1], got {max_tail_fraction!r}")
    tail_budget_tokens = max_tail_fraction * chunk

    points: list[SingularPoint] = []
    k = 1
    while k * chunk < n_input:
        boundary_tokens = k * chunk
        cached_tokens = block * ((n_input - boundary_tokens - 1) // block)
        uncached_tokens = n_input - cached_tokens
        tail_tokens = uncached_tokens - boundary_tokens
        if tail_tokens < tail_budget_tokens:
            points.append(
                SingularPoint(
                    hit_rate=cached_tokens / n_input,
                    chunks_full=k,
                    tail_tokens=tail_tokens,
                    interval_lo=max(
                        0.0, (n_input - boundary_tokens - tail_budget_tokens) / n_input
                    ),
                    interval_hi=(n_input - boundary_tokens) / n_input,
                )
            )
        k += 1
    points.sort(key=lambda p: p.hit_rate)
    return points


def _rim_summit(ys: np.ndarray, i: int, *, step: int) -> int:
    """Index of the summit reached from ``ys[i]`` by climbing in direction ``step`` (+1 or -1).

    The climb goes on while the next sample is not lower; the result is the sample of the top
    plateau nearest to ``i``.
    """
    top = i
    j = i
    while 0 <= j + step < ys.size and ys[j + step] >= ys[j]:
        j += step
        if ys[j] > ys[top]:
            top = j
    return top


def _whole_positive(name: str, value: object) -> int:
    """``value`` as an int, if it is a whole real number >= 1; else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v) or v != int(v) or v < 1:
        raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    return int(v)
