"""Which inputs ``pddplan robust`` samples, their distributions, and the draws.

Every key a profile lists under ``estimated:`` (chips' datasheet, price and derate groups, the
WAN and RDMA links, the model's sourced groups) of a chip or link the scenario uses gets the
default distribution of its kind (:data:`DEFAULT_RULES`, reasoning in docs/robust.md); so do the
target rate, the workload's hit-rate shift and its anomalous share. A scenario's
``uncertainty:`` block replaces any of these by PATH (``fixed: true`` turns one off), adds
others, or turns the defaults off (``defaults: false``).

Draws are a Latin hypercube (:class:`scipy.stats.qmc.LatinHypercube`, seeded) mapped through
each distribution's inverse CDF, so one seed gives the same samples on any executor.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from pddplan.errors import OverrideError, ProfileError
from pddplan.io.loader import ResolvedScenario
from pddplan.io.overrides import ScenarioSource, check_path
from pddplan.spec import (
    DISTRIBUTION_KINDS,
    Distribution,
    Lognormal,
    Normal,
    Relative,
    Sourced,
    Triangular,
    Uncertainty,
    Uniform,
)
from pddplan.spec.scenario import role_chip_names

RATE = "rate_rps"
HIT_SHIFT = "workload.hit_rate.shift"
ANOMALOUS_SHARE = "workload.anomalous.share"
#: Estimated keys that are settings an operator chooses, not quantities to measure.
CONFIGURATION_KEYS = frozenset({"max_window_bytes"})


@dataclass(frozen=True)
class Rule:
    """A default distribution for a kind of quantity, and why."""

    kind: str
    dist: Distribution
    reason: str


def _rel(low: float, high: float, mode: float = 1.0) -> Distribution:
    """A relative distribution of factors ``low <= mode <= high`` (all above 0), made without
    pydantic's validation: the rules' constants (:data:`DEFAULT_RULES`, checked against the
    schema by the tests) and a validated one's factors with ``high`` raised to at least
    ``mode`` (:func:`capped`) hold what the schema checks, and a solve's verdict check, which
    reads them, would otherwise build the distributions' validators (some 2 ms of its start)."""
    return Distribution.model_construct(
        relative=Relative.model_construct(low=low, mode=mode, high=high)
    )


#: Default distribution per kind of estimated quantity (docs/robust.md explains each).
DEFAULT_RULES: dict[str, Rule] = {
    "price": Rule(
        "price",
        _rel(0.85, 1.3),
        "a rental quote: -15% to +30% of the estimate, skewed up (scarce chips are repriced "
        "upward more often than down)",
    ),
    "line price": Rule(
        "line price",
        _rel(0.5, 2.0),
        "a leased line's price varies 2-5x by carrier and country; a factor 0.5 to 2",
    ),
    "efficiency": Rule(
        "efficiency",
        _rel(0.8, 1.05),
        "microbenchmark efficiencies are peaks: production reaches up to 20% less, rarely "
        "more (capped at 1)",
    ),
    "latency": Rule(
        "latency",
        _rel(0.8, 1.5),
        "fixed costs and round trips have a floor and a long upper tail: -20% to +50%",
    ),
    "shape": Rule(
        "shape",
        _rel(0.75, 1.5),
        "a GEMM saturation knee follows the tile shape (64 rows on Hopper); kernels and "
        "schedulers move it by -25% to +50%",
    ),
    "jitter": Rule(
        "jitter",
        _rel(0.5, 2.0),
        "a network's variability is known to a factor of 2 either way",
    ),
    "loss": Rule("loss", _rel(0.1, 10.0), "a loss rate is known to an order of magnitude"),
    "other": Rule("other", _rel(0.9, 1.1), "another estimate: +-10%"),
    "rate": Rule(
        "rate",
        Distribution.model_construct(lognormal=Lognormal.model_construct(cv=0.1)),
        "a demand forecast: lognormal around the target with a 10% coefficient of variation",
    ),
    "hit-rate shift": Rule(
        "hit-rate shift",
        Distribution.model_construct(normal=Normal.model_construct(sd=0.02, low=-1.0, high=1.0)),
        "the prefix hit rate drifts with cache capacity and traffic mix: 2 points (sd) around "
        "the workload's distribution",
    ),
    "anomalous share": Rule(
        "anomalous share",
        _rel(0.75, 1.25),
        "the brief estimates anomalous traffic at 3-4% of requests (+-14% around 3.5%); a "
        "factor 0.75 to 1.25",
    ),
}


