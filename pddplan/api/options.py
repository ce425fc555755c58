"""The API's keyword options: one pydantic model per command, their defaults and their ranges.

Each range is a Field constraint, written once and reused where two commands take the same
option (``rate_rps``, ``jobs``); :func:`validate` builds a model and turns pydantic's
``ValidationError`` into :class:`~pddplan.errors.OptionError` naming the option, the allowed
range (read back from the model's JSON schema, so it cannot disagree with the constraint) and
the value given: ``rate_rps must be a finite number in [1e-06, 1e+06], not 0``.

Options whose check needs the scenario or a profile (``max_chips``, ``own``, ``axes``) are
checked in :mod:`pddplan.api.scenario` and the commands' modules.

As in the specs' modules, annotations are evaluated as the classes are made (no ``from __future__
import annotations``: see :mod:`pddplan.spec`).
"""

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pddplan import defaults
from pddplan.errors import OptionError
from pddplan.spec import Rate
from pddplan.spec.scenario_spec import ChunkSizeTokens

# ------------------------------------------------------------------------- shared fields

#: [req/s] a request rate (the scenario's own ``rate_rps`` range).
RateRps = Rate
#: local processes or Dask workers (a thousand: far above any one machine's cores)
Workers = Annotated[int, Field(ge=1, le=1024)]
#: a count of requests or samples (the work caps in :mod:`pddplan.limits` bound it)
Count = Annotated[int, Field(ge=1)]
#: a random seed (numpy's generators take non-negative seeds of any size)
Seed = Annotated[int, Field(ge=0)]
#: [-] a fraction in [0, 1]
Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
#: [tokens] a positive token count
PositiveTokens = Annotated[int, Field(ge=1)]


class Options(BaseModel):
    """Strict (no bool for a number, no float for a whole number), finite, frozen."""

    model_config = ConfigDict(
        strict=True, allow_inf_nan=False, extra="forbid", frozen=True, defer_build=True
    )


# ------------------------------------------------------------------------------ commands


class SolveOptions(Options):
    rate_rps: RateRps | None = None
    budget_usd_per_hour: Annotated[float, Field(ge=0.0, le=1e9)] | None = None
    max_rate_rps: Annotated[float, Field(ge=0.0, le=1e6)] | None = None
    max_bcr: bool = False
    explain: bool = False
    baselines: bool = True
    verdict_check: bool = True


class CacheOptions(Options):
    rate_rps: RateRps | None = None
    max_bcr: bool = False


class ParetoOptions(Options):
    points: Annotated[int, Field(ge=2)] = 10
    min_rate_rps: RateRps | None = None
    max_rate_rps: RateRps | None = None
    baselines: bool = True


class BathtubOptions(Options):
    step: Annotated[float, Field(ge=0.001, le=0.1)] = 0.01
    tolerance: Fraction = 0.02
    reprovision: bool = True


class SweepOptions(Options):
    baselines: bool = True
    jobs: Workers = 1
    executor: str = "local"
    scheduler: str | None = None


class RobustOptions(Options):
    samples: Annotated[int, Field(ge=2)] = defaults.ROBUST_SAMPLES
    confidence: Annotated[float, Field(gt=0.0, lt=1.0)] = defaults.ROBUST_CONFIDENCE
    seed: Seed | None = 0
    executor: str = "local"
    scheduler: str | None = None
    jobs: Workers = 1
    rate_rps: RateRps | None = None


class BreakevenOptions(Options):
    param: str | None = None  # None: the first MD chip's price (whatif.default_breakeven_param)
    against: Literal["same-dc", "no-relay", "no-relay-rld"] = "same-dc"
    lo: Annotated[float, Field(ge=-1e12, le=1e12)] | None = None
    hi: Annotated[float, Field(ge=-1e12, le=1e12)] | None = None
    tolerance: Annotated[float, Field(ge=1e-9, le=1.0)] = 1e-3


class ReportOptions(Options):
    rate_rps: RateRps | None = None
    bandwidths_gbit_per_s: Sequence[float] | None = None
    hit_rate_shifts: Sequence[float] = (-0.1, -0.05, 0.0, 0.05)


