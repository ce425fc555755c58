"""Binds a workload spec to request classes: hit rate x input length x output length, weighted."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from pddplan.io.memo import IdentityMemo
from pddplan.models import network
from pddplan.spec import (
    DEFAULT_HIT_RATE_POINTS_PER_BIN,
    DEFAULT_LENGTH_POINTS,
    EmpiricalLength,
    FixedLength,
    HitRateDist,
    LengthDist,
    LognormalLength,
    Workload,
)


@dataclass(frozen=True)
class RequestClasses:
    """A workload discretized into classes; arrays of equal length, weights summing to 1."""

    hit_rate: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    weight: np.ndarray
    anomalous: np.ndarray  # bool
    routing_edges: np.ndarray | None = None  # hit-rate bin edges, where the workload has bins

    @property
    def cached_tokens(self) -> np.ndarray:
        """Prefix tokens served from the cache; the last input token is always computed (its
        logits give the first output token)."""
        return cached_prefix_tokens(self.input_tokens, self.hit_rate)

    @property
    def uncached_tokens(self) -> np.ndarray:
        return self.input_tokens - self.cached_tokens

    def __len__(self) -> int:
        return len(self.weight)

    @cached_property
    def key(self) -> tuple[bytes, ...]:
        """Content key of the classes (for memo tables)."""
        return (
            self.hit_rate.tobytes(),
            self.input_tokens.tobytes(),
            self.output_tokens.tobytes(),
            self.weight.tobytes(),
            self.anomalous.tobytes(),
        )


def cached_prefix_tokens(input_tokens, hit_rate):
    """Cached prefix of a request [tokens]: ``min(floor(L h), L - 1)``."""
    li = np.asarray(input_tokens, dtype=float)
    return np.minimum(np.floor(li * np.asarray(hit_rate, dtype=float)), li - 1.0)


def sorted_distinct(x: np.ndarray) -> np.ndarray:
    """``np.unique`` of a 1-D float array, sorted, without numpy's check for a masked array
    (which imports ``numpy.ma``: about 30 ms of every start). With a NaN, ``np.unique`` itself."""
    s = np.sort(x)
    if s.size == 0 or np.isnan(s[-1]):
        return np.unique(s)
    return s[np.concatenate(([True], s[1:] != s[:-1]))]


def length_points(dist: LengthDist, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Discretize a length distribution into at most ``n`` equal-probability points."""
    if isinstance(dist, FixedLength):
        return np.array([float(dist.fixed)]), np.ones(1)
    if isinstance(dist, LognormalLength):
        p = dist.lognormal
        sigma = np.sqrt(np.log1p(p.cv**2))
        # each of n equal-probability slices is represented by its conditional mean, so the
        # discretized mean equals the distribution's: E[X | slice i] = n m (Phi(z_{i+1} - s) -
        # Phi(z_i - s)) with z the slice's standard-normal bounds
        z = np.concatenate([[-np.inf], network.normal_ppf(np.arange(1, n) / n), [np.inf]])
        vals = n * p.mean * np.diff(network.normal_cdf(z - sigma))
        vals = np.clip(np.round(vals), p.min, p.max if p.max is not None else np.inf)
        return vals, np.full(n, 1.0 / n)
    assert isinstance(dist, EmpiricalLength)
    vals = np.asarray(dist.empirical.values, dtype=float)
    w = np.asarray(
        dist.empirical.weights if dist.empirical.weights else np.ones(len(vals)), dtype=float
    )
    v, wv = _compress(vals, w / w.sum(), n)
    return np.round(v), wv


