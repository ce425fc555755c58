"""Requests for the simulator: arrival times, hit rates, lengths and WAN jitter factors.

Three sources, all reproducible from one ``numpy.random.Generator``:

- :func:`from_classes`: each request is one of the problem's discretized classes, drawn with
  the class weights (the closed forms see exactly this distribution);
- :func:`from_workload`: hit rates and lengths drawn from the workload's continuous
  distributions (bins: uniform within the bin; beta; resampled samples; lognormal lengths);
- :func:`replay`: given arrival times, hit rates and lengths (a trace).

Arrivals are Poisson unless replayed. Draws happen in a fixed order (arrivals, then request
attributes, then jitter) so one seed gives one run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pddplan.deployment import RequestClasses
from pddplan.deployment.workloads import cached_prefix_tokens
from pddplan.errors import UsageError
from pddplan.models import network
from pddplan.spec import (
    EmpiricalLength,
    FixedLength,
    HitRateDist,
    LengthDist,
    LognormalLength,
    Workload,
)


@dataclass(frozen=True)
class Requests:
    """Per-request arrays of equal length, in arrival order.

    Attributes
    ----------
    arrival_s : [s] arrival times, non-decreasing.
    hit_rate : [-] prefix-cache hit rate.
    input_tokens, output_tokens : [tokens] prompt and output lengths.
    anomalous : bool, flagged as anomalous traffic (long input, short output).
    jitter : [-] mean-one lognormal factor applied to the request's WAN flow size.
    class_index : index into the problem's classes (``-1`` when not drawn from classes).
    """

    arrival_s: np.ndarray
    hit_rate: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    anomalous: np.ndarray
    jitter: np.ndarray
    class_index: np.ndarray

    def __len__(self) -> int:
        return len(self.arrival_s)

    @property
    def cached_tokens(self) -> np.ndarray:
        """Tokens served from the prefix cache: the closed forms' ``min(floor(L h), L - 1)``
        (:func:`~pddplan.deployment.workloads.cached_prefix_tokens`: the last input token is
        always prefilled) [tokens]."""
        return cached_prefix_tokens(self.input_tokens, self.hit_rate)

    @property
    def uncached_tokens(self) -> np.ndarray:
        return self.input_tokens - self.cached_tokens


def poisson_arrivals(n: int, rate_rps: float, rng: np.random.Generator) -> np.ndarray:
    """``n`` Poisson arrival times at ``rate_rps`` [s], the first at the first gap."""
    if rate_rps <= 0:
        raise UsageError("the arrival rate must be above 0")
    return np.cumsum(rng.exponential(1.0 / rate_rps, size=n))


def jitter_factors(n: int, jitter_cv: float, rng: np.random.Generator) -> np.ndarray:
    """``n`` mean-one lognormal jitter factors with coefficient of variation ``jitter_cv`` [-].

    Drawn by inversion through :func:`pddplan.models.network.jitter_quantile`, the function the
    closed forms discretize.
    """
    u = rng.random(n)
    if jitter_cv <= 0:
        return np.ones(n)
    u = np.clip(u, 1e-12, 1.0 - 1e-12)
    return np.asarray(network.jitter_quantile(u, jitter_cv), dtype=float)


def from_classes(
    classes: RequestClasses, n: int, rate_rps: float, jitter_cv: float, rng: np.random.Generator
) -> Requests:
    """``n`` Poisson requests, each one of the problem's classes drawn by weight."""
    t = poisson_arrivals(n, rate_rps, rng)
    w = np.asarray(classes.weight, dtype=float)
    k = rng.choice(len(w), size=n, p=w / w.sum())
    return Requests(
        arrival_s=t,
        hit_rate=np.asarray(classes.hit_rate, dtype=float)[k],
        input_tokens=np.asarray(classes.input_tokens, dtype=float)[k],
        output_tokens=np.asarray(classes.output_tokens, dtype=float)[k],
        anomalous=np.asarray(classes.anomalous, dtype=bool)[k],
        jitter=jitter_factors(n, jitter_cv, rng),
        class_index=k,
    )


