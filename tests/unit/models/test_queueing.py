"""Unit tests of pddplan.models.queueing: Erlang C, G/G/c waits and the TTFT mixture quantile."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pddplan.models import queueing as q
from pddplan.units import whole_count


@pytest.mark.parametrize(
    ("c", "a", "expected"),
    [
        (1, 0.5, 0.5),  # M/M/1: P(wait) = rho
        (2, 1.0, 1.0 / 3.0),  # (a^2/2)/(1-a/2) / (1 + a + (a^2/2)/(1-a/2)) = 1 / 3
        (1, 0.9, 0.9),
        # c = 3, a = 2: (8/6 * 3) / (1 + 2 + 2 + 8/6 * 3) = 4 / 9
        (3, 2.0, 4.0 / 9.0),
        # c = 10, a = 8: textbook value 0.4092
        (10, 8.0, 0.40918),
    ],
)
def test_erlang_c_known_values(c: int, a: float, expected: float) -> None:
    assert q.erlang_c(c, a) == pytest.approx(expected, rel=1e-4)


def test_erlang_c_edges() -> None:
    assert q.erlang_c(4, 0.0) == 0.0
    assert q.erlang_c(4, 4.0) == 1.0  # saturated
    assert q.erlang_c(4, 5.0) == 1.0
    assert q.erlang_c(0, 1.0) == 1.0  # no servers: everyone waits


def test_erlang_c_large_pool_is_stable() -> None:
    # 500 servers at 90% load: finite, in (0, 1), no overflow from factorials
    p = q.erlang_c(500, 450.0)
    assert 0.0 < p < 1.0
    assert q.erlang_c(500, 400.0) < p < q.erlang_c(500, 490.0)


@pytest.mark.parametrize("c", [1, 2, 7, 29, 145, 1000, 5000])
@pytest.mark.parametrize("rho", [0.01, 0.3, 0.7, 0.9, 0.97, 0.999])
def test_erlang_c_closed_form_equals_the_recursion(c: int, rho: float) -> None:
    assert q.erlang_c(c, rho * c) == pytest.approx(q.erlang_c_recursive(c, rho * c), rel=1e-9)


def test_units_for_wait_is_the_fewest_units_under_the_bound() -> None:
    # 140 Erlangs on units of 29 slots: 5 units (145 slots) are the capacity bound, where a
    # request waits with probability 0.57; the search adds units until it is at most 5%
    a, k = 140.0, 29
    n = q.units_for_wait(a, k, 0.05)
    assert q.erlang_c(n * k, a) <= 0.05 < q.erlang_c((n - 1) * k, a)
    assert n >= math.ceil(a / k)
    assert q.units_for_wait(a, k, 1.0) == math.ceil(a / k)  # cap 1: capacity only
    assert q.units_for_wait(0.0, k, 0.05) == 0
    # a tighter bound never needs fewer units
    assert q.units_for_wait(a, k, 0.01) >= n >= q.units_for_wait(a, k, 0.2)


def test_array_forms_equal_the_scalar_ones() -> None:
    rng = np.random.default_rng(3)
    c = rng.integers(0, 400, size=300)
    a = rng.uniform(0, 450, size=300)
    want = np.array([q.erlang_c(int(ci), float(ai)) for ci, ai in zip(c, a, strict=True)])
    assert np.allclose(q.erlang_c_array(c, a), want, rtol=1e-12, atol=0)
    k = rng.integers(1, 40, size=300)
    n0 = np.maximum(np.ceil(a / k - 1e-9), 1).astype(np.int64)
    for cap in (0.01, 0.05, 0.3, 1.0):
        got = q.units_for_wait_array(a, k, n0, cap)
        ref = [
            max(q.units_for_wait(float(ai), int(ki), cap), int(ni))
            for ai, ki, ni in zip(a, k, n0, strict=True)
        ]
        assert got.tolist() == ref


def _units_by_closed_form(a: float, k: int, cap: float, n: int) -> int:
    """The slot-wait search as it reads, the closed form alone at every count (the reference
    the bound's shortcut must reproduce)."""
    while a > 0 and q.erlang_c(n * k, a) > cap:
        n += 1
    return n


def test_the_wait_bounds_hold_and_decide_as_the_closed_form() -> None:
    """Erlang C's bounds (q._wait_bounds: 2 P(N = c) / (1 - rho) above, P(N = c) / (1 - rho +
    rho P(N = c)) below) hold, and the comparison with a cap they shortcut (q._over_cap,
    q.wait_over_cap) is the closed form's: random pools from 1 to 30,000 slots at every load,
    and loads within 0.1% of where C crosses the cap."""
    rng = np.random.default_rng(11)
    c = np.floor(10 ** rng.uniform(0, 4.5, 40_000)) + 1
    a = c * rng.uniform(0.0, 1.0, 40_000)
    exact = q.erlang_c_array(c, a)
    lower, upper = q._wait_bounds(c, a)
    assert np.all(lower <= exact * (1 + 1e-9)) and np.all(exact <= upper * (1 + 1e-9))
    held = np.isfinite(upper)
    undecided = (lower <= 0.05) & (0.05 <= upper)
    assert held.mean() > 0.9 and undecided.mean() < 0.1  # the bounds decide nearly every pool
    for cap in (0.001, 0.01, 0.05, 0.2, 0.5):
        assert np.array_equal(q._over_cap(c, a, cap), exact > cap)
    for servers in (2, 5, 17, 64, 256, 1000, 4096, 20000):
        for cap in (0.05, 0.01):
            lo, hi = 0.0, float(servers)
            for _ in range(60):  # the load where C crosses the cap
                mid = 0.5 * (lo + hi)
                lo, hi = (lo, mid) if q.erlang_c(servers, mid) > cap else (mid, hi)
            loads = lo * (1 + np.linspace(-1e-3, 1e-3, 401))
            cs = np.full(loads.shape, float(servers))
            want = q.erlang_c_array(cs, loads) > cap
            assert np.array_equal(q._over_cap(cs, loads, cap), want)
            scalar = [q.wait_over_cap(servers, x, cap) for x in loads.tolist()]
            assert scalar == want.tolist()


def test_small_arrays_taken_element_by_element_give_the_array_form_s_counts() -> None:
    # arrays of at most q._ERLANG_SMALL elements go element by element (q.wait_over_cap): the
    # same counts as the array form on the same pools, loads near each crossing included
    rng = np.random.default_rng(13)
    a = np.concatenate([10 ** rng.uniform(-1, 4, 800), np.zeros(8)])
    k = rng.integers(1, 300, a.size).astype(float)
    n0 = np.maximum(np.ceil(a / k - 1e-9), 1).astype(np.int64)
    for cap in (0.01, 0.05, 0.3):
        whole = q.units_for_wait_array(a, k, n0, cap)  # the array form (800 elements)
        near = np.array([_units_by_closed_form(float(x), 7, cap, 1) for x in a[:16]])
        for size in (1, 2, 3, 7, 16):
            for i in range(0, a.size - size, 97):
                part = q.units_for_wait_array(
                    a[i : i + size], k[i : i + size], n0[i : i + size], cap
                )
                assert part.tolist() == whole[i : i + size].tolist()
        # one unit of 7 servers at a load just below and above where C crosses the cap
        for x in a[:16]:
            m = int(near[int(np.flatnonzero(a[:16] == x)[0])])
            if m > 1:
                lo, hi = 0.0, float(7 * m)
                for _ in range(60):
                    mid = 0.5 * (lo + hi)
                    lo, hi = (lo, mid) if q.erlang_c(7 * m, mid) > cap else (mid, hi)
                for y in (lo * (1 - 1e-12), lo, hi, hi * (1 + 1e-12)):
                    got = q.units_for_wait_array(np.array([y]), np.array([7.0]), np.array([1]), cap)
                    assert got.tolist() == [_units_by_closed_form(y, 7, cap, 1)]


def test_the_wait_bounds_leave_huge_pools_and_part_servers_to_the_closed_form() -> None:
    """Past a million servers the bound's log terms cancel to within their margin (a pool of
    1e9 Erlangs gave a count one too high), at 2**53 servers ``a + 1/3`` rounds to ``a``, and
    Erlang C counts whole servers: each is decided by the closed form."""
    a, k = 957943336.5915468, 239548847
    cap = q.erlang_c(4 * k, a)
    assert q.units_for_wait(a, k, cap) == 4
    assert q.units_for_wait_array(np.array([a]), np.array([k]), np.array([1]), cap).tolist() == [4]
    assert not q.wait_over_cap(958195388, a, cap)
    assert q.wait_over_cap(2**53, 2.0**53, 0.5)  # saturated: C = 1, no division by zero
    assert q.wait_over_cap(2.9, 1.0, 0.22) == (q.erlang_c(2, 1.0) > 0.22)  # type: ignore[arg-type]
    assert q.wait_over_cap(0.5, 0.01, 0.5)  # type: ignore[arg-type]  # no whole server: C = 1


def test_units_for_wait_with_the_bound_are_the_closed_forms_counts() -> None:
    rng = np.random.default_rng(12)
    a = 10 ** rng.uniform(-1, 4, 600)
    k = rng.integers(1, 300, 600)
    n0 = np.maximum(np.ceil(a / k - 1e-9), 1).astype(np.int64)
    for cap in (0.01, 0.05, 0.3):
        want = [
            _units_by_closed_form(float(ai), int(ki), cap, int(ni))
            for ai, ki, ni in zip(a, k, n0, strict=True)
        ]
        assert q.units_for_wait_array(a, k, n0, cap).tolist() == want
        scalar = [q.units_for_wait(float(ai), int(ki), cap) for ai, ki in zip(a, k, strict=True)]
        assert scalar == [
            _units_by_closed_form(float(ai), int(ki), cap, max(whole_count(ai / ki), 1))
            for ai, ki in zip(a, k, strict=True)
        ]


def test_wait_survival() -> None:
    # P(W > t) = 0.4 exp(-2 t)
    assert q.wait_survival(0.0, 0.4, 2.0) == pytest.approx(0.4)
    assert q.wait_survival(1.0, 0.4, 2.0) == pytest.approx(0.4 * math.exp(-2.0))
    assert q.wait_survival(-1.0, 0.4, 2.0) == 1.0
    t = np.array([-1.0, 0.0, 0.5, 1.0])
    np.testing.assert_allclose(
        q.wait_survival(t, 0.4, 2.0), [q.wait_survival(x, 0.4, 2.0) for x in t]
    )


def test_mixture_cdf() -> None:
    # D in {1, 2} with weights {0.5, 0.5}, P(W > t) = 0.4 exp(-2 t)
    # F(1.5) = 0.5 (1 - 0.4 e^{-1}) + 0.5 (1 - 1) = 0.5 (1 - 0.147152) = 0.426424
    f = q.mixture_cdf(1.5, [1.0, 2.0], [0.5, 0.5], 0.4, 2.0)
    assert f == pytest.approx(0.5 * (1 - 0.4 * math.exp(-1.0)))
    t = np.array([0.5, 1.5, 3.0])
    out = q.mixture_cdf(t, [1.0, 2.0], [0.5, 0.5], 0.4, 2.0)
    np.testing.assert_allclose(out, [q.mixture_cdf(x, [1.0, 2.0], [0.5, 0.5], 0.4, 2.0) for x in t])
    assert out[0] == 0.0


OFFSETS = [5.0, 1.0, 2.0]  # deliberately unsorted
WEIGHTS = [0.2, 0.5, 0.3]


@pytest.mark.parametrize(
    ("p", "expected"),
    [(0.1, 1.0), (0.5, 1.0), (0.5000001, 2.0), (0.8, 2.0), (0.81, 5.0), (1.0, 5.0)],
)
def test_mixture_quantile_without_wait_is_weighted_quantile(p: float, expected: float) -> None:
    # sorted: 1 (CDF 0.5), 2 (0.8), 5 (1.0): the lowest value whose CDF reaches p
    assert q.mixture_quantile(p, OFFSETS, WEIGHTS) == expected
    assert q.weighted_quantile(OFFSETS, WEIGHTS, p) == expected


def test_mixture_quantile_unnormalized_weights() -> None:
    assert q.mixture_quantile(0.6, OFFSETS, [2.0, 5.0, 3.0]) == 2.0


def test_mixture_quantile_infinite_offset() -> None:
    assert math.isinf(q.mixture_quantile(0.5, [1.0, math.inf], [0.5, 0.5]))


# With W: P(W > t) = 0.4 e^{-2t}. Analytical quantiles of W + D:
#  CDF jumps at 1 (0.5 * 0.6 = 0.3); 1 < t < 2: 0.5 (1 - 0.4 e^{-2(t-1)})
#  -> p = 0.4 at t = 1 + ln(2)/2 = 1.346574
#  CDF at 2-: 0.5 (1 - 0.4 e^{-2}) = 0.472933, jumps by 0.3 * 0.6 = 0.18 at 2 -> p = 0.5 at t = 2
#  CDF at 5- ~ 0.799727, jumps by 0.2 * 0.6 = 0.12 at 5 -> p = 0.9 at t = 5
#  p = 0.99: 0.08 e^{-2(t-5)} + 0.3 * 0.4 e^{-2(t-2)} + 0.5 * 0.4 e^{-2(t-1)} = 0.01 -> t ~ 6.03975
ANALYTIC = [(0.4, 1.0 + math.log(2) / 2), (0.5, 2.0), (0.9, 5.0)]
# The quantile search resolves to (range of the bracket) / 128^2: here the bracket is
# [min d, max d + ln(pw / (1 - p)) / theta] ~ [1, 5.7], so ~3e-4 s; allow 5e-4 s.
QUANTILE_ABS_TOL = 5e-4


@pytest.mark.parametrize(("p", "expected"), ANALYTIC)
def test_mixture_quantile_with_wait_analytic(p: float, expected: float) -> None:
    got = q.mixture_quantile(p, OFFSETS, WEIGHTS, 0.4, 2.0)
    assert got == pytest.approx(expected, abs=QUANTILE_ABS_TOL)


def test_mixture_quantile_p99_solves_the_cdf() -> None:
    t = q.mixture_quantile(0.99, OFFSETS, WEIGHTS, 0.4, 2.0)
    assert float(q.mixture_cdf(t, OFFSETS, WEIGHTS, 0.4, 2.0)) == pytest.approx(0.99, abs=1e-5)
    # dominated by the last term, 5 + ln(8)/2 = 6.0397; the other two add
    # 0.12 e^{-8.08} + 0.2 e^{-10.08} ~ 4.6e-5 to the 0.01 tail: + ln(1.0046)/2 ~ 2.3e-3 s
    assert t == pytest.approx(5 + math.log(8) / 2 + 0.5 * math.log(1 + 4.6e-3), abs=2e-4)


def test_mixture_quantile_monte_carlo() -> None:
    """Seeded Monte-Carlo check, 400,000 samples; tolerance 0.03 s (> 5 standard errors: the
    quantile's standard error sqrt(p(1-p)/N)/f is at most ~0.006 s here)."""
    rng = np.random.default_rng(20240601)
    n = 400_000
    d = rng.choice(np.array(OFFSETS), size=n, p=np.array(WEIGHTS))
    waits = np.where(rng.random(n) < 0.4, rng.exponential(1 / 2.0, size=n), 0.0)
    samples = d + waits
    for p in (0.3, 0.4, 0.6, 0.95, 0.99):
        mc = float(np.quantile(samples, p, method="inverted_cdf"))
        assert q.mixture_quantile(p, OFFSETS, WEIGHTS, 0.4, 2.0) == pytest.approx(mc, abs=0.03), p


def test_mixture_quantile_low_p_returns_min_offset() -> None:
    # P(W + D <= 1) = 0.3 >= 0.2
    assert q.mixture_quantile(0.2, OFFSETS, WEIGHTS, 0.4, 2.0) == 1.0


def test_mixture_quantile_wait_without_tail_rate_is_infinite() -> None:
    assert math.isinf(q.mixture_quantile(0.5, OFFSETS, WEIGHTS, 1.0, 0.0))


def test_mixture_quantile_far_apart_offsets() -> None:
    # D in {0, 38} equally likely, P(W > t) = 0.5 e^{-20 t}. Below 38 s the CDF is
    # 0.5 (1 - 0.5 e^{-20 t}); it reaches 0.4 at e^{-20 t} = 0.4 -> t = ln(2.5) / 20 = 0.045815 s.
    # (theta (d_n - d_1) = 760: a naive exp(theta (d_k - d_n)) underflows to 0 here.)
    got = q.mixture_quantile(0.4, [0.0, 38.0], [1.0, 1.0], 0.5, 20.0)
    assert got == pytest.approx(math.log(2.5) / 20, abs=QUANTILE_ABS_TOL)
    # p = 0.2 lies inside the no-wait atom at 0 (F(0) = 0.5 * 0.5 = 0.25): the quantile is 0
    assert q.mixture_quantile(0.2, [0.0, 36.0], [1.0, 1.0], 0.5, 20.0) == 0.0


def test_mixture_quantile_where_cdf_flattens_below_p() -> None:
    # D in {0, 5}, P(W > t) = 0.5 e^{-8 t}: F rises towards 0.5 (to within 0.25 e^{-40}, below
    # double precision) before the jump at 5 s. p = 0.5 must give a finite answer whose CDF
    # reaches p, not an exception.
    got = q.mixture_quantile(0.5, [0.0, 5.0], [1.0, 1.0], 0.5, 8.0)
    assert math.isfinite(got) and 0.0 <= got <= 5.0
    assert float(q.mixture_cdf(got, [0.0, 5.0], [1.0, 1.0], 0.5, 8.0)) >= 0.5 - 1e-12


# ---- the conditional wait of an M/G/c pool (queueing.wait_distribution)


def _md1_cdf(t: float, lam: float, d: float) -> float:
    """Exact M/D/1 waiting-time CDF (Erlang): (1 - rho) sum_{j<=t/D} [lam(jD - t)]^j/j! e^..."""
    s = 0.0
    for j in range(int(math.floor(t / d)) + 1):
        x = lam * (j * d - t)
        s += x**j / math.factorial(j) * math.exp(-x)
    return (1.0 - lam * d) * s


def _quantile(cdf, p: float, hi: float = 200.0) -> float:
    lo = 0.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if cdf(mid) < p else (lo, mid)
    return hi


def _conditional_quantile(wd: q.WaitDistribution, p: float) -> float:
    """The ``p``-quantile of ``W | W > 0`` from the table, by bisection on its survival."""
    assert wd.conditional is not None
    return _quantile(lambda t: 1.0 - float(wd.conditional.at(t)), p, hi=1e4)


def _fcfs_waits(rate: float, servers: int, vals, probs, n: int, seed: int) -> np.ndarray:
    """Waits of a seeded FCFS M/G/c simulation (each job to the server that frees first),
    the first tenth dropped as warm-up."""
    rng = np.random.default_rng(seed)
    arr = np.cumsum(rng.exponential(1 / rate, n))
    svc = rng.choice(np.asarray(vals), n, p=np.asarray(probs))
    free = np.zeros(servers)
    waits = np.empty(n)
    for i in range(n):
        k = int(np.argmin(free))
        start = max(arr[i], free[k])
        waits[i] = start - arr[i]
        free[k] = start + svc[i]
    return waits[n // 10 :]


def test_wait_distribution_mmc_is_exactly_exponential() -> None:
    # M/M/3 at a = 2.4, the exponential service as 4,000 equal-weight quantile points: the
    # conditional wait is exactly Exp(c mu - lambda) (Erlang), to the discretization's 1e-2
    # (its second moment is 1.99 for 2)
    n = 4000
    s = -np.log1p(-(np.arange(n) + 0.5) / n)
    wd = q.wait_distribution(2.4, 3, s, np.ones(n))
    a = 2.4 * float(np.mean(s))
    assert wd.wait_probability == pytest.approx(q.erlang_c(3, a), rel=1e-12)
    t = np.array([0.05, 0.3, 1.0, 2.0, 5.0, 10.0])
    assert wd.conditional is not None
    np.testing.assert_allclose(wd.conditional.at(t), np.exp(-(3 - a) * t), rtol=1e-2)
    assert wd.mean_wait_s == pytest.approx(wd.wait_probability / (3 - a), rel=2e-3)


def test_wait_distribution_md1_against_erlang_exact() -> None:
    # M/D/1 at rho 0.7 against Erlang's exact waiting-time CDF; mean by Pollaczek-Khinchine
    wd = q.wait_distribution(0.7, 1, [1.0], [1.0])
    assert wd.wait_probability == pytest.approx(0.7)
    assert wd.mean_wait_s == pytest.approx(0.7 / (2 * 0.3))
    for p, tol in ((0.5, 0.1), (0.9, 0.05), (0.99, 0.1)):  # measured -7.7%, +3.1%, +8.1%
        exact = _quantile(lambda t: _md1_cdf(t, 0.7, 1.0), p)
        got = q.mixture_quantile(p, [0.0], [1.0], wd.wait_probability, conditional=wd.conditional)
        assert got == pytest.approx(exact, rel=tol), p


def _mg1_conditional_cdf(rho: float, vals, probs, t_max: float, n: int = 1 << 16):
    """Exact M/G/1 ``P(W <= t | W > 0)`` on a grid: ``W | W > 0`` is a sum of ``N >= 1``
    residual service times with ``P(N = k) = (1 - rho) rho^(k - 1)`` (Pollaczek-Khinchine in
    Benes' form), summed by FFT with an exponential tilt against wrap-around."""
    vals, probs = np.asarray(vals), np.asarray(probs)
    h = t_max / n
    edges = np.arange(n + 1) * h
    g = np.maximum(vals[None, :] - edges[:, None], 0.0) @ probs / float(np.sum(probs * vals))
    mass = np.zeros(2 * n)
    mass[1 : n + 1] = g[:-1] - g[1:]  # each step's mass at its upper end (an upper bound)
    tilt = np.exp(-30.0 / (2 * n) * np.arange(2 * n))
    r = np.fft.rfft(mass * tilt)
    pmf = np.fft.irfft((1 - rho) * r / (1 - rho * r), 2 * n) / tilt
    return edges[1:], np.cumsum(pmf[1 : n + 1])


def test_wait_distribution_mg1_against_pollaczek_khinchine() -> None:
    # M/G/1, two-point service (0.1 s w.p. 0.9, 3 s w.p. 0.1) at rho 0.5 and 0.8: the
    # conditional wait's quantiles against the exact distribution. The model has PK's exact
    # mean and its first residual; the rest is exponential, so the tolerance is 10%.
    vals, probs = [0.1, 3.0], [0.9, 0.1]
    es = 0.9 * 0.1 + 0.1 * 3.0
    for rho in (0.5, 0.8):
        wd = q.wait_distribution(rho / es, 1, vals, probs)
        assert wd.wait_probability == pytest.approx(rho)
        es2 = 0.9 * 0.01 + 0.1 * 9.0
        assert wd.mean_wait_s == pytest.approx(rho / es * es2 / (2 * (1 - rho)))
        t, cdf = _mg1_conditional_cdf(rho, vals, probs, t_max=200.0)
        for p in (0.1, 0.5, 0.9, 0.99):
            exact = float(t[np.searchsorted(cdf, p)])
            assert _conditional_quantile(wd, p) == pytest.approx(exact, rel=0.1), (rho, p)


#: A prefill pool's kind of mixture: mostly short high-hit prefills, a few long low-hit ones.
_POOL_VALS = [2.8, 1.07, 0.31, 0.14, 0.05, 8.3]
_POOL_PROBS = [0.12, 0.05, 0.08, 0.3, 0.42, 0.03]


@pytest.mark.parametrize(
    ("servers", "vals", "probs", "rho", "tol"),
    [
        # mostly short jobs, two servers (the onset case): measured -2%, +5%, -1%, -3%
        (2, [0.5, 5.0], [0.9, 0.1], 0.7, 0.15),
        (4, [0.1, 3.0], [0.9, 0.1], 0.6, 0.15),  # -9%, +3%, -2%, -1%
        (2, _POOL_VALS, _POOL_PROBS, 0.75, 0.15),  # +13%, +3%, +1%, +6%
        (2, [1.0], [1.0], 0.5, 0.2),  # M/D/2: +5%, +1%, +10%, +17%
        (4, [1.0], [1.0], 0.8, 0.2),  # M/D/4: +6%, +2%, +8%, +5%
    ],
)
def test_wait_distribution_mgc_against_simulation(servers, vals, probs, rho, tol) -> None:
    """The conditional wait's 10th, 50th, 90th and 99th percentiles against a seeded FCFS
    simulation of 200,000 jobs; the measured gaps are listed by case. Tolerance 15% for the
    mixtures, 20% for deterministic service (whose exact conditional wait is lighter-tailed
    than the model's exponential remainder); the simulated tail quantiles move by 3-5% with the
    seed. The model is exact only for exponential service (and in mean for c = 1)."""
    es = float(np.dot(vals, probs))
    lam = rho * servers / es
    waits = _fcfs_waits(lam, servers, vals, probs, 200_000, seed=3)
    cond = waits[waits > 1e-12]
    wd = q.wait_distribution(lam, servers, vals, probs)
    assert wd.wait_probability == pytest.approx(len(cond) / len(waits), abs=0.03)
    for p in (0.1, 0.5, 0.9, 0.99):
        sim = float(np.quantile(cond, p))
        assert _conditional_quantile(wd, p) == pytest.approx(sim, rel=tol), p


@pytest.mark.parametrize(
    ("servers", "vals", "probs", "rho"),
    [
        (2, [0.5, 5.0], [0.9, 0.1], 0.7),  # measured -0.7% (Allen-Cunneen's mean: +4.8%)
        (4, [0.1, 3.0], [0.9, 0.1], 0.6),  # -1.9% (+7.4%)
        (2, _POOL_VALS, _POOL_PROBS, 0.6),  # +1.5%
        (2, _POOL_VALS, _POOL_PROBS, 0.75),  # +2.4%
    ],
)
def test_wait_distribution_conditional_mean_on_mixtures(servers, vals, probs, rho) -> None:
    """``E[W | W > 0]`` of high-variability mixtures within 3% of the seeded FCFS simulation
    (200,000 jobs): the light/heavy-traffic interpolation ``E[M] + rho m1``, where
    Allen-Cunneen's ``m1`` alone was 5-7% high on the first two."""
    es = float(np.dot(vals, probs))
    lam = rho * servers / es
    waits = _fcfs_waits(lam, servers, vals, probs, 200_000, seed=3)
    cond = waits[waits > 1e-12]
    wd = q.wait_distribution(lam, servers, vals, probs)
    assert wd.conditional is not None
    assert wd.conditional.mean_s == pytest.approx(float(np.mean(cond)), rel=0.03)


def test_wait_distribution_table_is_fine_enough(monkeypatch) -> None:
    # the default table against a 16x finer one: P(W > t | W > 0) within 1e-4
    vals, probs = [2.8, 1.07, 0.31, 0.14, 0.05, 8.3], [0.12, 0.05, 0.08, 0.3, 0.42, 0.03]
    wd = q.wait_distribution(2.0, 2, vals, probs)
    monkeypatch.setattr(q, "_RESIDUAL_GRID", 16 * q._RESIDUAL_GRID)
    monkeypatch.setattr(q, "_TAIL_GRID", 16 * q._TAIL_GRID)
    q._WAIT_MEMO.clear()
    fine = q.wait_distribution(2.0, 2, vals, probs)
    q._WAIT_MEMO.clear()
    assert wd.conditional is not None and fine.conditional is not None
    t = np.linspace(0.0, 60.0, 5001)
    assert np.max(np.abs(wd.conditional.at(t) - fine.conditional.at(t))) < 1e-4
    assert wd.mean_wait_s == pytest.approx(fine.mean_wait_s, rel=1e-9)


def _nu_s_max(rate: float, servers: int, vals, probs) -> float:
    """``nu s_max`` of :func:`queueing.wait_distribution`'s exponential part (``nu = 1 / m1``,
    Allen-Cunneen's conditional mean ``m1``)."""
    v, p = np.asarray(vals, dtype=float), np.asarray(probs, dtype=float)
    p = p / p.sum()
    mean_s = float(v @ p)
    rho = rate * mean_s / servers
    return 2 * servers * mean_s * (1 - rho) / float(v**2 @ p) * float(v.max())


def _convolved_directly(rate: float, servers: int, vals, probs) -> np.ndarray:
    """``P(W > t | W > 0)`` on the table's grid up to ``max S`` by the convolution's every term
    (a matrix: each factor ``e^{-nu (t - u)}`` at most 1, nothing to overflow)."""
    s, w = np.asarray(vals, dtype=float), np.asarray(probs, dtype=float)
    w = w / w.sum()
    mean_s = float(s @ w)
    key = (float(rate), servers, s.tobytes(), np.asarray(probs, dtype=float).tobytes())
    r = q._residual(servers, s, w, mean_s, key)
    rho = rate * mean_s / servers
    nu = 2.0 * servers * mean_s * (1.0 - rho) / r.second_moment_s2
    t, u = r.grid[1:, None], r.mid[None, :]
    decay = np.where(u <= t, np.exp(-nu * np.maximum(t - u, 0.0)), 0.0)
    body = r.surv_m.copy()
    body[1:] += rho * (decay @ r.mass)
    return body


def test_tail_convolution_direct_sum_equals_the_log_space_sum(monkeypatch) -> None:
    # the running sum of mass e^{nu u} scaled by e^{-nu t} against the log-space scan it
    # replaced, from a small nu s_max to one just under the threshold: one table to rounding
    vals, probs = [2.8, 1.07, 0.31, 0.14, 0.05, 8.3], [0.12, 0.05, 0.08, 0.3, 0.42, 0.03]
    wide = [1.0, 40.0], [0.99, 0.01]  # a rare job 40x the others
    cases = [(2.0, 2, vals, probs), (0.5, 2, vals, probs), (7.0, 16, vals, probs)]
    cases.append((0.05, 80, *wide))
    spans = [_nu_s_max(*c) for c in cases]
    assert min(spans) < 3.0 and 500.0 < max(spans) < q._DIRECT_SUM_MAX  # the direct branch
    for rate, servers, v, p in cases:
        q._WAIT_MEMO.clear()
        direct = q.wait_distribution(rate, servers, v, p)
        monkeypatch.setattr(q, "_DIRECT_SUM_MAX", -1.0)
        q._WAIT_MEMO.clear()
        logged = q.wait_distribution(rate, servers, v, p)
        monkeypatch.undo()
        assert direct.conditional is not None and logged.conditional is not None
        np.testing.assert_allclose(
            direct.conditional.survival, logged.conditional.survival, rtol=1e-12
        )
        np.testing.assert_array_equal(direct.conditional.grid_s, logged.conditional.grid_s)
        # and both against the convolution's every term, and past max S its exponential
        body = _convolved_directly(rate, servers, v, p)
        got, t = direct.conditional.survival, direct.conditional.grid_s
        np.testing.assert_allclose(got[: body.size], body, rtol=1e-12)
        nu = _nu_s_max(rate, servers, v, p) / max(v)
        tail = body[-1] * np.exp(-nu * (t[body.size :] - max(v)))
        np.testing.assert_allclose(got[body.size :], tail, rtol=1e-9)
    q._WAIT_MEMO.clear()


def test_tail_convolution_in_log_space_where_nu_s_max_is_large() -> None:
    # 512 servers at a light load and one rare job 1,000x the others: nu s_max is some 1,800,
    # past what e^{nu u} can hold, so the sum is taken in log space: the convolution's every
    # term gives the same table
    vals, probs = [1.0, 1000.0], [0.999, 0.001]
    servers, rho = 512, 0.1
    rate = rho * servers / float(np.dot(vals, probs))
    assert _nu_s_max(rate, servers, vals, probs) > 3 * q._DIRECT_SUM_MAX
    q._WAIT_MEMO.clear()
    wd = q.wait_distribution(rate, servers, vals, probs)
    assert wd.conditional is not None
    p = wd.conditional.survival
    assert np.all(np.isfinite(p)) and p[0] == pytest.approx(1.0)
    assert np.all(np.diff(p) <= 1e-15) and p[-1] >= 0.0
    body = _convolved_directly(rate, servers, vals, probs)
    np.testing.assert_allclose(p[: body.size], body, rtol=1e-9, atol=1e-300)
    q._WAIT_MEMO.clear()


def test_wait_distribution_edges() -> None:
    assert q.wait_distribution(0.0, 2, [1.0], [1.0]) == (0.0, 0.0, None)
    saturated = q.wait_distribution(3.0, 2, [1.0], [1.0])
    assert saturated.wait_probability == 1.0 and math.isinf(saturated.mean_wait_s)
    assert math.isinf(q.mixture_quantile(0.5, [0.0], [1.0], 1.0, 0.0))
    # M/D/4 at a low load (rho 0.1): the first completion, E[min of 4 U(0,1)] = 1/5 (the
    # light-traffic limit), plus rho times Allen-Cunneen's m1 = 1 / (2 x 4 x 0.9)
    wd = q.wait_distribution(0.4, 4, [1.0], [1.0])
    assert wd.conditional is not None
    assert wd.conditional.mean_s == pytest.approx(1.0 / 5.0 + 0.1 / 7.2, rel=1e-3)
    assert wd.mean_wait_s == pytest.approx(wd.wait_probability * wd.conditional.mean_s)


# ---- the quantiles of W + D on a tabulated conditional wait (queueing._table_quantiles)


def _table_cdf(t: float, d: np.ndarray, w: np.ndarray, pw: float, cond: q.ConditionalWait):
    """``F(t) = sum_k w_k (1 - P(W > t - d_k))`` from the table, written out: the term is 0
    before ``d_k`` and ``w_k (1 - pw S(t - d_k))`` from ``d_k`` on (its no-wait jump)."""
    x = t - d
    s = np.interp(np.maximum(x, 0.0), cond.grid_s, cond.survival, right=0.0)
    return float(np.sum(np.where(x < 0, 0.0, w * (1.0 - pw * s))))


def _bisected_quantile(p: float, d, w, pw: float, cond: q.ConditionalWait) -> float:
    """The smallest ``t`` with ``F(t) >= p``, bisected to 1e-14 relative."""
    lo, hi = float(d[0]) - 1.0, float(d[-1] + cond.grid_s[-1])
    while hi - lo > 1e-14 * abs(hi):
        mid = 0.5 * (lo + hi)
        if _table_cdf(mid, d, w, pw, cond) >= p:
            hi = mid
        else:
            lo = mid
    return hi


@pytest.mark.parametrize("seed", range(8))
def test_table_quantiles_bracket_the_cdf(seed: int) -> None:
    """On random mixtures (offsets with ties, several P(W > 0) and conditional waits), each
    quantile ``r`` has ``F(r) >= p > F(r (1 - QUANTILE_RTOL))``, equals a fine bisection to
    QUANTILE_RTOL, and is the offset itself when ``p`` falls in an offset's no-wait jump."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    d = np.sort(np.round(rng.uniform(0.1, 3.0, size=n), 1))  # rounded: ties
    w = rng.uniform(0.2, 1.0, size=n)
    w = w / w.sum()
    a = np.cumsum(w)
    pw = (0.05, 0.3, 0.6, 0.95)[seed % 4]
    cond = q.gamma_conditional(float(rng.uniform(0.3, 3.0)), (0.7, 1.0, 2.5)[seed % 3])
    u = np.unique(d)
    jumps = rng.choice(u, size=min(4, len(u)), replace=False)
    # p inside the jump at u: between F just below u and F(u)
    p_jump = [
        0.5 * (_table_cdf(float(np.nextafter(x, -np.inf)), d, w, pw, cond))
        + 0.5 * _table_cdf(float(x), d, w, pw, cond)
        for x in jumps
    ]
    # p on the continuous parts: between offsets and past the largest
    t_smooth = rng.uniform(d[0], d[-1] + 3.0 * cond.mean_s, size=6)
    p_smooth = [_table_cdf(float(t), d, w, pw, cond) for t in t_smooth]
    ps = [p for p in (*p_jump, *p_smooth, 0.5, 0.9, 0.99) if 0.0 < p < 1.0 - 1e-9]
    got = q._table_quantiles(ps, d, w, a, pw, cond)
    for p, r in zip(ps, got, strict=True):
        assert _table_cdf(r, d, w, pw, cond) >= p
        assert _table_cdf(r * (1.0 - q.QUANTILE_RTOL), d, w, pw, cond) < p
        assert r == pytest.approx(_bisected_quantile(p, d, w, pw, cond), rel=q.QUANTILE_RTOL)
    for x, r in zip(jumps, got, strict=False):
        assert r == x


def test_residual_share_is_the_sum_over_longer_jobs() -> None:
    """``sum_k w_k (s_k - t)^+`` by suffix sums equals the sum taken term by term, ties and
    times past the longest job included (to rounding, relative to E[S])."""
    from pddplan.models.queueing import _residual_share

    rng = np.random.default_rng(7)
    for _ in range(50):
        n = int(rng.integers(1, 200))
        s = rng.lognormal(0.0, 1.5, n)
        if rng.random() < 0.5:
            s = np.round(s, 1) + 0.1  # tied service times
        w = rng.random(n)
        w /= w.sum()
        t = np.concatenate([s.max() * np.linspace(0.0, 1.0, 257) ** 2, s, [2 * s.max()]])
        direct = np.array([np.sum(w * np.maximum(s - x, 0.0)) for x in t])
        got = _residual_share(s, w, t)
        assert np.all(got >= 0.0)
        assert np.max(np.abs(got - direct)) <= 1e-13 * float(np.sum(w * s))
        assert got[-1] == 0.0


def test_mean_first_completion_is_the_integral_of_its_survival() -> None:
    """``E[M]`` piece by piece equals a fine trapezoid of ``G(t)^c`` (ties included), and for
    one server the mean residual ``E[S^2] / (2 E[S])``."""
    from pddplan.models.queueing import _mean_first_completion, _residual_share

    rng = np.random.default_rng(11)
    for _ in range(20):
        n = int(rng.integers(1, 40))
        s = np.round(rng.lognormal(0.0, 1.0, n), 1) + 0.1
        w = rng.random(n)
        w /= w.sum()
        mean = float(np.sum(w * s))
        t = s.max() * np.linspace(0.0, 1.0, 100_001)
        g = _residual_share(s, w, t) / mean
        for c in (1, 2, 5):
            got = _mean_first_completion(s, w, c, mean)
            assert got == pytest.approx(float(np.trapezoid(g**c, t)), rel=1e-6)
        assert _mean_first_completion(s, w, 1, mean) == pytest.approx(
            float(np.sum(w * s * s)) / (2 * mean), rel=1e-12
        )


def _side_cases():
    """(offsets, weights, wait probability, conditional wait) of TTFT-like mixtures: a prefill
    pool's M/G/c wait over its own mixture, no wait at all, and offsets with repeated values
    (the CDF's jumps)."""
    rng = np.random.default_rng(23)
    out = []
    for k in range(12):
        n = int(rng.integers(20, 200))
        d = rng.lognormal(-1.0, 0.8, n)
        if k % 3 == 2:
            d = np.round(d, 1)  # offsets that repeat: jumps the quantile may land on
        w = rng.uniform(0.1, 1.0, n)
        s = rng.lognormal(-2.0, 1.0, 30)
        sw = rng.uniform(0.1, 1.0, 30)
        c = int(rng.integers(1, 16))
        rate = 0.9 * c / float((sw * s).sum() / sw.sum())
        wait = q.wait_distribution(rate * rng.uniform(0.2, 1.0), c, s, sw)
        out.append((d, w, wait.wait_probability, wait.conditional))
        out.append((d, w, 0.0, None))
    return out


def test_quantile_side_places_the_quantile_mixture_quantiles_returns() -> None:
    """quantile_side's answer holds against the quantile that mixture_quantiles returns: 1 puts
    it above t (1 + QUANTILE_SIDE_RTOL), -1 below t (1 - QUANTILE_SIDE_RTOL) / (1 -
    QUANTILE_RTOL); probed at t far from it and within a few of its tolerances, on both sides,
    where both answers and "cannot tell" must all occur."""
    r, qr = q.QUANTILE_SIDE_RTOL, q.QUANTILE_RTOL
    factors = (0.5, 0.9, 1 - 10 * r, 1 - 2 * r, 1 - r, 1.0, 1 + r, 1 + 2 * r, 1 + 10 * r, 2.0)
    seen = {-1: 0, 0: 0, 1: 0}
    for d, w, pw, cond in _side_cases():
        for p in (0.5, 0.9, 0.99):
            qv = q.mixture_quantiles([p], d, w, pw, conditional=cond)[0]
            for f in factors:
                t = qv * f
                side = q.quantile_side(p, t, d, w, pw, cond)
                seen[side] += 1
                if side == 1:
                    assert qv > t * (1 + r)
                elif side == -1:
                    assert qv < t * (1 - r) / (1 - qr)
    assert min(seen.values()) > 0, seen
    assert q.quantile_side(0.99, math.inf, [0.1], [1.0]) == 0
    assert q.quantile_side(0.99, 0.0, [0.1], [1.0]) == 0
    assert q.quantile_side(0.99, 1.0, [math.inf], [1.0]) == 0
