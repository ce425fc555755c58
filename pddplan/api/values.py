"""Values a caller writes as text, parsed for the API: ``PATH=VALUE`` settings, sweep axes,
``CHIP=N`` counts and payload sizes.

Errors are :class:`~pddplan.errors.OptionError` naming the API's option (``overrides``,
``axes``, ``own``, ``max_chips``, ``payload_bytes``); the command line swaps in its flag.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pddplan.errors import OptionError, UsageError
from pddplan.limits import MAX_CHIPS_PER_KIND
from pddplan.units import parse_scaled_count, parse_whole_number

#: Largest chip count a ``CHIP=N`` setting takes [-] (the schema's bound on `limits.max_chips`).
MAX_COUNT = MAX_CHIPS_PER_KIND

#: Largest token count :func:`parse_token_count` takes [tokens] (the largest cache capacity
#: ``hitrate`` replays; any prompt or context is far below it).
MAX_TOKENS = 10**15

#: Scenario keys whose value is a list (``roles.MD.chips=[h100-sxm,h20]``).
LIST_KEYS = (
    "chips",
    "chips_per_instance",
    "layouts",
    "day_rate_rps",
    "monthly_multiplier",
    "capacity_gb_per_node",
)
#: Keys of those names that hold one value: the baseline's one instance size.
SCALAR_KEYS = ("baseline.chips_per_instance",)


def is_list_key(path: str) -> bool:
    """Whether the scenario key ``path`` holds a list (:data:`LIST_KEYS`, less
    :data:`SCALAR_KEYS`)."""
    return path.rsplit(".", 1)[-1] in LIST_KEYS and path not in SCALAR_KEYS


def _split_top(text: str) -> list[str]:
    """``text`` split at the commas outside ``[...]``."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def _values(option: str, path: str, text: str) -> list[Any]:
    from pddplan.whatif import parse_values

    try:
        return parse_values(text, path)
    except UsageError as exc:
        raise OptionError(option, f": {exc}") from None


def parse_setting(expr: str, option: str = "overrides") -> tuple[str, str]:
    """``PATH=TEXT`` as ``(PATH, TEXT)``."""
    path, sep, text = expr.partition("=")
    if not sep or not path.strip():
        raise OptionError(option, f"expects PATH=VALUE, not {expr!r}")
    return path.strip(), text.strip()


def parse_overrides(sets: Sequence[str] | None, command: str) -> dict[str, Any]:
    """The overrides of ``PATH=VALUE`` settings: one value per PATH. A value in brackets is
    one list (``load.weekday_rate_rps.sat=[0.1,0.2]``, any key that takes a list); a list key
    (``roles.ROLE.chips``, ``roles.ROLE.chips_per_instance``, ``roles.ROLE.layouts``,
    ``baseline.layouts``, ``load.day_rate_rps``, ``load.growth.monthly_multiplier``,
    ``cache.tiers.N.capacity_gb_per_node``) also takes ``a,b``. ``lo:hi:step`` is a range, as
    in a sweep (``roles.P.chips_per_instance=[4:8:2]`` is the list ``[4, 6, 8]``: it was
    ``[4, 8, 2]``, where ``pddplan sweep`` reads the same text as 4, 6 and 8)."""
    out: dict[str, Any] = {}
    for expr in sets or []:
        path, text = parse_setting(expr)
        if path in out:  # the last one won, without a word
            raise OptionError("overrides", f"{path}: set twice; give each PATH once")
        bracketed = text.strip().startswith("[") and text.strip().endswith("]")
        if bracketed or is_list_key(path):
            out[path] = _values("overrides", path, text.strip().strip("[]"))
            continue
        values = _values("overrides", path, text)
        if len(values) != 1:
            raise OptionError(
                "overrides",
                f"{path}: {command} takes one value per PATH (a list in brackets: "
                f"{path}=[V1,V2,...]); sweep several with `pddplan sweep` ({path}=V1,V2,...)",
            )
        out[path] = values[0]
    return out


