"""The bases of every spec and the number types they share.

:class:`Strict` rejects unknown keys, infinities and NaNs and is frozen; :class:`Sourced` adds
the ``source`` of a group of numbers and the keys of it that are ``estimated``. The annotated
types bound every number to a physically sane range (docs/limits.md).
"""

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from typing_extensions import Self

from pddplan.labels import plain

# Every number is finite (``allow_inf_nan=False`` on every model) and inside a physically sane
# range, so that nothing accepted can hang the search or overflow: the bounds are generous (a
# chip from 1 GFLOPS to 1 EFLOPS, a line from 1 Mbit/s to 1 Pbit/s) and documented in
# docs/limits.md. Names say what each range is for.
#: Any count or size that must be positive (tokens, chips, layers): at most 10^9.
MAX_COUNT = 10**9
#: Token lengths of a request: at most 10^8 tokens.
MAX_TOKENS = 10**8
#: Least utilization cap or efficiency factor: below 1% a plan is not a plan.
MIN_EFFICIENCY = 0.01
#: Largest money figure [USD] (prices per hour, per month, capex, budgets).
MAX_USD = 1e9

PositiveFloat = Annotated[float, Field(gt=0, le=1e12)]
NonNegFloat = Annotated[float, Field(ge=0, le=1e12)]
Fraction = Annotated[float, Field(ge=0, le=1)]
OpenFraction = Annotated[float, Field(gt=0, le=1)]
Efficiency = Annotated[float, Field(ge=MIN_EFFICIENCY, le=1)]
PositiveInt = Annotated[int, Field(gt=0, le=MAX_COUNT)]
NonNegInt = Annotated[int, Field(ge=0, le=MAX_COUNT)]
Tokens = Annotated[int, Field(gt=0, le=MAX_TOKENS)]
#: A model dimension (heads, head size, ranks, intermediate sizes, experts).
Dim = Annotated[int, Field(ge=1, le=10**7)]
Usd = Annotated[float, Field(ge=0, le=MAX_USD)]
PositiveUsd = Annotated[float, Field(ge=1e-6, le=MAX_USD)]
Tflops = Annotated[float, Field(ge=1e-3, le=1e6, description="1 GFLOPS to 1 EFLOPS")]
Gb = Annotated[float, Field(ge=1e-3, le=1e6)]
TbPerS = Annotated[float, Field(ge=1e-3, le=1e3)]
GbPerS = Annotated[float, Field(ge=1e-3, le=1e7)]
#: [Gbit/s] The narrowest and the widest a link may be.
MIN_GBIT_PER_S = 1e-3
MAX_GBIT_PER_S = 1e6
Gbit = Annotated[
    float, Field(ge=MIN_GBIT_PER_S, le=MAX_GBIT_PER_S, description="1 Mbit/s to 1 Pbit/s")
]
Micros = Annotated[float, Field(ge=0, le=1e6)]
Millis = Annotated[float, Field(ge=0, le=1e5)]
#: [requests/s] The least and the most rate a scenario is sized at.
MIN_RATE_RPS = 1e-6
MAX_RATE_RPS = 1e6
Rate = Annotated[float, Field(ge=MIN_RATE_RPS, le=MAX_RATE_RPS, description="requests per second")]
#: [s] The least and the most a duration of a scenario (an SLA target) may be.
MIN_SECONDS = 1e-3
MAX_SECONDS = 86_400.0
Seconds = Annotated[float, Field(ge=MIN_SECONDS, le=MAX_SECONDS)]
Source = Annotated[str, Field(min_length=3, description="where the numbers come from")]
Dtype = Literal["fp32", "bf16", "fp16", "fp8", "int8", "fp4", "int4"]


class Strict(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        populate_by_name=False,
        allow_inf_nan=False,
        strict=True,
        defer_build=True,
    )

    def content_text(self, exclude: frozenset[str] = frozenset()) -> str:
        """Every field's value as text, but the top-level fields ``exclude``: equal for equal
        values and distinct otherwise (:func:`content_text`), for keys of memo tables. Unlike
        ``model_dump_json``, it needs no serializer: a model's schema is built on first use
        (``defer_build``), and a key of the physics alone should not build one (some 7 ms of a
        solve's start for the chip's datasheet and derates and the workload)."""
        return content_text(self, exclude)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; with ``update``, validated like a file (pydantic's own copy skips validation).

        Raises :class:`~pddplan.errors.ProfileError` naming the key and the allowed range.
        """
        if not update:
            return super().model_copy(deep=deep)
        data = {k: getattr(self, k) for k in self.model_fields_set}
        data.update(update)
        try:
            return self.model_validate(data)
        except ValidationError as exc:
            from pddplan.spec.validation import Unparsed, validation_to_profile_error

            raise validation_to_profile_error(
                exc, type(self), Unparsed(data, f"{type(self).__name__} copy")
            ) from None


def content_text(value: Any, exclude: frozenset[str] = frozenset()) -> str:
    """``value`` as text naming its type and every part (a model's fields in their order but the
    top-level ``exclude``, lists, tuples and dicts part by part, any other value by its ``repr``:
    a float exactly, ``-0.0`` not as ``0.0``, ``1`` not as ``1.0``), so that two values have one
    text exactly when they are equal field by field, of the same types.

    A value of one of :data:`_LEAF_TYPES` (most of a profile's fields) is its ``repr`` at once,
    without the type tests the other values need (a model's class test goes through its
    metaclass's): some 40% of the text's time on a chip profile."""
    if type(value) in _LEAF_TYPES:
        return repr(value)
    if isinstance(value, BaseModel):
        parts = []
        for name in type(value).model_fields:
            if name not in exclude:
                v = getattr(value, name)
                parts.append(f"{name}={repr(v) if type(v) in _LEAF_TYPES else content_text(v)}")
        return f"{type(value).__qualname__}({', '.join(parts)})"
    if isinstance(value, list | tuple):
        inner = ", ".join(content_text(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner},)"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {content_text(v)}" for k, v in value.items()) + "}"
    return repr(value)


#: The types whose values :func:`content_text` writes as their ``repr`` without another test
#: (exactly these types: a subclass, a ``str`` enum say, takes the general way, to the same
#: text).
_LEAF_TYPES = frozenset({float, int, str, bool, type(None)})


def empty_list() -> list[Any]:
    """A new empty list: the default factory of the specs' list fields. A Python function, not
    the ``list`` type: pydantic reads a default factory's signature when it builds a schema,
    and a builtin type's signature is parsed from its text with :mod:`tokenize`, whose patterns
    compile on first use (1.6 ms of CPU, once a process: the verdict check of every solve builds
    these schemas)."""
    return []


class Sourced(Strict):
    source: Source
    estimated: list[str] = Field(
        default_factory=empty_list,
        description="keys of this group that are estimates, not measured",
    )

    @model_validator(mode="after")
    def _estimated_keys_exist(self) -> Self:
        fields = set(type(self).model_fields) - {"source", "estimated"}
        for key in self.estimated:
            if key not in fields:
                raise ValueError(
                    f"estimated names unknown key {key!r}; allowed: {plain(sorted(fields))}"
                )
        return self