class RankChipsOptions(Options):
    model: str | None = None
    workload: str | None = None
    reference: str = "h100-sxm"


class SimulateOptions(Options):
    requests: Count = 20_000
    seed: Seed = 0
    rate_rps: RateRps | None = None
    policy: str = "allowed"
    handover: str = "plan"
    sample: Literal["classes", "workload"] = "classes"
    warmup_fraction: Annotated[float, Field(ge=0.0, lt=1.0)] = defaults.WARMUP_FRACTION


class HitrateOptions(Options):
    block_tokens: PositiveTokens = 512
    warmup_s: Annotated[float, Field(ge=0.0)] = 0.0
    anomalous_input_tokens: PositiveTokens = defaults.ANOMALOUS_INPUT_TOKENS
    anomalous_output_tokens: PositiveTokens = defaults.ANOMALOUS_OUTPUT_TOKENS
    max_points: Annotated[int, Field(ge=2)] = 50
    skip_bad_lines: bool = False
    trace_format: str = "auto"
    jobs: Annotated[int, Field(ge=0)] = 0


class CalibrateOptions(Options):
    chunk_size_tokens: ChunkSizeTokens = defaults.CHUNK_SIZE_TOKENS


class TransferOptions(Options):
    payload_bytes: list[Annotated[float, Field(ge=1.0, le=1e15)]] | None = None
    concurrent: Annotated[int, Field(ge=1, le=10**6)] = 1


# ----------------------------------------------------------------------------- validation

OptionsT = TypeVar("OptionsT", bound=Options)


def validate(options: type[OptionsT], /, **values: Any) -> OptionsT:
    """``options(**values)``, or :class:`OptionError` for the first bad option."""
    try:
        return options(**values)
    except ValidationError as exc:
        raise option_error(options, exc) from None


def validate_args(options: type[OptionsT], args: Mapping[str, Any]) -> OptionsT:
    """:func:`validate` with the values of the model's fields taken from a call's arguments
    (``validate_args(SolveOptions, locals())`` first thing in a function)."""
    return validate(options, **{name: args[name] for name in options.model_fields})


def option_error(model: type[Options], exc: ValidationError) -> OptionError:
    """The :class:`OptionError` of a model's first error: the option, what it allows, the
    value given."""
    err = exc.errors(include_url=False)[0]
    name = str(err["loc"][0])
    prop = model.model_json_schema()["properties"].get(name, {})
    return OptionError(name, f"must be {allowed(prop)}, not {err['input']!r}")


def allowed(prop: dict[str, Any]) -> str:
    """What a field's JSON schema allows, in words: ``a whole number >= 1``, ``a finite number
    in [0, 1)``, ``same-dc or no-relay``."""
    kinds = [p for p in prop.get("anyOf", [prop]) if p.get("type") != "null"]
    p = kinds[0] if kinds else prop
    if p.get("type") == "array":
        p = p.get("items", {})
    if "enum" in p or "const" in p:
        choices = [str(c) for c in p.get("enum", [p.get("const")])]
        return " or ".join([", ".join(choices[:-1]), choices[-1]] if len(choices) > 1 else choices)
    kind = {"integer": "a whole number", "number": "a finite number", "boolean": "True or False"}
    what = kind.get(p.get("type", ""), f"a {p.get('type', 'value')}")
    return what + _bounds(p)


def _bounds(p: dict[str, Any]) -> str:
    lo = p.get("minimum", p.get("exclusiveMinimum"))
    hi = p.get("maximum", p.get("exclusiveMaximum"))
    if lo is not None and hi is not None:
        left = "[" if "minimum" in p else "("
        right = "]" if "maximum" in p else ")"
        return f" in {left}{_num(lo)}, {_num(hi)}{right}"
    if lo is not None:
        return f" {'>=' if 'minimum' in p else '>'} {_num(lo)}"
    if hi is not None:
        return f" {'<=' if 'maximum' in p else '<'} {_num(hi)}"
    return ""


def _num(x: float) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"