def kind_of(key: str) -> str:
    """The default rule's kind of an estimated profile key."""
    if key in ("rental_usd_per_hour", "price_usd_per_hour"):
        return "price"
    if key == "price_usd_per_month":
        return "line price"
    if key == "efficiency" or key.endswith("_efficiency"):
        return "efficiency"
    if key.endswith(("_ms", "_us")):
        return "latency"
    if key.endswith("_tokens"):
        return "shape"
    if key == "jitter_cv":
        return "jitter"
    if key == "loss_rate":
        return "loss"
    return "other"


@dataclass(frozen=True)
class Input:
    """One sampled input: its override PATH, its value in the scenario and its distribution."""

    path: str
    point: float
    dist: Distribution
    kind: str  # the default rule's kind, or "scenario" for the uncertainty block's own
    reason: str
    #: the key holds a whole number (its value in the scenario is one): each draw is rounded
    integer: bool = False


@dataclass(frozen=True)
class NotSampled:
    path: str
    reason: str


def _estimated(group: Sourced | Any, prefix: str) -> list[tuple[str, Any]]:
    out = []
    for key in getattr(group, "estimated", []):
        out.append((f"{prefix}.{key}", getattr(group, key)))
    return out


def estimated_values(rs: ResolvedScenario) -> list[tuple[str, Any]]:
    """(PATH, value) of every estimated key of the chips, links and model the scenario uses."""
    out: list[tuple[str, Any]] = []
    chips: list[str] = []
    for role in ("P", "RLD", "MD"):
        chips += [c for c in role_chip_names(rs, role) if c not in chips and c in rs.chips]
    for name in chips:
        chip = rs.chips[name]
        out += _estimated(chip.datasheet, f"chips.{name}.datasheet")
        for path, v in _estimated(chip.price, f"chips.{name}.price"):
            short = path.replace(".price.rental_usd_per_hour", ".price_usd_per_hour")
            out.append((short, v))
        derates = getattr(chip, "derates", None)
        if derates is not None:
            out += _estimated(derates, f"chips.{name}.derates")
    out += _estimated(rs.link, "link")
    out += _estimated(rs.rdma, "rdma")
    for group in ("params_override", "speculative"):
        g = getattr(rs.model, group, None)
        if g is not None:
            out += _estimated(g, f"model.{group}")
    return out


def _point_value(rs: ResolvedScenario, path: str) -> Any:
    """The scenario's value at an override PATH (None where it has none)."""
    if path == RATE:
        return rs.scenario.rate_rps
    parts = path.split(".")
    obj: Any
    if parts[0] == "chips":
        obj = rs.chips.get(parts[1])
        rest = parts[2:]
        if rest == ["price_usd_per_hour"]:
            rest = ["price", "rental_usd_per_hour"]
    elif parts[0] in ("link", "rdma", "model", "workload"):
        obj = getattr(rs, parts[0])
        rest = parts[1:]
    else:
        obj = rs.scenario
        rest = parts
    for p in rest:
        if obj is None:
            return None
        obj = obj.get(p) if isinstance(obj, Mapping) else getattr(obj, p, None)
    return obj


def _numeric(v: Any) -> bool:
    return isinstance(v, float | int) and not isinstance(v, bool)


