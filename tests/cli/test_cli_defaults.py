"""The command line's defaults are the API's: one value for each default, whichever door a user
comes in by (the CLI parses and calls :mod:`pddplan.api`; the API's defaults are its option
models', tests/api/test_options.py).

For every command whose API function has its name (``pddplan hitrate`` -> ``api.hitrate``,
``pddplan chips rank`` -> ``api.rank_chips``), each option that is also a keyword of the function and
has a default on the command line must have the function's default. ``None`` on the command line
means "not given": the function's own default applies. An empty list is a repeatable option not
given (``--set``), which the function takes as None or an empty tuple."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import typer

from pddplan import api
from pddplan.cli import app

#: Commands whose function is not ``api.<first word>``: command -> function name.
FUNCTION_OF = {
    "chips rank": "rank_chips",
    "report": "plan_report",
    "schema": "profile_schema",
    "profiles list": "list_profiles",
    "profiles show": "show_profile",
    "profiles validate": "validate_profiles",
}


def test_every_command_has_its_api_function() -> None:
    missing = [c for c, _ in _commands(app) if _api_function(c) is None]
    assert missing == [], f"commands with no API function of FUNCTION_OF: {missing}"


def _commands(t: typer.Typer, prefix: str = "") -> Iterator[tuple[str, Callable[..., Any]]]:
    for c in t.registered_commands:
        assert c.callback is not None
        yield prefix + (c.name or c.callback.__name__), c.callback
    for g in t.registered_groups:
        assert g.typer_instance is not None and g.name is not None
        yield from _commands(g.typer_instance, prefix + g.name + " ")


def _api_function(command: str) -> Callable[..., Any] | None:
    name = FUNCTION_OF.get(command, command.split()[0]).replace("-", "_")
    fn = getattr(api, name, None)
    return fn if callable(fn) else None


def _cli_default(p: inspect.Parameter) -> Any:
    d = p.default
    return getattr(d, "default", d)  # typer's OptionInfo where the default sits in it


def _pairs() -> list[tuple[str, str, Any, Any]]:
    out = []
    for command, callback in _commands(app):
        fn = _api_function(command)
        if fn is None:
            continue
        theirs = inspect.signature(fn).parameters
        for p in inspect.signature(callback).parameters.values():
            q = theirs.get(p.name)
            if q is None or q.default is inspect.Parameter.empty:
                continue
            ours = _cli_default(p)
            if ours is None or ours is inspect.Parameter.empty or ours is ...:
                continue
            if ours == [] and q.default in (None, ()):
                continue
            out.append((command, p.name, ours, q.default))
    return out


PAIRS = _pairs()


def test_the_commands_share_many_options_with_the_api() -> None:
    # the check below reads something: most commands have API functions of their name, and
    # their options with defaults are many
    commands = {c for c, *_ in PAIRS}
    assert len(commands) >= 10 and len(PAIRS) >= 30, (len(commands), len(PAIRS))


@pytest.mark.parametrize(("command", "name", "cli", "api_default"), PAIRS)
def test_a_command_line_default_is_the_api_s(
    command: str, name: str, cli: Any, api_default: Any
) -> None:
    assert cli == api_default, f"pddplan {command} --{name}: {cli!r} on the command line"
