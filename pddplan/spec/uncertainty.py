"""The scenario's ``uncertainty`` block: the input distributions ``pddplan robust`` samples."""

from pydantic import Field, StrictBool, model_validator
from typing_extensions import Self

from pddplan.labels import plain
from pddplan.spec.base import NonNegFloat, PositiveFloat, Source, Strict


class Uniform(Strict):
    low: float
    high: float

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.high < self.low:
            raise ValueError(f"bounds reversed: low {self.low:g} > high {self.high:g}")
        return self


class Triangular(Strict):
    low: float
    mode: float
    high: float

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if not self.low <= self.mode <= self.high:
            raise ValueError(
                f"needs low <= mode <= high (got {self.low:g}, {self.mode:g}, {self.high:g})"
            )
        return self


class Normal(Strict):
    sd: NonNegFloat = Field(description="standard deviation, in the input's unit")
    mean: float | None = Field(default=None, description="null: the scenario's value")
    low: float | None = Field(default=None, description="clip draws below this")
    high: float | None = Field(default=None, description="clip draws above this")

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.low is not None and self.high is not None and self.high < self.low:
            raise ValueError(f"bounds reversed: low {self.low:g} > high {self.high:g}")
        return self


class Lognormal(Strict):
    cv: NonNegFloat = Field(
        description="coefficient of variation; the mean is the scenario's value"
    )


class Relative(Strict):
    """A factor on the scenario's value, triangular between ``low`` and ``high``."""

    low: PositiveFloat
    mode: PositiveFloat = 1.0
    high: PositiveFloat

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if not self.low <= self.mode <= self.high:
            raise ValueError(
                f"needs low <= mode <= high (got {self.low:g}, {self.mode:g}, {self.high:g})"
            )
        return self


class LogUniform(Strict):
    low: PositiveFloat
    high: PositiveFloat

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.high < self.low:
            raise ValueError(f"bounds reversed: low {self.low:g} > high {self.high:g}")
        return self


class Distribution(Strict):
    """One uncertain input: exactly one of the kinds, or ``fixed: true`` (not sampled)."""

    uniform: Uniform | None = None
    triangular: Triangular | None = None
    normal: Normal | None = None
    lognormal: Lognormal | None = None
    relative: Relative | None = None
    log_uniform: LogUniform | None = None
    fixed: StrictBool = False

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        kinds = [k for k in DISTRIBUTION_KINDS if getattr(self, k) is not None]
        if self.fixed and kinds:
            raise ValueError(f"fixed: true takes no distribution (got {plain(kinds)})")
        if not self.fixed and len(kinds) != 1:
            raise ValueError(
                f"give exactly one of {', '.join(DISTRIBUTION_KINDS)} or fixed: true"
                + (f" (got {plain(kinds)})" if kinds else "")
            )
        return self


DISTRIBUTION_KINDS = ("uniform", "triangular", "normal", "lognormal", "relative", "log_uniform")


class Uncertainty(Strict):
    """What ``pddplan robust`` samples: defaults per kind of estimate, and explicit inputs.

    Keys of ``inputs`` are override PATHs (``chips.gpu-b.price_usd_per_hour``, ``rate_rps``,
    ``workload.hit_rate.shift``); they are checked against the scenario when it is sampled.
    """

    source: Source = Field(default="pddplan defaults (docs/robust.md)")
    defaults: StrictBool = Field(
        default=True,
        description="sample every key listed under estimated: with the default of its kind, "
        "plus the rate and the hit-rate shift (docs/robust.md)",
    )
    inputs: dict[str, Distribution] = Field(default_factory=dict)