def collect_inputs(rs: ResolvedScenario) -> tuple[list[Input], list[NotSampled]]:
    """The inputs to sample: defaults (unless turned off), then the uncertainty block's."""
    unc = rs.scenario.uncertainty
    found: dict[str, Input] = {}
    skipped: list[NotSampled] = []
    if unc is None or unc.defaults:
        found, skipped = default_inputs(estimated_values(rs))
        if rs.scenario.rate_rps is not None:
            rule = DEFAULT_RULES["rate"]
            found[RATE] = Input(RATE, rs.scenario.rate_rps, rule.dist, rule.kind, rule.reason)
        rule = DEFAULT_RULES["hit-rate shift"]
        found[HIT_SHIFT] = Input(
            HIT_SHIFT, float(rs.workload.hit_rate.shift), rule.dist, rule.kind, rule.reason
        )
        if rs.workload.anomalous is not None and rs.workload.anomalous.share > 0:
            rule = DEFAULT_RULES["anomalous share"]
            found[ANOMALOUS_SHARE] = Input(
                ANOMALOUS_SHARE, rs.workload.anomalous.share, rule.dist, rule.kind, rule.reason
            )
    if unc is not None:

        def check(path: str) -> None:
            check_path(path, rs)

        stated_inputs(
            unc,
            found,
            skipped,
            check=check,
            point_value=lambda p: _point_value(rs, p),
            file=rs.file,
        )
    return list(found.values()), skipped


def default_inputs(
    estimated: Sequence[tuple[str, Any]],
) -> tuple[dict[str, Input], list[NotSampled]]:
    """The default input of each estimated (PATH, value): the rule of its key's kind
    (:data:`DEFAULT_RULES`); settings, whole numbers, switches and a zero loss rate are not
    sampled (and say why)."""
    found: dict[str, Input] = {}
    skipped: list[NotSampled] = []
    for path, v in estimated:
        key = path.rsplit(".", 1)[1]
        if key in CONFIGURATION_KEYS:
            skipped.append(NotSampled(path, "a setting the operator chooses"))
        elif not isinstance(v, float) or isinstance(v, bool):
            skipped.append(NotSampled(path, "a whole number or a switch, not sampled"))
        elif key == "loss_rate" and v <= 0:
            skipped.append(NotSampled(path, "zero: no loss ceiling to vary"))
        else:
            rule = DEFAULT_RULES[kind_of(key)]
            found[path] = capped(Input(path, float(v), rule.dist, rule.kind, rule.reason))
    return found, skipped


def stated_inputs(
    unc: Uncertainty,
    found: dict[str, Input],
    skipped: list[NotSampled],
    *,
    check: Callable[[str], None],
    point_value: Callable[[str], Any],
    file: str | None,
) -> None:
    """Apply an ``uncertainty:`` block's inputs to ``found`` (``fixed: true`` removes one):
    ``check`` raises OverrideError on a PATH that is not a key, ``point_value`` gives a PATH's
    value where it is sampled (None where it has none)."""
    for path, dist in unc.inputs.items():
        key = f"uncertainty.inputs.{path}"
        try:
            check(path)
        except OverrideError as exc:
            raise ProfileError(exc.detail, file=file, key=key) from None
        point = point_value(path)
        if dist.fixed:
            found.pop(path, None)
            skipped.append(NotSampled(path, "fixed by the scenario's uncertainty block"))
            continue
        if not _numeric(point) and not _absolute(dist):
            raise ProfileError(
                "the scenario has no number here for a relative distribution; give "
                "uniform, triangular or log_uniform bounds",
                file=file,
                key=key,
            )
        if isinstance(point, bool):
            raise ProfileError("a switch cannot be sampled", file=file, key=key)
        if dist.lognormal is not None and not (point is not None and point > 0):
            raise ProfileError(
                "lognormal needs a positive value in the scenario", file=file, key=key
            )
        found[path] = Input(
            path,
            float(point) if _numeric(point) else math.nan,
            dist,
            "scenario",
            unc.source,
            integer=isinstance(point, int),
        )