def parse_axes(sets: Sequence[str]) -> list[tuple[str, list[Any]]]:
    """Sweep axes from ``PATH=V1,V2,...`` or ``PATH=lo:hi:step``; a value in brackets is one
    list value: ``roles.MD.chips=[h100-sxm,h20]`` is one point, ``roles.MD.chips=h100-sxm,h20``
    two points, ``roles.MD.chips=[h100-sxm,h20],[h20]`` two points of lists."""
    if not sets:
        raise OptionError("axes", "needs at least one PATH=VALUES")
    axes: list[tuple[str, list[Any]]] = []
    for expr in sets:
        path, sep, text = expr.partition("=")
        if not sep or not path.strip():
            raise OptionError("axes", f"expects PATH=V1,V2,... or PATH=lo:hi:step, not {expr!r}")
        path = path.strip()
        if "[" not in text:
            axes.append((path, _values("axes", path, text)))
            continue
        vals: list[Any] = []
        for part in _split_top(text.strip()):
            part = part.strip()
            if part.startswith("[") and part.endswith("]"):
                vals.append(_values("axes", path, part[1:-1]))
            else:
                vals.extend(_values("axes", path, part))
        axes.append((path, vals))
    if len({p for p, _ in axes}) != len(axes):
        raise OptionError("axes", "sweeps each PATH once")
    return axes


def parse_counts(values: Sequence[str] | None, option: str, least: int = 1) -> dict[str, int]:
    """``CHIP=N`` settings (repeatable or comma-separated) as a dict."""
    out: dict[str, int] = {}
    for v in values or []:
        for part in v.split(","):
            name, sep, num = part.partition("=")
            kind = "a positive" if least > 0 else "a"
            if not sep or not name.strip():
                raise OptionError(
                    option, f"expects CHIP=N with N {kind} whole number, not {part!r}"
                )
            if name.strip() in out:  # the last one won, without a word
                raise OptionError(option, f": {name.strip()} given twice; give each chip once")
            try:
                out[name.strip()] = parse_whole_number(num, least=least, most=MAX_COUNT)
            except ValueError as exc:
                raise OptionError(
                    option, f"expects CHIP=N with N {kind} whole number: {name.strip()}: {exc}"
                ) from None
    return out


def inventory_overrides(
    own: dict[str, int] | None, max_chips: dict[str, int] | None
) -> dict[str, Any]:
    """Owned chips and chip limits as the scenario's overrides (``inventory.owned.CHIP``,
    ``limits.max_chips.CHIP``), for the API functions that take a scenario's overrides only."""
    out: dict[str, Any] = {f"inventory.owned.{k}": v for k, v in (own or {}).items()}
    out.update({f"limits.max_chips.{k}": v for k, v in (max_chips or {}).items()})
    return out


def table_names(command: str) -> tuple[str, ...] | None:
    """The ``--table`` names ``command``'s result can have (None: not declared; the name is then
    checked when the result is rendered)."""
    from pddplan.results.tables import TABLES

    return TABLES.get(command)


def check_table(command: str, table: str | None) -> None:
    """Raise :class:`OptionError` (``table``) for a name ``command``'s result cannot have, before
    any work (the same words as when the result is rendered)."""
    names = table_names(command)
    if table is None or names is None or table in names:
        return
    from pddplan.report import no_table

    raise no_table(table, names)


def parse_token_count(text: str | int, option: str = "tokens") -> int:
    """A token count such as ``2000``, ``64k``, ``1.5M`` or ``64Ki`` as a whole number of tokens
    (k, M, G, T: powers of 1000; Ki, Mi, Gi, Ti: of 1024; :func:`pddplan.units.
    parse_scaled_count`). An ``int`` is returned as is; ranges are the caller's check.

    Raises
    ------
    OptionError
        Naming ``option``, for text that is not a whole token count.
    """
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    shown = str(text).strip()
    try:
        value = parse_scaled_count(str(text))
    except ValueError:
        raise OptionError(
            option, f": {shown!r} is not a token count (e.g. 2000, 64k, 1.5M, 64Ki)"
        ) from None
    if not value.is_integer() or value > MAX_TOKENS:
        raise OptionError(
            option, f": {shown!r} is not a whole number of tokens up to {MAX_TOKENS:.0e}"
        )
    return int(value)


def parse_size_bytes(text: str) -> float:
    """A payload size such as ``4649KB`` in bytes (:func:`pddplan.transfer.parse_size_bytes`)."""
    from pddplan.transfer import parse_size_bytes as parse

    return parse(text)


__all__ = [
    "LIST_KEYS",
    "check_table",
    "table_names",
    "inventory_overrides",
    "parse_axes",
    "parse_counts",
    "parse_overrides",
    "parse_setting",
    "parse_size_bytes",
    "parse_token_count",
]
