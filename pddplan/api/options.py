"""The API's keyword options: one pydantic model per command, their defaults and their ranges.

Each range is a Field constraint, written once and reused where two commands take the same
option (``rate_rps``, ``jobs``: :mod:`pddplan.api.option_base`, with the models' base). This
module holds ``solve``'s model; the other commands' are in :mod:`pddplan.api.command_options`,
made on first use and reached here by name (``options.RobustOptions``), so that a solve's start
does not make their classes. :func:`validate` builds a model and turns pydantic's
``ValidationError`` into :class:`~pddplan.errors.OptionError` naming the option, the allowed
range (read back from the model's JSON schema, so it cannot disagree with the constraint) and
the value given: ``rate_rps must be a finite number in [1e-06, 1e+06], not 0``.

Options whose check needs the scenario or a profile (``max_chips``, ``own``, ``axes``) are
checked in :mod:`pddplan.api.scenario` and the commands' modules.

As in the specs' modules, annotations are evaluated as the classes are made (no ``from __future__
import annotations``: see :mod:`pddplan.spec`).
"""

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import ValidationError

from pddplan.api.option_base import BudgetUsdPerHour, Options, RateRps
from pddplan.errors import OptionError

# ------------------------------------------------------------------------------ commands


class SolveOptions(Options):
    rate_rps: RateRps | None = None
    budget_usd_per_hour: BudgetUsdPerHour | None = None
    max_rate_rps: RateRps | None = None
    max_bcr: bool = False
    explain: bool = False
    baselines: bool = True
    verdict_check: bool = True


#: The other commands' option models, made on first use (:mod:`pddplan.api.command_options`):
#: a solve, the command run most, does not make their classes (some 3 ms of its start).
COMMAND_OPTIONS = frozenset(
    {
        "CacheOptions",
        "ParetoOptions",
        "BathtubOptions",
        "SweepOptions",
        "RobustOptions",
        "BreakevenOptions",
        "ReportOptions",
        "RankChipsOptions",
        "SimulateOptions",
        "HitrateOptions",
        "CalibrateOptions",
        "TransferOptions",
        "StepOptions",
        "TopologyOptions",
        "TopologyBreakevenOptions",
    }
)


def __getattr__(name: str) -> Any:
    if name in COMMAND_OPTIONS:
        from pddplan.api import command_options

        return getattr(command_options, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