def _absolute(d: Distribution) -> bool:
    return d.uniform is not None or d.triangular is not None or d.log_uniform is not None


#: The tails a plausible range leaves out of a normal or lognormal distribution [-].
TAIL_PROBABILITY = 0.001


def support(inp: Input) -> tuple[float, float]:
    """An input's bounds, or its 0.1% and 99.9% quantiles where it has none."""
    d = inp.dist
    unbounded = d.lognormal is not None or (
        d.normal is not None and (d.normal.low is None or d.normal.high is None)
    )
    return _ends(inp, tails=unbounded)


def plausible_range(inp: Input) -> tuple[float, float]:
    """An input's plausible range: the bounds of a bounded distribution (uniform, triangular,
    relative, log-uniform), the :data:`TAIL_PROBABILITY` and ``1 - TAIL_PROBABILITY``
    quantiles of a normal or lognormal one, clipped bounds or not (a normal of 2 points
    clipped to [-1, 1] is plausible over about +-6 points, not over its clip).

    Notes
    -----
    The standard normal quantile is :func:`normal_quantile`, the draws' own.
    """
    d = inp.dist
    if d.normal is None and d.lognormal is None:
        return _ends(inp, tails=False)
    z = float(normal_quantile(np.array([1.0 - TAIL_PROBABILITY]))[0])
    v = _gaussian(inp, np.array([-z, z]))
    return float(v[0]), float(v[1])


def _ends(inp: Input, *, tails: bool) -> tuple[float, float]:
    p = TAIL_PROBABILITY
    v = values(inp, np.array([p, 1.0 - p]) if tails else np.array([0.0, 1.0]))
    return float(v[0]), float(v[1])


def values(inp: Input, u: np.ndarray) -> np.ndarray:
    """The input's values at uniform draws ``u`` in (0, 1) (inverse CDF)."""
    d = inp.dist
    u = np.asarray(u, dtype=float)
    if d.uniform is not None:
        return _uniform(d.uniform, u)
    if d.triangular is not None:
        return _triangular(d.triangular, u)
    if d.log_uniform is not None:
        lo, hi = math.log(d.log_uniform.low), math.log(d.log_uniform.high)
        return np.exp(lo + u * (hi - lo))
    if d.relative is not None:
        return inp.point * _triangular(d.relative, u)
    if d.normal is not None or d.lognormal is not None:
        return _gaussian(inp, normal_quantile(u))
    raise AssertionError(f"no distribution among {DISTRIBUTION_KINDS}")  # pragma: no cover


#: Coefficients of the rational approximations of :func:`normal_quantile`, highest power first
#: (Cephes ``ndtri``, S. L. Moshier, Cephes Math Library 2.1, 1989, as SciPy's
#: ``scipy.special.ndtri`` uses them; the denominators' leading 1 left out): the centre
#: ``|u - 1/2| <= 1/2 - exp(-2)``, then the tails for ``z = sqrt(-2 log u)`` in [2, 8) and
#: [8, 64].
_NDTRI_P0 = (
    -5.99633501014107895267e1,
    9.80010754185999661536e1,
    -5.66762857469070293439e1,
    1.39312609387279679503e1,
    -1.23916583867381258016e0,
)
_NDTRI_Q0 = (
    1.95448858338141759834e0,
    4.67627912898881538453e0,
    8.63602421390890590575e1,
    -2.25462687854119370527e2,
    2.00260212380060660359e2,
    -8.20372256168333339912e1,
    1.59056225126211695515e1,
    -1.18331621121330003142e0,
)
_NDTRI_P1 = (
    4.05544892305962419923e0,
    3.15251094599893866154e1,
    5.71628192246421288162e1,
    4.40805073893200834700e1,
    1.46849561928858024014e1,
    2.18663306850790267539e0,
    -1.40256079171354495875e-1,
    -3.50424626827848203418e-2,
    -8.57456785154685413611e-4,
)
_NDTRI_Q1 = (
    1.57799883256466749731e1,
    4.53907635128879210584e1,
    4.13172038254672030440e1,
    1.50425385692907503408e1,
    2.50464946208309415979e0,
    -1.42182922854787788574e-1,
    -3.80806407691578277194e-2,
    -9.33259480895457427372e-4,
)
_NDTRI_P2 = (
    3.23774891776946035970e0,
    6.91522889068984211695e0,
    3.93881025292474443415e0,
    1.33303460815807542389e0,
    2.01485389549179081538e-1,
    1.23716634817820021358e-2,
    3.01581553508235416007e-4,
    2.65806974686737550832e-6,
    6.23974539184983293730e-9,
)
_NDTRI_Q2 = (
    6.02427039364742014255e0,
    3.67983563856160859403e0,
    1.37702099489081330271e0,
    2.16236993594496635890e-1,
    1.34204006088543189037e-2,
    3.28014464682127739104e-4,
    2.89247864745380683936e-6,
    6.79019408009981274425e-9,
)
_EXP_MINUS_2 = 0.13533528323661269189
_SQRT_2PI = 2.50662827463100050242


