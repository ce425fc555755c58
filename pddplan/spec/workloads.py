"""The workload profile: request length distributions, the prefix-cache hit rate and the
anomalous (long-input, short-output) share."""

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, model_validator
from typing_extensions import Self

from pddplan import defaults
from pddplan.labels import plain
from pddplan.spec.base import MAX_TOKENS, Fraction, PositiveFloat, Rate, Source, Strict, Tokens


class FixedLength(Strict):
    fixed: Tokens


class LognormalLength(Strict):
    lognormal: "LognormalParams"


class LognormalParams(Strict):
    mean: Annotated[float, Field(ge=1, le=MAX_TOKENS)]
    cv: Annotated[float, Field(gt=0, le=100)]
    min: Tokens = 1
    max: Tokens | None = None

    @model_validator(mode="after")
    def _bounds(self) -> Self:
        if self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) must not exceed max ({self.max})")
        if self.mean < self.min or (self.max is not None and self.mean > self.max):
            raise ValueError(
                f"mean ({self.mean:g}) must lie between min ({self.min}) and max "
                f"({self.max if self.max is not None else 'none'}): otherwise most lengths "
                "would be clamped"
            )
        return self


class EmpiricalLength(Strict):
    empirical: "EmpiricalParams"


class EmpiricalParams(Strict):
    values: list[Tokens] = Field(min_length=1, max_length=1_000_000)
    weights: list[PositiveFloat] | None = Field(default=None, max_length=1_000_000)

    @model_validator(mode="after")
    def _same_length(self) -> Self:
        if self.weights is not None and len(self.weights) != len(self.values):
            raise ValueError("weights must have as many entries as values")
        return self


def _length_kind(v: Any) -> str | None:
    if isinstance(v, dict):
        for key, tag in (
            ("fixed", "FixedLength"),
            ("lognormal", "LognormalLength"),
            ("empirical", "EmpiricalLength"),
        ):
            if key in v:
                return tag
        return None
    return (
        type(v).__name__ if isinstance(v, FixedLength | LognormalLength | EmpiricalLength) else None
    )


LengthDist = Annotated[
    Annotated[FixedLength, Tag("FixedLength")]
    | Annotated[LognormalLength, Tag("LognormalLength")]
    | Annotated[EmpiricalLength, Tag("EmpiricalLength")],
    Discriminator(
        _length_kind,
        custom_error_type="length_kind",
        custom_error_message="a length distribution is a mapping with one of the keys fixed, "
        "lognormal or empirical",
    ),
]


class HitRateBins(Strict):
    edges: list[Fraction] = Field(min_length=2, max_length=10_001)
    probabilities: list[Fraction] = Field(min_length=1, max_length=10_000)

    @model_validator(mode="after")
    def _check(self) -> Self:
        e = self.edges
        if len(self.probabilities) != len(e) - 1:
            raise ValueError(
                f"{len(e)} edges make {len(e) - 1} bins but {len(self.probabilities)} "
                "probabilities were given"
            )
        if any(b <= a for a, b in zip(e, e[1:], strict=False)):
            raise ValueError("edges must increase strictly")
        total = sum(self.probabilities)
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"probabilities must sum to 1, they sum to {total:.6g}")
        return self


class HitRateBeta(Strict):
    a: Annotated[float, Field(ge=1e-3, le=1e3)]
    b: Annotated[float, Field(ge=1e-3, le=1e3)]


class HitRateDist(Strict):
    bins: HitRateBins | None = None
    beta: HitRateBeta | None = None
    samples: list[Fraction] | None = Field(default=None, max_length=1_000_000)
    shift: Annotated[float, Field(ge=-1, le=1)] = 0.0
    scale: Annotated[float, Field(ge=0, le=100)] = 1.0
    mix_weight: Fraction = 0.0
    mix_with: "HitRateDist | None" = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        given = [k for k in ("bins", "beta", "samples") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of bins, beta, samples"
                + (f" (got {plain(given)})" if given else "")
            )
        if self.samples is not None and not self.samples:
            raise ValueError("samples must not be empty")
        if self.mix_weight > 0 and self.mix_with is None:
            raise ValueError("mix_weight > 0 needs mix_with")
        return self


#: [tokens] A request whose input reaches this and whose output stays below
#: :data:`DEFAULT_ANOMALOUS_OUTPUT_TOKENS` is anomalous (long input, short output: RLD finishes
#: it locally rather than send its KV over the line); ``hitrate`` classifies traces by it.
DEFAULT_ANOMALOUS_INPUT_TOKENS = defaults.ANOMALOUS_INPUT_TOKENS
#: [tokens] Output below this (with a long input) marks a request anomalous.
DEFAULT_ANOMALOUS_OUTPUT_TOKENS = defaults.ANOMALOUS_OUTPUT_TOKENS


class Anomalous(Strict):
    """Long-input / short-output requests that RLD finishes locally (no WAN transfer)."""

    share: Fraction
    input_tokens: LengthDist
    output_tokens: LengthDist
    hit_rate: Fraction = 0.0
    output_threshold_tokens: Tokens = Field(
        default=DEFAULT_ANOMALOUS_OUTPUT_TOKENS,
        description="output below this (with a long input) marks a request anomalous",
    )


#: [tokens] A prefix-cache capacity, as ``pddplan hitrate`` replays them (whole tokens, up to
#: :data:`pddplan.defaults.MAX_CACHE_TOKENS`).
CacheTokens = Annotated[int, Field(gt=0, le=defaults.MAX_CACHE_TOKENS)]


class Workload(Strict):
    kind: Literal["workload"] = "workload"
    name: str
    source: Source
    notes: str = ""
    input_tokens: LengthDist
    output_tokens: LengthDist
    hit_rate: HitRateDist
    cache_tokens: CacheTokens | Literal["unbounded"] | None = Field(
        default=None,
        description="the prefix-cache capacity the hit rates were replayed at [tokens] "
        "('unbounded': nothing evicted); from a trace (pddplan hitrate --workload-cache-tokens)",
    )
    anomalous: Anomalous | None = None
    rate_rps: Rate | None = Field(
        default=None, description="observed arrival rate, requests per second (from a trace)"
    )