def _lengths(dist: LengthDist, n: int, rng: np.random.Generator) -> np.ndarray:
    if isinstance(dist, FixedLength):
        return np.full(n, float(dist.fixed))
    if isinstance(dist, LognormalLength):
        p = dist.lognormal
        sigma = np.sqrt(np.log1p(p.cv**2))
        mu = np.log(p.mean) - sigma**2 / 2
        v = np.round(rng.lognormal(mu, sigma, size=n))
        return np.clip(v, p.min, p.max if p.max is not None else np.inf)
    assert isinstance(dist, EmpiricalLength)
    vals = np.asarray(dist.empirical.values, dtype=float)
    w = np.asarray(dist.empirical.weights or np.ones(len(vals)), dtype=float)
    return vals[rng.choice(len(vals), size=n, p=w / w.sum())]


def _hit_rates(dist: HitRateDist, n: int, rng: np.random.Generator) -> np.ndarray:
    if dist.bins is not None:
        e = np.asarray(dist.bins.edges, dtype=float)
        pr = np.asarray(dist.bins.probabilities, dtype=float)
        b = rng.choice(len(pr), size=n, p=pr / pr.sum())
        h = e[b] + (e[b + 1] - e[b]) * rng.random(n)
    elif dist.beta is not None:
        h = rng.beta(dist.beta.a, dist.beta.b, size=n)
    else:
        s = np.asarray(dist.samples, dtype=float)
        h = s[rng.integers(0, len(s), size=n)]
    h = np.clip((h + dist.shift) * dist.scale, 0.0, 1.0)
    if dist.mix_with is not None and dist.mix_weight > 0:
        other = _hit_rates(dist.mix_with, n, rng)
        h = np.where(rng.random(n) < dist.mix_weight, other, h)
    return h


def from_workload(
    wl: Workload,
    n: int,
    rate_rps: float,
    jitter_cv: float,
    rng: np.random.Generator,
    anomalous_filter: bool = True,
) -> Requests:
    """``n`` Poisson requests drawn from the workload's continuous distributions."""
    t = poisson_arrivals(n, rate_rps, rng)
    h = _hit_rates(wl.hit_rate, n, rng)
    li = _lengths(wl.input_tokens, n, rng)
    lo = _lengths(wl.output_tokens, n, rng)
    anom = np.zeros(n, dtype=bool)
    if wl.anomalous is not None and wl.anomalous.share > 0:
        a = wl.anomalous
        anom = rng.random(n) < a.share
        m = int(anom.sum())
        li[anom] = _lengths(a.input_tokens, m, rng)
        lo[anom] = _lengths(a.output_tokens, m, rng)
        h[anom] = a.hit_rate
        if not anomalous_filter:
            anom = np.zeros(n, dtype=bool)
    return Requests(t, h, li, lo, anom, jitter_factors(n, jitter_cv, rng), np.full(n, -1))


def replay(
    arrival_s: np.ndarray,
    hit_rate: np.ndarray,
    input_tokens: np.ndarray,
    output_tokens: np.ndarray,
    jitter_cv: float,
    rng: np.random.Generator,
    anomalous: np.ndarray | None = None,
) -> Requests:
    """Requests from given arrays (a trace); arrival times are shifted to start at 0."""
    t = np.asarray(arrival_s, dtype=float)
    order = np.argsort(t, kind="stable")
    n = len(t)
    an = np.zeros(n, dtype=bool) if anomalous is None else np.asarray(anomalous, dtype=bool)
    return Requests(
        arrival_s=t[order] - t[order][0] if n else t,
        hit_rate=np.clip(np.asarray(hit_rate, dtype=float)[order], 0.0, 1.0),
        input_tokens=np.asarray(input_tokens, dtype=float)[order],
        output_tokens=np.maximum(np.asarray(output_tokens, dtype=float)[order], 1.0),
        anomalous=an[order],
        jitter=jitter_factors(n, jitter_cv, rng),
        class_index=np.full(n, -1),
    )