def _horner(x: float, coef: tuple[float, ...], leading_one: bool = False) -> float:
    """The polynomial of ``coef`` (highest power first) at ``x``, by Horner's rule; with
    ``leading_one`` a leading coefficient of 1 comes before ``coef``."""
    acc = x + coef[0] if leading_one else coef[0]
    for c in coef[1:]:
        acc = acc * x + c
    return acc


def normal_quantile(u: np.ndarray) -> np.ndarray:
    """The standard normal quantile at each ``u`` in [0, 1] (inverse CDF; -inf at 0, inf at 1,
    NaN outside).

    Cephes' ``ndtri`` (relative error below 1e-15), evaluated element by element in the same
    operations and with the C library's ``log`` and ``sqrt`` (:mod:`math`), so that it gives
    ``scipy.special.ndtri``'s values to the bit (tested) without importing scipy.special (about
    0.17 s of a robust study's start on a 2-core machine).
    """
    flat = np.asarray(u, dtype=float).ravel().tolist()
    out = []
    for y0 in flat:
        if not 0.0 <= y0 <= 1.0:  # NaN too
            out.append(math.nan)
            continue
        if y0 == 0.0 or y0 == 1.0:
            out.append(-math.inf if y0 == 0.0 else math.inf)
            continue
        y, negate = y0, True
        if y > 1.0 - _EXP_MINUS_2:
            y, negate = 1.0 - y, False
        if y > _EXP_MINUS_2:
            y = y - 0.5
            y2 = y * y
            x = y + y * (y2 * _horner(y2, _NDTRI_P0) / _horner(y2, _NDTRI_Q0, leading_one=True))
            out.append(x * _SQRT_2PI)
            continue
        x = math.sqrt(-2.0 * math.log(y))
        x0 = x - math.log(x) / x
        z = 1.0 / x
        p, q = (_NDTRI_P1, _NDTRI_Q1) if x < 8.0 else (_NDTRI_P2, _NDTRI_Q2)
        x = x0 - z * _horner(z, p) / _horner(z, q, leading_one=True)
        out.append(-x if negate else x)
    return np.array(out, dtype=float).reshape(np.shape(u))


def _gaussian(inp: Input, z: np.ndarray) -> np.ndarray:
    """A normal or lognormal input's values at standard normal quantiles ``z``."""
    d = inp.dist
    if d.normal is not None:
        n = d.normal
        mean = inp.point if n.mean is None else n.mean
        x = mean + n.sd * z
        lo = -np.inf if n.low is None else n.low
        hi = np.inf if n.high is None else n.high
        return np.asarray(np.clip(x, lo, hi), dtype=float)
    assert d.lognormal is not None
    s2 = math.log1p(d.lognormal.cv**2)
    mu = math.log(inp.point) - s2 / 2
    return np.asarray(np.exp(mu + math.sqrt(s2) * z), dtype=float)