def _compress(values: np.ndarray, weights: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Reduce a weighted sample to ``n`` points: the weighted mean of each probability slice."""
    order = np.argsort(values)
    v, w = values[order], weights[order]
    if len(v) <= n:
        return v, w
    cum = np.cumsum(w)
    idx = np.minimum((cum - w / 2) * n, n - 1).astype(int)
    out_v = np.array(
        [
            np.average(v[idx == i], weights=w[idx == i]) if np.any(idx == i) else np.nan
            for i in range(n)
        ]
    )
    out_w = np.array([w[idx == i].sum() for i in range(n)])
    keep = out_w > 0
    return out_v[keep], out_w[keep]


def hit_rate_points(
    dist: HitRateDist, points_per_bin: int, n_continuous: int = 24
) -> tuple[np.ndarray, np.ndarray]:
    """Discretize a hit-rate distribution into (hit rates, weights), transforms applied."""
    if dist.bins is not None:
        e = np.asarray(dist.bins.edges, dtype=float)
        pr = np.asarray(dist.bins.probabilities, dtype=float)
        sub = (np.arange(points_per_bin) + 0.5) / points_per_bin
        h = (e[:-1, None] + (e[1:] - e[:-1])[:, None] * sub[None, :]).ravel()
        w = np.repeat(pr / points_per_bin, points_per_bin)
    elif dist.beta is not None:
        q = (np.arange(n_continuous) + 0.5) / n_continuous
        from scipy import special  # only beta workloads pay for the import

        h = special.betaincinv(dist.beta.a, dist.beta.b, q)
        w = np.full(n_continuous, 1.0 / n_continuous)
    else:
        s = np.asarray(dist.samples, dtype=float)
        h, w = _compress(s, np.full(len(s), 1.0 / len(s)), n_continuous)
    h = np.clip((h + dist.shift) * dist.scale, 0.0, 1.0)
    if dist.mix_with is not None and dist.mix_weight > 0:
        h2, w2 = hit_rate_points(dist.mix_with, points_per_bin, n_continuous)
        h = np.concatenate([h, h2])
        w = np.concatenate([w * (1 - dist.mix_weight), w2 * dist.mix_weight])
    keep = w > 0
    return h[keep], w[keep] / w[keep].sum()


def request_classes(
    wl: Workload,
    points_per_bin: int = DEFAULT_HIT_RATE_POINTS_PER_BIN,
    n_length: int = DEFAULT_LENGTH_POINTS,
    anomalous_filter: bool = True,
) -> RequestClasses:
    """The workload as weighted classes; anomalous requests are flagged (and kept) separately.

    Memoized on the workload object and on its content (the arrays are shared: callers must
    not modify them).
    """
    return _BY_OBJECT.get(
        wl,
        (points_per_bin, n_length, anomalous_filter),
        lambda: _by_content(wl, points_per_bin, n_length, anomalous_filter),
    )


_BY_OBJECT = IdentityMemo()


def _by_content(
    wl: Workload, points_per_bin: int, n_length: int, anomalous_filter: bool
) -> RequestClasses:
    key = (
        wl.content_text(frozenset({"source", "notes"})),
        points_per_bin,
        n_length,
        anomalous_filter,
    )
    hit = _CLASSES.get(key)
    if hit is None:
        if len(_CLASSES) > 256:
            _CLASSES.clear()
        hit = _CLASSES[key] = _request_classes(wl, points_per_bin, n_length, anomalous_filter)
    return hit


_CLASSES: dict[tuple[Any, ...], RequestClasses] = {}


def _request_classes(
    wl: Workload, points_per_bin: int, n_length: int, anomalous_filter: bool
) -> RequestClasses:
    h, wh = hit_rate_points(wl.hit_rate, points_per_bin)
    li, wi = length_points(wl.input_tokens, n_length)
    lo, wo = length_points(wl.output_tokens, n_length)
    H, LI, LO = np.meshgrid(h, li, lo, indexing="ij")
    W = wh[:, None, None] * wi[None, :, None] * wo[None, None, :]
    share = wl.anomalous.share if wl.anomalous is not None else 0.0
    hit = [H.ravel()]
    inp = [LI.ravel()]
    out = [LO.ravel()]
    wts = [W.ravel() * (1 - share)]
    anom = [np.zeros(W.size, dtype=bool)]
    if wl.anomalous is not None and share > 0:
        ai, awi = length_points(wl.anomalous.input_tokens, n_length)
        ao, awo = length_points(wl.anomalous.output_tokens, n_length)
        AI, AO = np.meshgrid(ai, ao, indexing="ij")
        AW = awi[:, None] * awo[None, :] * share
        hit.append(np.full(AI.size, wl.anomalous.hit_rate))
        inp.append(AI.ravel())
        out.append(AO.ravel())
        wts.append(AW.ravel())
        anom.append(np.full(AI.size, anomalous_filter))
    edges = None
    if wl.hit_rate.bins is not None and wl.hit_rate.mix_with is None:
        e = np.asarray(wl.hit_rate.bins.edges, dtype=float)
        edges = sorted_distinct(np.clip((e + wl.hit_rate.shift) * wl.hit_rate.scale, 0.0, 1.0))
    return RequestClasses(
        routing_edges=edges,
        hit_rate=np.concatenate(hit),
        input_tokens=np.concatenate(inp),
        output_tokens=np.concatenate(out),
        weight=np.concatenate(wts),
        anomalous=np.concatenate(anom),
    )