def _uniform(d: Uniform, u: np.ndarray) -> np.ndarray:
    return d.low + u * (d.high - d.low)


def _triangular(d: Triangular | Relative, u: np.ndarray) -> np.ndarray:
    """Inverse CDF of a triangular distribution at ``u`` (a relative distribution's factors: the
    same three fields)."""
    lo, mode, hi = d.low, d.mode, d.high
    if hi <= lo:
        return np.full_like(u, lo)
    c = (mode - lo) / (hi - lo)
    left = lo + np.sqrt(u * (hi - lo) * (mode - lo))
    right = hi - np.sqrt((1 - u) * (hi - lo) * (hi - mode))
    return np.where(u < c, left, right)


def capped(inp: Input) -> Input:
    """Efficiencies are fractions: a relative default never takes one above 1."""
    r = inp.dist.relative
    if inp.kind == "efficiency" and r is not None and inp.point * r.high > 1.0:
        high = max(1.0 / inp.point, r.mode)
        return Input(
            inp.path,
            inp.point,
            _rel(r.low, high, r.mode),
            inp.kind,
            inp.reason,
            inp.integer,
        )
    return inp


class Resolves(Protocol):
    """A source that resolves overrides (a scenario's or a topology's), OverrideError if bad."""

    def resolve(self, overrides: Mapping[str, Any] | None = None) -> Any: ...


def check_inputs(src: ScenarioSource | Resolves, inputs: Sequence[Input], file: str) -> None:
    """Each input's extreme values must be valid values of its key (a one-line error if not)."""
    for inp in inputs:
        lo, hi = support(inp)
        for v in (lo, hi):
            try:
                src.resolve({inp.path: _cast(inp, v)})
            except OverrideError as exc:
                raise ProfileError(
                    f"its distribution reaches {v:.6g}, which the key does not allow: {exc.detail}",
                    file=file,
                    key=f"uncertainty.inputs.{inp.path}",
                ) from None


def _cast(inp: Input, v: float) -> float | int:
    """A draw of ``inp`` as its key takes it: rounded where the key holds a whole number."""
    return int(round(v)) if inp.integer else float(v)


def draw(inputs: Sequence[Input], samples: int, seed: int | None) -> np.ndarray:
    """A ``samples`` x ``len(inputs)`` matrix of input values (Latin hypercube, seeded)."""
    if not inputs:
        return np.zeros((samples, 0))
    u = latin_hypercube(samples, len(inputs), seed)
    return np.column_stack([values(inp, u[:, j]) for j, inp in enumerate(inputs)])


def latin_hypercube(samples: int, dims: int, seed: int | None) -> np.ndarray:
    """A ``samples`` x ``dims`` Latin hypercube on (0, 1): in each column every stratum
    ``[(i - 1) / samples, i / samples)`` holds one draw, uniform within it.

    The same draws as ``scipy.stats.qmc.LatinHypercube(d=dims, seed=seed).random(samples)``
    (scrambled, strength 1, no optimization; ``tests/unit/robust/test_inputs.py`` compares
    them) from the same ``numpy.random.default_rng(seed)`` stream, without importing
    scipy.stats (about 0.6 s of a robust study's start on a 2-core machine)."""
    rng = np.random.default_rng(seed)
    jitter = rng.uniform(size=(samples, dims))
    strata = np.tile(np.arange(1, samples + 1), (dims, 1))
    for i in range(dims):
        rng.shuffle(strata[i, :])
    return (strata.T - jitter) / samples


def sample_overrides(inputs: Sequence[Input], x: np.ndarray) -> list[dict[str, Any]]:
    """One overrides mapping per row of ``x``."""
    return [
        {inp.path: _cast(inp, float(v)) for inp, v in zip(inputs, row, strict=True)}
        for row in x.tolist()
    ]
